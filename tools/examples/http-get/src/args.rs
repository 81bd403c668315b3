//! The call's arguments: the URL, how many redirects to follow, and the
//! request headers, each checked before anything is sent.

use std::collections::BTreeMap;

use cordon_sdk::{Error, ErrorCode};
use serde::Deserialize;
use serde_json::json;
use url::Url;

/// Redirects followed when the call does not say.
pub const DEFAULT_REDIRECTS: u32 = 5;
/// The most redirects a call may ask to follow.
pub const MAX_REDIRECTS: u32 = 10;
/// The most request headers a call may set.
pub const MAX_HEADERS: usize = 64;
/// The longest header value accepted, in bytes.
pub const MAX_HEADER_VALUE_BYTES: usize = 8192;
/// The longest URL accepted, in bytes.
pub const MAX_URL_BYTES: usize = 8192;

/// Headers a call may not set: `host` is the URL's (and the host's to check),
/// the others belong to the connection, which the host manages (wasi:http
/// refuses them too), and a GET sends no body to give a length.
pub const REFUSED_HEADERS: [&str; 11] = [
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "transfer-encoding",
    "upgrade",
    "http2-settings",
    "te",
    "content-length",
];

/// The arguments as they arrive, before they are checked.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    /// The URL to fetch.
    url: String,
    /// How many redirects to follow.
    #[serde(default)]
    max_redirects: Option<u32>,
    /// Request headers, name to value.
    #[serde(default)]
    headers: Option<BTreeMap<String, String>>,
}

/// A call's checked arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    /// The URL to fetch: http or https, with a host, no credentials and no
    /// fragment.
    pub url: Url,
    /// How many redirects to follow at most (0 to 10).
    pub max_redirects: u32,
    /// The request headers, names in lowercase, in name order.
    pub headers: Vec<(String, String)>,
}

impl Args {
    /// Parses and checks the arguments' JSON text; every problem is an
    /// invalid-argument error saying what to change.
    pub fn parse(json: &str) -> Result<Args, Error> {
        let raw: Raw = serde_json::from_str(json).map_err(|e| invalid(format!("invalid arguments: {e}")))?;
        let url = parse_url(&raw.url).map_err(|why| invalid(format!("`url` {why}")))?;
        let max_redirects = raw.max_redirects.unwrap_or(DEFAULT_REDIRECTS);
        if max_redirects > MAX_REDIRECTS {
            return Err(invalid(format!("`max_redirects` is {max_redirects}: at most {MAX_REDIRECTS}")));
        }
        let headers = check_headers(raw.headers.unwrap_or_default()).map_err(invalid)?;
        Ok(Args { url, max_redirects, headers })
    }
}

/// An invalid-argument error saying `message`.
fn invalid(message: String) -> Error {
    Error::new(ErrorCode::InvalidArgument, message)
}

/// Parses a URL the tool can request: absolute, http or https, with a host
/// and without credentials. A fragment is dropped: it is never sent. The
/// error completes a sentence about the URL ("is not …").
pub fn parse_url(text: &str) -> Result<Url, String> {
    if text.len() > MAX_URL_BYTES {
        return Err(format!("is {} bytes long: at most {MAX_URL_BYTES}", text.len()));
    }
    let url = Url::parse(text).map_err(|e| format!("`{text}` is not a valid absolute URL: {e}"))?;
    requestable(url)
}

/// Checks that `url` can be requested (see [`parse_url`]) and drops its
/// fragment. The error completes a sentence about the URL.
pub fn requestable(mut url: Url) -> Result<Url, String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("`{url}` has the scheme `{}`: only http and https can be fetched", url.scheme()));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("`{url}` names no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("carries credentials (`user:password@`): pass an `authorization` header instead".into());
    }
    url.set_fragment(None);
    Ok(url)
}

/// Checks the request headers and returns them with lowercase names, in name
/// order. The error is a sentence.
pub fn check_headers(headers: BTreeMap<String, String>) -> Result<Vec<(String, String)>, String> {
    if headers.len() > MAX_HEADERS {
        return Err(format!("`headers` has {} entries: at most {MAX_HEADERS}", headers.len()));
    }
    let mut checked: Vec<(String, String)> = Vec::with_capacity(headers.len());
    for (name, value) in headers {
        if !valid_name(&name) {
            return Err(format!(
                "`headers`: `{name}` is not a valid header name (letters, digits and !#$%&'*+-.^_`|~)"
            ));
        }
        let lower = name.to_ascii_lowercase();
        if REFUSED_HEADERS.contains(&lower.as_str()) {
            return Err(format!("`headers`: `{name}` cannot be set by a call: the host sets it"));
        }
        if value.len() > MAX_HEADER_VALUE_BYTES {
            return Err(format!(
                "`headers`: the value of `{name}` is {} bytes: at most {MAX_HEADER_VALUE_BYTES}",
                value.len()
            ));
        }
        if !valid_value(&value) {
            return Err(format!(
                "`headers`: the value of `{name}` holds a control character or surrounding whitespace"
            ));
        }
        if checked.iter().any(|(seen, _)| *seen == lower) {
            return Err(format!("`headers`: `{name}` is given twice (header names are case-insensitive)"));
        }
        checked.push((lower, value));
    }
    checked.sort();
    Ok(checked)
}

