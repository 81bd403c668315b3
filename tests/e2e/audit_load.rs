//! The audit trail under load and crashes: processes sharing one log, each
//! with calls in flight whose records are written together, leave one whole
//! chain; a writer killed while its calls are being recorded leaves a chain
//! the next writer goes on from, and no call answered as ok lacks its record.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::support::{Fixture, Server, cordon_bin};

/// Calls each session keeps in flight: their records share writes.
const IN_FLIGHT: usize = 8;

/// The lines of every audit file, oldest file first.
fn all_lines(files: &[PathBuf]) -> Vec<Value> {
    let texts = files.iter().map(|f| std::fs::read_to_string(f).unwrap());
    texts.flat_map(|t| t.lines().map(|l| serde_json::from_str(l).unwrap()).collect::<Vec<Value>>()).collect()
}

/// The log and its rotated files that exist, oldest first.
fn log_files(log: &Path, keep: usize) -> Vec<PathBuf> {
    let rotated = (1..=keep).rev().map(|k| PathBuf::from(format!("{}.{k}", log.display())));
    rotated.chain([log.to_path_buf()]).filter(|f| f.exists()).collect()
}

fn verify(files: &[PathBuf]) -> (bool, String) {
    let out = Command::new(cordon_bin()).args(["audit", "verify"]).args(files).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), said)
}

/// Sends `calls` (id, arguments) of `read`, keeping `IN_FLIGHT` outstanding,
/// and hands each answer to `answered` until it returns false; returns how
/// many answers came.
fn pipeline(server: &mut Server, calls: &[(i64, Value)], mut answered: impl FnMut(&Value) -> bool) -> usize {
    let mut next = 0;
    let send = |server: &mut Server, next: &mut usize| {
        let (id, args) = &calls[*next];
        let params = json!({"name": "read", "arguments": args});
        server.send_json(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
        *next += 1;
    };
    while next < calls.len().min(IN_FLIGHT) {
        send(server, &mut next);
    }
    let mut got = 0;
    while got < next {
        let reply = server.recv();
        got += 1;
        if !answered(&reply) {
            return got;
        }
        if next < calls.len() {
            send(server, &mut next);
        }
    }
    got
}

#[test]
fn eight_processes_of_a_thousand_calls_each_leave_one_whole_chain_across_rotations() {
    let fx = Fixture::new();
    fx.write("a.txt", "alpha\n");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    let flags = ["--audit-log", log.to_str().unwrap(), "--audit-max-bytes", "512KiB", "--audit-keep", "100"];
    let servers: Vec<Server> = (0..8).map(|_| Server::initialized(&fx.root(), &flags)).collect();
    let pids: Vec<u32> = servers.iter().map(Server::pid).collect();
    let sessions: Vec<_> = servers
        .into_iter()
        .map(|mut server| {
            std::thread::spawn(move || {
                let calls: Vec<(i64, Value)> = (1..=1000).map(|id| (id, json!({"path": "a.txt"}))).collect();
                let answered = pipeline(&mut server, &calls, |reply| {
                    assert_eq!(reply["result"]["isError"], false, "{reply}");
                    true
                });
                assert_eq!(answered, 1000);
                assert!(server.finish(), "the server exits cleanly");
            })
        })
        .collect();
    sessions.into_iter().for_each(|s| s.join().unwrap());

    let files = log_files(&log, 100);
    assert!(files.len() > 3, "the log rotated: {files:?}");
    let (whole, said) = verify(&files);
    assert!(whole, "the chain is whole: {said}");
    let lines = all_lines(&files);
    let seqs: Vec<u64> = lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=lines.len() as u64).collect::<Vec<_>>(), "one sequence, no gap");
    let mut calls: HashMap<u64, usize> = HashMap::new();
    for line in lines.iter().filter(|l| l["event"] == "call") {
        *calls.entry(line["pid"].as_u64().unwrap()).or_default() += 1;
    }
    for pid in pids {
        assert_eq!(calls.get(&u64::from(pid)), Some(&1000), "process {pid} recorded each of its calls once");
    }
    let events = |name: &str| lines.iter().filter(|l| l["event"] == name).count();
    assert_eq!((events("start"), events("stop")), (8, 8));
}

#[test]
fn a_writer_killed_while_recording_leaves_a_chain_the_next_goes_on_and_no_ok_answer_without_its_record() {
    let fx = Fixture::new();
    let files: Vec<String> = (0..2000).map(|n| format!("f{n:04}.txt")).collect();
    for name in &files {
        fx.write(name, "x\n");
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    // Failing closed (the default): a call is answered once its record is written.
    let flags = ["--audit-log", log.to_str().unwrap()];
    let mut server = Server::initialized(&fx.root(), &flags);
    let calls: Vec<(i64, Value)> = files.iter().zip(1..).map(|(name, id)| (id, json!({"path": name}))).collect();
    let mut ok = BTreeSet::new();
    let answered = pipeline(&mut server, &calls, |reply| {
        if reply["result"]["isError"] == false {
            ok.insert(files[reply["id"].as_u64().unwrap() as usize - 1].clone());
        }
        ok.len() < 300
    });
    // Killed with calls in flight: some being run, some being recorded.
    server.kill_9();
    assert_eq!((answered, ok.len()), (300, 300));

    // The next writer cuts a line torn by the kill, if there is one, and
    // goes on from the last whole line.
    let mut next = Server::initialized(&fx.root(), &flags);
    assert_eq!(next.call(1, "read", json!({"path": "f0000.txt"}))["isError"], false);
    assert!(next.finish());
    let (whole, said) = verify(std::slice::from_ref(&log));
    assert!(whole, "the chain is whole after the kill: {said}");
    let lines = all_lines(std::slice::from_ref(&log));
    let recorded: BTreeSet<String> = lines
        .iter()
        .filter(|l| l["event"] == "call" && l["outcome"]["result"] == "page")
        .filter_map(|l| l["arguments"]["path"].as_str().map(str::to_string))
        .collect();
    let missing: Vec<&String> = ok.difference(&recorded).collect();
    assert!(missing.is_empty(), "answered as ok without a record: {missing:?}");
}
