//! MCP over stdio: the lifecycle, listing, reading, and a session that survives
//! bad input.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{
    Fixture, Server, cordon_bin, initialize_params, json_form, payload, run_bounded, shared_state_dir, text,
};

#[test]
fn initialize_list_and_read_returns_the_files_exact_bytes() {
    let fx = Fixture::new();
    let content = "naïve 日本語 🎉\r\ncrlf line\r\n\ttabs and \"quotes\" \\ and \u{1}\nno final newline";
    let path = fx.write("exact.txt", content);
    let mut server = Server::initialized(&fx.root(), &[]);

    let listed = server.request(1, "tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap();
    let read = tools.iter().find(|t| t["name"] == "read").expect("read is listed");
    assert!(read["inputSchema"].get("required").is_none(), "a cursor alone continues: {read}");
    let cursor = read["inputSchema"]["properties"]["cursor"]["description"].as_str().unwrap();
    assert!(cursor.ends_with("Without it, `path` is required."), "{cursor}");
    let without = server.call(9, "read", json!({}));
    assert_eq!(without["_meta"]["cordon/error"]["code"], "invalid_argument", "still required: {without}");
    assert!(read.get("outputSchema").is_none(), "no outputSchema: clients would hand their model JSON");
    assert_eq!(read["annotations"]["readOnlyHint"], true);

    let result = server.call(2, "read", json!({"format": "json", "path": "exact.txt"}));
    assert_eq!(result["isError"], false);
    assert_eq!(text(&result), content, "the text is the file's bytes, exactly");
    let meta = &result["structuredContent"];
    assert!(
        meta["path"].as_str().is_some_and(|p| p.ends_with("/exact.txt")),
        "the absolute path, for programs: {meta}"
    );
    assert_eq!(meta["size"], content.len());
    assert_eq!((meta["start_line"].clone(), meta["end_line"].clone()), (json!(1), json!(4)));

    // An absolute path inside the root works the same.
    let again = server.call(3, "read", json!({"format": "json", "path": path}));
    assert_eq!(text(&again), content);
    assert!(server.finish(), "cordon exits 0 when stdin closes");
}

#[test]
fn line_ranges_return_just_those_lines_with_their_numbers() {
    let fx = Fixture::new();
    let lines: String = (1..=100).map(|i| format!("line {i}\n")).collect();
    fx.write("lines.txt", &lines);
    let mut server = Server::initialized(&fx.root(), &[]);
    let result =
        server.call(1, "read", json!({"format": "json", "path": "lines.txt", "start_line": 10, "end_line": 12}));
    assert_eq!(text(&result), "line 10\nline 11\nline 12\n");
    assert_eq!(result["structuredContent"]["start_line"], 10);
    assert_eq!(result["structuredContent"]["end_line"], 12);
    let past = server.call(2, "read", json!({"format": "json", "path": "lines.txt", "start_line": 101}));
    assert_eq!(past["isError"], true);
    assert_eq!(past["_meta"]["cordon/error"]["code"], "invalid_argument");
    assert!(text(&past).contains("has 100 lines"), "{past}");
}

#[test]
fn malformed_line_gets_parse_error_and_the_session_goes_on() {
    let fx = Fixture::new();
    let mut server = Server::initialized(&fx.root(), &[]);
    server.send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \n");
    let error = server.recv();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert_eq!(error["id"], Value::Null);
    let result = server.call(2, "read", json!({"format": "json", "path": "hello.txt"}));
    assert_eq!(text(&result), "hello\nworld\n");
}

#[test]
fn invalid_utf8_and_invalid_requests_are_answered_and_the_session_goes_on() {
    let fx = Fixture::new();
    let mut server = Server::initialized(&fx.root(), &[]);
    server.send_raw(b"\xff\xfe{}\n");
    assert_eq!(server.recv()["error"]["code"], -32700);
    server.send_raw(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\n");
    assert_eq!(server.recv()["error"]["code"], -32600);
    server.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":42}\n");
    let reply = server.recv();
    assert_eq!((reply["error"]["code"].clone(), reply["id"].clone()), (json!(-32600), json!(9)));
    assert_eq!(server.request(10, "ping", json!({}))["result"], json!({}));
}

#[test]
fn unknown_methods_get_32601_and_notifications_get_no_answer() {
    let fx = Fixture::new();
    let mut server = Server::initialized(&fx.root(), &[]);
    server.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/whatever"}));
    server.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}));
    // The next line is the answer to this request, so the notifications got none.
    let reply = server.request("s-1", "sampling/whatever", json!({}));
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
    assert_eq!(reply["id"], "s-1", "string ids are echoed as strings");
    let reply = server.request(7.0, "ping", json!({}));
    assert_eq!(reply["result"], json!({}));
}

