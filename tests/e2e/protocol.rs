//! The protocol's harder cases: cancellation and progress of a long call,
//! hostile framing (a 1 GiB line, deep nesting, batches, null and duplicate
//! ids, bad notifications), and both eras on one stdio session.

use std::time::Instant;

use serde_json::{Value, json};

use crate::support::{Fixture, Server, initialize_params};

#[test]
fn a_cancelled_grep_stops_reports_progress_until_then_and_is_never_answered() {
    let fx = Fixture::new();
    fx.long_search_corpus(256, 8 << 20); // 2 GiB to scan: far longer than the test waits
    let mut server = Server::initialized(&fx.root(), &["--max-concurrent-calls", "1", "--timeout-secs", "600"]);
    server.send_json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "grep", "arguments": {"pattern": "absent-needle"}, "_meta": {"progressToken": "grep-1"}}}));
    let mut progress = Vec::new();
    while progress.len() < 3 {
        let note = server.recv();
        assert_eq!(note["method"], "notifications/progress", "only progress before the cancel: {note}");
        assert_eq!(note["params"]["progressToken"], "grep-1");
        assert!(note["params"]["message"].as_str().unwrap().contains("scanned"), "{note}");
        progress.push(note["params"]["progress"].as_u64().unwrap());
    }
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "progress only grows: {progress:?}");
    let cancelled = Instant::now();
    server.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                             "params": {"requestId": 1, "reason": "the user gave up"}}));
    // One call at a time: this one runs only once the grep has let go of its slot.
    server.send_json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                             "params": {"name": "read", "arguments": {"path": "hello.txt", "format": "json"}}}));
    let reply = loop {
        let message = server.recv();
        if message["method"] == "notifications/progress" {
            continue; // sent before the cancel took effect
        }
        break message;
    };
    assert_eq!(reply["id"], 2, "the cancelled call is never answered: {reply}");
    assert_eq!(crate::support::text(&reply["result"]), "hello\nworld\n");
    eprintln!("cancel → the next call answered in {:.1} ms", cancelled.elapsed().as_secs_f64() * 1000.0);
    assert_eq!(server.request(3, "ping", json!({}))["result"], json!({}));
}

#[test]
fn a_line_of_a_gibibyte_without_newline_is_dropped_in_bounded_memory() {
    let fx = Fixture::new();
    let limit = 1 << 20;
    // Every tool compiled (loaded from the cache) first: the memory measured is the line's.
    let mut server = Server::initialized(&fx.root(), &["--max-line-bytes", &limit.to_string(), "--compile-first"]);
    let before = server.peak_rss_kib();
    let block = vec![b'x'; 1 << 20];
    server.send_raw(br#"{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"write","arguments":{"path":"big","content":""#);
    for _ in 0..1024 {
        server.send_raw(&block);
    }
    server.send_raw(b"\"}}}\n");
    let reply = server.recv();
    assert_eq!(reply["id"], 77, "the id is read from the line's head: {reply}");
    assert_eq!(reply["error"]["data"]["error"], "payload_too_large");
    assert!(reply["error"]["data"]["observed_bytes"].as_u64().unwrap() > 1 << 30);
    assert_eq!(reply["error"]["data"]["use"], "upload", "the guidance names the staged write");
    let grown = server.peak_rss_kib().saturating_sub(before);
    assert!(grown < (limit as u64 >> 10) + 16 * 1024, "peak RSS grew by {grown} KiB for a 1 GiB line");
    assert_eq!(server.request(78, "ping", json!({}))["result"], json!({}), "the session goes on");
    assert!(!fx.root().join("big").exists());
}

#[test]
fn hostile_messages_each_get_the_right_answer_and_the_session_survives() {
    let fx = Fixture::new();
    let mut server = Server::initialized(&fx.root(), &[]);
    // JSON nested 100,000 deep.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    server.send_raw(format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{deep}}}\n").as_bytes());
    assert_eq!(server.recv()["error"]["code"], -32700);
    // A batch.
    server.send_raw(b"[{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]\n");
    let batch = server.recv();
    assert_eq!(batch["error"]["code"], -32600, "{batch}");
    // A null id is not a request id.
    server.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}\n");
    assert_eq!(server.recv()["error"]["code"], -32600);
    // Invalid UTF-8.
    server.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"\xff\xfe\"}\n");
    assert_eq!(server.recv()["error"]["code"], -32700);
    // Bad notifications are ignored, never answered.
    for note in [
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled"}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {"x": 1}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": 5}),
        json!({"jsonrpc": "2.0", "method": 12}),
    ] {
        server.send_json(&note);
    }
    // Scalar `params` and `method: 12` make malformed messages, not notifications:
    // each is answered, with a null id.
    for _ in 0..2 {
        let reply = server.recv();
        assert_eq!((reply["error"]["code"].clone(), reply["id"].clone()), (json!(-32600), Value::Null), "{reply}");
    }
    assert_eq!(server.request(4, "ping", json!({}))["result"], json!({}), "the session survives");
}

