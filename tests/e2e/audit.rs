//! The audit trail, read from its file: a line per call and page, per refusal
//! and for the start; no argument value off the allow-list, whatever its
//! shape or spelling; a chain that `cordon audit verify` checks and that
//! names the line an edit, a deletion or a reorder breaks, and the lines cut
//! off its end or start; rotation; and what happens when the file cannot be
//! written.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::support::{Fixture, Server, TOKEN, cordon_bin, next_cursor, spawn_listening};

const SECRET: &str = "TOP-SECRET-CONTENT-never-in-the-audit-log";

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// `cordon audit verify FILES...`: exit code and what it printed.
fn verify(files: &[&Path]) -> (i32, String) {
    verify_with(&[], files)
}

/// `cordon audit verify FLAGS FILES...`.
fn verify_with(flags: &[&str], files: &[&Path]) -> (i32, String) {
    let out = Command::new(cordon_bin()).args(["audit", "verify"]).args(flags).args(files).output().unwrap();
    (out.status.code().unwrap(), String::from_utf8_lossy(&out.stdout).into_owned())
}

fn audited(fx: &Fixture, log: &Path, extra: &[&str]) -> Server {
    let mut args = vec!["--audit-log", log.to_str().unwrap()];
    args.extend_from_slice(extra);
    Server::initialized(&fx.root(), &args)
}

#[test]
fn a_session_is_recorded_call_by_call_and_page_by_page_without_content_or_secrets() {
    let fx = Fixture::new();
    fx.write("a.txt", "alpha\n");
    std::fs::create_dir(fx.root().join("src")).unwrap();
    for i in 0..30 {
        fx.write(&format!("src/f{i:02}.rs"), "fn main() {}\n");
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    let mut server = audited(&fx, &log, &[]);
    assert_eq!(server.call(1, "read", json!({"format": "json", "path": "a.txt"}))["isError"], false);
    let first = server.call(2, "grep", json!({"pattern": "fn main", "page_size": 20, "format": "json"}));
    let cursor = next_cursor(&first).expect("a second page").to_string();
    let second = server.call(3, "grep", json!({"cursor": cursor}));
    assert_eq!(second["isError"], false, "{second}");
    assert_eq!(
        server.call(4, "write", json!({"format": "json", "path": "b.txt", "content": SECRET}))["isError"],
        false
    );
    let unknown = server.request(5, "tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(unknown["error"]["data"]["error"], "not_found");
    let forged = server.request(6, "tools/call", json!({"name": "read", "arguments": {"cursor": "c1.forged"}}));
    assert_eq!(forged["error"]["data"]["error"], "invalid_cursor");
    // Another process on the same file: a TCP client with a wrong token.
    let tcp = spawn_listening(
        &fx.root(),
        &["--tcp", "127.0.0.1:0", "--token", TOKEN],
        &["--audit-log", log.to_str().unwrap()],
    );
    let refused = Server::connect_tcp(&tcp.addr, Some(b"not-the-token\n"));
    let answer: Value = serde_json::from_str(&refused.recv_or_closed().expect("a refusal")).unwrap();
    assert!(answer["error"]["message"].as_str().unwrap().starts_with("Unauthorized"), "{answer}");
    drop(refused);
    drop(tcp);
    assert!(server.finish(), "the stdio server ends when its input does");

    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(SECRET) && !text.contains("alpha"), "file content in the audit log:\n{text}");
    assert!(!text.contains(TOKEN), "the token in the audit log");
    let records = lines(&log);
    let events: Vec<&str> = records.iter().map(|r| r["event"].as_str().unwrap()).collect();
    assert_eq!(events[0], "start", "{events:?}");
    assert!(records[0]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "read"));
    assert_eq!(records[0]["config_sha256"].as_str().unwrap().len(), 64);
    let calls: Vec<&Value> = records.iter().filter(|r| r["event"] == "call").collect();
    assert_eq!(calls.len(), 4, "read, two grep pages, write: {events:?}");
    for call in &calls {
        assert_eq!(call["who"]["transport"], "stdio");
        assert!(call["who"]["client"].is_string(), "{call}");
        assert!(call["who"]["era"].is_string(), "{call}");
        assert_eq!(call["tool"]["sha256"].as_str().unwrap().len(), 64);
        assert_eq!(call["grants"][0]["path"].as_str().unwrap(), fx.root().canonicalize().unwrap().to_str().unwrap());
        assert!(call["duration_ms"].as_f64().unwrap() >= 0.0);
    }
    assert_eq!((calls[0]["tool"]["name"].as_str(), &calls[0]["grants"][0]["mode"]), (Some("read"), &json!("ro")));
    assert_eq!(calls[0]["outcome"], json!({"result": "page", "page": 1, "bytes": 6, "items": 1, "last": true}));
    assert_eq!((calls[1]["outcome"]["page"].as_u64(), calls[1]["outcome"]["last"].as_bool()), (Some(1), Some(false)));
    assert_eq!((calls[2]["outcome"]["page"].as_u64(), calls[2]["outcome"]["last"].as_bool()), (Some(2), Some(true)));
    assert_eq!(
        calls[2]["arguments"]["cursor"], cursor,
        "a short handle is kept as it is (a signed cursor, long, by its size and hash)"
    );
    assert_eq!(calls[3]["arguments"]["content"]["bytes"], SECRET.len());
    assert_eq!(calls[3]["grants"][0]["mode"], "rw");
    let refusals: Vec<(&str, &str)> = records
        .iter()
        .filter(|r| r["event"] == "refused")
        .map(|r| (r["reason"].as_str().unwrap(), r["who"]["transport"].as_str().unwrap()))
        .collect();
    assert_eq!(refusals, [("not_found", "stdio"), ("invalid_cursor", "stdio"), ("unknown_token", "tcp")]);
    assert!(records.iter().any(|r| r["event"] == "stop"), "the stdio server recorded its stop: {events:?}");
    let (code, said) = verify(&[&log]);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("from the first line ever written"), "{said}");
}

