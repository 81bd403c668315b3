//! The edit tool natively, on a temporary root.

use cordon_sdk::{Access, Budget, Context, Tool as _};
use serde_json::json;

use super::*;

/// A temporary root (removed with what it holds when dropped, also when a
/// test fails) and the roots list naming it.
fn root() -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::Builder::new().prefix("cordon-edit-").tempdir().unwrap();
    let roots = vec![dir.path().to_str().unwrap().to_string()];
    (dir, roots)
}

fn run(roots: &[String], args: serde_json::Value) -> Result<Outcome, Error> {
    edit(roots, &args.to_string())
}

/// A root holding `name` with `bytes`; returns the root, its roots list and the file's path.
fn with_file(name: &str, bytes: &[u8]) -> (tempfile::TempDir, Vec<String>, std::path::PathBuf) {
    let (dir, roots) = root();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    (dir, roots, path)
}

#[test]
fn a_unique_string_is_replaced_and_reported() {
    let (dir, roots, path) = with_file("a.rs", b"fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n");
    let out = run(&roots, json!({"path": "a.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"})).unwrap();
    let want = b"fn main() {\n    let x = 2;\n    println!(\"{x}\");\n}\n";
    assert_eq!(std::fs::read(&path).unwrap(), want);
    assert_eq!(out.path, dir.path().join("a.rs").display().to_string());
    assert_eq!((out.replacements, out.crlf, out.size), (1, false, want.len() as u64));
    assert_eq!(out.sha256, hex(&Sha256::digest(want)));
    assert_eq!(out.diff, "@@ -1,3 +1,3 @@\n fn main() {\n-    let x = 1;\n+    let x = 2;\n     println!(\"{x}\");\n");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, ["a.rs"], "no temporary file remains");
}

#[test]
fn replace_all_replaces_every_occurrence_and_counts_them() {
    let (_dir, roots, path) = with_file("b.txt", b"foo bar foo\nfoo\nbaz\n");
    let out =
        run(&roots, json!({"path": "b.txt", "old_string": "foo", "new_string": "qux", "replace_all": true})).unwrap();
    assert_eq!(out.replacements, 3);
    assert_eq!(std::fs::read(&path).unwrap(), b"qux bar qux\nqux\nbaz\n");
    assert_eq!(out.diff, "@@ -1,3 +1,3 @@\n-foo bar foo\n-foo\n+qux bar qux\n+qux\n baz\n");
}

#[test]
fn an_absent_string_is_an_invalid_argument_and_changes_nothing() {
    let (_dir, roots, path) = with_file("c.txt", b"alpha\nbeta\n");
    let err = run(&roots, json!({"path": "c.txt", "old_string": "gamma", "new_string": "delta"})).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.starts_with("old_string not found in `"), "{}", err.message);
    assert_eq!(std::fs::read(&path).unwrap(), b"alpha\nbeta\n");
    let missing = run(&roots, json!({"path": "nope.txt", "old_string": "a", "new_string": "b"})).unwrap_err();
    assert_eq!(missing.code, ErrorCode::NotFound);
}

#[test]
fn an_ambiguous_string_names_its_lines_and_changes_nothing() {
    let text = "x = 1\n\n\ny = 2\nx = 1\nz\nx = 1\n";
    let (_dir, roots, path) = with_file("d.txt", text.as_bytes());
    let err = run(&roots, json!({"path": "d.txt", "old_string": "x = 1", "new_string": "x = 3"})).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("found 3 times"), "{}", err.message);
    assert!(err.message.contains("at lines 1, 5, 7;"), "{}", err.message);
    assert!(err.message.contains("add context to make it unique or pass replace_all"), "{}", err.message);
    assert_eq!(std::fs::read(&path).unwrap(), text.as_bytes());
}

#[test]
fn a_crlf_file_edited_with_lf_strings_stays_crlf() {
    let before = b"one\r\ntwo\r\nthree\r\nfour\r\n";
    let (_dir, roots, path) = with_file("e.txt", before);
    let out = run(&roots, json!({"path": "e.txt", "old_string": "two\nthree\n", "new_string": "2\n3\n3.5\n"})).unwrap();
    let want = b"one\r\n2\r\n3\r\n3.5\r\nfour\r\n";
    assert_eq!(std::fs::read(&path).unwrap(), want);
    assert!(out.crlf);
    assert_eq!(out.size, want.len() as u64);
    assert_eq!(out.diff, "@@ -1,4 +1,5 @@\n one\n-two\n-three\n+2\n+3\n+3.5\n four\n");
}

#[test]
fn a_file_without_a_final_newline_keeps_none() {
    let (_dir, roots, path) = with_file("f.txt", b"first\nlast line");
    run(&roots, json!({"path": "f.txt", "old_string": "last", "new_string": "final"})).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"first\nfinal line");
    run(&roots, json!({"path": "f.txt", "old_string": "first\n", "new_string": ""})).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"final line");
}

#[test]
fn multibyte_utf8_around_the_edit_is_kept() {
    let (_dir, roots, path) = with_file("g.txt", "naïve → café ☕ 日本語\n".as_bytes());
    let out = run(&roots, json!({"path": "g.txt", "old_string": "café", "new_string": "thé 🍵"})).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "naïve → thé 🍵 ☕ 日本語\n");
    assert!(out.diff.contains("+naïve → thé 🍵 ☕ 日本語\n"), "{}", out.diff);
}

