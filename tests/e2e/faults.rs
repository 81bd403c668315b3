//! Faults under the tools' feet: files deleted, truncated or grown between
//! pages; a full disk (the server's RLIMIT_FSIZE) while a write commits; and a
//! directory that cannot be read in the middle of a walk. Every page is real
//! content or a structured error, a failed commit leaves the old file and no
//! temporary file, and the server goes on answering.

use std::fs;
use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::{Fixture, Server, next_cursor, payload, read_all, text};

fn code(result: &Value) -> &str {
    result["_meta"]["cordon/error"]["code"].as_str().unwrap_or_else(|| panic!("not a tool error: {result}"))
}

fn cursor(result: &Value) -> String {
    assert_eq!(result["isError"], false, "{result}");
    next_cursor(result).as_deref().unwrap_or_else(|| panic!("no cursor: {result}")).to_string()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn temp_files(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".cordon-"))
        .collect()
}

/// Parks another stream so that, with `--max-sessions 1`, the next page of
/// the first one must reopen the tool at its cursor.
fn evict(server: &mut Server, id: i64) {
    let other = server.call(id, "read", json!({"format": "json", "path": "hello.txt", "max_tokens": 1}));
    cursor(&other);
}

/// Reads the first page of `name`, lets `change` act on the file, and returns
/// the next page, with the live stream (`evicted` false) or a reopened one.
fn page_after(change: impl FnOnce(&Path), evicted: bool) -> Value {
    let fx = Fixture::new();
    let content: String = (0..4000).map(|i| format!("line {i:05}\n")).collect();
    let path = fx.write("f.txt", &content);
    let mut server = Server::initialized(&fx.root(), &["--max-sessions", "1"]);
    let first = server.call(1, "read", json!({"format": "json", "path": "f.txt", "max_tokens": 100}));
    assert!(content.as_bytes().starts_with(&payload(&first)));
    let next = cursor(&first);
    change(&path);
    if evicted {
        evict(&mut server, 2);
    }
    let page = server.call(3, "read", json!({"format": "json", "cursor": next, "max_tokens": 100}));
    // The server goes on.
    assert_eq!(text(&server.call(4, "read", json!({"format": "json", "path": "hello.txt"}))), "hello\nworld\n");
    page
}

#[test]
fn a_file_truncated_between_pages_is_stale_whether_its_stream_is_live_or_reopened() {
    for evicted in [false, true] {
        for keep in [0u64, 1000, 20_000] {
            let page =
                page_after(|p| fs::OpenOptions::new().write(true).open(p).unwrap().set_len(keep).unwrap(), evicted);
            assert_eq!(code(&page), "stale", "truncated to {keep} (evicted: {evicted}): {page}");
        }
    }
}

#[test]
fn a_file_grown_between_pages_is_stale_whether_its_stream_is_live_or_reopened() {
    for evicted in [false, true] {
        let page = page_after(
            |p| {
                use std::io::Write;
                fs::OpenOptions::new().append(true).open(p).unwrap().write_all(b"appended\n").unwrap();
            },
            evicted,
        );
        assert_eq!(code(&page), "stale", "grown (evicted: {evicted}): {page}");
    }
}

#[test]
fn a_file_deleted_or_recreated_between_pages_is_stale_when_its_stream_is_reopened() {
    let page = page_after(|p| fs::remove_file(p).unwrap(), true);
    assert_eq!(code(&page), "stale", "deleted: {page}");
    // The same bytes under the same name, but another file: never spliced.
    let page = page_after(
        |p| {
            let bytes = fs::read(p).unwrap();
            fs::remove_file(p).unwrap();
            fs::write(p, bytes).unwrap();
        },
        true,
    );
    assert_eq!(code(&page), "stale", "recreated: {page}");
}

/// One grep item: a matching line of one of the `files` (as first written, or
/// as it is now), reported at its own line number and byte offset.
fn check_grep_item(line: &str, root: &Path, files: &[(String, String)]) -> (String, u64) {
    let item: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON item ({e}): {line}"));
    let path = item["path"].as_str().unwrap().to_string();
    let name = Path::new(&path).strip_prefix(root).unwrap_or_else(|_| panic!("outside the root: {path}"));
    let number = item["line"].as_u64().unwrap();
    let offset = item["byte_offset"].as_u64().unwrap() as usize;
    let shown = item["text"].as_str().unwrap();
    let original = files.iter().find(|(n, _)| Path::new(n) == name).map(|(_, c)| c.clone()).unwrap_or_default();
    let now = fs::read_to_string(&path).unwrap_or_default();
    let real = [original, now].into_iter().any(|content| {
        content.lines().nth(number as usize - 1) == Some(shown)
            && content.get(offset..).is_some_and(|rest| rest.starts_with(shown))
    });
    assert!(real, "an item that is in no version of the file: {line}");
    (path, number)
}

