//! Tools that use the network (`--grant net:URL`): a granted loopback API
//! answers; an ungranted host, another port, a redirect out of the grants, a
//! name that resolves to loopback, an address literal outside the grants are
//! refused with an error naming what is missing, and a second server counts
//! the connections it got: none. Per-call request, byte and time limits stop
//! a tool that loops, and the server goes on. A component importing
//! `wasi:sockets` does not load, unless installed with its sockets stubbed.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::support::{Fixture, HELLO, Server, WebServer, cordon_bin, payload};

const HOSTILE: &str = env!("CORDON_HOSTILE_COMPONENT");
const HTTP_GET: &str = env!("CORDON_EXAMPLE_HTTP_GET_COMPONENT");
const SOCKETS: &str = env!("CORDON_SOCKETS_COMPONENT");

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A state directory with its tools directory and audit log, and `cordon`
/// commands that use them.
struct State {
    dir: tempfile::TempDir,
}

impl State {
    fn new() -> State {
        State { dir: tempfile::tempdir().unwrap() }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(cordon_bin());
        command.args(args).args(self.flags());
        command
    }

    fn flags(&self) -> Vec<String> {
        let path = |p: &Path| p.to_str().unwrap().to_string();
        let dir = self.dir.path();
        [
            "--tools-dir",
            &path(&dir.join("tools")),
            "--state-dir",
            &path(dir),
            "--audit-log",
            &path(&dir.join("audit.log")),
        ]
        .map(String::from)
        .to_vec()
    }

    fn add(&self, component: &str, grants: &[String]) -> Output {
        let mut args = vec!["tool", "add", component];
        for grant in grants {
            args.extend(["--grant", grant]);
        }
        self.command(&args).output().unwrap()
    }

    fn serve(&self, root: &Path, extra: &[&str]) -> Server {
        let flags = self.flags();
        let mut all: Vec<&str> = flags.iter().map(String::as_str).collect();
        all.extend(extra);
        Server::initialized(root, &all)
    }

    fn audit(&self) -> Vec<Value> {
        let log = std::fs::read_to_string(self.dir.path().join("audit.log")).unwrap_or_default();
        log.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }
}

fn error_of(reply: &Value) -> (String, String) {
    let error = &reply["_meta"]["cordon/error"];
    (error["code"].as_str().unwrap_or_default().to_string(), error["message"].as_str().unwrap_or_default().to_string())
}

#[test]
fn a_granted_api_answers_and_nothing_outside_the_grants_is_reached() {
    let fx = Fixture::new();
    let (api, other) = (WebServer::start(), WebServer::start());
    let state = State::new();
    let grants = [format!("net:{}", api.url("")), format!("net:http://localhost:{}", other.port)];
    for component in [HOSTILE, HTTP_GET] {
        let added = state.add(component, &grants);
        assert!(added.status.success(), "{}", text(&added));
        assert!(text(&added).contains(&format!("net:http://127.0.0.1:{}", api.port)), "{}", text(&added));
    }
    let mut server = state.serve(&fx.root(), &[]);

    // The granted API answers, to the test tool and to the example.
    let fetched = server.call(2, "hostile", json!({"behaviour": "fetch", "url": api.url("/hello"), "format": "json"}));
    assert_eq!(fetched["structuredContent"]["fetched"], json!({"status": 200, "bytes": HELLO.len()}), "{fetched}");
    let got = server.call(3, "http_get", json!({"url": api.url("/hello")}));
    assert_eq!(got["isError"], false, "{got}");
    assert_eq!(String::from_utf8(payload(&got)).unwrap(), HELLO, "{got}");
    let got = server.call(4, "http_get", json!({"url": api.url("/hello"), "format": "json"}));
    assert_eq!(got["structuredContent"]["status"], 200, "{got}");
    let before = api.connections();
    assert!(before >= 3, "{before}");

    // Each refused with the missing grant named; nothing reaches `other`.
    let refused = [
        (other.url("/hello"), format!("net:http://127.0.0.1:{}", other.port)),
        (format!("http://127.0.0.1:{}/hello", api.port + 1), "no grant".to_string()),
        (format!("http://localhost:{}/hello", other.port), "resolves to".to_string()),
        ("http://169.254.169.254/latest/meta-data/".to_string(), "net:http://169.254.169.254".to_string()),
        (format!("http://[::1]:{}/hello", api.port), "no grant".to_string()),
        (format!("https://127.0.0.1:{}/hello", api.port), "net:https://127.0.0.1".to_string()),
    ];
    let mut id = 10;
    for (url, says) in &refused {
        let reply = server.call(id, "hostile", json!({"behaviour": "fetch", "url": url}));
        let (code, message) = error_of(&reply);
        assert_eq!(code, "permission_denied", "{url}: {reply}");
        assert!(message.contains("the host refused") && message.contains(says.as_str()), "{url}: {message}");
        id += 1;
    }
    // A redirect out of the grants is refused when the tool follows it.
    let bounce = api.url(&format!("/redirect?to={}", other.url("/hello")));
    let reply = server.call(id, "http_get", json!({"url": bounce}));
    let (code, message) = error_of(&reply);
    assert_eq!(code, "permission_denied", "{reply}");
    assert!(message.contains(&format!("net:http://127.0.0.1:{}", other.port)), "{message}");
    assert_eq!(other.connections(), 0, "the ungranted server was reached");
    assert!(server.finish());

    // Each request is an audit record: what was asked, never a header or a body.
    let records: Vec<Value> = state.audit().into_iter().filter(|r| r["event"] == "request").collect();
    let answered = records.iter().find(|r| r["status"] == 200 && r["tool"]["name"] == "hostile").expect("a record");
    assert_eq!(answered["host"], "127.0.0.1");
    assert_eq!(answered["port"], api.port);
    assert_eq!(answered["method"], "GET");
    assert_eq!(answered["bytes_in"], HELLO.len());
    assert!(answered["address"].as_str().unwrap().starts_with("127.0.0.1:"), "{answered}");
    let codes: Vec<&str> = records.iter().filter_map(|r| r["refused"].as_str()).collect();
    assert!(codes.contains(&"no_grant") && codes.contains(&"internal_address"), "{codes:?}");
    let whole = std::fs::read_to_string(state.dir.path().join("audit.log")).unwrap();
    assert!(!whole.contains(HELLO.trim()) && !whole.contains("/hello"), "a body or path in the trail");
}

