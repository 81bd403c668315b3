//! Parallel, ordered streams: `grep` and `glob` calls run as shards (`--shards
//! N`) page exactly as one stream does, at every shard count and budget, when
//! budgets change between pages, when every page reopens its stream from the
//! cursor, and from a fresh process; cancelling a sharded call, or parking
//! one whose page ended at its time limit, leaves no shard running.

use std::path::PathBuf;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::corpus;
use crate::support::{
    Fixture, Server, cordon_bin, next_cursor, page_meta, payload, read_all, read_all_reopened, shared_state_dir,
};

/// A generated corpus (canonical root).
fn corpus_root(files: usize, seed: u64) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    corpus::generate(&root, files, seed);
    (dir, root.canonicalize().unwrap())
}

fn shards(n: usize) -> [String; 2] {
    ["--shards".to_string(), n.to_string()]
}

/// The calls compared: a grep and a glob, in the JSON and the compact text form.
fn calls() -> Vec<(&'static str, Value)> {
    vec![
        ("grep", json!({"pattern": "needle|x1", "format": "json"})),
        ("grep", json!({"pattern": "needle|x1", "context_after": 1, "format": "text"})),
        ("glob", json!({"pattern": "**/*.{rs,md,txt}", "format": "json"})),
        ("glob", json!({"pattern": "**/*", "format": "text"})),
    ]
}

#[test]
fn sharded_calls_page_exactly_as_one_stream_at_every_shard_count_and_budget() {
    let (_dir, root) = corpus_root(300, 41);
    let mut one = Server::initialized(&root, &shards(1).each_ref().map(String::as_str));
    let budgets = [40, 400, 25_000];
    // The compact form cuts an item larger than a whole page, so each budget
    // is compared with one stream's pages at the same budget.
    let wanted: Vec<Vec<Vec<u8>>> = calls()
        .into_iter()
        .map(|(tool, args)| budgets.iter().map(|&b| read_all(&mut one, tool, args.clone(), b).0).collect())
        .collect();
    for n in [2, 4] {
        let mut server = Server::initialized(&root, &shards(n).each_ref().map(String::as_str));
        for ((tool, args), want) in calls().into_iter().zip(&wanted) {
            for (&budget, want) in budgets.iter().zip(want) {
                assert!(!want.is_empty(), "{tool} {args}: nothing to compare");
                let (got, pages) = read_all(&mut server, tool, args.clone(), budget);
                assert!(budget == 25_000 || pages.len() > 2, "{tool} {args} at {budget}: {} pages", pages.len());
                assert!(got == *want, "{tool} {args}: {n} shards at {budget} tokens differ from one stream");
            }
        }
    }
}

/// Pages through `tool` with `args`, each page at the next of `budgets` in
/// turn: the payload of every page concatenated, and how many pages.
fn read_at_changing_budgets(server: &mut Server, tool: &str, args: &Value, budgets: &[u64]) -> (Vec<u8>, usize) {
    let (mut got, mut call, mut page) = (Vec::new(), args.clone(), 0);
    loop {
        call["max_tokens"] = budgets[page % budgets.len()].into();
        let result = server.call(100 + page as i64, tool, call.clone());
        assert_eq!(result["isError"], false, "{tool} page {page}: {result}");
        got.extend(payload(&result));
        page += 1;
        match next_cursor(&result).as_deref() {
            Some(cursor) => call = json!({ "cursor": cursor }),
            None => return (got, page),
        }
    }
}

#[test]
fn budgets_that_change_between_pages_take_chunks_pulled_ahead_again_at_the_smaller_budget() {
    let (_dir, root) = corpus_root(300, 42);
    let mut one = Server::initialized(&root, &shards(1).each_ref().map(String::as_str));
    let mut server = Server::initialized(&root, &shards(4).each_ref().map(String::as_str));
    let budgets = [12u64, 3_000, 5, 900, 30, 25_000, 200];
    for (tool, args) in calls() {
        let (want, _) = read_at_changing_budgets(&mut one, tool, &args, &budgets);
        if args["format"] == "json" {
            assert!(want == read_all(&mut one, tool, args.clone(), 25_000).0, "{tool} {args}: JSON pages are exact");
        }
        let (got, pages) = read_at_changing_budgets(&mut server, tool, &args, &budgets);
        assert!(pages > 1, "{tool} {args}: {pages} pages");
        assert!(got == want, "{tool} {args}: pages at changing budgets differ from one stream");
    }
}

