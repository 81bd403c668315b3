//! Capacity: streams left parked by agents that never page to the end do not
//! starve later calls. A new call takes a free instance slot, else the least
//! recently used parked stream's (whose cursor still resumes, by reopening),
//! else waits for one until its deadline and is answered `busy` — never a
//! trap — on stdio, and with many TCP and HTTP sessions at once.

use std::process::Command;
use std::thread;
use std::time::Instant;

use serde_json::{Value, json};

use crate::support::{
    Fixture, Listening, Server, TOKEN, cordon_bin, next_cursor, payload, peak_rss_kib, read_all, shared_state_dir,
    spawn_listening,
};

const HOSTILE: &str = env!("CORDON_HOSTILE_COMPONENT");

/// Patterns that match on every line of the tree, so no first page is the last.
const PATTERNS: [&str; 3] = ["needle", "line [0-9]+", "file"];

/// A page small enough that every grep leaves its stream parked.
const SMALL_PAGE: u64 = 50;

const SMALL: &str = "hello\nworld\n";

/// Eighty text files, every line a match: 1,600 matches, so that no first page
/// of `SMALL_PAGE` is the last, while each of the many greps (whose first page
/// counts the whole result) stays cheap.
fn tree() -> Fixture {
    let fx = Fixture::new();
    for dir in 0..10 {
        std::fs::create_dir_all(fx.root().join(format!("d{dir}"))).unwrap();
        for file in 0..8 {
            let text: String = (0..20).map(|line| format!("line {line}: a needle in file {dir}/{file}\n")).collect();
            fx.write(&format!("d{dir}/f{file}.txt"), text);
        }
    }
    fx
}

/// The arguments of the `n`th unfinished grep.
fn grep_args(n: usize) -> Value {
    json!({ "pattern": PATTERNS[n % PATTERNS.len()], "max_tokens": SMALL_PAGE })
}

/// A first page that is not the last, with its cursor.
fn unfinished(result: &Value, what: &str) -> String {
    assert_eq!(result["isError"], false, "{what}: {result}");
    let cursor = next_cursor(result);
    cursor.unwrap_or_else(|| panic!("{what} ended on its first page: {result}")).to_string()
}

/// Checks that `first` (a first page) followed from its cursor to the end gives
/// exactly the unpaged output of `pattern`.
fn resumes_exactly(server: &mut Server, first: &Value, pattern: &str) {
    let cursor = unfinished(first, pattern);
    let whole = read_all(server, "grep", json!({ "pattern": pattern, "format": "text" }), 25_000).0;
    let mut paged = payload(first);
    paged.extend(read_all(server, "grep", json!({ "cursor": cursor }), 2_000).0);
    assert_eq!(String::from_utf8_lossy(&paged), String::from_utf8_lossy(&whole), "{pattern}: resumed output differs");
}

/// A `read` of the small file, answered with its text.
fn read_small(server: &mut Server, id: i64) {
    let result = server.call(id, "read", json!({"format": "json",  "path": "hello.txt" }));
    assert_eq!(payload(&result), SMALL.as_bytes(), "{result}");
}

#[test]
fn a_hundred_and_fifty_unfinished_greps_do_not_starve_later_calls_and_early_cursors_resume() {
    let fx = tree();
    let mut server = Server::initialized(&fx.root(), &[]);
    let mut first_pages = Vec::new();
    for n in 0..150 {
        let result = server.call(n as i64 + 1, "grep", grep_args(n));
        unfinished(&result, &format!("grep {n}"));
        if n < PATTERNS.len() {
            first_pages.push(result);
        }
    }
    for n in 0..20 {
        read_small(&mut server, 200 + n);
        let result = server.call(300 + n, "grep", grep_args(n as usize));
        unfinished(&result, &format!("a grep after the unfinished ones ({n})"));
    }
    // The first streams were given up long ago (the table holds 64): reopened.
    for (n, first) in first_pages.iter().enumerate() {
        resumes_exactly(&mut server, first, PATTERNS[n]);
    }
}

