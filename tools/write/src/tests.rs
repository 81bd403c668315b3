//! The write tool natively, on a temporary root.

use serde_json::json;

use super::*;

/// A temporary root (removed with what it holds when dropped, also when a
/// test fails) and the roots list naming it.
fn root() -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::Builder::new().prefix("cordon-write-").tempdir().unwrap();
    let roots = vec![dir.path().to_str().unwrap().to_string()];
    (dir, roots)
}

fn run(roots: &[String], args: serde_json::Value) -> Result<Outcome, Error> {
    write(roots, &args.to_string())
}

#[test]
fn create_overwrite_and_append_give_the_expected_bytes_and_hashes() {
    let (dir, roots) = root();
    let made = run(&roots, json!({"path": "a.txt", "content": "one\n", "mode": "create"})).unwrap();
    assert!(made.created);
    assert_eq!(made.sha256, hex(&Sha256::digest(b"one\n")));
    let again = run(&roots, json!({"path": "a.txt", "content": "x", "mode": "create"})).unwrap_err();
    assert_eq!(again.code, ErrorCode::Conflict);
    run(&roots, json!({"path": "a.txt", "content": "two\r\n"})).unwrap();
    let appended = run(&roots, json!({"path": "a.txt", "content": "three", "mode": "append"})).unwrap();
    assert_eq!(std::fs::read(dir.path().join("a.txt")).unwrap(), b"two\r\nthree");
    assert_eq!((appended.bytes_written, appended.size), (5, 10));
    assert_eq!(appended.sha256, hex(&Sha256::digest(b"two\r\nthree")));
    let missing = run(&roots, json!({"path": "nope.txt", "content": "x", "mode": "append"})).unwrap_err();
    assert_eq!(missing.code, ErrorCode::NotFound);
}

#[test]
fn base64_content_is_decoded_exactly() {
    let (dir, roots) = root();
    run(&roots, json!({"path": "b.bin", "content": "AP/+gA==", "encoding": "base64"})).unwrap();
    assert_eq!(std::fs::read(dir.path().join("b.bin")).unwrap(), [0x00, 0xff, 0xfe, 0x80]);
    for bad in ["A", "A===", "****"] {
        let err = run(&roots, json!({"path": "b.bin", "content": bad, "encoding": "base64"})).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument, "{bad}");
    }
    assert_eq!(
        std::fs::read(dir.path().join("b.bin")).unwrap(),
        [0x00, 0xff, 0xfe, 0x80],
        "a failed write changes nothing"
    );
}

#[test]
fn a_stale_expected_hash_is_a_conflict_naming_the_current_hash() {
    let (dir, roots) = root();
    std::fs::write(dir.path().join("c.txt"), "current").unwrap();
    let current = hex(&Sha256::digest(b"current"));
    let err = run(&roots, json!({"path": "c.txt", "content": "new", "expected_sha256": "0".repeat(64)})).unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict);
    assert!(err.message.contains(&current), "{}", err.message);
    assert_eq!(std::fs::read(dir.path().join("c.txt")).unwrap(), b"current");
    run(&roots, json!({"path": "c.txt", "content": "new", "expected_sha256": current})).unwrap();
    assert_eq!(std::fs::read(dir.path().join("c.txt")).unwrap(), b"new");
}

#[test]
fn content_is_required_and_exclusive_with_staged() {
    let (_dir, roots) = root();
    assert_eq!(run(&roots, json!({"path": "d.txt"})).unwrap_err().code, ErrorCode::InvalidArgument);
    let both = run(&roots, json!({"path": "d.txt", "content": "x", "staged": "/x"})).unwrap_err();
    assert_eq!(both.code, ErrorCode::InvalidArgument);
}

#[test]
fn staged_content_is_copied_from_its_file() {
    let (dir, roots) = root();
    let staged = dir.path().join("staged.data");
    std::fs::write(&staged, vec![7u8; 300_000]).unwrap();
    let out = run(&roots, json!({"path": "big.bin", "staged": staged})).unwrap();
    assert_eq!(out.size, 300_000);
    assert_eq!(std::fs::read(dir.path().join("big.bin")).unwrap(), vec![7u8; 300_000]);
}

#[test]
fn paths_outside_the_roots_are_refused() {
    let (_dir, roots) = root();
    let err = run(&roots, json!({"path": "../escape.txt", "content": "x"})).unwrap_err();
    assert_eq!(err.code, ErrorCode::PermissionDenied);
}
