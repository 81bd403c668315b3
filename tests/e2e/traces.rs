//! Traces: a real OTLP/HTTP receiver (`tests/interop/otlp_receiver.py`, on the
//! OpenTelemetry project's own protobuf definitions, `opentelemetry-proto`)
//! gets Cordon's spans. A client's `_meta.traceparent` continues its trace
//! (and an HTTP `traceparent` header, linked when both are there); each call
//! has its documented children; spans carry the MCP semantic conventions'
//! attributes and outcomes; a JSON log line inside a request has its trace
//! id; with traces off no exporter runs.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Fixture, Server, cordon_bin, http_post, initialize_params, poll, python_with_mcp, workspace};

/// The OTLP receiver, killed when dropped; every span it got, as JSON.
struct Receiver {
    child: Child,
    port: u16,
    spans: Arc<Mutex<Vec<Value>>>,
}

impl Receiver {
    fn start() -> Receiver {
        let mut child = Command::new(python_with_mcp())
            .arg(workspace().join("tests/interop/otlp_receiver.py"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the OTLP receiver");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        let port = first.strip_prefix("listening ").and_then(|p| p.trim().parse().ok());
        let Some(port) = port else {
            let _ = child.kill();
            panic!("the OTLP receiver did not start: {first:?}");
        };
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&spans);
        std::thread::spawn(move || {
            // An export's spans are shown once its `exported` line has come,
            // so a test never sees half an export; other lines at once.
            let mut export = Vec::new();
            for line in lines.map_while(Result::ok) {
                let value: Value = serde_json::from_str(&line).unwrap_or_else(|_| json!({ "unreadable": line }));
                if value.get("exported").is_some() {
                    kept.lock().unwrap().append(&mut export);
                } else if value.get("span_id").is_some() {
                    export.push(value);
                } else {
                    kept.lock().unwrap().push(value);
                }
            }
        });
        Receiver { child, port, spans }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every span of the exports received whole so far (and any line that
    /// was not a span).
    fn spans(&self) -> Vec<Value> {
        self.spans.lock().unwrap().clone()
    }

    /// The spans, once one named `name` (in trace `trace`, when given) has come (a minute at most).
    fn wait_for(&self, trace: Option<&str>, name: &str) -> Vec<Value> {
        let found = || {
            let spans = self.spans();
            let here = |s: &Value| s["name"] == name && trace.is_none_or(|t| s["trace_id"] == t);
            spans.iter().any(here).then_some(spans)
        };
        let missing = || format!("no span {name} in trace {trace:?}; received: {:#?}", self.spans());
        poll(Duration::from_secs(60), Duration::from_millis(50), missing, found)
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `cordon`, with no OpenTelemetry variable of the test's environment.
fn cordon() -> Command {
    let mut command = Command::new(cordon_bin());
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("OTEL_") {
            command.env_remove(name);
        }
    }
    command
}

/// The one span of `spans` named `name` in `trace`.
fn span<'a>(spans: &'a [Value], trace: &str, name: &str) -> &'a Value {
    let found: Vec<&Value> = spans.iter().filter(|s| s["trace_id"] == trace && s["name"] == name).collect();
    assert_eq!(found.len(), 1, "one span {name} in trace {trace}: {spans:#?}");
    found[0]
}

/// The names of `parent`'s children, sorted.
fn children(spans: &[Value], parent: &Value) -> Vec<String> {
    let mut names: Vec<String> = spans
        .iter()
        .filter(|s| s["trace_id"] == parent["trace_id"] && s["parent_span_id"] == parent["span_id"])
        .map(|s| s["name"].as_str().unwrap_or_default().to_string())
        .collect();
    names.sort();
    names
}

/// A W3C `traceparent` for a trace and span id (hex), sampled.
fn traceparent(trace: &str, span: &str) -> String {
    format!("00-{trace}-{span}-01")
}

/// The threads of process `pid`, by name.
fn thread_names(pid: u32) -> Vec<String> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    tasks.filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok()).map(|n| n.trim().into()).collect()
}