/// A log of a few calls, and its lines as text.
fn small_log(dir: &Path) -> (PathBuf, Vec<String>) {
    let fx = Fixture::new();
    fx.write("a.txt", "alpha\n");
    let log = dir.join("audit.log");
    let mut server = audited(&fx, &log, &[]);
    for id in 1..=4 {
        assert_eq!(server.call(id, "stat", json!({"format": "json", "path": "a.txt"}))["isError"], false);
    }
    assert!(server.finish(), "the server records its stop");
    let text = std::fs::read_to_string(&log).unwrap();
    (log, text.lines().map(String::from).collect())
}

#[test]
fn editing_deleting_or_reordering_one_line_makes_verify_name_it() {
    let dir = tempfile::tempdir().unwrap();
    let (log, original) = small_log(dir.path());
    assert_eq!(verify(&[&log]).0, 0);
    type Change = fn(&mut Vec<String>);
    let cases: [(&str, Change); 3] = [
        ("edited", |l| l[2] = l[2].replace("\"stat\"", "\"read\"")),
        ("deleted", |l| {
            l.remove(2);
        }),
        ("reordered", |l| l.swap(2, 3)),
    ];
    for (what, change) in cases {
        let mut changed = original.clone();
        change(&mut changed);
        std::fs::write(&log, changed.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
        let (code, said) = verify(&[&log]);
        assert_eq!(code, 1, "{what}: {said}");
        assert!(said.starts_with(&format!("broken: {} line 3:", log.display())), "{what}: {said}");
    }
}

#[test]
fn rotation_keeps_the_chain_across_files() {
    let fx = Fixture::new();
    fx.write("a.txt", "alpha\n");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    let mut server = audited(&fx, &log, &["--audit-max-bytes", "3000", "--audit-keep", "20"]);
    for id in 1..=12 {
        assert_eq!(server.call(id, "stat", json!({"format": "json", "path": "a.txt"}))["isError"], false);
    }
    drop(server);
    let mut files: Vec<PathBuf> =
        (1..=20).map(|k| dir.path().join(format!("audit.log.{k}"))).filter(|f| f.exists()).collect();
    assert!(files.len() >= 2, "the log rotated: {files:?}");
    files.reverse();
    files.push(log.clone());
    let all: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let (code, said) = verify(&all);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("from the first line ever written"), "{said}");
    // Without the oldest file its lines are missing; the chain alone still
    // holds from where it starts.
    let (code, said) = verify(&all[1..]);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("are missing") && said.contains("give the rotated files too"), "{said}");
    let (code, said) = verify_with(&["--no-anchor"], &all[1..]);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("the lines before it are in files not given"), "{said}");
}

