//! Durability: the server killed with SIGKILL in the middle of writes, edits,
//! moves and staged-upload commits, again and again. After every kill the file
//! is the old version or the new one, whole, never partial or missing (and the
//! new one whenever the server had acknowledged); a temporary file a kill
//! leaves behind is removed by the next server's startup sweep, which says so
//! on stderr. `CORDON_DURABILITY_ITERATIONS` sets the number of kills (200).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::support::{REPLY_TIMEOUT, Rng, Server, initialize_params};

const DEFAULT_ITERATIONS: u64 = 200;
/// The largest version written: big enough that a kill lands mid-write.
const MAX_SIZE: usize = 3 << 20;
/// Staged uploads go in chunks of this many bytes.
const CHUNK: usize = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Write,
    Edit,
    Move,
    Commit,
}

const OPS: [Op; 4] = [Op::Write, Op::Edit, Op::Move, Op::Commit];

/// The files the test changes, as they should be: `data.bin` (written, edited,
/// committed; starts with a version marker) and one file that moves between
/// `left.bin` and `right.bin`.
struct Model {
    root: PathBuf,
    version: u64,
    data: Vec<u8>,
    moving: Vec<u8>,
    at_left: bool,
}

/// What one mutation should end in, and how to send it.
struct Attempt {
    op: Op,
    /// The bytes the tool handles (the file's new size; 0 for a move).
    size: usize,
    /// The new `data.bin` (write, edit, commit).
    new_data: Vec<u8>,
    /// The edit's replacement for the old marker.
    new_string: String,
}

/// How the kills came out.
#[derive(Default)]
struct Tally {
    old: u64,
    new: u64,
    temp_left: u64,
    acknowledged: u64,
    swept: u64,
    by_op: [u64; 4],
}

fn marker(version: u64) -> String {
    format!("@@VERSION-{version:08}@@")
}