#[test]
fn a_clients_traceparent_continues_its_trace_with_the_documented_children() {
    let fx = Fixture::new();
    let big: String = (0..3000).map(|i| format!("needle {i}\n")).collect();
    fx.write("big.txt", &big);
    let receiver = Receiver::start();
    let audit = fx.dir.path().join("audit.log");
    let flags = ["--otlp-endpoint", &receiver.endpoint(), "--audit-log", audit.to_str().unwrap()];
    let mut server = Server::start_with(cordon(), &fx.root(), &flags);
    server.handshake();
    let pid = server.pid();
    // The batch exporter runs on a thread of its own (named by the SDK).
    assert!(thread_names(pid).iter().any(|n| n.starts_with("OpenTelemetry")), "{:?}", thread_names(pid));
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let meta = |span: &str| json!({ "traceparent": traceparent(trace, span), "tracestate": "rojo=1" });
    let read = json!({"name": "read", "arguments": {"path": "hello.txt"}, "_meta": meta("00f067aa0ba902b7")});
    assert_eq!(server.request(2, "tools/call", read)["result"]["isError"], false);
    let grep = json!({"name": "grep", "arguments": {"pattern": "needle", "max_tokens": 200}, "_meta": meta("00f067aa0ba902b8")});
    let paged = server.request(3, "tools/call", grep);
    assert!(paged["result"]["_meta"]["cordon/page"]["handle"].is_string(), "a paged grep: {paged}");
    let missing = json!({"name": "read", "arguments": {"path": "missing.txt"}, "_meta": meta("00f067aa0ba902b9")});
    assert_eq!(server.request(4, "tools/call", missing)["result"]["isError"], true);
    let unknown = json!({"name": "made-up", "arguments": {}, "_meta": meta("00f067aa0ba902ba")});
    assert!(server.request(5, "tools/call", unknown).get("error").is_some());
    // Closing stdin ends the server, which sends what its exporter still holds.
    assert!(server.finish(), "the server exits cleanly");
    let spans = receiver.wait_for(Some(trace), "tools/call");

    let read = spans.iter().find(|s| s["parent_span_id"] == "00f067aa0ba902b7").expect("the read's span");
    assert_eq!(read["name"], "tools/call read", "{read:#}");
    assert_eq!(read["kind"], "SPAN_KIND_SERVER");
    assert_eq!(read["status"]["code"], "STATUS_CODE_UNSET", "{read:#}");
    let attributes = &read["attributes"];
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "read"),
        ("gen_ai.operation.name", "execute_tool"),
        ("mcp.protocol.version", "2025-11-25"),
        ("jsonrpc.request.id", "2"),
        ("network.transport", "pipe"),
        ("enduser.id", "local"),
    ] {
        assert_eq!(attributes[key], value, "{key} in {attributes:#}");
    }
    assert!(attributes.get("error.type").is_none(), "{attributes:#}");
    assert_eq!(read["resource"]["service.name"], "cordon");
    // The call's steps: its page (in which the tool's arguments are validated
    // and the guest opened) and its audit record.
    assert_eq!(children(&spans, read), ["audit", "page"]);
    let page = spans.iter().find(|s| s["parent_span_id"] == read["span_id"] && s["name"] == "page").unwrap();
    assert_eq!(children(&spans, page), ["open", "validate"]);
    assert!(page["start"].as_u64() >= read["start"].as_u64() && page["end"].as_u64() <= read["end"].as_u64());

    // A model's first page of a longer result also counts the whole.
    let grep = spans.iter().find(|s| s["parent_span_id"] == "00f067aa0ba902b8").expect("the grep's span");
    assert_eq!(grep["name"], "tools/call grep");
    let page = spans.iter().find(|s| s["parent_span_id"] == grep["span_id"] && s["name"] == "page").unwrap();
    assert_eq!(children(&spans, page), ["count", "open", "validate"]);

    // The tool's error, and a request refused before any tool ran.
    let failed = spans.iter().find(|s| s["parent_span_id"] == "00f067aa0ba902b9").expect("the failed read's span");
    assert_eq!(failed["attributes"]["error.type"], "tool_error", "{failed:#}");
    assert_eq!(failed["attributes"]["cordon.tool_error.code"], "not_found");
    assert_eq!(failed["status"]["code"], "STATUS_CODE_ERROR");
    let refused = spans.iter().find(|s| s["parent_span_id"] == "00f067aa0ba902ba").expect("the refused call's span");
    assert_eq!(refused["name"], "tools/call", "a made-up name never names a span: {refused:#}");
    assert_eq!(refused["attributes"]["error.type"], "-32602");
    assert_eq!(refused["attributes"]["rpc.response.status_code"], "-32602");
    assert_eq!(refused["status"]["code"], "STATUS_CODE_ERROR");
    assert!(refused["status"]["message"].as_str().is_some_and(|m| m.contains("made-up")), "{refused:#}");
    assert!(refused["attributes"].get("gen_ai.tool.name").is_none());

    // A request without a traceparent starts a trace of its own.
    let initialize = spans.iter().find(|s| s["name"] == "initialize").expect("the initialize span");
    assert_eq!(initialize["parent_span_id"], "");
    assert_ne!(initialize["trace_id"], trace);
    assert!(spans.iter().all(|s| s.get("refused").is_none() && s.get("unreadable").is_none()), "{spans:#?}");
}

