//! Handles, the short continuations a model copies: they survive a restart,
//! replicas sharing a store (a state directory, or a real Redis server on
//! loopback) resume each other's, and a server with another store refuses
//! them with what to do.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Fixture, Server, next_cursor, page_meta, payload, run_bounded};

/// A `redis-server` on a free loopback port, stopped when dropped. It keeps
/// nothing on disk.
pub(crate) struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    /// A server on a free port (another, should a concurrent test take the
    /// one picked before this server binds it).
    pub(crate) fn start() -> Redis {
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            if let Some(redis) = Redis::start_on(port) {
                return redis;
            }
        }
        panic!("redis-server could not bind a free port in 5 tries");
    }

    /// Stops this server and starts a new one on the same port (nothing kept).
    pub(crate) fn restart(&mut self) {
        self.stop();
        let port = self.port;
        *self = Redis::start_on(port).unwrap_or_else(|| panic!("redis-server could not bind port {port} again"));
    }

    /// Stops the server (its port then refuses connections).
    pub(crate) fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// A server listening on `port`, or `None` when it exited (the port was
    /// taken): a connection that works is then never another test's server.
    fn start_on(port: u16) -> Option<Redis> {
        let binary = redis_server();
        let mut child = Command::new(&binary)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", binary.display()));
        let started = Instant::now();
        loop {
            if child.try_wait().ok().flatten().is_some() {
                return None;
            }
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                // Listening, unless it is exiting after failing to bind.
                std::thread::sleep(Duration::from_millis(50));
                if child.try_wait().ok().flatten().is_some() {
                    return None;
                }
                return Some(Redis { child, port });
            }
            assert!(started.elapsed() < Duration::from_secs(20), "redis-server did not listen on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `redis-server`: `CORDON_TEST_REDIS`, else on the PATH, else installed with apt.
fn redis_server() -> PathBuf {
    crate::support::debian_program("redis-server", "redis-server", "CORDON_TEST_REDIS")
}

fn handle_of(page: &Value) -> String {
    next_cursor(page).as_deref().unwrap_or_else(|| panic!("no handle: {page}")).to_string()
}

fn lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn a_handle_survives_a_restart_and_is_unknown_to_a_server_with_another_store() {
    let fx = Fixture::new();
    let lines: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
    fx.write("lines.txt", &lines);
    let state = tempfile::tempdir().unwrap();
    let state = state.path().to_str().unwrap();
    let key = "33".repeat(32);
    let args = ["--state-dir", state, "--cursor-key", &key];
    let mut first = Server::initialized(&fx.root(), &args);
    let page = first.call(1, "read", json!({"format": "json", "path": "lines.txt", "max_tokens": 100}));
    let handle = next_cursor(&page).unwrap().to_string();
    let expected = first.call(2, "read", json!({"format": "json", "cursor": handle, "max_tokens": 100}));
    drop(first);
    let mut restarted = Server::initialized(&fx.root(), &args);
    let again = restarted.call(3, "read", json!({"format": "json", "cursor": handle, "max_tokens": 100}));
    assert_eq!(payload(&again), payload(&expected), "the same page after a restart");
    let other_state = tempfile::tempdir().unwrap();
    let mut elsewhere =
        Server::initialized(&fx.root(), &["--state-dir", other_state.path().to_str().unwrap(), "--cursor-key", &key]);
    let reply = elsewhere.request(4, "tools/call", json!({"name": "read", "arguments": {"cursor": handle}}));
    assert_eq!(reply["error"]["data"]["reason"], "unknown_handle", "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("handle store"), "{reply}");
    let signed = page_meta(&page)["cursor"].as_str().unwrap();
    let resumed = elsewhere.call(5, "read", json!({"format": "json", "cursor": signed, "max_tokens": 100}));
    assert_eq!(payload(&resumed), payload(&expected), "the signed cursor needs only the key");
}

#[test]
fn replicas_sharing_a_redis_store_resume_each_others_handles_page_by_page() {
    let redis = Redis::start();
    let url = redis.url();
    let fx = Fixture::new();
    let text = lines(4000);
    fx.write("lines.txt", &text);
    let key = "44".repeat(32);
    let (state_a, state_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let replica = |state: &Path| {
        let state = state.to_str().unwrap();
        Server::initialized(&fx.root(), &["--state-dir", state, "--cursor-key", &key, "--handle-store", &url])
    };
    let mut replicas = [replica(state_a.path()), replica(state_b.path())];
    let mut got = Vec::new();
    let mut page = replicas[0].call(1, "read", json!({"format": "json", "path": "lines.txt", "max_tokens": 300}));
    let mut pages = 1;
    loop {
        assert_eq!(page["isError"], false, "{page}");
        got.extend(payload(&page));
        let Some(handle) = next_cursor(&page) else { break };
        assert!(handle.len() <= 64, "{handle}");
        // Every other page from the other replica, which holds neither the
        // stream nor the handle's file: only Redis knows the handle.
        let next = &mut replicas[pages % 2];
        page = next.call(pages as i64 + 1, "read", json!({"format": "json", "cursor": handle, "max_tokens": 300}));
        pages += 1;
    }
    assert!(pages >= 4, "{pages} pages");
    assert_eq!(String::from_utf8(got).unwrap(), text, "alternating replicas page the file exactly");
    let whole = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(text.as_bytes()));
    assert_eq!(page_meta(&page)["payload_sha256"], whole.as_str());

    let mut own_store = Server::initialized(&fx.root(), &["--cursor-key", &key]);
    let theirs =
        handle_of(&own_store.call(90, "read", json!({"format": "json", "path": "lines.txt", "max_tokens": 300})));
    let reply = replicas[0].request(91, "tools/call", json!({"name": "read", "arguments": {"cursor": theirs}}));
    assert_eq!(reply["error"]["data"]["reason"], "unknown_handle", "a handle from another store: {reply}");
}

#[test]
fn a_handle_store_that_cannot_be_reached_refuses_to_start() {
    let fx = Fixture::new();
    let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("redis://127.0.0.1:{closed}/0");
    let mut command = Command::new(crate::support::cordon_bin());
    command.args(["tools", "--root"]).arg(fx.root()).args(["--handle-store", &url]);
    let (status, _, err) = run_bounded(command, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&err);
    assert_eq!(status.and_then(|s| s.code()), Some(2), "{err}");
    assert!(err.contains("the handle store (--handle-store) cannot be used"), "{err}");
}

#[test]
fn cordon_call_all_follows_the_signed_cursor_and_mints_no_handles() {
    let fx = Fixture::new();
    fx.write("lines.txt", lines(3000));
    let state = tempfile::tempdir().unwrap();
    let mut command = Command::new(crate::support::cordon_bin());
    command.args(["call", "read", "--all", "--root"]).arg(fx.root()).arg("--state-dir").arg(state.path());
    command.args(["--json", r#"{"path":"lines.txt","max_tokens":200}"#]);
    let (status, out, err) = run_bounded(command, Duration::from_secs(120));
    assert!(status.is_some_and(|s| s.success()), "{}", String::from_utf8_lossy(&err));
    assert_eq!(String::from_utf8(out).unwrap(), lines(3000));
    let minted = std::fs::read_dir(state.path().join("handles")).unwrap().count();
    assert_eq!(minted, 0, "a program following cursors needs no handles");
}

#[test]
fn a_handle_store_lost_between_pages_is_a_server_error_naming_the_signed_cursor() {
    let redis = Redis::start();
    let fx = Fixture::new();
    fx.write("lines.txt", lines(3000));
    let mut server = Server::initialized(&fx.root(), &["--handle-store", &redis.url()]);
    let first = server.call(1, "read", json!({"format": "json", "path": "lines.txt", "max_tokens": 100}));
    let handle = handle_of(&first);
    drop(redis);
    let reply = server.request(2, "tools/call", json!({"name": "read", "arguments": {"cursor": handle}}));
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("handle store could not be read") && message.contains("cursor"), "{reply}");
    let signed = page_meta(&first)["cursor"].as_str().unwrap();
    let second = server.call(3, "read", json!({"format": "json", "cursor": signed, "max_tokens": 100}));
    assert_eq!(second["isError"], false, "the signed cursor needs no store: {second}");
}

/// Replays the handle of a second page `times` times from `server`; each
/// replay answers the same page with the same next handle.
fn replay(server: &mut Server, handle: &str, times: i64) -> String {
    let first = server.call(100, "read", json!({"format": "json", "cursor": handle, "max_tokens": 100}));
    let next = handle_of(&first);
    for id in 0..times {
        let again = server.call(101 + id, "read", json!({"format": "json", "cursor": handle, "max_tokens": 100}));
        assert_eq!(payload(&again), payload(&first), "a replay answers the same page");
        assert_eq!(handle_of(&again), next, "and the same next handle");
    }
    next
}

#[test]
fn replaying_a_handle_does_not_grow_the_state_directory() {
    let fx = Fixture::new();
    fx.write("lines.txt", lines(3000));
    let state = tempfile::tempdir().unwrap();
    let mut server = Server::initialized(&fx.root(), &["--state-dir", state.path().to_str().unwrap()]);
    let handle = handle_of(&server.call(1, "read", json!({"format": "json", "path": "lines.txt", "max_tokens": 100})));
    let stream = handle.trim_start_matches("h1_").split('.').next().unwrap().to_string();
    let file = state.path().join("handles").join(&stream);
    replay(&mut server, &handle, 1);
    let size = std::fs::metadata(&file).unwrap().len();
    replay(&mut server, &handle, 60);
    assert_eq!(std::fs::metadata(&file).unwrap().len(), size, "60 replays append nothing");
    assert_eq!(std::fs::read_dir(state.path().join("handles")).unwrap().count(), 1, "nor add a file");
}

#[test]
fn a_redis_store_holds_each_page_once_and_evicts_the_oldest_results_past_its_cap() {
    let redis = Redis::start();
    let fx = Fixture::new();
    fx.write("lines.txt", lines(3000));
    let mut server = Server::initialized(&fx.root(), &["--handle-store", &redis.url(), "--max-handle-results", "3"]);
    let mut peek = redis::Client::open(redis.url()).unwrap().get_connection().unwrap();
    let handle = handle_of(&server.call(1, "read", json!({"format": "json", "path": "lines.txt", "max_tokens": 100})));
    let stream = handle.trim_start_matches("h1_").split('.').next().unwrap().to_string();
    let key = format!("cordon:result:{stream}");
    replay(&mut server, &handle, 1);
    let held = |peek: &mut redis::Connection| -> (u64, u64) {
        let fields: u64 = redis::cmd("HLEN").arg(&key).query(peek).unwrap();
        let bytes: u64 = redis::cmd("MEMORY").arg("USAGE").arg(&key).query(peek).unwrap();
        (fields, bytes)
    };
    let before = held(&mut peek);
    replay(&mut server, &handle, 60);
    assert_eq!(held(&mut peek), before, "60 replays write nothing");
    // Four more results: only the three written last are kept, the first is evicted.
    for id in 0..4 {
        let path = format!("copy{id}.txt");
        fx.write(&path, lines(3000));
        handle_of(&server.call(300 + id, "read", json!({"format": "json", "path": path, "max_tokens": 100})));
    }
    let results: u64 = redis::cmd("ZCARD").arg("cordon:results").query(&mut peek).unwrap();
    assert_eq!(results, 3, "at most --max-handle-results results");
    let exists: u64 = redis::cmd("EXISTS").arg(&key).query(&mut peek).unwrap();
    assert_eq!(exists, 0, "the oldest result is evicted");
    let reply = server.request(400, "tools/call", json!({"name": "read", "arguments": {"cursor": handle}}));
    assert_eq!(reply["error"]["data"]["reason"], "unknown_handle", "{reply}");
}
