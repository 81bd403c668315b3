//! The call as a whole, with a fake transport: redirects, paging, `info`,
//! resume positions and their staleness.

use std::collections::HashMap;

use cordon_sdk::{Budget, Chunk, ErrorCode, Payload};
use serde_json::json;

use super::*;

/// A body served from memory, a few bytes per read.
struct Served(Vec<u8>, usize);

impl body::Body for Served {
    fn read(&mut self, max: usize) -> Result<Option<Vec<u8>>, Error> {
        if self.1 == self.0.len() {
            return Ok(None);
        }
        let end = (self.1 + max.min(5)).min(self.0.len());
        let bytes = self.0[self.1..end].to_vec();
        self.1 = end;
        Ok(Some(bytes))
    }
}

/// What the fake server answers for a URL.
#[derive(Clone)]
struct Page {
    status: u16,
    location: Option<&'static str>,
    content_type: Option<&'static str>,
    body: Vec<u8>,
}

/// A server of fixed pages that records every request.
#[derive(Default)]
struct Fake {
    pages: HashMap<String, Page>,
    sent: Vec<(String, Vec<(String, String)>)>,
}

impl Fake {
    /// Serves `body` at `url` with `status` and `content_type`.
    fn page(mut self, url: &str, status: u16, content_type: Option<&'static str>, body: &[u8]) -> Fake {
        self.pages.insert(url.into(), Page { status, location: None, content_type, body: body.to_vec() });
        self
    }

    /// Redirects `url` to `location` with `status`.
    fn redirect(mut self, url: &str, status: u16, location: &'static str) -> Fake {
        self.pages.insert(url.into(), Page { status, location: Some(location), content_type: None, body: Vec::new() });
        self
    }
}

impl Transport for Fake {
    type Body = Served;

    fn get(&mut self, url: &url::Url, headers: &[(String, String)]) -> Result<Response<Served>, Error> {
        self.sent.push((url.to_string(), headers.to_vec()));
        let Some(page) = self.pages.get(url.as_str()).cloned() else {
            return Err(errors::from_http(&wasip2::http::types::ErrorCode::HttpRequestDenied, url.as_str()));
        };
        Ok(Response {
            status: page.status,
            location: page.location.map(String::from),
            content_type: page.content_type.map(String::from),
            content_length: Some(page.body.len() as u64),
            body: Served(page.body, 0),
        })
    }
}

/// Checked arguments from a JSON value.
fn args(json: serde_json::Value) -> Args {
    Args::parse(&json.to_string()).unwrap()
}

/// Every chunk left, within `bytes` and `items` each.
fn drain(fetch: &mut Fetch<Served>, bytes: u32, items: u32) -> Vec<Chunk> {
    std::iter::from_fn(|| fetch.next(Budget { bytes, items }).unwrap()).collect()
}

/// The chunks' payloads, joined.
fn joined(chunks: &[Chunk]) -> Vec<u8> {
    chunks.iter().flat_map(|c| c.payload.as_bytes().to_vec()).collect()
}

/// A text body: multi-byte characters, and no newline at the end.
const LINES: &str = "première ligne\n{\"json\": true}\n€€€ and the end without a newline";