/// What one client of a listening server does: unfinished greps and a read,
/// sent at once, each answered; the first grep's page is returned.
fn busy_client(mut client: Server, client_no: usize) -> Value {
    client.handshake();
    let greps = 6;
    for n in 0..greps {
        let params = json!({ "name": "grep", "arguments": grep_args(client_no + n) });
        client.send_json(&json!({ "jsonrpc": "2.0", "id": n + 1, "method": "tools/call", "params": params }));
    }
    client.send_json(&json!({ "jsonrpc": "2.0", "id": 100, "method": "tools/call",
        "params": { "name": "read", "arguments": { "path": "hello.txt", "format": "json" } } }));
    let mut first = Value::Null;
    for _ in 0..=greps {
        let reply = client.recv();
        assert!(reply.get("error").is_none(), "client {client_no}: {reply}");
        match reply["id"].as_u64() {
            Some(100) => assert_eq!(payload(&reply["result"]), SMALL.as_bytes(), "{reply}"),
            Some(1) => first = reply["result"].clone(),
            _ => {}
        }
        if reply["id"] != 100 {
            unfinished(&reply["result"], &format!("client {client_no}, call {}", reply["id"]));
        }
    }
    first
}

/// Many clients at once against a server listening with `listen`, with few
/// parked streams and calls in flight so that calls wait and streams are
/// given up; then early cursors resume, and memory stayed within the pool's.
fn many_sessions(listen: &[&str], connect: fn(&str) -> Server) {
    let fx = tree();
    const MEMORY_MIB: u64 = 64;
    let (parked, in_flight) = (8, 3);
    let limits = [
        "--max-parked-streams".to_string(),
        parked.to_string(),
        "--max-calls-in-flight".into(),
        in_flight.to_string(),
        "--memory-mib".into(),
        MEMORY_MIB.to_string(),
    ];
    let limits: Vec<&str> = limits.iter().map(String::as_str).collect();
    let Listening { child, addr, log } = spawn_listening(&fx.root(), listen, &limits);
    let clients = 16;
    let workers: Vec<_> = (0..clients)
        .map(|n| {
            let client = connect(&addr);
            thread::spawn(move || busy_client(client, n))
        })
        .collect();
    let firsts: Vec<Value> = workers.into_iter().map(|w| w.join().expect("a client failed")).collect();
    let mut client = connect(&addr);
    client.handshake();
    for (n, first) in firsts.iter().take(PATTERNS.len()).enumerate() {
        resumes_exactly(&mut client, first, PATTERNS[n % PATTERNS.len()]);
    }
    let log = log.text();
    assert!(!log.contains("trapped"), "a call trapped:\n{log}");
    // Guest memory is bounded by the pool (parked + in flight + 1 loading),
    // each instance by --memory-mib; the host's own use is far below 256 MiB.
    let pool_kib = (parked + in_flight + 1) * MEMORY_MIB * 1024;
    let peak = peak_rss_kib(child.id());
    assert!(peak < pool_kib + 256 * 1024, "peak RSS {peak} KiB over the pool's {pool_kib} KiB + 256 MiB");
    eprintln!("many sessions over {listen:?}: peak RSS {} MiB", peak / 1024);
}

#[test]
fn many_tcp_sessions_leaving_unfinished_pages_never_trap_or_hang() {
    many_sessions(&["--tcp", "127.0.0.1:0", "--token", TOKEN], |addr| Server::connect_tcp(addr, None));
}

#[test]
fn many_http_sessions_leaving_unfinished_pages_never_trap_or_hang() {
    many_sessions(&["--http", "127.0.0.1:0"], |url| Server::connect_http(url, false));
}

