//! Memory: a client that leaves many expensive searches unfinished does not
//! grow the server without bound. Parked streams are held to a byte budget
//! (`--max-parked-mib`, least recently used given up first, a stream alone
//! over it not parked), and every instance together to `--max-memory-mib`;
//! calls after them are answered, and the first cursors still resume.

use serde_json::{Value, json};

use crate::support::{Fixture, Server, next_cursor, payload};

/// A pattern whose compiled form takes tens of MiB of guest memory, and which
/// matches every line of the fixture (the first alternative), so that a small
/// first page is never the last.
const EXPENSIVE: &str = r"x1\d*|(?:[a-z]{1000}){60}";

/// The parked streams' budget the server is given, in MiB.
const PARKED_MIB: u64 = 32;

/// The server's resident memory now (VmRSS), in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).expect("VmRSS in /proc status");
    line.trim().trim_end_matches("kB").trim().parse().unwrap()
}

fn unfinished(result: &Value, what: &str) -> String {
    assert_eq!(result["isError"], false, "{what}: {result}");
    let cursor = next_cursor(result);
    cursor.unwrap_or_else(|| panic!("{what} ended on its first page: {result}")).to_string()
}

#[test]
fn a_hundred_unfinished_expensive_searches_stay_within_the_parked_budget_and_later_calls_are_answered() {
    let fx = Fixture::new();
    let lines: String = (0..3_000).map(|n| format!("x1{n} abc\n")).collect();
    fx.write("big.txt", &lines);
    fx.write("hello.txt", "hello\n");
    let budget = PARKED_MIB.to_string();
    let flags = ["--max-parked-mib", budget.as_str(), "--max-memory-mib", "512", "--shards", "1"];
    let mut server = Server::initialized(&fx.root(), &flags);
    let args = json!({ "pattern": EXPENSIVE, "path": "big.txt", "max_tokens": 10, "format": "json" });
    let mut first_cursor = None;
    let mut most = 0;
    for n in 0..100 {
        let result = server.call(n + 1, "grep", args.clone());
        let cursor = unfinished(&result, &format!("grep {n}"));
        first_cursor.get_or_insert(cursor);
        most = most.max(rss_kib(server.pid()));
    }
    // What stays resident: the parked budget, the call running now (its
    // instance's pages are reset in place for the next one), and the host's
    // own (the engine and the compiled tools; a debug build's). Unbounded, the
    // hundred streams held well over 2 GiB.
    let bound_kib = (PARKED_MIB + 256 + 256) * 1024;
    assert!(most < bound_kib, "resident memory reached {most} KiB, over {bound_kib} KiB");
    let read = server.call(1000, "read", json!({"format": "json",  "path": "hello.txt" }));
    assert_eq!(payload(&read), b"hello\n", "{read}");
    let resumed = server.call(1001, "grep", json!({ "cursor": first_cursor.unwrap(), "max_tokens": 10 }));
    assert_eq!(resumed["isError"], false, "the first stream was given up; its cursor reopens it: {resumed}");
    assert!(!payload(&resumed).is_empty(), "{resumed}");
    eprintln!("a hundred unfinished expensive greps: resident memory at most {} MiB", most / 1024);
}

#[test]
fn calls_past_the_servers_memory_budget_take_memory_back_from_parked_streams_and_are_answered() {
    let fx = Fixture::new();
    let lines: String = (0..3_000).map(|n| format!("x1{n} abc\n")).collect();
    fx.write("big.txt", &lines);
    // Parked streams could hold 512 MiB, but all instances together only 128:
    // each new grep's growth gives up the oldest parked streams instead.
    let flags = ["--max-memory-mib", "128", "--memory-mib", "64", "--max-parked-mib", "512", "--shards", "1"];
    let mut server = Server::initialized(&fx.root(), &flags);
    let args = json!({ "pattern": EXPENSIVE, "path": "big.txt", "max_tokens": 10, "format": "json" });
    let mut most = 0;
    for n in 0..30 {
        unfinished(&server.call(n + 1, "grep", args.clone()), &format!("grep {n}"));
        most = most.max(rss_kib(server.pid()));
    }
    let bound_kib = (128 + 256) * 1024;
    assert!(most < bound_kib, "resident memory reached {most} KiB, over {bound_kib} KiB");
}