#[test]
fn files_deleted_truncated_or_grown_during_a_paged_grep_give_real_items_or_errors() {
    // Counted on its first page, a result this small is read to its end then and
    // its later pages come from what was kept (a snapshot, as counted), unless
    // the stream is evicted (reopened at the cursor, it pages the tree as it is
    // now); not counted (`--count-ms 0`), it is paged live.
    for (evicted, counted) in [(false, false), (true, true), (false, true)] {
        let fx = Fixture::new();
        let root = fx.root();
        fs::create_dir(root.join("many")).unwrap();
        let files: Vec<(String, String)> = (0..24)
            .map(|k| {
                let name = format!("many/f{k:02}.txt");
                let content: String = (0..60).map(|i| format!("match {i} of f{k:02}\nother {i}\n")).collect();
                fs::write(root.join(&name), &content).unwrap();
                (name, content)
            })
            .collect();
        let count_ms = if counted { "25000" } else { "0" };
        let mut server = Server::initialized(&root, &["--max-sessions", "1", "--count-ms", count_ms]);
        let mut args = json!({"pattern": "^match", "path": "many", "max_tokens": 150, "format": "json"});
        let mut seen: Vec<(String, u64)> = Vec::new();
        let mut errors = Vec::new();
        for page in 0.. {
            assert!(page < 2000, "the grep never ended");
            let result = server.call(10 + page, "grep", args.clone());
            if result["isError"] == true {
                errors.push(code(&result).to_string());
                break;
            }
            let body = String::from_utf8(payload(&result)).unwrap();
            for line in body.lines() {
                seen.push(check_grep_item(line, &root, &files));
            }
            let Some(next) = next_cursor(&result) else { break };
            args = json!({"cursor": next, "max_tokens": 150});
            let (last_path, _) = seen.last().cloned().unwrap_or_default();
            match page {
                1 => fs::remove_file(root.join("many/f20.txt")).unwrap(),
                2 => fs::OpenOptions::new().write(true).open(&last_path).unwrap().set_len(100).unwrap(),
                3 => {
                    use std::io::Write;
                    let mut f = fs::OpenOptions::new().append(true).open(root.join("many/f22.txt")).unwrap();
                    f.write_all(b"match appended\n").unwrap();
                }
                4 => fs::remove_file(&last_path).unwrap(),
                _ => {}
            }
            if evicted {
                evict(&mut server, 5000 + page);
            }
        }
        for code in &errors {
            assert!(["stale", "not_found", "io"].contains(&code.as_str()), "{code}");
        }
        let mut sorted = seen.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, seen, "items repeat or go back (evicted: {evicted})");
        let deleted = seen.iter().any(|(p, _)| p.ends_with("f20.txt"));
        match counted && !evicted {
            true => assert!(deleted, "the result as it was counted on the first page, f20.txt's matches in it"),
            false => assert!(!deleted, "a file deleted before it was reached was reported (evicted: {evicted})"),
        }
        assert!(!seen.is_empty(), "the pages before the changes had items");
        let after = server.call(
            9999,
            "grep",
            json!({"pattern": "^match", "path": "many", "output_mode": "count", "format": "json"}),
        );
        assert_eq!(after["isError"], false, "{after}");
    }
}

#[test]
fn entries_deleted_between_pages_of_glob_and_list_are_never_listed_twice() {
    for (tool, args) in [
        ("glob", json!({"pattern": "**/*.txt", "path": "tree", "max_tokens": 60, "format": "json"})),
        ("list", json!({"path": "tree", "depth": 3, "max_tokens": 60, "format": "json"})),
    ] {
        let fx = Fixture::new();
        let root = fx.root();
        for d in 0..6 {
            fs::create_dir_all(root.join(format!("tree/d{d}"))).unwrap();
            for f in 0..6 {
                fs::write(root.join(format!("tree/d{d}/f{f}.txt")), "x").unwrap();
            }
        }
        let mut server = Server::initialized(&root, &["--max-sessions", "1"]);
        let mut args = args.clone();
        let mut paths: Vec<String> = Vec::new();
        for page in 0.. {
            assert!(page < 1000, "{tool} never ended");
            let result = server.call(page + 1, tool, args.clone());
            if result["isError"] == true {
                assert!(["stale", "not_found", "io"].contains(&code(&result)), "{result}");
                break;
            }
            for line in String::from_utf8(payload(&result)).unwrap().lines() {
                let item: Value = serde_json::from_str(line).unwrap();
                paths.push(item["path"].as_str().unwrap().to_string());
            }
            let Some(next) = next_cursor(&result) else { break };
            args = json!({"cursor": next, "max_tokens": 60});
            match page {
                1 => fs::remove_dir_all(root.join("tree/d4")).unwrap(),
                2 => fs::remove_file(root.join("tree/d5/f3.txt")).unwrap(),
                _ => {}
            }
            if page % 2 == 0 {
                evict(&mut server, 5000 + page);
            }
        }
        let mut sorted = paths.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, paths, "{tool}: entries repeat or go back");
        assert!(!paths.iter().any(|p| p.contains("/d4/") || p.ends_with("d5/f3.txt")), "{tool}: {paths:?}");
        assert!(paths.iter().any(|p| p.ends_with("d5/f5.txt")), "{tool} stopped early: {paths:?}");
    }
}

