//! The list tool on real directory trees: order, depth, hidden entries,
//! symlinks, exact resumption at every chunk, and errors.

use std::path::{Path, PathBuf};

use cordon_sdk::items::ItemStream;
use cordon_sdk::{Budget, ErrorCode};
use serde_json::Value;

use crate::List;

/// A directory tree removed when dropped.
struct Tree(PathBuf);

impl Tree {
    fn new(tag: &str) -> Tree {
        let dir = std::env::temp_dir().join(format!("cordon-list-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let tree = Tree(dir.canonicalize().unwrap());
        for (rel, text) in [
            ("a/x.txt", "x"),
            ("a/b/c/d.txt", "deep"),
            ("a-c.txt", "ac"),
            ("a.txt", "a"),
            (".hidden/h.txt", "h"),
            (".dot", "d"),
            ("ünï/fïlé.txt", "ü"),
        ] {
            let path = tree.0.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink("a", tree.0.join("link")).unwrap();
        tree
    }

    fn roots(&self) -> Vec<String> {
        vec![self.0.display().to_string()]
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn items(tree: &Tree, args: &str) -> Vec<Value> {
    let mut list = List::open(&tree.roots(), args, None).unwrap();
    std::iter::from_fn(|| list.items.next(Budget { bytes: u32::MAX, items: 1 }).unwrap())
        .map(|c| serde_json::from_slice(c.payload.as_bytes()).unwrap())
        .collect()
}

fn rels(tree: &Tree, args: &str) -> Vec<String> {
    items(tree, args)
        .iter()
        .map(|i| Path::new(i["path"].as_str().unwrap()).strip_prefix(&tree.0).unwrap().display().to_string())
        .collect()
}

#[test]
fn depth_one_lists_the_directory_sorted_with_hidden_entries() {
    let tree = Tree::new("one");
    let mut want = vec![".dot", ".hidden", "a", "a-c.txt", "a.txt"];
    if cfg!(unix) {
        want.push("link");
    }
    want.push("ünï");
    assert_eq!(rels(&tree, "{}"), want);
    let without: Vec<&str> = want.iter().copied().filter(|n| !n.starts_with('.')).collect();
    assert_eq!(rels(&tree, r#"{"hidden": false}"#), without);
}

#[test]
fn deeper_listings_put_each_directory_before_its_contents() {
    let tree = Tree::new("deep");
    let got = rels(&tree, r#"{"depth": 3, "hidden": false}"#);
    let mut want = vec!["a", "a/b", "a/b/c", "a/x.txt", "a-c.txt", "a.txt"];
    if cfg!(unix) {
        want.push("link");
    }
    want.extend(["ünï", "ünï/fïlé.txt"]);
    assert_eq!(got, want);
    let all = items(&tree, r#"{"depth": 32}"#);
    let deepest = all.iter().find(|i| i["path"].as_str().unwrap().ends_with("d.txt")).unwrap();
    assert_eq!(deepest["depth"], 4);
    assert_eq!(deepest["type"], "file");
    assert_eq!(deepest["size"], 4);
    assert!(deepest["mtime_ns"].as_u64().unwrap() > 0);
}

#[cfg(unix)]
#[test]
fn symlinks_are_reported_and_never_followed() {
    let tree = Tree::new("link");
    let all = items(&tree, r#"{"depth": 5}"#);
    let link = all.iter().find(|i| i["path"].as_str().unwrap().ends_with("/link")).unwrap();
    assert_eq!(link["type"], "symlink");
    assert_eq!(link["size"], 1, "the link's own size: its target `a`");
    assert!(!all.iter().any(|i| i["path"].as_str().unwrap().contains("/link/")));
}

#[test]
fn resuming_at_every_chunk_gives_exactly_the_rest() {
    let tree = Tree::new("resume");
    let args = r#"{"depth": 32}"#;
    for bytes in [4u32, 50, 100_000] {
        let budget = Budget { bytes, items: 1 };
        let mut list = List::open(&tree.roots(), args, None).unwrap();
        let chunks: Vec<_> = std::iter::from_fn(|| list.items.next(budget).unwrap()).collect();
        assert!(chunks.len() >= 12);
        for (i, chunk) in chunks.iter().enumerate() {
            let mut rest = List::open(&tree.roots(), args, Some(&chunk.resume)).unwrap();
            let tail: Vec<_> = std::iter::from_fn(|| rest.items.next(budget).unwrap()).collect();
            assert_eq!(tail, chunks[i + 1..], "at {bytes} bytes, resume {}", chunk.resume);
        }
    }
}

#[test]
fn a_resume_position_that_vanished_continues_after_it() {
    let tree = Tree::new("vanished");
    let mut list = List::open(&tree.roots(), "{}", Some("ba-b")).unwrap();
    let next = list.items.next(Budget { bytes: 1000, items: 1 }).unwrap().unwrap();
    assert!(std::str::from_utf8(next.payload.as_bytes()).unwrap().contains("a-c.txt"));
}

#[test]
fn info_counts_and_errors() {
    let tree = Tree::new("errors");
    let mut list = List::open(&tree.roots(), r#"{"depth": 2, "path": "a"}"#, None).unwrap();
    while list.items.next(Budget { bytes: 1000, items: 1 }).unwrap().is_some() {}
    assert_eq!(list.info()["listed"], 3);
    assert_eq!(list.info()["path"], tree.0.join("a").display().to_string());
    assert!(!list.summary().exact);
    let code = |args: &str| List::open(&tree.roots(), args, None).err().unwrap().code;
    assert_eq!(code(r#"{"path": "a.txt"}"#), ErrorCode::InvalidArgument);
    assert_eq!(code(r#"{"path": "missing"}"#), ErrorCode::NotFound);
    assert_eq!(code(r#"{"path": "/"}"#), ErrorCode::PermissionDenied);
    assert_eq!(code(r#"{"depth": 0}"#), ErrorCode::InvalidArgument);
    assert_eq!(code(r#"{"depth": 33}"#), ErrorCode::InvalidArgument);
    assert_eq!(code(r#"{"recursive": true}"#), ErrorCode::InvalidArgument);
}

#[test]
fn progress_counts_the_entries_looked_at() {
    let tree = Tree::new("progress");
    let args = r#"{"depth": 8}"#;
    let mut list = List::open(&tree.roots(), args, None).unwrap();
    let mut resumes = Vec::new();
    while let Some(chunk) = cordon_sdk::Stream::next(&mut list, Budget { bytes: 4096, items: 1 }).unwrap() {
        resumes.push(chunk.resume);
    }
    let walked = list.items.source().0.walked();
    assert_eq!(walked, resumes.len() as u64);
    // Reopened halfway, the entries skipped unread before the position do not count.
    let mut list = List::open(&tree.roots(), args, Some(&resumes[resumes.len() / 2])).unwrap();
    while cordon_sdk::Stream::next(&mut list, Budget { bytes: 4096, items: 1 }).unwrap().is_some() {}
    let rest = list.items.source().0.walked();
    assert!(rest > 0 && rest < walked, "{rest} of {walked}");
}
