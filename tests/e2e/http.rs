//! What only Streamable HTTP has: Origin and Host checks, the bearer token,
//! legacy sessions, and the status codes of each era.

use std::process::Child;

use serde_json::{Value, json};

use crate::support::{Fixture, HttpResponse, Listening, http_post, http_request, initialize_params, spawn_listening};

/// A `cordon serve --http` on a free loopback port, and its address.
struct Http {
    child: Child,
    addr: String,
}

impl Http {
    fn start(root: &std::path::Path, extra: &[&str]) -> Http {
        let Listening { child, addr: url, .. } = spawn_listening(root, &["--http", "127.0.0.1:0"], extra);
        Http { child: child.into_child(), addr: url.trim_start_matches("http://").trim_end_matches("/mcp").to_string() }
    }

    fn post(&self, headers: &[(&str, String)], body: &Value) -> HttpResponse {
        http_post(&self.addr, headers, body.to_string().as_bytes())
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn body(response: &HttpResponse) -> Value {
    serde_json::from_slice(&response.body).unwrap_or(Value::Null)
}

#[test]
fn foreign_origins_and_hosts_are_refused_before_anything_runs() {
    let fx = Fixture::new();
    let http = Http::start(&fx.root(), &[]);
    let init = request(1, "initialize", initialize_params("2025-11-25"));
    let evil_origin = http.post(&[("Origin", "http://evil.example.com".into())], &init);
    assert_eq!(evil_origin.status, 403);
    let evil_host = http_request(
        &http.addr,
        "POST",
        &[("Host", "evil.example.com".into()), ("Content-Type", "application/json".into())],
        init.to_string().as_bytes(),
    );
    assert_eq!(evil_host.status, 403, "DNS rebinding: a foreign Host is refused");
    let local = http.post(&[("Origin", format!("http://{}", http.addr))], &init);
    assert_eq!(local.status, 200);
    assert!(local.header("mcp-session-id").is_some());
}

#[test]
fn a_token_is_required_as_a_bearer_when_set() {
    let fx = Fixture::new();
    let token = "http-token-0123456789";
    let http = Http::start(&fx.root(), &["--token", token]);
    let init = request(1, "initialize", initialize_params("2025-11-25"));
    let refused = http.post(&[], &init);
    assert_eq!(refused.status, 401);
    assert_eq!(refused.header("www-authenticate"), Some("Bearer"));
    let wrong = http.post(&[("Authorization", "Bearer nope".into())], &init);
    assert_eq!(wrong.status, 401);
    let ok = http.post(&[("Authorization", format!("Bearer {token}"))], &init);
    assert_eq!(ok.status, 200);
}

#[test]
fn legacy_sessions_are_made_by_initialize_needed_after_and_ended_by_delete() {
    let fx = Fixture::new();
    let http = Http::start(&fx.root(), &[]);
    let without = http.post(&[], &request(1, "tools/list", json!({})));
    assert_eq!(without.status, 400, "a legacy request needs its session");
    let init = http.post(&[], &request(2, "initialize", initialize_params("2025-11-25")));
    let id = init.header("mcp-session-id").expect("initialize makes a session").to_string();
    assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    let session = [("Mcp-Session-Id", id.clone()), ("MCP-Protocol-Version", "2025-11-25".to_string())];
    let note = http.post(&session, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(note.status, 202);
    let listed = http.post(&session, &request(3, "tools/list", json!({})));
    assert_eq!(listed.status, 200);
    assert!(body(&listed)["result"]["tools"].is_array());
    let get =
        http_request(&http.addr, "GET", &[("Host", http.addr.clone()), ("Accept", "text/event-stream".into())], b"");
    assert_eq!(get.status, 405);
    let headers: Vec<(&str, String)> = session.iter().cloned().chain([("Host", http.addr.clone())]).collect();
    assert_eq!(http_request(&http.addr, "DELETE", &headers, b"").status, 204);
    assert_eq!(http.post(&session, &request(4, "tools/list", json!({}))).status, 404, "the session is gone");
}

#[test]
fn stateless_requests_get_the_status_of_their_error() {
    let fx = Fixture::new();
    let http = Http::start(&fx.root(), &[]);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let headers =
        |method: &str| vec![("MCP-Protocol-Version", "2026-07-28".to_string()), ("Mcp-Method", method.to_string())];
    let listed = http.post(&headers("tools/list"), &request(1, "tools/list", json!({"_meta": meta})));
    assert_eq!(listed.status, 200);
    assert_eq!(body(&listed)["result"]["resultType"], "complete");
    assert!(listed.header("mcp-session-id").is_none(), "no sessions in 2026-07-28");
    let missing = http.post(&headers("tools/list"), &request(2, "tools/list", json!({})));
    assert_eq!((missing.status, body(&missing)["error"]["code"].clone()), (400, json!(-32602)));
    let mismatch = http.post(&headers("prompts/list"), &request(3, "tools/list", json!({"_meta": meta})));
    assert_eq!((mismatch.status, body(&mismatch)["error"]["code"].clone()), (400, json!(-32020)));
    let removed = http.post(&headers("ping"), &request(4, "ping", json!({"_meta": meta})));
    assert_eq!((removed.status, body(&removed)["error"]["code"].clone()), (404, json!(-32601)));
    let mut call = headers("tools/call");
    call.push(("Mcp-Name", "read".into()));
    let read = http.post(
        &call,
        &request(
            5,
            "tools/call",
            json!({"_meta": meta, "name": "read", "arguments": {"path": "hello.txt", "format": "json"}}),
        ),
    );
    assert_eq!(read.status, 200);
    assert_eq!(read.header("content-type"), Some("text/event-stream"), "a call answers on an SSE stream");
    let messages = read.messages();
    let answer: Value = serde_json::from_str(messages.last().unwrap()).unwrap();
    assert_eq!(answer["id"], 5);
    assert_eq!(crate::support::text(&answer["result"]), "hello\nworld\n");
    assert_eq!(answer["result"]["resultType"], "complete");
}

/// The calls of one tool the server lets be stuck in host calls at once
/// (`runtime::MAX_STUCK_PER_TOOL`).
const STUCK_PER_TOOL: usize = 4;

/// A client that leaves while its call is blocked in a host call does not take
/// the host timeout with it: its leaving cancels the call, and the session
/// still gives the call up at the cancellation plus the grace, records it
/// `cancelled`, and counts it as stuck, so that a tool whose calls always
/// block cannot use up the server by callers that hang up.
#[test]
fn a_call_whose_client_left_is_still_given_up_on_recorded_and_counted_stuck() {
    use std::io::Write;
    let fx = Fixture::new();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    let hostile = env!("CORDON_HOSTILE_COMPONENT");
    let flags = ["--component", hostile, "--timeout-secs", "1", "--host-grace-ms", "100"];
    let http = Http::start(&fx.root(), &[&flags[..], &["--audit-log", log.to_str().unwrap()]].concat());
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let call = |id: i64, behaviour: &str| {
        let params = json!({"_meta": meta, "name": "hostile", "arguments": {"behaviour": behaviour}});
        request(id, "tools/call", params).to_string()
    };
    for id in 1..=STUCK_PER_TOOL as i64 {
        let body = call(id, "sleep-in-host");
        let mut stream = std::net::TcpStream::connect(&http.addr).unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, \
             text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: hostile\r\n\
             Content-Length: {}\r\n\r\n",
            http.addr,
            body.len()
        );
        stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes())).unwrap();
        // The call starts, then its client hangs up.
        std::thread::sleep(std::time::Duration::from_millis(300));
        drop(stream);
    }
    let headers = vec![
        ("MCP-Protocol-Version", "2026-07-28".to_string()),
        ("Mcp-Method", "tools/call".to_string()),
        ("Mcp-Name", "hostile".to_string()),
    ];
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let refused = loop {
        let answer = http.post(&headers, &serde_json::from_str(&call(9, "benign")).unwrap());
        let answer: Value = serde_json::from_str(answer.messages().last().unwrap()).unwrap();
        if answer["error"]["data"]["error"] == "tool_stuck" {
            break answer;
        }
        assert!(std::time::Instant::now() < until, "the calls whose clients left were never counted: {answer}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert_eq!(refused["error"]["data"]["calls"], STUCK_PER_TOOL, "{refused}");
    let text = std::fs::read_to_string(&log).unwrap();
    let given_up = text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|r| r["event"] == "call" && r["tool"]["name"] == "hostile" && r["outcome"]["tool_error"] == "cancelled")
        .count();
    assert_eq!(given_up, STUCK_PER_TOOL, "each call whose client left is recorded once:\n{text}");
}
