//! One scenario suite over every transport and era (written once, run on each:
//! stdio, TCP and HTTP in the legacy era, stdio and HTTP in the stateless
//! 2026-07-28 one), and what only TCP has: the token and the refusal of HTTP.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::{Fixture, Server, TOKEN, payload, read_all, text};

type Start = fn(&Path, &[&str]) -> Server;

fn lifecycle_listing_and_an_exact_read(start: Start) {
    let fx = Fixture::new();
    let content = "ünïcödé\r\nno final newline";
    fx.write("t.txt", content);
    let mut server = start(&fx.root(), &[]);
    let listed = server.request(1, "tools/list", json!({}));
    assert!(listed["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "read"));
    assert_eq!(text(&server.call(2, "read", json!({"format": "json", "path": "t.txt"}))), content);
    let again = server.request("p", "tools/list", json!({}));
    assert_eq!(again["result"]["tools"], listed["result"]["tools"], "the same tools in the same order");
}

fn bad_input_is_answered_and_the_session_goes_on(start: Start) {
    let fx = Fixture::new();
    let mut server = start(&fx.root(), &["--max-line-bytes", "2048"]);
    server.send_raw(b"{not json\n");
    assert_eq!(server.recv()["error"]["code"], -32700);
    server.send_raw(format!("{{\"pad\":\"{}\"}}\n", "x".repeat(10_000)).as_bytes());
    assert_eq!(server.recv()["error"]["data"]["error"], "payload_too_large");
    assert_eq!(server.request(3, "nope/method", json!({}))["error"]["code"], -32601);
    assert!(server.request(4, "tools/list", json!({}))["result"]["tools"].is_array(), "the session goes on");
}

fn paging_with_cursors_is_exact(start: Start) {
    let fx = Fixture::new();
    let content: String = (0..2000).map(|i| format!("{i} ✓\n")).collect();
    fx.write("p.txt", &content);
    let mut server = start(&fx.root(), &[]);
    let (got, pages) = read_all(&mut server, "read", json!({"format": "json", "path": "p.txt"}), 300);
    assert!(pages.len() > 5);
    assert!(got == content.as_bytes());
}

fn a_tool_error_is_a_result_and_an_unknown_tool_a_protocol_error(start: Start) {
    let fx = Fixture::new();
    let mut server = start(&fx.root(), &[]);
    let denied = server.call(1, "read", json!({"format": "json", "path": "../outside.txt"}));
    assert_eq!(denied["_meta"]["cordon/error"]["code"], "permission_denied");
    let unknown = server.request(2, "tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(unknown["error"]["code"], -32602);
    let page = server.call(3, "read", json!({"format": "json", "path": "hello.txt"}));
    assert_eq!(payload(&page), b"hello\nworld\n");
}

macro_rules! over_every_transport {
    ($($scenario:ident),* $(,)?) => {
        mod over_stdio {
            $( #[test] fn $scenario() { super::$scenario(crate::support::Server::initialized) } )*
        }
        mod over_tcp {
            $( #[test] fn $scenario() { super::$scenario(crate::support::Server::initialized_tcp) } )*
        }
        mod over_http {
            $( #[test] fn $scenario() { super::$scenario(crate::support::Server::initialized_http) } )*
        }
        mod over_stdio_2026 {
            $( #[test] fn $scenario() { super::$scenario(crate::support::Server::modern_stdio) } )*
        }
        mod over_http_2026 {
            $( #[test] fn $scenario() { super::$scenario(crate::support::Server::modern_http) } )*
        }
    };
}

over_every_transport!(
    lifecycle_listing_and_an_exact_read,
    bad_input_is_answered_and_the_session_goes_on,
    paging_with_cursors_is_exact,
    a_tool_error_is_a_result_and_an_unknown_tool_a_protocol_error,
);

#[test]
fn tcp_refuses_a_missing_or_wrong_token() {
    let fx = Fixture::new();
    let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    for first in [&ping[..], b"not-the-token"] {
        let mut line = first.to_vec();
        line.push(b'\n');
        let server = Server::start_tcp(&fx.root(), &[], Some(&line));
        let reply: Value = serde_json::from_str(&server.recv_or_closed().expect("an error line")).unwrap();
        assert_eq!(reply["error"]["code"], -32001, "{reply}");
        assert_eq!(server.recv_or_closed(), None, "then the connection is closed");
    }
}

#[test]
fn an_http_request_to_the_tcp_port_is_closed_and_runs_nothing() {
    let fx = Fixture::new();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "write", "arguments": {"path": "pwned.txt", "content": "x"}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{TOKEN}\n{call}\n",
        call.len()
    );
    let server = Server::start_tcp(&fx.root(), &[], Some(request.as_bytes()));
    assert_eq!(server.recv_or_closed(), None, "closed without an answer");
    assert!(!fx.root().join("pwned.txt").exists(), "nothing ran");
}