#[test]
fn a_sharded_call_resumes_exactly_when_its_stream_is_gone() {
    let (_dir, root) = corpus_root(200, 43);
    let mut one = Server::initialized(&root, &shards(1).each_ref().map(String::as_str));
    // One parked stream at most: alternating two calls evicts each, so every
    // page reopens its shard from the cursor, then splits the rest again.
    let flags = ["--shards", "4", "--max-parked-streams", "1"];
    let mut server = Server::initialized(&root, &flags);
    for (tool, args) in calls() {
        let (want, _) = read_all(&mut one, tool, args.clone(), 25_000);
        let other = json!({"pattern": "haystack", "output_mode": "count", "max_tokens": 60});
        let (got, pages) = read_all_reopened(&mut server, tool, args.clone(), other, 150);
        assert!(pages > 3, "{tool} {args}: {pages} pages");
        assert!(got == want, "{tool} {args}: reopened sharded pages differ from one stream");
    }
}

#[test]
fn a_sharded_cursor_continues_in_a_fresh_process() {
    let (_dir, root) = corpus_root(200, 44);
    let mut one = Server::initialized(&root, &shards(1).each_ref().map(String::as_str));
    let args = json!({"pattern": "needle|x1", "format": "json"});
    let (want, _) = read_all(&mut one, "grep", args.clone(), 25_000);
    let mut first = Server::initialized(&root, &["--shards", "2"]);
    let mut call = args.clone();
    call["max_tokens"] = 300.into();
    let mut got = Vec::new();
    // A few pages here, then the rest from `cordon call` in a process of its own.
    for page in 0..3 {
        let result = first.call(page, "grep", call.clone());
        got.extend(payload(&result));
        // The self-contained signed cursor, which needs no store of this process's.
        let cursor = page_meta(&result)["cursor"].as_str().expect("more pages").to_string();
        assert!(cursor.starts_with("c1."), "{cursor}");
        call = json!({ "cursor": cursor, "max_tokens": 300 });
    }
    drop(first);
    let mut rest = Command::new(cordon_bin());
    rest.args(["call", "grep", "--all", "--shards", "3", "--root"]).arg(&root);
    rest.arg("--state-dir").arg(shared_state_dir()).args(["--json", &call.to_string()]);
    let out = rest.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    got.extend(out.stdout);
    assert!(got == want, "pages continued in a fresh process differ from one stream");
}

/// The threads of `pid` that run shards ahead.
fn shard_threads(pid: u32) -> usize {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return 0 };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "cordon-shard")
        .count()
}

/// Waits until `pid` runs no shard ahead; how long that took.
fn no_shard_left(pid: u32, within: Duration) -> Duration {
    let started = Instant::now();
    while shard_threads(pid) > 0 {
        assert!(started.elapsed() < within, "shard threads still running after {within:?}");
        thread::sleep(Duration::from_millis(10));
    }
    started.elapsed()
}

fn read_small(server: &mut Server, id: i64) {
    let reply = server.call(id, "read", json!({"format": "json", "path": "hello.txt"}));
    assert_eq!(crate::support::text(&reply), "hello\nworld\n", "{reply}");
}

#[test]
fn cancelling_a_sharded_grep_stops_every_shard() {
    let fx = Fixture::new();
    fx.long_search_corpus(2048, 1 << 20);
    let flags = ["--shards", "4", "--max-concurrent-calls", "1", "--timeout-secs", "600"];
    let mut server = Server::initialized(&fx.root(), &flags);
    let pid = server.pid();
    server.send_json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "grep", "arguments": {"pattern": "absent-needle"}}}));
    let started = Instant::now();
    while shard_threads(pid) < 3 {
        assert!(started.elapsed() < Duration::from_secs(60), "the shards never ran ahead");
        thread::sleep(Duration::from_millis(5));
    }
    server.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}));
    let took = no_shard_left(pid, Duration::from_secs(5));
    eprintln!("cancel → no shard running in {:.1} ms", took.as_secs_f64() * 1000.0);
    // One call at a time: this one runs only once the grep has let go.
    read_small(&mut server, 2);
}

#[test]
fn a_sharded_grep_past_its_deadline_answers_on_time_and_leaves_no_shard_running_while_parked() {
    let fx = Fixture::new();
    // 1 MiB files, small next to a page's margin (a search checkpoints
    // between files): a page ends on time between two of them even on a
    // slow, busy machine.
    fx.long_search_corpus(2048, 1 << 20);
    let mut server = Server::initialized(&fx.root(), &["--shards", "4", "--timeout-secs", "1"]);
    let started = Instant::now();
    let reply = server.call(1, "grep", json!({"pattern": "absent-needle"}));
    assert_eq!(reply["isError"], false, "{reply}");
    assert_eq!(crate::support::page_meta(&reply)["ended"], "time", "{reply}");
    assert!(started.elapsed() < Duration::from_secs(4), "answered by the deadline: {:?}", started.elapsed());
    // The stream is parked: its shards ahead stop until the next page.
    no_shard_left(server.pid(), Duration::from_secs(5));
    let cursor = next_cursor(&reply).expect("the search goes on");
    let next = server.call(2, "grep", json!({"cursor": cursor}));
    assert_eq!(next["isError"], false, "{next}");
    no_shard_left(server.pid(), Duration::from_secs(5));
    read_small(&mut server, 3);
}