/// Sets the soft RLIMIT_FSIZE of a running process (`None`: unlimited).
fn set_file_size_limit(pid: u32, bytes: Option<u64>) {
    let limit = bytes.map_or("unlimited".to_string(), |b| b.to_string());
    let status = Command::new("prlimit").arg("--pid").arg(pid.to_string()).arg(format!("--fsize={limit}:")).status();
    assert!(status.is_ok_and(|s| s.success()), "prlimit (util-linux) is needed to simulate a full disk");
}

/// A server whose file writes fail with EFBIG past a size limit, as on a full
/// disk. SIGXFSZ is ignored (a full disk gives an error, not a signal); whether
/// the server survives that signal by itself is checked separately.
/// (Its audit trail is off: the limit would refuse its records too, and this
/// is about the tools' writes; `audit.rs` covers an audit log that cannot be
/// written.)
fn server_with_a_full_disk_switch(root: &Path) -> Server {
    Server::initialized_wrapped(&["sh", "-c", "trap '' XFSZ; exec \"$@\"", "sh"], root, &["--no-audit"])
}

fn assert_unchanged_and_clean(path: &Path, old: &[u8]) {
    assert!(fs::read(path).unwrap() == old, "{} changed after a failed commit", path.display());
    let dir = path.parent().unwrap();
    assert!(temp_files(dir).is_empty(), "temporary files left: {:?}", temp_files(dir));
}

#[test]
fn a_commit_that_fills_the_disk_keeps_the_old_file_and_leaves_no_temporary_file() {
    let fx = Fixture::new();
    let root = fx.root();
    let old = b"the old version\n".repeat(1000);
    let target = fx.write("target.txt", &old);
    let edited = fx.write("edited.txt", "x\n".repeat(200_000));
    let mut server = server_with_a_full_disk_switch(&root);
    // Stage 2 MiB while the disk has room.
    let staged: Vec<u8> = (0..2u32 << 20).map(|i| (i % 251) as u8).collect();
    let started = server.call(1, "upload", json!({"action": "start"}));
    let upload_id = started["structuredContent"]["upload_id"].as_str().unwrap().to_string();
    for (index, piece) in staged.chunks(1 << 20).enumerate() {
        let data = base64::engine::general_purpose::STANDARD.encode(piece);
        let chunk =
            json!({"action": "chunk", "upload_id": upload_id, "index": index, "data": data, "encoding": "base64"});
        assert_eq!(server.call(2 + index as i64, "upload", chunk)["isError"], false);
    }
    let commit = json!({"path": "target.txt", "upload_id": upload_id, "size": staged.len(), "sha256": hex(&Sha256::digest(&staged))});

    set_file_size_limit(server.pid(), Some(256 << 10));
    let inline =
        server.call(10, "write", json!({"format": "json", "path": "target.txt", "content": "y".repeat(1 << 20)}));
    assert_eq!(inline["isError"], true, "{inline}");
    assert_eq!(code(&inline), "io", "{inline}");
    assert_unchanged_and_clean(&target, &old);

    let appended = server.call(
        11,
        "write",
        json!({"format": "json", "path": "target.txt", "content": "z".repeat(300_000), "mode": "append"}),
    );
    assert_eq!(code(&appended), "io", "{appended}");
    assert_unchanged_and_clean(&target, &old);

    // 200,000 replacements: also guards the edit's diff against quadratic time
    // (this once ran past the 30 s call limit and came back `timeout`).
    let edit = server.call(
        12,
        "edit",
        json!({"format": "json", "path": "edited.txt", "old_string": "x", "new_string": "xyz", "replace_all": true}),
    );
    assert_eq!(code(&edit), "io", "{edit}");
    assert_unchanged_and_clean(&edited, "x\n".repeat(200_000).as_bytes());

    let from_upload = server.call(13, "write", commit.clone());
    assert_eq!(code(&from_upload), "io", "{from_upload}");
    assert_unchanged_and_clean(&target, &old);

    // Small writes still fit, and the server answers.
    let small = server.call(14, "write", json!({"format": "json", "path": "small.txt", "content": "fits"}));
    assert_eq!(small["isError"], false, "{small}");
    assert_eq!(text(&server.call(15, "read", json!({"format": "json", "path": "hello.txt"}))), "hello\nworld\n");

    // Room again: the kept upload commits, exactly.
    set_file_size_limit(server.pid(), None);
    let retried = server.call(16, "write", commit);
    assert_eq!(retried["isError"], false, "the failed commit kept the upload for a retry: {retried}");
    assert!(fs::read(&target).unwrap() == staged);
    assert!(temp_files(&root).is_empty());
}

