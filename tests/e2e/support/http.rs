//! Plain HTTP/1.1 against `cordon serve --http` (and any loopback server, such
//! as the test issuer): one request a connection, the response read to its end
//! (chunked bodies decoded, SSE split into messages).

use std::io::{Read, Write};
use std::net::TcpStream;

use serde_json::json;

/// An HTTP response, read to its end.
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC messages it carries: a JSON body, or each SSE `data`.
    pub fn messages(&self) -> Vec<String> {
        let text = String::from_utf8_lossy(&self.body);
        if self.header("content-type").is_some_and(|t| t.starts_with("text/event-stream")) {
            return text.lines().filter_map(|l| l.strip_prefix("data:")).map(|d| d.trim().to_string()).collect();
        }
        if text.trim().is_empty() {
            if self.status >= 400 {
                return vec![json!({ "http_status": self.status }).to_string()];
            }
            return vec![];
        }
        vec![text.trim().to_string()]
    }
}

/// POSTs `body` to `http://addr/mcp` with `headers` (plus JSON content type and
/// Accept), over a fresh connection.
pub fn http_post(addr: &str, headers: &[(&str, String)], body: &[u8]) -> HttpResponse {
    let mut all = vec![
        ("Host", addr.to_string()),
        ("Content-Type", "application/json".to_string()),
        ("Accept", "application/json, text/event-stream".to_string()),
    ];
    all.extend(headers.iter().map(|(k, v)| (*k, v.clone())));
    http_request(addr, "POST", &all, body)
}

/// One HTTP/1.1 request to `/mcp` with `Connection: close`; the response read
/// to the end (chunked bodies decoded).
pub fn http_request(addr: &str, method: &str, headers: &[(&str, String)], body: &[u8]) -> HttpResponse {
    let stream = TcpStream::connect(addr).expect("connect to cordon's HTTP port");
    exchange(stream, method, "/mcp", headers, body)
}

/// One HTTP/1.1 request for `path` (with its query) at `addr` (`host:port`),
/// with `Connection: close` and a `Host` header unless `headers` has one; the
/// response read to the end (chunked bodies decoded).
pub fn request(addr: &str, method: &str, path: &str, headers: &[(&str, String)], body: &[u8]) -> HttpResponse {
    let stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect to {addr}: {e}"));
    let mut all = headers.to_vec();
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
        all.push(("Host", addr.to_string()));
    }
    exchange(stream, method, path, &all, body)
}

/// Writes one request on `stream` and reads its response to the end.
fn exchange(mut stream: TcpStream, method: &str, path: &str, headers: &[(&str, String)], body: &[u8]) -> HttpResponse {
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("an HTTP response head");
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).expect("a status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked")) {
        body = dechunk(&body);
    }
    HttpResponse { status, headers, body }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&raw[..eol]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = eol + 2;
        out.extend_from_slice(&raw[start..(start + size).min(raw.len())]);
        raw = &raw[(start + size + 2).min(raw.len())..];
    }
    out
}
