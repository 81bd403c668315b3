//! Hostile tools: a component that loops, hoards memory or handles, floods its
//! output, traps or blocks in a host call is stopped by the per-call limit it
//! ran into, within a bound, with an error that names that limit; the same
//! session then serves a healthy `read` and a benign call of the same tool, and
//! serves healthy calls while a hostile one runs.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Fixture, Server, cordon_bin, next_cursor, payload};

const HOSTILE: &str = env!("CORDON_HOSTILE_COMPONENT");

/// Far above every limit the tests set: a call answered later hung.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// The wall time the hostile servers give a call, in seconds.
const WALL_TIME_SECS: &str = "2";

/// The memory the hostile servers give a call, in MiB.
const MEMORY_MIB: u64 = 64;

const SMALL: &str = "a small healthy file\n";

/// What a hostile call must end with.
#[derive(Debug, Clone, Copy)]
enum Fired {
    /// An `isError` result with code `timeout` naming `wall_time`; `in_host`
    /// when the guest was blocked in a host call.
    Timeout { in_host: bool },
    /// An internal error naming this limit.
    Limit(&'static str),
    /// An internal error: the guest trapped.
    Trapped,
    /// An internal error: the guest broke the contract.
    Contract,
}

fn fixture() -> Fixture {
    let fx = Fixture::new();
    fx.write("small.txt", SMALL);
    fx
}

fn hostile_server(fx: &Fixture) -> Server {
    let memory = MEMORY_MIB.to_string();
    Server::initialized(
        &fx.root(),
        &["--component", HOSTILE, "--timeout-secs", WALL_TIME_SECS, "--memory-mib", &memory],
    )
}

/// Calls the hostile tool and returns the whole reply, answered within the guard.
fn provoke(server: &mut Server, id: i64, arguments: Value) -> Value {
    let started = Instant::now();
    let reply = server.request(id, "tools/call", json!({"name": "hostile", "arguments": arguments}));
    assert!(started.elapsed() < HANG_GUARD, "{arguments} took {:?}", started.elapsed());
    reply
}

fn assert_fired(reply: &Value, fired: Fired, what: &str) {
    match fired {
        Fired::Timeout { in_host } => {
            let error = &reply["result"]["_meta"]["cordon/error"];
            assert_eq!(reply["result"]["isError"], true, "{what}: {reply}");
            assert_eq!(error["code"], "timeout", "{what}: {reply}");
            assert_eq!(error["limit"], "wall_time", "{what}: {reply}");
            let message = error["message"].as_str().unwrap();
            assert_eq!(message.contains("blocked in a host call"), in_host, "{what}: {message}");
        }
        Fired::Limit(limit) => {
            assert_eq!(reply["error"]["code"], -32603, "{what}: {reply}");
            assert_eq!(reply["error"]["data"]["error"], "limit_exceeded", "{what}: {reply}");
            assert_eq!(reply["error"]["data"]["limit"], limit, "{what}: {reply}");
            assert!(reply["error"]["message"].as_str().unwrap().contains(limit), "{what}: {reply}");
        }
        Fired::Trapped => {
            assert_eq!(reply["error"]["code"], -32603, "{what}: {reply}");
            assert_eq!(reply["error"]["data"]["error"], "trapped", "{what}: {reply}");
        }
        Fired::Contract => {
            assert_eq!(reply["error"]["code"], -32603, "{what}: {reply}");
            assert_eq!(reply["error"]["data"]["error"], "contract_violation", "{what}: {reply}");
        }
    }
}

/// A `read` of a small file and a benign call of the hostile tool, on the
/// session that just served a hostile call.
fn assert_still_healthy(server: &mut Server, id: i64, after: &str) {
    let read = server.call(id, "read", json!({"format": "json", "path": "small.txt"}));
    assert_eq!(read["isError"], false, "read after {after}: {read}");
    assert_eq!(payload(&read), SMALL.as_bytes(), "read after {after}");
    let benign = server.call(id + 1, "hostile", json!({"behaviour": "benign"}));
    assert_eq!(benign["isError"], false, "benign after {after}: {benign}");
    assert_eq!(payload(&benign), b"{\"item\":0}\n{\"item\":1}\n{\"item\":2}\n", "benign after {after}");
}

/// Provokes each case on one session, checks what fired, then that the
/// session is healthy.
fn run_cases(server: &mut Server, cases: &[(Value, Fired)]) {
    for (i, (arguments, fired)) in cases.iter().enumerate() {
        let id = 10 * i as i64 + 1;
        let what = arguments.to_string();
        let reply = provoke(server, id, arguments.clone());
        assert_fired(&reply, *fired, &what);
        assert_still_healthy(server, id + 1, &what);
    }
}

/// A call the host refuses is refused before any guest runs: a looping
/// guest would be answered `timeout` at the wall time, not the refusal.
#[test]
fn bad_host_arguments_and_schema_violations_are_refused_before_the_guest_runs() {
    let fx = fixture();
    let mut server = hostile_server(&fx);
    let bad_host = provoke(&mut server, 1, json!({"behaviour": "loop", "max_tokens": "many"}));
    assert_eq!(bad_host["error"]["code"], -32602, "a malformed host argument: {bad_host}");
    assert!(bad_host["error"]["message"].as_str().unwrap().contains("max_tokens"), "{bad_host}");
    let off_schema = provoke(&mut server, 2, json!({"behaviour": "loop", "unknown": 1}));
    let error = &off_schema["result"]["_meta"]["cordon/error"];
    assert_eq!(error["code"], "invalid_argument", "a schema violation, not a timeout: {off_schema}");
    let wrong_type = provoke(&mut server, 3, json!({"behaviour": 7}));
    assert_eq!(wrong_type["result"]["_meta"]["cordon/error"]["code"], "invalid_argument", "{wrong_type}");
    assert_still_healthy(&mut server, 4, "refused calls");
}

#[test]
fn a_looping_tool_is_stopped_at_its_wall_time_in_open_next_and_info() {
    let fx = fixture();
    let mut server = hostile_server(&fx);
    let cases = ["open", "next", "info"]
        .map(|place| (json!({"behaviour": "loop", "in": place}), Fired::Timeout { in_host: false }));
    run_cases(&mut server, &cases);
}

#[test]
fn a_tool_blocked_in_a_host_call_is_answered_by_the_host_timeout() {
    let fx = fixture();
    let mut server = hostile_server(&fx);
    let cases = ["open", "next", "info"]
        .map(|place| (json!({"behaviour": "sleep-in-host", "in": place}), Fired::Timeout { in_host: true }));
    run_cases(&mut server, &cases);
}

#[test]
fn a_page_of_call_all_blocked_in_a_host_call_is_recorded_and_said_as_the_timeout() {
    let fx = fixture();
    let audit = fx.dir.path().join("audit.log");
    let temp = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = Command::new(cordon_bin())
        .env("TMPDIR", temp.path())
        .args(["call", "hostile", "--all", "--root"])
        .arg(fx.root())
        .args(["--component", HOSTILE, "--timeout-secs", WALL_TIME_SECS, "--audit-log"])
        .arg(&audit)
        .args(["--json", r#"{"behaviour": "sleep-in-host", "in": "next"}"#])
        .output()
        .unwrap();
    assert!(started.elapsed() < HANG_GUARD, "took {:?}", started.elapsed());
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "the tool's failure: {said}");
    assert!(said.contains("blocked in a host call"), "{said}");
    let trail = std::fs::read_to_string(&audit).unwrap();
    let record = trail
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|record| record["tool"]["name"] == "hostile")
        .unwrap_or_else(|| panic!("the call is in the trail: {trail}"));
    assert_eq!(record["outcome"], json!({"tool_error": "timeout", "limit": "wall_time"}), "{record}");
    // The process ended with the guest still blocked, its uploads directory removed first.
    let left = std::fs::read_dir(temp.path()).unwrap().count();
    assert_eq!(left, 0, "nothing left in the temporary directory");
}

#[test]
fn a_tool_with_too_many_calls_stuck_in_host_calls_gets_no_more_but_other_tools_run() {
    let fx = fixture();
    let mut server = hostile_server(&fx);
    // Four calls block at once (the session runs eight at a time) and stay stuck.
    for id in 1..=4 {
        let request = json!({"name": "hostile", "arguments": {"behaviour": "sleep-in-host"}});
        server.send_json(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": request}));
    }
    let started = Instant::now();
    for _ in 1..=4 {
        let reply = server.recv();
        assert_fired(&reply, Fired::Timeout { in_host: true }, "a stuck call");
    }
    assert!(started.elapsed() < HANG_GUARD);
    let refused = provoke(&mut server, 5, json!({"behaviour": "benign"}));
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert_eq!(refused["error"]["data"]["error"], "tool_stuck", "{refused}");
    assert_eq!(refused["error"]["data"]["calls"], 4, "{refused}");
    let read = server.call(6, "read", json!({"format": "json", "path": "small.txt"}));
    assert_eq!(payload(&read), SMALL.as_bytes());
}

#[test]
fn memory_hoarding_is_stopped_by_the_memory_limit_and_the_servers_peak_rss_stays_bounded() {
    let fx = fixture();
    let mut server = hostile_server(&fx);
    assert_still_healthy(&mut server, 1, "start");
    let before_mib = server.peak_rss_kib() / 1024;
    let mut cases = Vec::new();
    for place in ["open", "next", "info"] {
        for behaviour in ["memory", "memory-huge"] {
            cases.push((json!({"behaviour": behaviour, "in": place}), Fired::Limit("memory_mib")));
        }
    }
    run_cases(&mut server, &cases);
    // Each `memory` call touched all the memory it got and kept asking for more
    // (up to wasm32's 4 GiB); each `memory-huge` asked for 1.5 GiB at once.
    let peak_mib = server.peak_rss_kib() / 1024;
    assert!(peak_mib >= MEMORY_MIB, "peak RSS {peak_mib} MiB: the guest never held its memory");
    assert!(
        peak_mib < before_mib + 2 * MEMORY_MIB,
        "peak RSS went from {before_mib} to {peak_mib} MiB with calls limited to {MEMORY_MIB} MiB"
    );
}

#[test]
fn handle_hoarding_is_stopped_by_the_handle_limit_for_host_and_guest_resources() {
    let fx = fixture();
    let mut server = hostile_server(&fx);
    let mut cases = Vec::new();
    for place in ["open", "next"] {
        for behaviour in ["handles", "guest-handles"] {
            cases.push((json!({"behaviour": behaviour, "in": place}), Fired::Limit("max_handles")));
        }
    }
    run_cases(&mut server, &cases);
}

#[test]
fn oversized_output_is_refused_by_the_limit_it_breaks() {
    let fx = fixture();
    let mut server = hostile_server(&fx);
    run_cases(
        &mut server,
        &[
            (json!({"behaviour": "huge-chunk"}), Fired::Limit("max_output_chunk_bytes")),
            (json!({"behaviour": "huge-info"}), Fired::Limit("max_info_bytes")),
            (json!({"behaviour": "huge-error"}), Fired::Limit("max_info_bytes")),
            (json!({"behaviour": "big-chunk"}), Fired::Contract),
            (json!({"behaviour": "empty-chunks"}), Fired::Contract),
            (json!({"behaviour": "same-checkpoint"}), Fired::Contract),
        ],
    );
}

#[test]
fn a_tool_that_checkpoints_gets_pages_ended_on_time_and_one_that_never_does_is_stopped_at_the_wall_time() {
    let fx = fixture();
    let flags = ["--component", HOSTILE, "--timeout-secs", WALL_TIME_SECS, "--page-ms", "50"];
    let mut server = Server::initialized(&fx.root(), &flags);
    // Work that never finds anything: each page answers on time, empty, and goes on.
    let mut args = json!({"behaviour": "checkpoints", "format": "json"});
    for page in 0..3 {
        let started = Instant::now();
        let result = server.call(page + 1, "hostile", args);
        assert!(started.elapsed() < Duration::from_secs(2), "page {page} took {:?}", started.elapsed());
        assert_eq!(result["isError"], false, "page {page}: {result}");
        let structured = &result["structuredContent"];
        assert_eq!((&structured["ended"], &structured["complete"]), (&json!("time"), &json!(false)), "{result}");
        assert_eq!(payload(&result), b"", "page {page}: a checkpoint puts nothing on the page");
        assert_eq!(crate::support::page_meta(&result)["ended"], "time", "{result}");
        let cursor = structured["next_cursor"].as_str().expect("the work goes on");
        args = json!({ "cursor": cursor });
    }
    // The text form says so in its footer.
    let shown = server.call(5, "hostile", json!({"behaviour": "checkpoints"}));
    let footer = shown["content"][1]["text"].as_str().unwrap();
    assert!(footer.contains("ended at its time limit") && footer.contains("no item"), "{footer}");
    // One item, then a loop inside `next`: the page cannot end on time there.
    let reply = provoke(&mut server, 10, json!({"behaviour": "stall"}));
    assert_fired(&reply, Fired::Timeout { in_host: false }, "stall");
    assert_still_healthy(&mut server, 11, "stall");
}

#[test]
fn an_endless_stream_of_small_chunks_is_paged_within_the_budget() {
    let fx = fixture();
    let mut server = hostile_server(&fx);
    let mut args = json!({"behaviour": "small-chunks", "max_tokens": 100});
    for page in 0..3 {
        let result = server.call(page + 1, "hostile", args);
        assert_eq!(result["isError"], false, "page {page}: {result}");
        assert_eq!(payload(&result), vec![b'x'; 400], "page {page}");
        let cursor = next_cursor(&result).expect("an endless stream continues");
        args = json!({"cursor": cursor, "max_tokens": 100});
    }
    assert_still_healthy(&mut server, 10, "an endless stream");
}

#[test]
fn a_trapping_tool_is_an_internal_error_and_the_session_goes_on() {
    let fx = fixture();
    let mut server = hostile_server(&fx);
    let mut cases = Vec::new();
    for place in ["open", "next", "info"] {
        for behaviour in ["trap", "panic"] {
            cases.push((json!({"behaviour": behaviour, "in": place}), Fired::Trapped));
        }
    }
    run_cases(&mut server, &cases);
}

#[test]
fn a_healthy_read_is_answered_while_hostile_calls_run_on_the_same_session() {
    let fx = fixture();
    // A longer wall time, so the healthy read surely ends first.
    let mut server = Server::initialized(&fx.root(), &["--component", HOSTILE, "--timeout-secs", "10"]);
    for (id, behaviour) in [(1, "loop"), (2, "sleep-in-host")] {
        let request = json!({"name": "hostile", "arguments": {"behaviour": behaviour}});
        server.send_json(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": request}));
    }
    let read =
        server.request(3, "tools/call", json!({"name": "read", "arguments": {"path": "small.txt", "format": "json"}}));
    assert_eq!(payload(&read["result"]), SMALL.as_bytes(), "{read}");
    let started = Instant::now();
    let mut replies = [server.recv(), server.recv()];
    replies.sort_by_key(|reply| reply["id"].as_i64());
    assert!(started.elapsed() < HANG_GUARD);
    assert_fired(&replies[0], Fired::Timeout { in_host: false }, "loop");
    assert_fired(&replies[1], Fired::Timeout { in_host: true }, "sleep-in-host");
}

#[test]
fn a_cancelled_call_blocked_in_a_host_call_lets_go_of_its_slot_after_the_grace() {
    let fx = fixture();
    // One call at a time, and a wall time far past the hang guard: only the
    // cancellation can free the slot in time.
    let flags = ["--component", HOSTILE, "--max-concurrent-calls", "1", "--timeout-secs", "600"];
    let mut server = Server::initialized(&fx.root(), &flags);
    server.send_json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "hostile", "arguments": {"behaviour": "sleep-in-host"}, "_meta": {"progressToken": "stuck"}}}));
    let note = server.recv();
    assert_eq!(note["method"], "notifications/progress", "the guest says it blocks: {note}");
    let cancelled = Instant::now();
    server.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}));
    let read =
        server.request(2, "tools/call", json!({"name": "read", "arguments": {"path": "small.txt", "format": "json"}}));
    assert_eq!(payload(&read["result"]), SMALL.as_bytes(), "the cancelled call is never answered: {read}");
    assert!(cancelled.elapsed() < HANG_GUARD, "the slot was held {:?} after the cancel", cancelled.elapsed());
}

#[test]
fn every_call_starts_from_pristine_memory_even_in_a_reused_instance_slot() {
    // Freed slots are reset in place (memset of the resident pages) rather
    // than given back to the kernel: a call must still find nothing an
    // earlier call left, neither in a static nor in a page it grew.
    let fx = fixture();
    let mut server = hostile_server(&fx);
    for id in 1..=6 {
        // The JSON form: the model's text form would leave out a zero and a false.
        let reply = provoke(&mut server, id, json!({"behaviour": "remember", "format": "json"}));
        let info = &reply["result"]["structuredContent"];
        assert_eq!(reply["result"]["isError"], false, "{reply}");
        assert_eq!((&info["prior_mark"], &info["dirty_page"]), (&json!(0), &json!(false)), "call {id}: {info}");
    }
}
