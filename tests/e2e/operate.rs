//! Operating Cordon: a real Prometheus (Debian's `prometheus`, started here
//! on loopback) scrapes `/metrics` and finds what a session did; `promtool`
//! accepts the exposition; labels stay bounded however many paths are asked
//! for; `/readyz` follows the handle store (a real Redis) while `/healthz`
//! stays up, and waits for the tools to compile and for a failing audit log;
//! `--log-format json` writes one JSON object a line.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::handles::Redis;
use crate::support::{Fixture, poll, request, spawn_listening};
use crate::teams::Client;

/// The hostile test component: `{"behaviour": "loop"}` runs until stopped.
const HOSTILE: &str = env!("CORDON_HOSTILE_COMPONENT");

/// `prometheus` (or `promtool`, from the same package): in
/// `CORDON_TEST_PROMETHEUS_DIR`, else on the PATH, else installed with apt.
fn prometheus_bin(name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os("CORDON_TEST_PROMETHEUS_DIR") {
        return PathBuf::from(dir).join(name);
    }
    crate::support::debian_program(name, "prometheus", "CORDON_TEST_PROMETHEUS_DIR")
}

/// A Prometheus server on loopback scraping `target` (`host:port`) every
/// second; killed when dropped.
struct Prometheus {
    child: Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(target: &str) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        let scrape = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: cordon\n    static_configs:\n      - targets: ['{target}']\n"
        );
        std::fs::write(&config, scrape).unwrap();
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = format!("127.0.0.1:{port}");
        let child = Command::new(prometheus_bin("prometheus"))
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        Prometheus { child, addr, _dir: dir }
    }

    /// The value of the instant query `query` (the first series), once it is
    /// at least `at_least`, waiting up to a minute for scrapes.
    fn wait_for(&self, query: &str, at_least: f64) -> f64 {
        let path = format!("/api/v1/query?query={}", url_encode(query));
        let seen = || {
            std::net::TcpStream::connect(&self.addr).ok().and_then(|_| {
                let response = request(&self.addr, "GET", &path, &[], b"");
                let body: Value = serde_json::from_slice(&response.body).ok()?;
                body["data"]["result"][0]["value"][1].as_str()?.parse::<f64>().ok()
            })
        };
        let never = || format!("Prometheus never saw {query} ≥ {at_least} (last: {:?})", seen());
        poll(Duration::from_secs(60), Duration::from_millis(500), never, || seen().filter(|v| *v >= at_least))
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `text` for a URL's query.
fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The exposition the server at `addr` serves now.
fn scrape(addr: &str) -> String {
    let response = request(addr, "GET", "/metrics", &[], b"");
    assert_eq!(response.status, 200);
    assert!(response.header("content-type").is_some_and(|t| t.starts_with("text/plain; version=0.0.4")));
    String::from_utf8(response.body).unwrap()
}

/// How many series an exposition holds.
fn series(text: &str) -> usize {
    text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).count()
}