/// Whether `name` is an HTTP field name: one or more token characters.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Whether `value` is an HTTP field value: no control characters but tab, no
/// leading or trailing whitespace.
pub fn valid_value(value: &str) -> bool {
    let bytes = value.as_bytes();
    let edge = |b: Option<&u8>| b.is_some_and(|&b| b == b' ' || b == b'\t');
    !edge(bytes.first()) && !edge(bytes.last()) && bytes.iter().all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

/// The JSON Schema of the arguments.
pub fn input_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "url": {
                "type": "string", "minLength": 1, "maxLength": MAX_URL_BYTES,
                "description": "The http or https URL to GET. The tool must have been granted the destination \
                                (`--grant net:https://host`)."
            },
            "max_redirects": {
                "type": "integer", "minimum": 0, "maximum": MAX_REDIRECTS, "default": DEFAULT_REDIRECTS,
                "description": "How many redirects (301, 302, 303, 307, 308) to follow; each one is a new request \
                                the host checks against the grants."
            },
            "headers": {
                "type": "object",
                "additionalProperties": { "type": "string", "maxLength": MAX_HEADER_VALUE_BYTES },
                "maxProperties": MAX_HEADERS,
                "description": "Request headers, name to value (e.g. {\"accept\": \"application/json\"}). `host` and \
                                the connection's own headers cannot be set. `authorization` and `cookie` are not \
                                sent on after a redirect to another origin."
            }
        },
        "required": ["url"],
        "additionalProperties": false
    })
}

/// The JSON Schema of `info`.
pub fn output_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "url": { "type": "string", "description": "The URL of the response paged (after redirects)." },
            "status": { "type": "integer", "description": "Its HTTP status; not 2xx is not an error." },
            "content_type": { "type": ["string", "null"] },
            "content_length": { "type": ["integer", "null"], "minimum": 0 },
            "redirects": {
                "type": "array", "items": { "type": "string" },
                "description": "The URLs redirected to, in order."
            }
        },
        "required": ["url", "status", "content_type", "content_length", "redirects"]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message of the invalid-argument error `json` gives.
    fn error(json: &str) -> String {
        let err = Args::parse(json).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument, "{}", err.message);
        err.message
    }

    #[test]
    fn defaults_and_normal_forms() {
        let args = Args::parse(r#"{"url": "https://Example.COM/a/../b?q=1#part"}"#).unwrap();
        assert_eq!(args.url.as_str(), "https://example.com/b?q=1");
        assert_eq!(args.max_redirects, DEFAULT_REDIRECTS);
        assert!(args.headers.is_empty());
        let args = Args::parse(
            r#"{"url": "http://127.0.0.1:8080/", "max_redirects": 0, "headers": {"X-Token": "a b", "Accept": "*/*"}}"#,
        )
        .unwrap();
        assert_eq!(args.max_redirects, 0);
        assert_eq!(args.headers, [("accept".to_string(), "*/*".to_string()), ("x-token".into(), "a b".into())]);
    }

    #[test]
    fn urls_must_be_http_with_a_host_and_no_credentials() {
        assert!(error(r#"{"url": "ftp://example.com/"}"#).contains("only http and https"));
        assert!(error(r#"{"url": "file:///etc/passwd"}"#).contains("only http and https"));
        assert!(error(r#"{"url": "/relative/path"}"#).contains("not a valid absolute URL"));
        assert!(error(r#"{"url": "https://user:pw@example.com/"}"#).contains("credentials"));
        assert!(
            error(&format!(r#"{{"url": "https://example.com/{}"}}"#, "a".repeat(MAX_URL_BYTES))).contains("at most")
        );
    }

    #[test]
    fn redirect_counts_are_bounded() {
        assert_eq!(Args::parse(r#"{"url": "https://a.example/", "max_redirects": 10}"#).unwrap().max_redirects, 10);
        assert!(error(r#"{"url": "https://a.example/", "max_redirects": 11}"#).contains("at most 10"));
        assert!(error(r#"{"url": "https://a.example/", "max_redirects": -1}"#).contains("invalid arguments"));
        assert!(error(r#"{"url": "https://a.example/", "max_redirects": 1.5}"#).contains("invalid arguments"));
    }

    #[test]
    fn headers_are_checked() {
        let with = |headers: &str| format!(r#"{{"url": "https://a.example/", "headers": {headers}}}"#);
        assert!(error(&with(r#"{"Host": "evil.example"}"#)).contains("`Host` cannot be set"));
        assert!(error(&with(r#"{"transfer-encoding": "chunked"}"#)).contains("cannot be set"));
        assert!(error(&with(r#"{"bad name": "x"}"#)).contains("not a valid header name"));
        assert!(error(&with(r#"{"": "x"}"#)).contains("not a valid header name"));
        assert!(error(&with(r#"{"x-a": "line\r\nInjected: yes"}"#)).contains("control character"));
        assert!(error(&with(r#"{"x-a": " padded"}"#)).contains("whitespace"));
        assert!(error(&with(r#"{"X-A": "1", "x-a": "2"}"#)).contains("given twice"));
        assert!(error(&with(r#"{"x-a": 1}"#)).contains("invalid arguments"));
        assert!(error(&with(r#"["x-a"]"#)).contains("invalid arguments"));
        assert!(valid_value("text/html; q=0.9\tand UTF-8 é"));
        assert!(valid_value(""));
    }

    #[test]
    fn unknown_and_missing_arguments_are_refused() {
        assert!(error(r#"{"url": "https://a.example/", "method": "POST"}"#).contains("unknown field"));
        assert!(error(r#"{}"#).contains("missing field"));
    }
}