#[test]
fn a_text_body_is_paged_and_every_position_resumes_to_exactly_the_rest() {
    let mut fake =
        Fake::default().page("https://api.example.com/data", 200, Some("application/json"), LINES.as_bytes());
    let args = args(json!({ "url": "https://api.example.com/data" }));
    let mut fetch = Fetch::open(&mut fake, &args, None).unwrap();
    assert!(fetch.is_text());
    let chunks = drain(&mut fetch, 9, 1);
    assert_eq!(joined(&chunks), LINES.as_bytes());
    assert!(
        chunks.iter().all(|c| matches!(c.payload, Payload::Text(_)) && c.payload.len() <= 9 && c.budget_items() <= 1)
    );
    assert_eq!(
        fetch.info(),
        json!({
            "url": "https://api.example.com/data", "status": 200, "content_type": "application/json",
            "content_length": LINES.len(), "redirects": []
        })
    );
    assert_eq!(chunks.last().unwrap().resume, format!("{}:200", LINES.len()));
    for (i, chunk) in chunks.iter().enumerate() {
        let span = chunk.span.unwrap();
        assert_eq!(span.end_byte - span.start_byte, chunk.payload.len() as u64);
        let resume = Position::decode(&chunk.resume).unwrap();
        let rest = drain(&mut Fetch::open(&mut fake, &args, Some(resume)).unwrap(), 9, 1);
        assert_eq!(rest, chunks[i + 1..], "resume at {}", chunk.resume);
    }
    assert_eq!(fake.sent.len(), 1 + chunks.len(), "every reopening sends the request again");
}

#[test]
fn redirects_are_followed_from_the_current_url() {
    let mut fake = Fake::default()
        .redirect("https://api.example.com/old", 301, "/v2/new")
        .redirect("https://api.example.com/v2/new", 302, "//cdn.example.com/file?x=1")
        .redirect("https://cdn.example.com/file?x=1", 307, "final")
        .page("https://cdn.example.com/final", 200, Some("image/png"), b"\x89PNG\r\n\x1a\n");
    let mut fetch = Fetch::open(&mut fake, &args(json!({ "url": "https://api.example.com/old" })), None).unwrap();
    assert!(!fetch.is_text());
    let chunks = drain(&mut fetch, 64, 10);
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].payload, Payload::Bytes(b"\x89PNG\r\n\x1a\n".to_vec()));
    let info = fetch.info();
    assert_eq!(info["url"], "https://cdn.example.com/final");
    assert_eq!(
        info["redirects"],
        json!(["https://api.example.com/v2/new", "https://cdn.example.com/file?x=1", "https://cdn.example.com/final"])
    );
    let sent: Vec<&str> = fake.sent.iter().map(|(url, _)| url.as_str()).collect();
    assert_eq!(
        sent,
        [
            "https://api.example.com/old",
            "https://api.example.com/v2/new",
            "https://cdn.example.com/file?x=1",
            "https://cdn.example.com/final"
        ]
    );
}

#[test]
fn too_many_redirects_and_bad_locations_are_errors() {
    let mut fake = Fake::default()
        .redirect("https://a.example/1", 308, "/2")
        .redirect("https://a.example/2", 303, "/1")
        .redirect("https://a.example/ftp", 302, "ftp://a.example/file");
    let err = Fetch::open(&mut fake, &args(json!({ "url": "https://a.example/1" })), None).err().unwrap();
    assert_eq!(err.code, ErrorCode::Io);
    assert!(
        err.message.contains("too many redirects") && err.message.contains("`max_redirects` is 5"),
        "{}",
        err.message
    );
    assert_eq!(fake.sent.len(), 6, "the request and five redirects");
    let err =
        Fetch::open(&mut fake, &args(json!({ "url": "https://a.example/1", "max_redirects": 0 })), None).err().unwrap();
    assert!(err.message.contains("too many redirects"), "{}", err.message);
    let err = Fetch::open(&mut fake, &args(json!({ "url": "https://a.example/ftp" })), None).err().unwrap();
    assert_eq!(err.code, ErrorCode::Io);
    assert!(
        err.message.contains("https://a.example/ftp redirected to a URL that") && err.message.contains("only http"),
        "{}",
        err.message
    );
}

#[test]
fn a_redirect_status_without_a_location_and_an_error_status_are_paged() {
    let mut fake = Fake::default()
        .page("https://a.example/moved", 301, Some("text/html"), b"<p>moved, somewhere</p>")
        .page("https://a.example/missing", 404, None, b"not found\n");
    for (url, status) in [("https://a.example/moved", 301), ("https://a.example/missing", 404)] {
        let mut fetch = Fetch::open(&mut fake, &args(json!({ "url": url })), None).unwrap();
        assert_eq!(fetch.info()["status"], status);
        assert!(fetch.is_text(), "{url}: HTML, and UTF-8 without a type");
        assert!(!joined(&drain(&mut fetch, 100, 10)).is_empty());
    }
}