/// The `busy` tool error a call gets when no slot came free in time.
fn assert_busy(reply: &Value, limit: &str) {
    let error = &reply["result"]["_meta"]["cordon/error"];
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert_eq!(error["code"], "busy", "{reply}");
    assert_eq!(error["limit"], limit, "{reply}");
    assert!(error["message"].as_str().unwrap().contains(limit), "{reply}");
}

fn call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": tool, "arguments": arguments } })
}

#[test]
fn a_call_past_the_calls_in_flight_waits_until_its_deadline_then_is_answered_busy() {
    let fx = Fixture::new();
    // One call in flight; a guest blocked in a host call holds it until the
    // wall time plus a grace far longer than a waiting call's own deadline.
    let flags =
        ["--component", HOSTILE, "--max-calls-in-flight", "1", "--timeout-secs", "2", "--host-grace-ms", "4000"];
    let mut server = Server::initialized(&fx.root(), &flags);
    server.send_json(&call(1, "hostile", json!({ "behaviour": "sleep-in-host" })));
    thread::sleep(std::time::Duration::from_millis(300));
    let started = Instant::now();
    let busy = server.request(
        2,
        "tools/call",
        json!({ "name": "read", "arguments": { "path": "hello.txt", "format": "json" } }),
    );
    assert_busy(&busy, "max_calls_in_flight");
    assert!(started.elapsed().as_secs_f64() >= 1.5, "it waited for a slot until its deadline");
    let stuck = server.recv();
    assert_eq!(stuck["id"], 1, "{stuck}");
    assert_eq!(stuck["result"]["_meta"]["cordon/error"]["code"], "timeout", "{stuck}");
    // Answered, the blocked guest holds an instance slot, not a call in flight.
    read_small(&mut server, 3);
}

#[test]
fn guests_blocked_past_their_deadline_take_parked_streams_slots_then_calls_are_answered_busy() {
    let fx = tree();
    // A pool of 4 instances: 2 parked streams + 1 call in flight + 1 loading.
    let flags = [
        "--component",
        HOSTILE,
        "--shards",
        "1",
        "--max-parked-streams",
        "2",
        "--max-calls-in-flight",
        "1",
        "--timeout-secs",
        "1",
        "--host-grace-ms",
        "100",
    ];
    let mut server = Server::initialized(&fx.root(), &flags);
    let firsts: Vec<Value> = (0..2).map(|n| server.call(n as i64 + 1, "grep", grep_args(n))).collect();
    let stuck = |server: &mut Server, id: i64| {
        let reply = server.call(id, "hostile", json!({ "behaviour": "sleep-in-host" }));
        assert_eq!(reply["_meta"]["cordon/error"]["code"], "timeout", "{reply}");
    };
    // Three guests left blocked: the two free slots, then a parked stream's.
    for id in 10..13 {
        stuck(&mut server, id);
    }
    read_small(&mut server, 20);
    // Both parked streams were given up; their cursors resume by reopening.
    for (n, first) in firsts.iter().enumerate() {
        resumes_exactly(&mut server, first, PATTERNS[n]);
    }
    // A fourth blocked guest: every instance is held and nothing is parked.
    stuck(&mut server, 30);
    let busy = server.request(
        31,
        "tools/call",
        json!({ "name": "read", "arguments": { "path": "hello.txt", "format": "json" } }),
    );
    assert_busy(&busy, "instance_slots");
}

#[test]
fn limits_whose_instance_pool_cannot_fit_refuse_to_start_naming_the_limit() {
    let fx = Fixture::new();
    let output = Command::new(cordon_bin())
        .args(["serve", "--max-sessions", "100000", "--shards", "1", "--root"])
        .arg(fx.root())
        .arg("--state-dir")
        .arg(shared_state_dir())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    for needle in
        ["100017 live tool instances", "at most 4064 fit", "--max-sessions", "--max-calls-in-flight", "--shards"]
    {
        assert!(stderr.contains(needle), "{needle:?} not in: {stderr}");
    }
}