#[test]
fn prometheus_scrapes_what_a_session_did_and_labels_stay_bounded() {
    let fx = Fixture::new();
    let big: String = (0..3000).map(|i| format!("needle {i}\n")).collect();
    fx.write("big.txt", &big);
    let tools = tempfile::tempdir().unwrap();
    let tools_dir = tools.path().to_str().unwrap();
    let flags = ["--no-audit", "--component", HOSTILE, "--timeout-secs", "1", "--tools-dir", tools_dir];
    let server = spawn_listening(&fx.root(), &["--http", "127.0.0.1:0"], &flags);
    let addr = server.addr.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    let prometheus = Prometheus::start(&addr);
    let mut client = Client::new(&addr, None, true);
    for _ in 0..3 {
        assert_eq!(client.call("read", json!({"path": "hello.txt"}))["result"]["isError"], false);
    }
    let outside = client.call("read", json!({"path": fx.outside()}));
    assert_eq!(outside["result"]["isError"], true, "{outside}");
    assert!(client.call("nope", json!({})).get("error").is_some());
    let page = client.call("grep", json!({"pattern": "needle", "max_tokens": 200}));
    assert!(page["result"]["_meta"]["cordon/page"]["handle"].is_string(), "a paged grep left unfinished: {page}");
    let stopped = client.call("hostile", json!({"behaviour": "loop"}));
    assert_eq!(stopped["result"]["_meta"]["cordon/error"]["code"], "timeout", "{stopped}");
    // A tool installed while serving: the server reloads its tools.
    let added = crate::tools::tool_cmd(tools.path(), &["tool", "add", crate::tools::RUST_EXAMPLE]);
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
    let exposition = scrape(&addr);
    let checked = Command::new(prometheus_bin("promtool"))
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(exposition.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    let said = String::from_utf8_lossy(&checked.stdout).to_string() + &String::from_utf8_lossy(&checked.stderr);
    assert!(checked.status.success(), "promtool check metrics: {said}\n{exposition}");
    assert!(exposition.contains("cordon_parked_streams 1\n"), "{exposition}");
    assert_eq!(prometheus.wait_for(r#"cordon_calls_total{tool="read",outcome="ok"}"#, 3.0), 3.0);
    prometheus.wait_for(r#"cordon_calls_total{tool="read",outcome="tool_error"}"#, 1.0);
    prometheus.wait_for(r#"cordon_calls_total{tool="(unknown)",outcome="refused",code="not_found"}"#, 1.0);
    prometheus.wait_for(r#"cordon_pages_total{form="text"}"#, 4.0);
    prometheus.wait_for(r#"sum(cordon_call_duration_seconds_count{tool="grep"})"#, 1.0);
    prometheus.wait_for(r#"cordon_requests_total{transport="http",era="2026-07-28"}"#, 6.0);
    prometheus.wait_for("cordon_process_open_fds", 1.0);
    prometheus.wait_for(r#"cordon_calls_total{tool="hostile",outcome="timeout",code="timeout"}"#, 1.0);
    prometheus.wait_for(r#"cordon_tool_reloads_total{result="changed"}"#, 1.0);
    prometheus.wait_for("cordon_tools", 11.0);
    // Distinct paths and made-up tool names add no series (once each kind of
    // call has made its own).
    let _ = client.call("read", json!({"path": "missing.txt"}));
    let _ = client.call("made-up", json!({}));
    let before = series(&scrape(&addr));
    for i in 0..10_000 {
        let (tool, path) =
            if i % 2 == 0 { ("read", format!("missing-{i}.txt")) } else { ("made-up-{i}", String::new()) };
        let tool = tool.replace("{i}", &i.to_string());
        let _ = client.call(&tool, json!({"path": path}));
    }
    let after = scrape(&addr);
    assert_eq!(series(&after), before, "10,000 calls with distinct paths and names added series:\n{after}");
    assert!(!after.contains("missing-") && !after.contains("made-up-"), "no path or name becomes a label");
}

/// The status and JSON body of `GET path` at `addr`.
fn status(addr: &str, path: &str) -> (u16, Value) {
    let response = request(addr, "GET", path, &[], b"");
    (response.status, serde_json::from_slice::<Value>(&response.body).unwrap_or(Value::Null))
}

/// The body of `GET path` once it answers `want` (two minutes at most).
fn until(addr: &str, path: &str, want: u16) -> Value {
    let stayed = || format!("{path} stayed {:?}", status(addr, path));
    let answered = || Some(status(addr, path)).filter(|(code, _)| *code == want).map(|(_, body)| body);
    poll(Duration::from_secs(120), Duration::from_millis(200), stayed, answered)
}

#[test]
fn readiness_needs_no_compile_of_the_built_in_tools_and_waits_for_a_failing_audit_log() {
    let fx = Fixture::new();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    // No compile cache: the built-in tools load from the artifacts compiled
    // with the binary, so the first probe finds the server ready (a tool whose
    // artifact does not fit the engine is compiled first: registry's tests).
    let flags = ["--no-cache", "--audit-log", log.to_str().unwrap()];
    let server = spawn_listening(&fx.root(), &["--http", "127.0.0.1:0"], &flags);
    let addr = server.addr.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    let (code, first) = status(&addr, "/readyz");
    assert_eq!((code, first["status"].as_str()), (200, Some("ready")), "{first}");
    assert_eq!(status(&addr, "/healthz").0, 200);

    // The audit log can no longer be appended to (as on a full disk): failing
    // closed, a call is refused and the server is not ready until it can be.
    let mut client = Client::new(&addr, None, true);
    assert_eq!(client.call("read", json!({"path": "hello.txt"}))["result"]["isError"], false);
    std::fs::remove_file(&log).unwrap();
    std::fs::create_dir(&log).unwrap();
    let refused = client.call("read", json!({"path": "hello.txt"}));
    assert_eq!(refused["error"]["data"]["error"], "audit_unavailable", "{refused}");
    for _ in 0..3 {
        // Asked again and again (past the calls' retry wait), it stays unready.
        let (code, body) = status(&addr, "/readyz");
        assert_eq!((code, body["reason"].as_str()), (503, Some("audit_unavailable")), "{body}");
        std::thread::sleep(Duration::from_millis(600));
    }
    std::fs::remove_dir(&log).unwrap();
    // Ready again with no call made: the probe itself finds the file writable.
    until(&addr, "/readyz", 200);
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(client.call("read", json!({"path": "hello.txt"}))["result"]["isError"], false);
}

#[test]
fn readiness_follows_the_handle_store_while_liveness_stays_up() {
    let fx = Fixture::new();
    let mut redis = Redis::start();
    let store = redis.url();
    let server = spawn_listening(&fx.root(), &["--http", "127.0.0.1:0"], &["--no-audit", "--handle-store", &store]);
    let addr = server.addr.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    let status = |path: &str| status(&addr, path);
    let until = |path: &str, want: u16| until(&addr, path, want);
    until("/readyz", 200);
    redis.stop();
    let down = until("/readyz", 503);
    assert_eq!(down["reason"], "handle_store_unreachable", "{down}");
    assert_eq!(status("/healthz").0, 200, "the process still answers");
    redis.restart();
    assert_eq!(until("/readyz", 200)["status"], "ready");
}

#[test]
fn json_logs_are_one_object_a_line() {
    let fx = Fixture::new();
    let server = spawn_listening(&fx.root(), &["--http", "127.0.0.1:0"], &["--no-audit", "--log-format", "json"]);
    let addr = server.addr.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    assert!(addr.starts_with("127.0.0.1:"), "the address was read from a JSON line: {addr}");
    let _ = Client::new(&addr, None, true).call("read", json!({"path": "hello.txt"}));
    let text = server.log.text();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!lines.is_empty());
    for line in lines {
        let object: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(object["level"].is_string() && object["message"].is_string(), "{object}");
    }
}

#[test]
fn a_metrics_listener_serves_any_transport() {
    let fx = Fixture::new();
    let tcp = spawn_listening(
        &fx.root(),
        &["--tcp", "127.0.0.1:0", "--token", crate::support::TOKEN],
        &["--no-audit", "--metrics", "127.0.0.1:0"],
    );
    let address = || {
        let text = tcp.log.text();
        text.split_once("metrics on http://").map(|(_, rest)| rest.split('/').next().unwrap_or_default().to_string())
    };
    let missing = || format!("no metrics address in the log:\n{}", tcp.log.text());
    let metrics = poll(Duration::from_secs(30), Duration::from_millis(50), missing, address);
    let mut session = crate::support::Server::connect_tcp(&tcp.addr, None);
    session.handshake();
    assert_eq!(
        session.request(2, "tools/call", json!({"name": "read", "arguments": {"path": "hello.txt"}}))["result"]["isError"],
        false
    );
    assert_eq!(request(&metrics, "GET", "/healthz", &[], b"").status, 200);
    let exposition = scrape(&metrics);
    assert!(exposition.contains(r#"cordon_calls_total{tool="read",outcome="ok",code=""} 1"#), "{exposition}");
    assert!(exposition.contains(r#"cordon_sessions_total{transport="tcp",era="2025-11-25"} 1"#), "{exposition}");
}