#[test]
fn a_duplicate_id_in_flight_is_refused_and_the_first_request_goes_on() {
    let fx = Fixture::new();
    let line = "alpha beta gamma delta epsilon zeta theta lambda sigma omega\n";
    fx.write("big.txt", line.repeat(20_000));
    let mut server = Server::initialized(&fx.root(), &["--max-concurrent-calls", "1"]);
    let call = |id: i64, path: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "read", "arguments": {"path": path, "max_tokens": 25000}}})
    };
    // The first call holds the only slot, the second waits, the third reuses its id.
    server.send_json(&call(5, "big.txt"));
    server.send_json(&call(6, "big.txt"));
    server.send_json(&call(6, "hello.txt"));
    let mut replies: Vec<Value> = (0..3).map(|_| server.recv()).collect();
    replies.sort_by_key(|r| (r["id"].as_i64(), r.get("error").is_none()));
    let refused: Vec<&Value> = replies.iter().filter(|r| r.get("error").is_some()).collect();
    assert_eq!(refused.len(), 1, "{replies:?}");
    assert_eq!(refused[0]["id"], 6);
    assert_eq!(refused[0]["error"]["code"], -32600);
    assert_eq!(replies.iter().filter(|r| r["result"]["isError"] == false).count(), 2);
}

#[test]
fn both_eras_are_served_on_one_stdio_session() {
    let fx = Fixture::new();
    let mut server = Server::start(&fx.root(), &[]);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    // A legacy request before initialize is refused at once; a stateless one needs no handshake.
    assert_eq!(server.request(1, "tools/list", json!({}))["error"]["code"], -32002);
    let discover = server.request(2, "server/discover", json!({"_meta": meta}));
    let result = &discover["result"];
    assert_eq!(result["supportedVersions"][0], "2026-07-28", "{discover}");
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "cordon");
    assert!(result["capabilities"]["tools"].is_object());
    let listed = server.request(3, "tools/list", json!({"_meta": meta}));
    assert_eq!(
        (listed["result"]["ttlMs"].clone(), listed["result"]["cacheScope"].clone()),
        (json!(0), json!("private"))
    );
    // The stateless era has no ping, no initialize, and checks its envelope.
    assert_eq!(server.request(4, "ping", json!({"_meta": meta}))["error"]["code"], -32601);
    let v999 =
        json!({"io.modelcontextprotocol/protocolVersion": "v999", "io.modelcontextprotocol/clientCapabilities": {}});
    let unsupported = server.request(5, "tools/list", json!({"_meta": v999}));
    assert_eq!(unsupported["error"]["code"], -32022);
    assert_eq!(unsupported["error"]["data"]["requested"], "v999");
    let partial = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    assert_eq!(server.request(6, "tools/list", json!({"_meta": partial}))["error"]["code"], -32602);
    // The legacy handshake still works, and logging/setLevel with it.
    let init = server.request(7, "initialize", initialize_params("2025-06-18"));
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(server.request(8, "logging/setLevel", json!({"level": "warning"}))["result"], json!({}));
    // A warning: the tool error of this call comes as a log message, then the result.
    server.send_json(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                             "params": {"name": "read", "arguments": {"path": "nope.txt", "format": "json"}}}));
    let log = server.recv();
    assert_eq!(log["method"], "notifications/message", "{log}");
    assert_eq!(log["params"]["level"], "warning");
    assert_eq!(server.recv()["result"]["isError"], true);
}