#[test]
fn non_utf8_bytes_elsewhere_are_preserved() {
    let mut before = vec![0xff, 0xfe, 0x00, b'\n'];
    before.extend_from_slice(b"version = 1\n");
    before.extend_from_slice(&[0x80, 0xc3, b'\r', b'\n']);
    let (_dir, roots, path) = with_file("h.bin", &before);
    run(&roots, json!({"path": "h.bin", "old_string": "version = 1", "new_string": "version = 2"})).unwrap();
    let mut want = before.clone();
    want[14] = b'2';
    assert_eq!(std::fs::read(&path).unwrap(), want);
}

#[test]
fn a_stale_expected_hash_is_a_conflict_and_the_file_is_unchanged() {
    let (_dir, roots, path) = with_file("i.txt", b"current\n");
    let current = hex(&Sha256::digest(b"current\n"));
    let args =
        json!({"path": "i.txt", "old_string": "current", "new_string": "next", "expected_sha256": "0".repeat(64)});
    let err = run(&roots, args).unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict);
    assert!(err.message.contains(&current), "{}", err.message);
    assert_eq!(std::fs::read(&path).unwrap(), b"current\n");
    let upper = current.to_uppercase();
    run(&roots, json!({"path": "i.txt", "old_string": "current", "new_string": "next", "expected_sha256": upper}))
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"next\n");
}

#[test]
fn an_empty_new_string_deletes() {
    let (_dir, roots, path) = with_file("j.txt", b"keep\n// remove me\nkeep too\n");
    let out = run(&roots, json!({"path": "j.txt", "old_string": "// remove me\n", "new_string": ""})).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"keep\nkeep too\n");
    assert_eq!(out.diff, "@@ -1,3 +1,2 @@\n keep\n-// remove me\n keep too\n");
}

#[cfg(unix)]
#[test]
fn permissions_are_preserved_and_hard_links_refused_unless_allowed() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, roots, path) = with_file("run.sh", b"#!/bin/sh\necho old\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
    run(&roots, json!({"path": "run.sh", "old_string": "old", "new_string": "new"})).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o750);
    std::fs::hard_link(&path, dir.path().join("alias.sh")).unwrap();
    let err = run(&roots, json!({"path": "run.sh", "old_string": "new", "new_string": "newer"})).unwrap_err();
    assert_eq!(err.code, ErrorCode::PermissionDenied);
    run(&roots, json!({"path": "run.sh", "old_string": "new", "new_string": "newer", "allow_hardlinks": true}))
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"#!/bin/sh\necho newer\n");
    assert_eq!(std::fs::read(dir.path().join("alias.sh")).unwrap(), b"#!/bin/sh\necho new\n");
}

#[test]
fn paths_outside_the_roots_and_directories_are_refused() {
    let (dir, roots) = root();
    let outside = run(&roots, json!({"path": "../x.txt", "old_string": "a", "new_string": "b"})).unwrap_err();
    assert_eq!(outside.code, ErrorCode::PermissionDenied);
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let directory = run(&roots, json!({"path": "sub", "old_string": "a", "new_string": "b"})).unwrap_err();
    assert_eq!(directory.code, ErrorCode::InvalidArgument);
}

#[test]
fn reopening_at_a_cursor_never_edits_again() {
    let (_dir, roots, path) = with_file("k.txt", b"a\n");
    let ctx = Context { roots };
    let args = json!({"path": "k.txt", "old_string": "a", "new_string": "aa", "replace_all": true}).to_string();
    let budget = |bytes| Budget { bytes, items: 1 };
    let mut stream = EditTool::open(&ctx, &args, None).unwrap();
    let whole = stream.next(budget(1 << 20)).unwrap().unwrap();
    let item: Value = serde_json::from_slice(whole.payload.as_bytes()).unwrap();
    assert_eq!((item["replacements"].clone(), stream.info()), (json!(1), item.clone()));
    assert!(stream.next(budget(1 << 20)).unwrap().is_none());
    let mut after = EditTool::open(&ctx, &args, Some(&whole.resume)).unwrap();
    assert!(after.next(budget(1 << 20)).unwrap().is_none());
    assert_eq!(after.info(), item);
    assert_eq!(std::fs::read(&path).unwrap(), b"aa\n", "edited once only");

    let mut small = EditTool::open(&ctx, &args, None).unwrap();
    let piece = small.next(budget(16)).unwrap().unwrap();
    assert!(piece.continued);
    let mut rest = EditTool::open(&ctx, &args, Some(&piece.resume)).unwrap();
    let mut text = std::str::from_utf8(piece.payload.as_bytes()).unwrap().to_string();
    while let Some(chunk) = rest.next(budget(16)).unwrap() {
        text.push_str(std::str::from_utf8(chunk.payload.as_bytes()).unwrap());
    }
    let second: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(second["sha256"], hex(&Sha256::digest(b"aaaa\n")));
    assert_eq!(std::fs::read(&path).unwrap(), b"aaaa\n", "the second call edited once, its resume never");
}

#[test]
fn the_manifest_is_a_destructive_non_idempotent_write_tool() {
    let m = EditTool::manifest();
    assert_eq!((m.name.as_str(), m.access), ("edit", Access::Write));
    assert!(!m.read_only && m.destructive && !m.idempotent);
    assert_eq!(m.input_schema["required"], json!(["path", "old_string", "new_string"]));
    assert!(m.description.contains("CRLF"), "{}", m.description);
}
