//! The write tool and staged uploads end to end: atomic replacement, the hash
//! precondition, kept permissions, refused hard links, and a 200 MB upload.

use std::os::unix::fs::PermissionsExt;

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::{Fixture, Server, text};

fn item(result: &Value) -> Value {
    serde_json::from_str(text(result).lines().next().unwrap()).unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn temp_files(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".cordon-"))
        .collect()
}

#[test]
fn writes_are_atomic_conditional_and_keep_permissions() {
    let fx = Fixture::new();
    let path = fx.write("script.sh", "#!/bin/sh\necho old\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o751)).unwrap();
    let mut server = Server::initialized(&fx.root(), &[]);
    let old_hash = hex(&Sha256::digest(b"#!/bin/sh\necho old\n"));

    let stale = server.call(
        1,
        "write",
        json!({"format": "json", "path": "script.sh", "content": "x", "expected_sha256": "ab".repeat(32)}),
    );
    assert_eq!(stale["_meta"]["cordon/error"]["code"], "conflict");
    assert!(text(&stale).contains(&old_hash), "the conflict names the current hash: {stale}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "#!/bin/sh\necho old\n");

    let done = server.call(
        2,
        "write",
        json!({"format": "json", "path": "script.sh", "content": "#!/bin/sh\necho new\n", "expected_sha256": old_hash}),
    );
    assert_eq!(done["isError"], false, "{done}");
    let written = item(&done);
    assert_eq!(written["sha256"], hex(&Sha256::digest(b"#!/bin/sh\necho new\n")));
    assert_eq!(written["created"], false);
    assert_eq!(
        done["structuredContent"]["sha256"], written["sha256"],
        "the host's page fields never overwrite the tool's"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "#!/bin/sh\necho new\n");
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o751, "permissions kept");
    assert!(temp_files(&fx.root()).is_empty());

    let appended = server.call(
        3,
        "write",
        json!({"format": "json", "path": "script.sh", "content": "echo more\n", "mode": "append"}),
    );
    assert_eq!(item(&appended)["size"], 29);
    let created = server.call(
        4,
        "write",
        json!({"format": "json", "path": "sub/new.bin", "content": "AAEC/w==", "encoding": "base64", "mode": "create"}),
    );
    assert_eq!(item(&created)["created"], true);
    assert_eq!(std::fs::read(fx.root().join("sub/new.bin")).unwrap(), [0, 1, 2, 255]);
}

#[test]
fn hard_links_are_refused_unless_allowed_and_roots_are_enforced() {
    let fx = Fixture::new();
    let path = fx.write("linked.txt", "shared");
    std::fs::hard_link(&path, fx.root().join("other-name.txt")).unwrap();
    let mut server = Server::initialized(&fx.root(), &[]);
    let refused = server.call(1, "write", json!({"format": "json", "path": "linked.txt", "content": "changed"}));
    assert_eq!(refused["_meta"]["cordon/error"]["code"], "permission_denied", "{refused}");
    assert_eq!(std::fs::read_to_string(fx.root().join("other-name.txt")).unwrap(), "shared");
    let allowed = server.call(
        2,
        "write",
        json!({"format": "json", "path": "linked.txt", "content": "changed", "allow_hardlinks": true}),
    );
    assert_eq!(allowed["isError"], false);
    assert_eq!(
        std::fs::read_to_string(fx.root().join("other-name.txt")).unwrap(),
        "shared",
        "the other name keeps the old bytes"
    );

    let outside = server.call(3, "write", json!({"format": "json", "path": "../outside.txt", "content": "pwned"}));
    assert_eq!(outside["_meta"]["cordon/error"]["code"], "permission_denied");
    assert_eq!(std::fs::read_to_string(fx.outside()).unwrap(), crate::support::CANARY);
    std::os::unix::fs::symlink(fx.outside(), fx.root().join("link-out")).unwrap();
    let through = server.call(4, "write", json!({"format": "json", "path": "link-out", "content": "pwned"}));
    assert_eq!(through["isError"], true);
    assert_eq!(std::fs::read_to_string(fx.outside()).unwrap(), crate::support::CANARY);
}

#[test]
fn a_read_only_root_refuses_writes() {
    let fx = Fixture::new();
    let ro = fx.dir.path().join("ro");
    std::fs::create_dir_all(&ro).unwrap();
    let ro_file = ro.canonicalize().unwrap().join("f.txt");
    let mut server = Server::initialized(&fx.root(), &["--root", &format!("{}:ro", ro.display())]);
    let result = server.call(1, "write", json!({"format": "json", "path": ro_file, "content": "x"}));
    assert_eq!(result["_meta"]["cordon/error"]["code"], "permission_denied", "{result}");
    assert!(!ro_file.exists());
}

fn upload(server: &mut Server, id: &mut i64, bytes: &[u8], chunk: usize) -> String {
    *id += 1;
    let started = server.call(*id, "upload", json!({"action": "start"}));
    let upload_id = started["structuredContent"]["upload_id"].as_str().unwrap().to_string();
    let mut hasher = Sha256::new();
    for (index, piece) in bytes.chunks(chunk).enumerate() {
        *id += 1;
        let data = base64::engine::general_purpose::STANDARD.encode(piece);
        let ack = server.call(
            *id,
            "upload",
            json!({"action": "chunk", "upload_id": upload_id, "index": index, "data": data, "encoding": "base64"}),
        );
        hasher.update(piece);
        assert_eq!(ack["structuredContent"]["index"], index, "{ack}");
        assert_eq!(ack["structuredContent"]["sha256"], hex(&hasher.clone().finalize()), "a running hash per chunk");
    }
    upload_id
}

#[test]
fn a_200_mb_staged_upload_writes_the_exact_file() {
    let fx = Fixture::new();
    let state = tempfile::tempdir().unwrap();
    // Copying and hashing 200 MB in the sandbox takes seconds; on a busy machine, more than 30.
    let flags = ["--state-dir", state.path().to_str().unwrap(), "--timeout-secs", "600"];
    let mut server = Server::initialized(&fx.root(), &flags);
    let mut bytes = Vec::with_capacity(200 << 20);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    while bytes.len() < 200 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    let sha = hex(&Sha256::digest(&bytes));
    let mut id = 0;
    let upload_id = upload(&mut server, &mut id, &bytes, 4 << 20);
    let wrong = server.call(
        900,
        "write",
        json!({"format": "json", "path": "big.bin", "upload_id": upload_id, "size": bytes.len(), "sha256": "00".repeat(32)}),
    );
    assert_eq!(wrong["_meta"]["cordon/error"]["code"], "conflict", "a wrong hash is refused: {wrong}");
    let done = server.call(
        901,
        "write",
        json!({"format": "json", "path": "big.bin", "upload_id": upload_id, "size": bytes.len(), "sha256": sha}),
    );
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(item(&done)["sha256"], sha);
    let written = std::fs::read(fx.root().join("big.bin")).unwrap();
    assert!(written.len() == bytes.len() && hex(&Sha256::digest(&written)) == sha, "the file is the upload, exactly");
    assert!(temp_files(&fx.root()).is_empty());
    assert_eq!(std::fs::read_dir(state.path().join("uploads")).unwrap().count(), 0, "a committed upload is removed");
}

#[test]
fn a_commit_after_the_target_changed_conflicts_and_aborted_or_expired_uploads_leave_nothing() {
    let fx = Fixture::new();
    let target = fx.write("target.txt", "version 1");
    let v1 = hex(&Sha256::digest(b"version 1"));
    let state = tempfile::tempdir().unwrap();
    // `--compile-first`: no compile comes between staging and the checks within the 1 s TTL.
    let state_dir = state.path().to_str().unwrap();
    let mut server =
        Server::initialized(&fx.root(), &["--state-dir", state_dir, "--upload-ttl-secs", "1", "--compile-first"]);
    let mut id = 0;
    let content = b"version 2, staged".repeat(1000);
    let upload_id = upload(&mut server, &mut id, &content, 4096);
    std::fs::write(&target, "changed meanwhile").unwrap();
    let sha = hex(&Sha256::digest(&content));
    let args = json!({"path": "target.txt", "upload_id": upload_id, "size": content.len(), "sha256": sha, "expected_sha256": v1});
    let conflict = server.call(100, "write", args);
    assert_eq!(conflict["_meta"]["cordon/error"]["code"], "conflict", "{conflict}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "changed meanwhile", "the target is untouched");

    let aborted = server.call(101, "upload", json!({"action": "abort", "upload_id": upload_id}));
    assert_eq!(aborted["structuredContent"]["aborted"], true);
    assert_eq!(std::fs::read_dir(state.path().join("uploads")).unwrap().count(), 0);

    let expiring = upload(&mut server, &mut id, b"soon gone", 4);
    assert_eq!(std::fs::read_dir(state.path().join("uploads")).unwrap().count(), 1);
    std::thread::sleep(std::time::Duration::from_millis(2200));
    let gone = server.call(102, "upload", json!({"action": "chunk", "upload_id": expiring, "index": 3, "data": "x"}));
    assert_eq!(gone["_meta"]["cordon/error"]["code"], "not_found", "{gone}");
    assert_eq!(std::fs::read_dir(state.path().join("uploads")).unwrap().count(), 0, "the expired upload was deleted");
    assert!(temp_files(&fx.root()).is_empty());
}

#[test]
fn upload_arguments_are_checked() {
    let fx = Fixture::new();
    let mut server = Server::initialized(&fx.root(), &[]);
    let staged =
        server.request(1, "tools/call", json!({"name": "write", "arguments": {"path": "x", "staged": "/etc/passwd"}}));
    assert_eq!(staged["error"]["code"], -32602, "clients cannot set `staged`");
    let partial =
        server.request(2, "tools/call", json!({"name": "write", "arguments": {"path": "x", "upload_id": "abc"}}));
    assert_eq!(partial["error"]["code"], -32602);
    let unknown = server.call(
        3,
        "write",
        json!({"format": "json", "path": "x", "upload_id": "nope", "size": 1, "sha256": "00".repeat(32)}),
    );
    assert_eq!(unknown["_meta"]["cordon/error"]["code"], "not_found");
    let wrong_order = server.call(4, "upload", json!({"action": "start"}));
    let upload_id = wrong_order["structuredContent"]["upload_id"].as_str().unwrap();
    let skipped = server.call(5, "upload", json!({"action": "chunk", "upload_id": upload_id, "index": 1, "data": "x"}));
    assert_eq!(skipped["_meta"]["cordon/error"]["code"], "invalid_argument");
    let stray = server.call(7, "upload", json!({"action": "start", "path": "x"}));
    assert_eq!(stray["_meta"]["cordon/error"]["code"], "invalid_argument", "{stray}");
    let no_action = server.call(8, "upload", json!({}));
    assert_eq!(no_action["_meta"]["cordon/error"]["code"], "invalid_argument");
    let listed = server.request(6, "tools/list", json!({}));
    let write = listed["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "write").unwrap().clone();
    assert!(write["inputSchema"]["properties"].get("staged").is_none());
    assert!(write["inputSchema"]["properties"]["upload_id"].is_object());
}

#[test]
fn a_restart_removes_abandoned_uploads_but_not_another_servers_live_ones() {
    let fx = Fixture::new();
    let state = tempfile::tempdir().unwrap();
    let state_arg = state.path().to_str().unwrap();
    let uploads = state.path().join("uploads");
    let mut id = 0;
    let mut first = Server::initialized(&fx.root(), &["--state-dir", state_arg]);
    let live = upload(&mut first, &mut id, b"still in use", 4);
    let _second = Server::initialized(&fx.root(), &["--state-dir", state_arg]);
    assert!(uploads.join(&live).join("data").is_file(), "another server's live upload is kept");
    let ack = first.call(50, "upload", json!({"action": "chunk", "upload_id": live, "index": 3, "data": "more"}));
    assert_eq!(ack["isError"], false, "{ack}");
    drop(first);
    std::thread::sleep(std::time::Duration::from_millis(2200));
    let _third = Server::initialized(&fx.root(), &["--state-dir", state_arg, "--upload-ttl-secs", "1"]);
    assert_eq!(std::fs::read_dir(&uploads).unwrap().count(), 0, "the abandoned upload was removed at start-up");
}

#[test]
fn upload_limits_fail_closed_with_too_large() {
    let fx = Fixture::new();
    let state = tempfile::tempdir().unwrap();
    let mut server =
        Server::initialized(&fx.root(), &["--state-dir", state.path().to_str().unwrap(), "--max-upload-bytes", "10"]);
    let started = server.call(1, "upload", json!({"action": "start"}));
    let upload_id = started["structuredContent"]["upload_id"].as_str().unwrap().to_string();
    let fits =
        server.call(2, "upload", json!({"action": "chunk", "upload_id": upload_id, "index": 0, "data": "0123456789"}));
    assert_eq!(fits["structuredContent"]["bytes"], 10);
    let over = server.call(3, "upload", json!({"action": "chunk", "upload_id": upload_id, "index": 1, "data": "x"}));
    assert_eq!(over["_meta"]["cordon/error"]["code"], "too_large", "{over}");
    let big_chunk = base64::engine::general_purpose::STANDARD.encode(vec![0u8; (4 << 20) + 1]);
    let too_big = server.call(
        4,
        "upload",
        json!({"action": "chunk", "upload_id": upload_id, "index": 1, "data": big_chunk, "encoding": "base64"}),
    );
    assert_eq!(too_big["_meta"]["cordon/error"]["code"], "too_large", "a chunk over 4 MiB");
    for i in 0..15 {
        assert_eq!(server.call(10 + i, "upload", json!({"action": "start"}))["isError"], false);
    }
    let seventeenth = server.call(40, "upload", json!({"action": "start"}));
    assert_eq!(seventeenth["_meta"]["cordon/error"]["code"], "too_large", "at most 16 open uploads");
}