#[test]
fn lines_cut_off_the_end_or_the_start_make_verify_fail_naming_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let (log, original) = small_log(dir.path());
    assert_eq!(original.last().map(|l| l.contains(r#""event":"stop""#)), Some(true), "the stop is last");
    let count = original.len();
    for cut in [1, 3] {
        let kept = &original[..count - cut];
        std::fs::write(&log, kept.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
        let (code, said) = verify(&[&log]);
        assert_eq!(code, 1, "{cut} lines cut off the end: {said}");
        let missing = format!("seq {}–{count} are missing", count - cut + 1);
        assert!(said.contains(&missing) && said.contains("cut off the end"), "{said}");
    }
    for cut in [1, 3] {
        let kept = &original[cut..];
        std::fs::write(&log, kept.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
        let (code, said) = verify(&[&log]);
        assert_eq!(code, 1, "{cut} lines cut off the start: {said}");
        assert!(said.contains(&format!("seq 1–{cut} are missing")) && said.contains("cut off the start"), "{said}");
    }
    // Cut, then appended to by a new server: the cut is recorded in the chain.
    std::fs::write(&log, original[..count - 2].iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let fx = Fixture::new();
    fx.write("a.txt", "alpha\n");
    drop(audited(&fx, &log, &[]));
    let (code, said) = verify(&[&log]);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains(&format!("line {}", count - 1)) && said.contains("cut or rewritten"), "{said}");
}

#[test]
fn arguments_of_any_shape_leave_no_value_in_the_audit_log() {
    let fx = Fixture::new();
    fx.write("a.txt", "alpha\n");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    let mut server = audited(&fx, &log, &[]);
    let long = format!("{SECRET}{}", "x".repeat(300));
    let calls = [
        ("write", json!({"format": "json", "path": "b.txt", "content": {"k": SECRET}})),
        ("write", json!({"format": "json", "path": "b.txt", "content": [SECRET]})),
        ("edit", json!({"format": "json", "path": "a.txt", "old_string": "alpha", "new_string": {"k": SECRET}})),
        ("write", json!({"format": "json", "path": "b.txt", "contents": SECRET})),
        ("write", json!({"format": "json", "path": "b.txt", "Content": SECRET})),
        ("write", json!({"format": "json", "path": {"k": SECRET}, "content": "x"})),
        ("write", json!({"format": "json", "path": "b.txt", "content": long})),
        ("grep", json!({"pattern": SECRET})),
        ("write", json!({"format": "json", "path": ".env", "content": "1234"})),
    ];
    for (id, (tool, arguments)) in calls.iter().enumerate() {
        let reply = server.request(id as i64 + 1, "tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(reply.get("result").is_some() || reply.get("error").is_some(), "{reply}");
    }
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap();
    for (n, line) in text.lines().enumerate() {
        assert!(!line.contains(SECRET) && !line.contains("TOP-SECRET"), "line {}: the secret is logged: {line}", n + 1);
        assert!(!line.contains("contents") && !line.contains("Content\""), "a misspelled key is logged: {line}");
    }
    let records: Vec<Value> = lines(&log).into_iter().filter(|r| r["event"] == "call").collect();
    assert_eq!(records.len(), calls.len(), "each call is recorded");
    assert_eq!(records[3]["arguments"]["(other)"]["keys"], 1, "{}", records[3]);
    let short = &records[8]["arguments"]["content"];
    let bare = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"1234"));
    assert_eq!(short["bytes"], 4, "{short}");
    assert!(short["hmac"].as_str().is_some_and(|h| h.len() == 64 && h != bare), "keyed, not a bare SHA-256: {short}");
    assert!(!text.contains(&bare), "the bare SHA-256 of a short content is not in the log");
    assert_eq!(records[8]["arguments"]["path"], ".env", "a path is kept");
}

#[test]
fn an_unwritable_audit_log_refuses_calls_when_closed_and_lets_them_go_on_when_open() {
    let fx = Fixture::new();
    fx.write("a.txt", "alpha\n");
    for (policy, refused) in [("closed", true), ("open", false)] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.log");
        let mut server = audited(&fx, &log, &["--audit-on-failure", policy]);
        assert_eq!(server.call(1, "stat", json!({"format": "json", "path": "a.txt"}))["isError"], false);
        // The file can no longer be appended to (as on a full disk).
        std::fs::remove_file(&log).unwrap();
        std::fs::create_dir(&log).unwrap();
        for id in 2..=3 {
            let reply = server.request(id, "tools/call", json!({"name": "stat", "arguments": {"path": "a.txt"}}));
            match refused {
                true => {
                    assert_eq!(reply["error"]["data"]["error"], "audit_unavailable", "{policy}: {reply}");
                    assert!(reply["error"]["message"].as_str().unwrap().contains("audit"), "{reply}");
                }
                false => assert_eq!(reply["result"]["isError"], false, "{policy}: {reply}"),
            }
        }
        // Writable again: calls are recorded and answered (after the retry wait).
        std::fs::remove_dir(&log).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1100));
        assert_eq!(server.call(4, "stat", json!({"format": "json", "path": "a.txt"}))["isError"], false, "{policy}");
        drop(server);
        assert_eq!(lines(&log).iter().filter(|r| r["event"] == "call").count(), 1, "{policy}");
    }
    // A file that cannot be opened at all stops the start when failing closed.
    let blocker = fx.write("not-a-dir", "x");
    let out = Command::new(cordon_bin())
        .args(["serve", "--root"])
        .arg(fx.root())
        .arg("--audit-log")
        .arg(blocker.join("audit.log"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("audit log") && stderr.contains("audit-on-failure"), "{stderr}");
}

#[test]
fn installs_and_removals_are_recorded_by_the_command_that_makes_them() {
    let fx = Fixture::new();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    let tools = dir.path().join("tools");
    let grant = format!("ro:{}", fx.root().display());
    let cordon = |args: &[&str]| {
        let out = Command::new(cordon_bin())
            .args(args)
            .arg("--tools-dir")
            .arg(&tools)
            .arg("--audit-log")
            .arg(&log)
            .arg("--state-dir")
            .arg(crate::support::shared_state_dir())
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    cordon(&["tool", "add", crate::tools::RUST_EXAMPLE, "--grant", &grant]);
    cordon(&["tool", "remove", "todos"]);
    let records = lines(&log);
    let events: Vec<&str> = records.iter().map(|r| r["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["tool_installed", "tool_removed"]);
    assert_eq!(records[0]["tool"]["name"], "todos");
    assert_eq!(records[0]["tool"]["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(records[0]["grants"], json!([grant]));
    assert_eq!(records[1]["tool"]["sha256"], records[0]["tool"]["sha256"]);
    assert_eq!(verify(&[&log]).0, 0);
}
