//! The state directory and the audit log are private, whatever the umask:
//! every directory the server creates is 0700 and every file 0600 (handles,
//! staged uploads, the audit log and its anchor, the compile cache, the
//! cursor key), and loose modes left from before are tightened at start,
//! with one warning. A server without a state directory stages uploads in an
//! owner-only directory of its own, gone when it stops.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use crate::support::{Fixture, Server, cordon_bin, next_cursor, run_bounded};

/// `cordon serve` started by a shell that sets `umask` first.
fn under_umask(umask: &str, root: &Path, extra: &[&str]) -> Server {
    let mut shell = Command::new("sh");
    shell.args(["-c", &format!("umask {umask}; exec \"$0\" \"$@\""), cordon_bin()]);
    let mut server = Server::start_with(shell, root, extra);
    server.handshake();
    server
}

/// Every entry under `dir` (symbolic links left out), with its mode.
fn walk(dir: &Path, out: &mut Vec<(PathBuf, u32, bool)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.file_type().is_symlink() {
            continue;
        }
        out.push((path.clone(), meta.permissions().mode() & 0o7777, meta.is_dir()));
        if meta.is_dir() {
            walk(&path, out);
        }
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn everything_the_server_creates_is_owner_only_whatever_the_umask() {
    let fx = Fixture::new();
    fx.write("lines.txt", (1..=3000).map(|i| format!("line {i}\n")).collect::<String>());
    for umask in ["022", "000"] {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state");
        let outside = tmp.path().join("logs/audit.log");
        for audit in [None, Some(&outside)] {
            let mut args = vec!["--state-dir", state.to_str().unwrap()];
            if let Some(log) = audit {
                args.extend(["--audit-log", log.to_str().unwrap()]);
            }
            let mut server = under_umask(umask, &fx.root(), &args);
            let first = server.call(1, "read", json!({"format": "json", "path": "lines.txt", "max_tokens": 100}));
            let handle = next_cursor(&first).expect("a handle").to_string();
            let second = server.call(2, "read", json!({"format": "json", "cursor": handle, "max_tokens": 100}));
            assert_eq!(second["isError"], false, "{second}");
            let started = server.call(3, "upload", json!({"action": "start"}));
            let id = started["structuredContent"]["upload_id"].as_str().unwrap().to_string();
            let chunk = json!({"action": "chunk", "upload_id": id, "index": 0, "data": "staged secret"});
            assert_eq!(server.call(4, "upload", chunk)["isError"], false);
            assert!(server.finish());
            let mut found = Vec::new();
            walk(&state, &mut found);
            if let Some(log) = audit {
                walk(log.parent().unwrap(), &mut found);
            }
            let names: Vec<String> =
                found.iter().map(|(p, _, _)| p.strip_prefix(tmp.path()).unwrap().display().to_string()).collect();
            for expected in ["state/cursor.key", "state/handles", "state/compiled", "state/audit/audit.log.anchor"] {
                assert!(names.iter().any(|n| n == expected), "umask {umask}: no {expected} in {names:?}");
            }
            assert!(names.iter().any(|n| n.starts_with("state/uploads/") && n.ends_with("/data")), "{names:?}");
            assert!(names.iter().any(|n| n.starts_with("state/handles/")), "a handle's file: {names:?}");
            if audit.is_some() {
                assert!(names.iter().any(|n| n == "logs/audit.log"), "{names:?}");
            }
            for (path, mode, is_dir) in &found {
                let want = if *is_dir { 0o700 } else { 0o600 };
                assert_eq!(*mode, want, "umask {umask}: {} is {mode:04o}", path.display());
            }
            assert_eq!(mode(&state), 0o700, "umask {umask}: the state directory itself");
        }
    }
}

#[test]
fn loose_modes_left_from_before_are_tightened_at_start_with_one_warning() {
    let fx = Fixture::new();
    fx.write("a.txt", "alpha\n");
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let handle_file = state.join("handles").join("a".repeat(32));
    std::fs::create_dir_all(handle_file.parent().unwrap()).unwrap();
    std::fs::create_dir_all(state.join("uploads/0123456789abcdef")).unwrap();
    std::fs::write(&handle_file, "2 1 0 c1.x\n").unwrap();
    std::fs::write(state.join("uploads/0123456789abcdef/data"), "staged").unwrap();
    let log_dir = tmp.path().join("logs");
    std::fs::create_dir(&log_dir).unwrap();
    let log = log_dir.join("audit.log");
    std::fs::write(&log, "").unwrap();
    std::fs::write(log_dir.join("audit.log.1"), "").unwrap();
    for (path, loose) in [
        (state.clone(), 0o755),
        (state.join("handles"), 0o777),
        (handle_file.clone(), 0o644),
        (state.join("uploads/0123456789abcdef/data"), 0o666),
        (log.clone(), 0o644),
        (log_dir.join("audit.log.1"), 0o640),
        (log_dir.clone(), 0o755),
    ] {
        chmod(&path, loose);
    }
    let mut call = Command::new("sh");
    call.args(["-c", "umask 000; exec \"$0\" \"$@\"", cordon_bin(), "call", "stat", "--root"]).arg(fx.root());
    call.arg("--state-dir").arg(&state).arg("--audit-log").arg(&log).args(["--json", r#"{"path":"a.txt"}"#]);
    let (status, _, err) = run_bounded(call, Duration::from_secs(300));
    let err = String::from_utf8_lossy(&err);
    assert!(status.is_some_and(|s| s.success()), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("now owner-only")).collect();
    assert_eq!(warnings.len(), 2, "one line for the state directory, one for the audit log's: {err}");
    assert!(warnings[0].contains("handles 0777→0700") && warnings[0].contains("0644→0600"), "{err}");
    assert!(warnings[1].contains("audit.log 0644→0600") && warnings[1].contains("audit.log.1 0640→0600"), "{err}");
    for (path, want) in [
        (state.clone(), 0o700),
        (state.join("handles"), 0o700),
        (handle_file, 0o600),
        (state.join("uploads/0123456789abcdef/data"), 0o600),
        (log.clone(), 0o600),
        (log_dir.join("audit.log.1"), 0o600),
    ] {
        assert_eq!(mode(&path), want, "{}", path.display());
    }
    assert_eq!(mode(&log_dir), 0o755, "a directory the log was put in, not made by the server, is left as it is");
}

/// The uploads directories in `temp`, by name.
fn uploads_dirs(temp: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(temp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("cordon-uploads-"))
        .collect();
    names.sort();
    names
}

#[test]
fn cordon_call_all_without_a_state_directory_leaves_no_uploads_directory() {
    let fx = Fixture::new();
    fx.write("a.txt", "alpha\n");
    let temp = tempfile::tempdir().unwrap();
    let out = Command::new(cordon_bin())
        .env("TMPDIR", temp.path())
        .args(["call", "read", "--all", "--no-cache", "--root"])
        .arg(fx.root())
        .args(["--json", r#"{"path": "a.txt"}"#])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout, b"alpha\n");
    assert_eq!(uploads_dirs(temp.path()), Vec::<String>::new(), "removed when the call is done");
}

/// A server without a state directory that has started an upload.
fn uploading_without_state(root: &Path, temp: &Path) -> Server {
    let mut command = Command::new(cordon_bin());
    command.env("TMPDIR", temp);
    let mut server = Server::start_with(command, root, &["--no-cache"]);
    server.handshake();
    let started = server.call(1, "upload", json!({"action": "start"}));
    let id = started["structuredContent"]["upload_id"].as_str().expect("an upload id").to_string();
    let chunk = json!({"action": "chunk", "upload_id": id, "index": 0, "data": "staged"});
    assert_eq!(server.call(2, "upload", chunk)["isError"], false);
    server
}

#[test]
fn a_server_without_a_state_directory_removes_its_uploads_when_it_stops_and_those_of_servers_gone() {
    let fx = Fixture::new();
    fx.write("a.txt", "alpha\n");
    let temp = tempfile::tempdir().unwrap();
    let killed = uploading_without_state(&fx.root(), temp.path());
    let killed_pid = killed.pid();
    let [own] = <[String; 1]>::try_from(uploads_dirs(temp.path())).expect("one directory");
    assert!(own.starts_with(&format!("cordon-uploads-{killed_pid}-")), "{own}");
    assert_eq!(mode(&temp.path().join(&own)), 0o700);
    killed.kill_9();
    // As builds before named theirs (no lock), idle past the uploads' time to live.
    let legacy = format!("cordon-uploads-{killed_pid}");
    std::fs::create_dir(temp.path().join(&legacy)).unwrap();
    let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(7200);
    std::fs::File::open(temp.path().join(&legacy)).unwrap().set_modified(two_hours_ago).unwrap();
    // Kept: a live process's (this test's), one whose lock is held (a server in
    // another PID namespace), a name of another pattern, a symlink.
    let live = format!("cordon-uploads-{}-0123456789abcdef", std::process::id());
    let held = format!("cordon-uploads-{killed_pid}-fedcba9876543210");
    for kept in [&live, &held, "cordon-uploads-notes"] {
        std::fs::create_dir(temp.path().join(kept)).unwrap();
    }
    let lock = std::fs::File::open(temp.path().join(&held)).unwrap();
    lock.lock().unwrap();
    let target = tempfile::tempdir().unwrap();
    std::fs::write(target.path().join("keep"), "kept").unwrap();
    let link = format!("cordon-uploads-{killed_pid}-0000000000000000");
    std::os::unix::fs::symlink(target.path(), temp.path().join(&link)).unwrap();

    // The sweep runs as the server starts, before it answers.
    let server = uploading_without_state(&fx.root(), temp.path());
    let serving = uploads_dirs(temp.path());
    let next = format!("cordon-uploads-{}-", server.pid());
    let mut kept = vec![link, live, held, "cordon-uploads-notes".to_string()];
    kept.sort();
    assert_eq!(serving.iter().filter(|n| !n.starts_with(&next)).collect::<Vec<_>>(), kept.iter().collect::<Vec<_>>());
    assert_eq!(serving.len(), kept.len() + 1, "its own: {serving:?}");
    assert!(server.finish(), "the server ends at the end of its input");
    assert_eq!(uploads_dirs(temp.path()), kept, "its own removed, the others kept");
    assert_eq!(std::fs::read_to_string(target.path().join("keep")).unwrap(), "kept");

    // SIGTERM stops it in order too.
    let server = uploading_without_state(&fx.root(), temp.path());
    assert_eq!(uploads_dirs(temp.path()).len(), kept.len() + 1);
    assert!(server.terminate().success(), "a server asked to stop exits 0");
    assert_eq!(uploads_dirs(temp.path()), kept);
}

#[test]
fn a_server_without_a_state_directory_whose_temporary_directory_is_missing_says_which() {
    let fx = Fixture::new();
    fx.write("a.txt", "alpha\n");
    let missing = tempfile::tempdir().unwrap().path().join("gone");
    let mut call = Command::new(cordon_bin());
    call.env("TMPDIR", &missing).args(["call", "stat", "--no-cache", "--root"]).arg(fx.root());
    call.args(["--json", r#"{"path":"a.txt"}"#]);
    let (status, _, err) = run_bounded(call, Duration::from_secs(300));
    let err = String::from_utf8_lossy(&err);
    assert_eq!(status.and_then(|s| s.code()), Some(2), "{err}");
    assert!(err.contains(&format!("make an uploads directory in {}", missing.display())), "{err}");
    assert!(!missing.exists());
}