#[test]
fn requests_before_initialize_are_refused_except_ping() {
    let fx = Fixture::new();
    let mut server = Server::start(&fx.root(), &[]);
    assert_eq!(server.request(1, "ping", json!({}))["result"], json!({}));
    let early = server.request(2, "tools/list", json!({}));
    assert_eq!(early["error"]["code"], -32002, "{early}");
    assert_eq!(
        server.request(3, "initialize", initialize_params("2025-11-25"))["result"]["serverInfo"]["name"],
        "cordon"
    );
    assert!(server.request(4, "tools/list", json!({}))["result"]["tools"].is_array());
}

#[test]
fn older_protocol_versions_are_negotiated_without_structured_content() {
    let fx = Fixture::new();
    let mut server = Server::start(&fx.root(), &[]);
    let init = server.request(1, "initialize", initialize_params("2024-11-05"));
    assert_eq!(init["result"]["protocolVersion"], "2024-11-05");
    let listed = server.request(2, "tools/list", json!({}));
    assert!(listed["result"]["tools"][0].get("outputSchema").is_none());
    let result = server.call(3, "read", json!({"format": "json", "path": "hello.txt"}));
    assert!(result.get("structuredContent").is_none());
    assert_eq!(json_form(&result)["text"], "hello\nworld\n", "the JSON, as text only: {result}");

    let mut newer = Server::start(&fx.root(), &[]);
    let init = newer.request(1, "initialize", initialize_params("2099-01-01"));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "an unknown version gets the latest");
}

#[test]
fn an_over_long_line_is_discarded_with_a_structured_error_and_the_session_goes_on() {
    let fx = Fixture::new();
    let mut server = Server::initialized(&fx.root(), &["--max-line-bytes", "4096"]);
    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}\n",
        "x".repeat(100_000)
    );
    server.send_raw(huge.as_bytes());
    let error = server.recv();
    assert_eq!(error["error"]["data"]["error"], "payload_too_large", "{error}");
    assert_eq!(error["error"]["data"]["limit_bytes"], 4096);
    assert!(error["error"]["data"]["observed_bytes"].as_u64().unwrap() >= 100_000);
    assert_eq!(server.request(2, "ping", json!({}))["result"], json!({}));
}

#[test]
fn non_utf8_bytes_come_back_losslessly_as_a_blob_in_the_json_form() {
    let fx = Fixture::new();
    fx.write("mixed.bin", b"text\n\xff\xfe\x00raw");
    let mut server = Server::initialized(&fx.root(), &[]);
    let result = server.call(1, "read", json!({"format": "json", "path": "mixed.bin"}));
    assert_eq!(json_form(&result)["base64"], "dGV4dAr//gByYXc=", "every byte, base64, in one field: {result}");
    assert_eq!(payload(&result), b"text\n\xff\xfe\x00raw");
    let shown = server.call(2, "read", json!({"path": "mixed.bin"}));
    assert!(text(&shown).starts_with("mixed.bin is a binary file"), "the text form describes it: {shown}");
}

