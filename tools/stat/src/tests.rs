//! Line counting on edge cases, and the stat call on real files: types,
//! symlinks, one item paged exactly, errors.

use std::path::PathBuf;

use cordon_sdk::{Budget, ErrorCode, Stream};
use serde_json::Value;

use crate::Stat;
use crate::describe::count;

#[test]
fn lines_are_newlines_plus_a_final_partial_line() {
    let cases: [(&[u8], u64); 8] = [
        (b"", 0),
        (b"\n", 1),
        (b"one", 1),
        (b"one\n", 1),
        (b"one\ntwo", 2),
        (b"a\r\nb\r\n", 2),
        (b"a\rb\r", 1),
        (b"\n\n\n", 3),
    ];
    for (bytes, lines) in cases {
        assert_eq!(count(bytes).unwrap(), lines, "{:?}", String::from_utf8_lossy(bytes));
    }
    let big = "line\n".repeat(100_000) + "tail";
    assert_eq!(count(big.as_bytes()).unwrap(), 100_001);
}

/// A directory removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!("cordon-stat-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("crlf.txt"), "a\r\nb\r\nc").unwrap();
        std::fs::write(dir.join("empty.txt"), "").unwrap();
        Dir(dir.canonicalize().unwrap())
    }

    fn roots(&self) -> Vec<String> {
        vec![self.0.display().to_string()]
    }

    fn stat(&self, args: &str) -> Result<Value, ErrorCode> {
        let mut stat = Stat::open(&self.roots(), args, None).map_err(|e| e.code)?;
        let chunk = stat.next(Budget { bytes: 10_000, items: 1 }).unwrap().unwrap();
        assert!(stat.next(Budget { bytes: 10_000, items: 1 }).unwrap().is_none());
        Ok(serde_json::from_slice(chunk.payload.as_bytes()).unwrap())
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn files_and_directories_are_described() {
    let dir = Dir::new("kinds");
    let file = dir.stat(r#"{"path": "crlf.txt", "count_lines": true}"#).unwrap();
    assert_eq!(file["path"], dir.0.join("crlf.txt").display().to_string());
    assert_eq!(file["type"], "file");
    assert_eq!(file["size"], 7);
    assert_eq!(file["lines"], 3);
    assert_eq!(file["is_symlink"], false);
    assert_eq!(file["permissions"]["readonly"], false);
    assert!(file["mtime_ns"].as_u64().unwrap() > 0);
    assert!(dir.stat(r#"{"path": "crlf.txt"}"#).unwrap().get("lines").is_none());
    assert_eq!(dir.stat(r#"{"path": "empty.txt", "count_lines": true}"#).unwrap()["lines"], 0);
    let sub = dir.stat(r#"{"path": "sub", "count_lines": true}"#).unwrap();
    assert_eq!(sub["type"], "dir");
    assert!(sub.get("lines").is_none());
}

#[cfg(unix)]
#[test]
fn symlinks_are_followed_and_flagged() {
    let dir = Dir::new("links");
    std::os::unix::fs::symlink("crlf.txt", dir.0.join("link")).unwrap();
    std::os::unix::fs::symlink("missing", dir.0.join("dangling")).unwrap();
    let link = dir.stat(r#"{"path": "link", "count_lines": true}"#).unwrap();
    assert_eq!(
        (&link["type"], &link["size"], &link["is_symlink"], &link["lines"]),
        (&Value::from("file"), &Value::from(7), &Value::from(true), &Value::from(3))
    );
    assert_eq!(dir.stat(r#"{"path": "dangling"}"#).unwrap_err(), ErrorCode::NotFound);
}

#[test]
fn the_item_pages_exactly_and_resumes() {
    let dir = Dir::new("paging");
    let args = r#"{"path": "crlf.txt", "count_lines": true}"#;
    let whole = dir.stat(args).unwrap().to_string();
    let mut stat = Stat::open(&dir.roots(), args, None).unwrap();
    let budget = Budget { bytes: 16, items: 1 };
    let chunks: Vec<_> = std::iter::from_fn(|| stat.next(budget).unwrap()).collect();
    assert!(chunks.len() > 3);
    let joined: String = chunks.iter().map(|c| std::str::from_utf8(c.payload.as_bytes()).unwrap()).collect();
    assert_eq!(serde_json::from_str::<Value>(&joined).unwrap().to_string(), whole);
    for (i, chunk) in chunks.iter().enumerate() {
        let mut rest = Stat::open(&dir.roots(), args, Some(&chunk.resume)).unwrap();
        let tail: Vec<_> = std::iter::from_fn(|| rest.next(budget).unwrap()).collect();
        assert_eq!(tail, chunks[i + 1..]);
    }
    assert_eq!(Stat::open(&dir.roots(), args, Some("b2")).err().unwrap().code, ErrorCode::InvalidArgument);
    assert!(stat.fingerprint().unwrap().is_some());
    assert_eq!(stat.info()["path"], dir.0.join("crlf.txt").display().to_string());
}

#[test]
fn missing_and_outside_paths_are_refused() {
    let dir = Dir::new("errors");
    assert_eq!(dir.stat(r#"{"path": "nope"}"#).unwrap_err(), ErrorCode::NotFound);
    assert_eq!(dir.stat(r#"{"path": "/etc/passwd"}"#).unwrap_err(), ErrorCode::PermissionDenied);
    assert_eq!(dir.stat(r#"{"count_lines": true}"#).unwrap_err(), ErrorCode::InvalidArgument);
}