/// A version of `data.bin`: its marker, then `size` bytes without `@`.
fn version_bytes(rng: &mut Rng, version: u64, size: usize) -> Vec<u8> {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz0123\n\t";
    let mut out = marker(version).into_bytes();
    out.reserve(size);
    while out.len() < size {
        let word = rng.next();
        out.extend((0..8).map(|i| ALPHABET[(word >> (i * 5)) as usize & 31]));
    }
    out.truncate(size.max(marker(version).len()));
    out
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

impl Model {
    fn data_path(&self) -> PathBuf {
        self.root.join("data.bin")
    }

    fn moving_paths(&self) -> (PathBuf, PathBuf) {
        let (left, right) = (self.root.join("left.bin"), self.root.join("right.bin"));
        if self.at_left { (left, right) } else { (right, left) }
    }

    /// A mutation of kind `op` and a random size.
    fn plan(&self, rng: &mut Rng, op: Op) -> Attempt {
        let size = match rng.range(0, 2) {
            0 => rng.range(0, 4096) as usize,
            1 => rng.range(4096, 256 << 10) as usize,
            _ => rng.range(256 << 10, MAX_SIZE as u64) as usize,
        };
        self.plan_sized(rng, op, size)
    }

    /// A mutation of kind `op`; a write or commit of a version of `size` bytes.
    fn plan_sized(&self, rng: &mut Rng, op: Op, size: usize) -> Attempt {
        let mut attempt = Attempt { op, size, new_data: Vec::new(), new_string: String::new() };
        match op {
            Op::Write | Op::Commit => attempt.new_data = version_bytes(rng, self.version + 1, size),
            Op::Edit => {
                let old = marker(self.version);
                attempt.new_string = format!("{}{}", marker(self.version + 1), "+".repeat(rng.range(0, 64) as usize));
                let at = self.data.windows(old.len()).position(|w| w == old.as_bytes()).expect("the marker");
                attempt.new_data =
                    [&self.data[..at], attempt.new_string.as_bytes(), &self.data[at + old.len()..]].concat();
                attempt.size = attempt.new_data.len();
            }
            Op::Move => attempt.size = 0,
        }
        attempt
    }

    /// Sends the mutation; the request the kill is aimed at goes without
    /// waiting for its answer (a staged commit's chunks are acknowledged first).
    fn send(&self, server: &mut Server, attempt: &Attempt, id: &mut i64) {
        let path = self.data_path();
        let (tool, arguments) = match attempt.op {
            Op::Write => (
                "write",
                json!({"format": "json", "path": path, "content": b64(&attempt.new_data), "encoding": "base64"}),
            ),
            Op::Edit => (
                "edit",
                json!({"format": "json", "path": path, "old_string": marker(self.version), "new_string": attempt.new_string}),
            ),
            Op::Move => {
                let (from, to) = self.moving_paths();
                ("move", json!({"format": "json", "from": from, "to": to}))
            }
            Op::Commit => {
                let upload_id = upload(server, id, &attempt.new_data);
                let sha = hex(&Sha256::digest(&attempt.new_data));
                (
                    "write",
                    json!({"format": "json", "path": path, "upload_id": upload_id, "size": attempt.new_data.len(), "sha256": sha}),
                )
            }
        };
        *id += 1;
        let params = json!({"name": tool, "arguments": arguments});
        server.send_json(&json!({"jsonrpc": "2.0", "id": *id, "method": "tools/call", "params": params}));
    }

    /// Checks the files after a kill: each is the old version or the new one;
    /// the model takes the state found. Returns whether it is the new one.
    fn settle(&mut self, attempt: &Attempt) -> bool {
        if attempt.op == Op::Move {
            let (from, to) = self.moving_paths();
            let (at_from, at_to) = (std::fs::read(&from).ok(), std::fs::read(&to).ok());
            return match (at_from, at_to) {
                (Some(bytes), None) if bytes == self.moving => false,
                (None, Some(bytes)) if bytes == self.moving => {
                    self.at_left = !self.at_left;
                    true
                }
                (a, b) => panic!(
                    "after a kill mid-move: {} has {:?} bytes, {} has {:?}",
                    from.display(),
                    a.map(|a| a.len()),
                    to.display(),
                    b.map(|b| b.len())
                ),
            };
        }
        let found = std::fs::read(self.data_path()).expect("data.bin is never missing");
        if found == self.data {
            return false;
        }
        assert!(
            found == attempt.new_data,
            "after a kill mid-{:?}: data.bin has {} bytes, neither the old version ({} bytes) nor the new ({} bytes)",
            attempt.op,
            found.len(),
            self.data.len(),
            attempt.new_data.len()
        );
        self.data = found;
        self.version += 1;
        true
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Stages `bytes` as an upload, chunk by chunk, each acknowledged.
fn upload(server: &mut Server, id: &mut i64, bytes: &[u8]) -> String {
    *id += 1;
    let started = server.call(*id, "upload", json!({"action": "start"}));
    let upload_id = started["structuredContent"]["upload_id"].as_str().expect("an upload id").to_string();
    for (index, piece) in bytes.chunks(CHUNK).enumerate() {
        *id += 1;
        let args = json!({"action": "chunk", "upload_id": upload_id, "index": index, "data": b64(piece), "encoding": "base64"});
        let ack = server.call(*id, "upload", args);
        assert_eq!(ack["isError"], false, "{ack}");
    }
    upload_id
}

/// How long each kind of mutation took when left to finish, small and large,
/// to aim the kills at the whole of a call.
struct Timing {
    small: [Duration; 4],
    large: [Duration; 4],
}

impl Timing {
    /// A random delay from the request being sent to a little past the
    /// expected answer for this kind and size.
    fn kill_delay(&self, rng: &mut Rng, attempt: &Attempt) -> Duration {
        let i = attempt.op as usize;
        let (small, large) = (self.small[i].as_secs_f64(), self.large[i].as_secs_f64());
        let expected = small + (large - small).max(0.0) * attempt.size as f64 / MAX_SIZE as f64;
        let micros = (expected * 1e6) as u64 + 2000;
        Duration::from_micros(rng.range(0, micros))
    }
}

/// Starts a server on the model's root and waits for its startup sweep's log
/// line; returns the server and how many files the sweep removed.
fn start_swept(root: &Path, state: &Path, id: &mut i64) -> (Server, usize) {
    let (mut server, logs) = Server::start_logged(root, &["--state-dir", state.to_str().unwrap()]);
    let removed = swept(&logs);
    // Keep draining the logs so the server never blocks on them.
    std::thread::spawn(move || while logs.recv().is_ok() {});
    *id += 1;
    let init = server.request(*id, "initialize", initialize_params("2025-11-25"));
    assert!(init.get("result").is_some(), "{init}");
    server.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    (server, removed)
}

/// The count in the sweep's `removed N stray temporary files` line.
fn swept(logs: &Receiver<String>) -> usize {
    let deadline = Instant::now() + REPLY_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = logs.recv_timeout(left).expect("the startup sweep logs `removed N stray temporary files`");
        if let Some((_, rest)) = line.split_once("removed ")
            && let Some((count, _)) = rest.split_once(" stray temporary files")
        {
            return count.parse().unwrap_or_else(|_| panic!("a count in: {line}"));
        }
    }
}

/// Runs one mutation to its answer and returns how long it took after sending.
fn run_to_end(server: &mut Server, model: &mut Model, attempt: &Attempt, id: &mut i64) -> Duration {
    model.send(server, attempt, id);
    let sent = Instant::now();
    let reply = server.recv();
    let took = sent.elapsed();
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert!(model.settle(attempt), "an answered {:?} left the new version", attempt.op);
    took
}

/// Measures each kind of mutation, small and large, on one server.
fn calibrate(server: &mut Server, model: &mut Model, rng: &mut Rng, id: &mut i64) -> Timing {
    let mut timing = Timing { small: [Duration::ZERO; 4], large: [Duration::ZERO; 4] };
    for (size, large) in [(1000, false), (MAX_SIZE, true)] {
        // In this order an edit works on the version just written.
        for op in OPS {
            let attempt = model.plan_sized(rng, op, size);
            let took = run_to_end(server, model, &attempt, id);
            if large { timing.large[op as usize] = took } else { timing.small[op as usize] = took }
        }
    }
    timing
}

#[test]
fn killed_mid_write_the_file_is_old_or_new_and_the_next_start_removes_temp_files() {
    let iterations: u64 = std::env::var("CORDON_DURABILITY_ITERATIONS")
        .ok()
        .map(|n| n.parse().expect("CORDON_DURABILITY_ITERATIONS is a number"))
        .unwrap_or(DEFAULT_ITERATIONS);
    let began = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let state = state_dir_with_compiled_cache();
    let mut rng = Rng(0x5eed_d0ab_1e00_0001);
    let root = dir.path().canonicalize().unwrap();
    let mut model = Model {
        root: root.clone(),
        version: 0,
        data: version_bytes(&mut rng, 0, 100),
        moving: Vec::new(),
        at_left: true,
    };
    std::fs::write(model.data_path(), &model.data).unwrap();
    model.moving = version_bytes(&mut rng, 0, 5000);
    std::fs::write(model.moving_paths().0, &model.moving).unwrap();

    let mut id = 0;
    let (mut server, removed) = start_swept(&root, state.path(), &mut id);
    assert_eq!(removed, 0);
    let timing = calibrate(&mut server, &mut model, &mut rng, &mut id);
    drop(server);

    let mut tally = Tally::default();
    let mut left_behind = 0;
    for i in 0..=iterations {
        let (mut server, removed) = start_swept(&root, state.path(), &mut id);
        assert_eq!(removed, left_behind, "iteration {i}: the sweep removes exactly the files the kill left");
        tally.swept += removed as u64;
        let remaining = stray_temp_files(&root);
        assert!(remaining.is_empty(), "iteration {i}: temporary files after the sweep: {remaining:?}");
        if i == iterations {
            break;
        }
        let op = OPS[rng.range(0, 3) as usize];
        let attempt = model.plan(&mut rng, op);
        model.send(&mut server, &attempt, &mut id);
        let answered = server.recv_within(timing.kill_delay(&mut rng, &attempt));
        server.kill_9();
        if let Some(reply) = &answered {
            assert_eq!(reply["result"]["isError"], false, "iteration {i}: {reply}");
        }
        let is_new = model.settle(&attempt);
        assert!(is_new || answered.is_none(), "iteration {i}: an acknowledged {op:?} was lost");
        left_behind = stray_temp_files(&root).len();
        tally.by_op[op as usize] += 1;
        tally.acknowledged += u64::from(answered.is_some());
        tally.temp_left += u64::from(left_behind > 0);
        if is_new { tally.new += 1 } else { tally.old += 1 }
    }
    // Straight to stderr, not through the test harness's capture, so the
    // summary shows in every run's output.
    let _ = writeln!(
        std::io::stderr(),
        "durability: {iterations} kills in {:.1} s (write {}, edit {}, move {}, commit {}): \
         old version {}, new version {} ({} acknowledged), temporary file left {} (swept {} files)",
        began.elapsed().as_secs_f64(),
        tally.by_op[0],
        tally.by_op[1],
        tally.by_op[2],
        tally.by_op[3],
        tally.old,
        tally.new,
        tally.acknowledged,
        tally.temp_left,
        tally.swept,
    );
    assert_eq!(tally.old + tally.new, iterations);
    if iterations >= 100 {
        assert!(tally.old > 0 && tally.new > 0, "the kills land both before and after the commit point");
    }
}

/// A fresh state directory seeded with the shared compile cache (hard links,
/// or copies), so servers start warm without sharing anything else.
fn state_dir_with_compiled_cache() -> tempfile::TempDir {
    let state = tempfile::tempdir().unwrap();
    let compiled = state.path().join("compiled");
    std::fs::create_dir_all(&compiled).unwrap();
    if let Ok(entries) = std::fs::read_dir(crate::support::shared_state_dir().join("compiled")) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name.to_string_lossy().ends_with(".cwasm") {
                let to = compiled.join(&name);
                let _ = std::fs::hard_link(entry.path(), &to).or_else(|_| std::fs::copy(entry.path(), &to).map(|_| ()));
            }
        }
    }
    state
}

/// The `.cordon-*.tmp` files anywhere under `dir` (a loose match: anything
/// the atomic replace could have left).
fn stray_temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else if name.starts_with(".cordon-") && name.ends_with(".tmp") {
                found.push(entry.path());
            }
        }
    }
    found
}