#[test]
fn an_http_traceparent_continues_a_trace_and_json_logs_carry_its_id() {
    let fx = Fixture::new();
    let receiver = Receiver::start();
    let endpoint = receiver.endpoint();
    let flags = ["--no-audit", "--log-format", "json", "--otlp-endpoint", &endpoint];
    let server = crate::support::spawn_listening(&fx.root(), &["--http", "127.0.0.1:0"], &flags);
    let addr = server.addr.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    let (header_trace, meta_trace) = ("0af7651916cd43dd8448eb211c80319c", "1bf7651916cd43dd8448eb211c80319d");
    let header = ("traceparent", traceparent(header_trace, "b7ad6b7169203331"));
    let initialize =
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params("2025-11-25")});
    let response = http_post(&addr, std::slice::from_ref(&header), initialize.to_string().as_bytes());
    assert_eq!(response.status, 200);
    let session = response.header("mcp-session-id").expect("a session").to_string();
    // Both: `_meta` is the parent, the HTTP request's context a link.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "read", "arguments": {"path": "hello.txt"},
        "_meta": {"traceparent": traceparent(meta_trace, "c7ad6b7169203332")},
    }});
    let headers =
        [header.clone(), ("Mcp-Session-Id", session.clone()), ("MCP-Protocol-Version", "2025-11-25".to_string())];
    assert_eq!(http_post(&addr, &headers, call.to_string().as_bytes()).status, 200);

    let spans = receiver.wait_for(Some(header_trace), "initialize");
    let initialize = span(&spans, header_trace, "initialize");
    assert_eq!(initialize["parent_span_id"], "b7ad6b7169203331");
    assert_eq!(initialize["attributes"]["network.protocol.name"], "http");
    assert_eq!(initialize["attributes"]["network.transport"], "tcp");
    assert_eq!(initialize["attributes"]["mcp.protocol.version"], "2025-11-25");
    let spans = receiver.wait_for(Some(meta_trace), "tools/call read");
    let read = span(&spans, meta_trace, "tools/call read");
    assert_eq!(read["parent_span_id"], "c7ad6b7169203332");
    assert_eq!(read["links"], json!([{"trace_id": header_trace, "span_id": "b7ad6b7169203331"}]));
    assert_eq!(read["attributes"]["mcp.session.id"], session.as_str());

    // The JSON log line `initialize` wrote inside its request names its trace.
    let log = server.log.text();
    let line = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["message"] == "initialize")
        .unwrap_or_else(|| panic!("no initialize line in:\n{log}"));
    assert_eq!(line["trace_id"], header_trace, "{line}");
    assert_eq!(line["span_id"], initialize["span_id"], "{line}");
    let outside = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["message"].as_str().is_some_and(|m| m.contains("listening on")));
    assert!(outside.is_some_and(|l| l.get("trace_id").is_none()), "a line outside any request has no trace id");
}

#[test]
fn with_traces_off_no_exporter_runs_and_nothing_is_sent() {
    let fx = Fixture::new();
    let receiver = Receiver::start();
    // The receiver is there, but nothing names it: no flag, no OTEL_ variable.
    let mut server = Server::start_with(cordon(), &fx.root(), &["--no-audit"]);
    server.handshake();
    let read = json!({"name": "read", "arguments": {"path": "hello.txt"},
        "_meta": {"traceparent": traceparent("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")}});
    assert_eq!(server.request(2, "tools/call", read)["result"]["isError"], false);
    let threads = thread_names(server.pid());
    assert!(!threads.iter().any(|n| n.starts_with("OpenTelemetry")), "{threads:?}");
    assert!(server.finish());
    // Disabled by the standard variable, even with an endpoint named.
    let mut disabled = cordon();
    disabled.env("OTEL_SDK_DISABLED", "true").env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint());
    let mut server = Server::start_with(disabled, &fx.root(), &["--no-audit"]);
    server.handshake();
    assert!(!thread_names(server.pid()).iter().any(|n| n.starts_with("OpenTelemetry")));
    assert!(server.finish());
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(receiver.spans(), Vec::<Value>::new());
}

#[test]
fn the_standard_variable_turns_traces_on_and_a_bad_endpoint_is_refused_at_start() {
    let fx = Fixture::new();
    let receiver = Receiver::start();
    let mut command = cordon();
    command.env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint()).env("OTEL_SERVICE_NAME", "files-a");
    let mut server = Server::start_with(command, &fx.root(), &["--no-audit"]);
    server.handshake();
    assert!(server.finish());
    let spans = receiver.wait_for(None, "initialize");
    assert!(spans.iter().all(|s| s["resource"]["service.name"] == "files-a"), "{spans:#?}");
    let refused = cordon()
        .args(["serve", "--root"])
        .arg(fx.root())
        .args(["--otlp-endpoint", "not a url"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("OTLP trace exporter could not be set up"), "{said}");
}