#[test]
fn a_tool_looping_on_requests_is_stopped_by_its_limits_and_the_server_goes_on() {
    let fx = Fixture::new();
    let api = WebServer::start();
    let state = State::new();
    let added = state.add(HOSTILE, &[format!("net:{}", api.url(""))]);
    assert!(added.status.success(), "{}", text(&added));
    let limits =
        ["--max-requests", "5", "--max-net-bytes-in", "100000", "--max-net-bytes-out", "100000", "--timeout-secs", "3"];
    let mut server = state.serve(&fx.root(), &limits);

    let looped =
        server.call(2, "hostile", json!({"behaviour": "fetch-loop", "url": api.url("/hello"), "format": "json"}));
    assert_eq!(looped["structuredContent"]["requests"], 5, "{looped}");
    assert!(looped["structuredContent"]["stopped_by"].as_str().unwrap().contains("ConnectionLimitReached"), "{looped}");
    // The limit is per call: the next call may send again.
    let again = server.call(3, "hostile", json!({"behaviour": "fetch", "url": api.url("/hello"), "format": "json"}));
    assert_eq!(again["structuredContent"]["fetched"]["status"], 200, "{again}");

    let big = server.call(4, "hostile", json!({"behaviour": "download", "url": api.url("/bytes/1000000")}));
    let (code, message) = error_of(&big);
    assert_eq!(code, "too_large", "{big}");
    assert!(message.contains("HttpResponseBodySize"), "{message}");
    let upload =
        server.call(5, "hostile", json!({"behaviour": "upload", "url": api.url("/upload"), "bytes": 1_000_000}));
    assert_eq!(upload["isError"], true, "{upload}");
    let small = server.call(
        6,
        "hostile",
        json!({"behaviour": "upload", "url": api.url("/upload"), "bytes": 1000, "format": "json"}),
    );
    assert_eq!(small["structuredContent"]["uploaded"]["status"], 200, "{small}");

    // A body that never ends is cut at the call's deadline.
    let slow = server.call(7, "hostile", json!({"behaviour": "download", "url": api.url("/slow")}));
    assert_eq!(slow["isError"], true, "{slow}");
    let after = server.call(8, "hostile", json!({"behaviour": "fetch", "url": api.url("/hello"), "format": "json"}));
    assert_eq!(after["structuredContent"]["fetched"]["status"], 200, "the server goes on: {after}");
    assert!(server.finish());
}

#[test]
fn a_component_importing_sockets_is_refused_unless_installed_with_them_stubbed() {
    let fx = Fixture::new();
    let state = State::new();
    let refused = state.add(SOCKETS, &[]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        text(&refused).contains("imports `wasi:sockets/") && text(&refused).contains("--stub-sockets"),
        "{}",
        text(&refused)
    );
    let direct = Command::new(cordon_bin())
        .args(["call", "sockets", "--json", "{}", "--component", SOCKETS, "--root", fx.root().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!direct.status.success() && text(&direct).contains("wasi:sockets/"), "{}", text(&direct));
    let needless = state.command(&["tool", "add", HOSTILE, "--stub-sockets"]).output().unwrap();
    assert_eq!(needless.status.code(), Some(2), "{}", text(&needless));

    let stubbed = state.command(&["tool", "add", SOCKETS, "--stub-sockets"]).output().unwrap();
    assert!(stubbed.status.success(), "{}", text(&stubbed));
    assert!(text(&stubbed).contains("wasi:sockets imports stubbed"), "{}", text(&stubbed));
    let mut server = state.serve(&fx.root(), &[]);
    let tried = server.call(2, "sockets", json!({}));
    let said = String::from_utf8_lossy(&payload(&tried)).to_string() + &tried.to_string();
    assert!(said.to_lowercase().contains("denied") || said.to_lowercase().contains("not permitted"), "{tried}");
    assert!(server.finish());
}

#[test]
fn network_grants_that_are_not_scheme_host_and_port_are_refused() {
    let state = State::new();
    for bad in ["net:ftp://example.com", "net:https://example.com/path", "net:https://*.com", "net:example.com"] {
        let refused = state.add(HOSTILE, &[bad.to_string()]);
        assert_eq!(refused.status.code(), Some(2), "{bad}: {}", text(&refused));
        assert!(text(&refused).contains("net:https://HOST"), "{bad}: {}", text(&refused));
    }
    let added = state.add(HOSTILE, &["net:https://*.example.com".into(), "net:https://API.example.com:8443/".into()]);
    assert!(added.status.success(), "{}", text(&added));
    let lock = std::fs::read_to_string(state.dir.path().join("tools/cordon-tools.lock")).unwrap();
    let entry = &serde_json::from_str::<Value>(&lock).unwrap()["tools"][0];
    assert_eq!(entry["net"], json!(["https://api.example.com:8443", "https://*.example.com"]), "{lock}");
}