#[test]
fn a_changed_response_is_stale() {
    let mut fake = Fake::default().page("https://a.example/x", 200, Some("text/plain"), b"0123456789");
    let args = args(json!({ "url": "https://a.example/x" }));
    let other_status = Position { offset: 4, status: 206 };
    let err = Fetch::open(&mut fake, &args, Some(other_status)).err().unwrap();
    assert_eq!(err.code, ErrorCode::Stale);
    assert!(err.message.contains("answered 200 where the page before had 206"), "{}", err.message);
    let past_the_end = Position { offset: 11, status: 200 };
    let err = Fetch::open(&mut fake, &args, Some(past_the_end)).err().unwrap();
    assert_eq!(err.code, ErrorCode::Stale);
    assert!(err.message.starts_with("https://a.example/x: the response ended after 10 bytes"), "{}", err.message);
}

#[test]
fn credentials_are_not_sent_to_another_origin() {
    let mut fake = Fake::default()
        .redirect("https://api.example.com/a", 302, "/b")
        .redirect("https://api.example.com/b", 302, "https://elsewhere.example/c")
        .page("https://elsewhere.example/c", 200, Some("text/plain"), b"ok");
    let headers = json!({ "Authorization": "Bearer secret", "Cookie": "s=1", "Accept": "text/plain" });
    Fetch::open(&mut fake, &args(json!({ "url": "https://api.example.com/a", "headers": headers })), None).unwrap();
    let names: Vec<Vec<&str>> =
        fake.sent.iter().map(|(_, headers)| headers.iter().map(|(name, _)| name.as_str()).collect()).collect();
    assert_eq!(
        names,
        [vec!["accept", "authorization", "cookie"], vec!["accept", "authorization", "cookie"], vec!["accept"]]
    );
}

#[test]
fn a_refused_request_names_the_url() {
    let mut fake = Fake::default();
    let err = Fetch::open(&mut fake, &args(json!({ "url": "https://nowhere.example/" })), None).err().unwrap();
    assert_eq!(err.code, ErrorCode::PermissionDenied);
    assert!(err.message.starts_with("the host refused the request to https://nowhere.example/"), "{}", err.message);
}

#[test]
fn the_tool_checks_its_arguments_and_positions_before_sending() {
    let ctx = Context::default();
    let err = HttpGet::open(&ctx, r#"{"url": "gopher://x.example/"}"#, None).err().unwrap();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    let err = HttpGet::open(&ctx, r#"{"url": "https://x.example/"}"#, Some("12")).err().unwrap();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("malformed resume position"));
    for bad in ["", ":", "1:", ":200", "-1:200", "1:2:3", "1:99999"] {
        assert!(Position::decode(bad).is_err(), "{bad}");
    }
    assert_eq!(Position::decode("1024:404").unwrap(), Position { offset: 1024, status: 404 });
    // Natively there is no wasi:http.
    let err = HttpGet::open(&ctx, r#"{"url": "https://x.example/"}"#, None).err().unwrap();
    assert_eq!(err.code, ErrorCode::Unsupported);
}

#[test]
fn the_manifest_asks_for_no_files() {
    let manifest = HttpGet::manifest();
    assert_eq!(manifest.name, NAME);
    assert_eq!(manifest.access, Access::None);
    assert!(manifest.read_only && manifest.idempotent && !manifest.destructive);
    assert_eq!(manifest.input_schema["required"], json!(["url"]));
    let info_keys: Vec<&str> =
        manifest.output_schema["required"].as_array().unwrap().iter().filter_map(|k| k.as_str()).collect();
    assert_eq!(info_keys, ["url", "status", "content_type", "content_length", "redirects"]);
}