#[test]
fn the_file_size_limit_signal_does_not_kill_the_server() {
    // Without the wrapper's `trap '' XFSZ`: a server run under `ulimit -f`
    // (systemd's LimitFSIZE=) must answer with an error, not die of SIGXFSZ.
    let fx = Fixture::new();
    let old = b"old\n".repeat(100);
    let target = fx.write("target.txt", &old);
    // No audit trail: the limit would refuse its records too (see above).
    let mut server = Server::initialized(&fx.root(), &["--no-audit"]);
    set_file_size_limit(server.pid(), Some(64 << 10));
    let reply = server.request(
        1,
        "tools/call",
        json!({"name": "write", "arguments": {"path": "target.txt", "content": "y".repeat(200_000)}}),
    );
    assert_eq!(reply["result"]["_meta"]["cordon/error"]["code"], "io", "{reply}");
    assert_unchanged_and_clean(&target, &old);
    set_file_size_limit(server.pid(), None);
    assert_eq!(text(&server.call(2, "read", json!({"format": "json", "path": "hello.txt"}))), "hello\nworld\n");
}

/// Whether this process runs as root (where mode 000 denies nothing).
fn running_as_root() -> bool {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let uid = status.lines().find_map(|l| l.strip_prefix("Uid:")).unwrap();
    uid.split_whitespace().nth(1) == Some("0")
}

#[test]
fn a_directory_that_cannot_be_read_in_the_middle_of_a_walk_is_reported_and_the_walk_goes_on() {
    let fx = Fixture::new();
    let root = fx.root();
    for dir in ["a", "locked", "z"] {
        fs::create_dir(root.join(dir)).unwrap();
        fs::write(root.join(dir).join("f.txt"), format!("needle in {dir}\n")).unwrap();
    }
    let locked = root.join("locked");
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    // As root, mode 000 denies nothing: run the server without the capabilities
    // that bypass file permissions (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH).
    let mut server = if running_as_root() {
        Server::initialized_wrapped(&["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"], &root, &[])
    } else {
        Server::initialized(&root, &[])
    };

    let grep = server.call(1, "grep", json!({"pattern": "needle"}));
    assert_eq!(grep["isError"], false, "{grep}");
    let found = String::from_utf8(payload(&grep)).unwrap();
    assert!(found.contains("needle in a") && found.contains("needle in z"), "{found}");
    assert!(!found.contains("needle in locked"), "the locked directory was read: {found}");
    let counted = server.call(2, "grep", json!({"pattern": "needle", "format": "json"}));
    let errors = counted["structuredContent"]["errors"].as_u64().unwrap_or(0);
    assert!(errors >= 1, "the unreadable directory is counted: {counted}");
    assert!(found.contains("locked: not searched: a directory that could not be read"), "and named: {found}");
    // Named at its place, it pages exactly: one item a page gives the whole result.
    let (whole, _) = read_all(&mut server, "grep", json!({"pattern": "needle"}), 25_000);
    let (paged, pages) = read_all(&mut server, "grep", json!({"pattern": "needle"}), 20);
    assert!(pages.len() > 2 && paged == whole, "{} pages: {}", pages.len(), String::from_utf8_lossy(&paged));

    let glob = server.call(2, "glob", json!({"pattern": "**/f.txt", "format": "json"}));
    assert_eq!(glob["isError"], false, "{glob}");
    let globbed = String::from_utf8(payload(&glob)).unwrap();
    assert!(
        globbed.contains("/a/f.txt") && globbed.contains("/z/f.txt") && !globbed.contains("/locked/f.txt"),
        "{globbed}"
    );

    let list = server.call(3, "list", json!({"depth": 2, "format": "json"}));
    assert_eq!(list["isError"], false, "{list}");
    let listed: Vec<Value> =
        String::from_utf8(payload(&list)).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let entry = listed.iter().find(|e| e["path"] == locked.display().to_string()).expect("the locked dir is listed");
    assert!(entry["error"].is_string(), "the locked dir says it could not be read: {entry}");
    assert!(listed.iter().any(|e| e["path"].as_str().unwrap().ends_with("/z/f.txt")), "the walk went on: {listed:?}");

    for (tool, args) in [
        ("read", json!({"format": "json", "path": "locked/f.txt"})),
        ("stat", json!({"format": "json", "path": "locked/f.txt"})),
    ] {
        let denied = server.call(4, tool, args);
        assert_eq!(code(&denied), "permission_denied", "{tool}: {denied}");
    }
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
}