#[test]
fn a_shard_count_of_zero_is_refused_by_name() {
    let fx = Fixture::new();
    let out = Command::new(cordon_bin())
        .args(["call", "read", "--shards", "0", "--root"])
        .arg(fx.root())
        .arg("--state-dir")
        .arg(shared_state_dir())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("shards"), "{}", String::from_utf8_lossy(&out.stderr));
    let from_env = Command::new(cordon_bin())
        .args(["call", "read", "--json", r#"{"path":"hello.txt"}"#, "--root"])
        .arg(fx.root())
        .arg("--state-dir")
        .arg(shared_state_dir())
        .env("CORDON_SHARDS", "0")
        .output()
        .unwrap();
    assert!(!from_env.status.success(), "CORDON_SHARDS is read");
}

#[test]
fn a_shard_names_the_lines_over_its_share_of_the_calls_memory_and_the_call_goes_on() {
    let fx = Fixture::new();
    // A search holds a quarter of its instance's memory: a line of 14 MiB
    // fits in a call's 64 MiB run as one instance, not in a quarter of it.
    let first = fx.write("big-0.txt", "alpha beta gamma ".repeat((14 << 20) / 17));
    for i in 1..8 {
        std::fs::hard_link(&first, fx.root().join(format!("big-{i}.txt"))).unwrap();
    }
    let args = json!({"pattern": "omega", "output_mode": "count", "path": "."});
    let call = json!({"name": "grep", "arguments": args});
    let mut one = Server::initialized(&fx.root(), &["--shards", "1", "--memory-mib", "64"]);
    let reply = one.request(1, "tools/call", call.clone());
    assert_eq!(reply["result"]["isError"], false, "one instance holds the file: {reply}");
    assert!(reply["result"]["structuredContent"].get("errors").is_none(), "no error (a zero is left out): {reply}");
    let mut four = Server::initialized(&fx.root(), &["--shards", "4", "--memory-mib", "64"]);
    let reply = four.request(1, "tools/call", call.clone());
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let text = String::from_utf8(crate::support::payload(&reply["result"])).unwrap();
    let said = "not searched: a line longer than 4 MiB, a quarter of the 16 MiB of memory this search may use";
    assert_eq!(text.matches(said).count(), 8, "each file is named: {text}");
    let mut counted = call.clone();
    counted["arguments"]["format"] = "json".into();
    let reply = four.request(3, "tools/call", counted);
    assert_eq!(reply["result"]["structuredContent"]["errors"], 8, "{reply}");
    no_shard_left(four.pid(), Duration::from_secs(5));
    read_small(&mut four, 2);
}

#[test]
fn a_shard_ahead_that_ends_makes_room_for_the_next_while_the_head_still_runs() {
    // Units in path order: eight links to one 16 MiB file, then 56 small
    // files. Two shards at once split the walk into eight runs that shrink
    // from the first to the last: the first holds the 128 MiB of the links,
    // the ones after it small files only.
    let fx = Fixture::new();
    let line = "alpha beta gamma delta epsilon zeta theta lambda sigma omega\n";
    for dir in ["a", "b"] {
        std::fs::create_dir_all(fx.root().join(dir)).unwrap();
    }
    let large = fx.write("a/0-large.txt", line.repeat((16 << 20) / line.len()));
    for i in 1..8 {
        std::fs::hard_link(&large, fx.root().join(format!("a/{i}-large.txt"))).unwrap();
    }
    for i in 0..56 {
        fx.write(&format!("b/small-{i:02}.txt"), line);
    }
    let out = Command::new(cordon_bin())
        .args(["call", "grep", "--all", "--shards", "2", "--root"])
        .arg(fx.root())
        .arg("--state-dir")
        .arg(shared_state_dir())
        .args(["--json", r#"{"pattern":"absent-needle"}"#])
        .env("RUST_LOG", "cordon::pager=debug")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log = String::from_utf8_lossy(&out.stderr);
    let started: Vec<(u32, u32)> = log
        .lines()
        .filter(|l| l.contains("a shard runs ahead"))
        .filter_map(|l| {
            let field = |name: &str| l.split(&format!("{name}=")).nth(1)?.split_whitespace().next()?.parse().ok();
            Some((field("shard")?, field("head")?))
        })
        .collect();
    assert!(started.len() >= 2, "shards ran ahead: {started:?}\n{log}");
    // The first shard ahead starts with the head; the next one starts when it
    // ends, while the head is still searching the large file.
    assert!(
        started.iter().any(|&(shard, head)| shard >= 2 && head == 0),
        "no shard past the first ran ahead while the head ran: {started:?}"
    );
}