#[test]
fn schema_violations_are_tool_errors_and_unknown_tools_protocol_errors() {
    let fx = Fixture::new();
    let mut server = Server::initialized(&fx.root(), &[]);
    let bad = server.call(1, "read", json!({"format": "json", "path": 5}));
    assert_eq!(bad["isError"], true);
    assert_eq!(bad["_meta"]["cordon/error"]["code"], "invalid_argument");
    let missing = server.call(2, "read", json!({"format": "json"}));
    assert!(text(&missing).contains("path"), "{missing}");
    let unknown = server.request(3, "tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(unknown["error"]["code"], -32602);
}

#[test]
fn a_call_past_its_time_limit_is_stopped_and_the_session_goes_on() {
    let fx = Fixture::new();
    fx.write("large.txt", "all work and no play\n".repeat(2_000_000));
    let huge_pages = [
        "--timeout-secs",
        "0.001",
        "--page-tokens",
        "20000000",
        "--max-page-tokens",
        "20000000",
        "--file-page-tokens",
        "20000000",
        "--file-page-lines",
        "10000",
    ];
    let mut server = Server::initialized(&fx.root(), &huge_pages);
    let result = server.call(1, "read", json!({"format": "json", "path": "large.txt"}));
    assert_eq!(result["isError"], true, "{}", &result.to_string()[..200.min(result.to_string().len())]);
    assert_eq!(result["_meta"]["cordon/error"]["code"], "timeout");
    assert_eq!(server.request(2, "ping", json!({}))["result"], json!({}));
}

#[test]
fn guest_stdout_and_stderr_never_reach_the_protocol_stream() {
    let fx = Fixture::new();
    let fixture = env!("CORDON_FIXTURE_COMPONENT");
    let mut server = Server::initialized(&fx.root(), &["--component", fixture]);
    // Every line cordon writes is parsed as JSON by `recv`: guest output would fail it.
    let result = server.call(1, "fixture", json!({"count": 3, "chatter": 500}));
    assert_eq!(result["isError"], false, "{result}");
    assert!(!result.to_string().contains("guest stdout"));
    assert_eq!(server.request(2, "ping", json!({}))["result"], json!({}));
    assert!(server.finish());
}

#[test]
fn a_socket_pair_as_stdin_and_stdout_is_served_as_pipes_are() {
    let fx = Fixture::new();
    let mut server = Server::start_on_socket(&fx.root(), &[]);
    server.handshake();
    for id in 1..=3 {
        let result = server.call(id, "read", json!({"format": "json", "path": "hello.txt"}));
        assert_eq!(text(&result), "hello\nworld\n", "{result}");
    }
    assert!(server.finish(), "cordon exits 0 when its input ends");
}

#[test]
fn requests_read_from_a_file_are_answered_into_a_file() {
    let fx = Fixture::new();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize_params("2025-11-25")}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "read", "arguments": {"format": "json", "path": "hello.txt"}}}),
    ];
    let (input, output) = (fx.dir.path().join("requests.jsonl"), fx.dir.path().join("answers.jsonl"));
    std::fs::write(&input, requests.iter().map(|r| format!("{r}\n")).collect::<String>()).unwrap();
    let mut command = Command::new("sh");
    command.args(["-c", r#"exec "$0" serve --root "$1" --state-dir "$2" < "$3" > "$4""#]).arg(cordon_bin());
    command.arg(fx.root()).arg(shared_state_dir()).arg(&input).arg(&output);
    let (status, _, stderr) = run_bounded(command, Duration::from_secs(120));
    assert!(status.is_some_and(|s| s.success()), "{status:?}: {}", String::from_utf8_lossy(&stderr));
    let answers: Vec<Value> =
        std::fs::read_to_string(&output).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(answers[0]["result"]["protocolVersion"], "2025-11-25", "{answers:?}");
    assert_eq!(text(&answers[1]["result"]), "hello\nworld\n", "{answers:?}");
}
