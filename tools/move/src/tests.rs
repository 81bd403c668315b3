//! The call as a whole, natively, on real directories: renames, conflicts,
//! overwrites, roots and paths outside them, and paging the one result item.

use std::fs;
use std::path::{Path, PathBuf};

use cordon_sdk::{Budget, ErrorCode, Tool};
use serde_json::{Value, json};

use crate::{Args, MoveTool, move_path};

/// A scratch directory removed when dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    /// A fresh directory for the test named `tag`.
    pub fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("cordon-move-{}-{tag}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir.canonicalize().unwrap())
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The directory as the only root.
    pub fn roots(&self) -> Vec<String> {
        vec![self.0.display().to_string()]
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn call(roots: &[String], args: Value) -> Result<Value, cordon_sdk::Error> {
    move_path(roots, &cordon_sdk::parse_args::<Args>(&args.to_string())?)
}

fn abs(dir: &Scratch, rel: &str) -> String {
    dir.path().join(rel).display().to_string()
}

#[test]
fn renames_files_and_directories() {
    let dir = Scratch::new("rename");
    fs::write(dir.path().join("a.txt"), "A").unwrap();
    fs::create_dir_all(dir.path().join("d/inner")).unwrap();
    let roots = dir.roots();
    let result = call(&roots, json!({"from": "a.txt", "to": "b.txt"})).unwrap();
    assert_eq!(
        result,
        json!({"from": abs(&dir, "a.txt"), "to": abs(&dir, "b.txt"), "type": "file", "overwrote": false})
    );
    assert_eq!(fs::read_to_string(dir.path().join("b.txt")).unwrap(), "A");
    let result = call(&roots, json!({"from": abs(&dir, "d"), "to": "e"})).unwrap();
    assert_eq!(result["type"], "dir");
    assert!(dir.path().join("e/inner").is_dir() && !dir.path().join("d").exists());
}

#[test]
fn an_existing_destination_needs_overwrite() {
    let dir = Scratch::new("overwrite");
    fs::write(dir.path().join("a"), "A").unwrap();
    fs::write(dir.path().join("b"), "B").unwrap();
    fs::create_dir_all(dir.path().join("full/x")).unwrap();
    let roots = dir.roots();
    let err = call(&roots, json!({"from": "a", "to": "b"})).unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict);
    assert!(err.message.contains(&abs(&dir, "b")) && err.message.contains("overwrite"), "{}", err.message);
    assert_eq!(fs::read_to_string(dir.path().join("b")).unwrap(), "B");
    let err = call(&roots, json!({"from": "a", "to": "full"})).unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict);
    assert!(err.message.contains("never goes into") && err.message.contains("a directory"), "{}", err.message);
    let result = call(&roots, json!({"from": "a", "to": "b", "overwrite": true})).unwrap();
    assert_eq!(result["overwrote"], true);
    assert_eq!(fs::read_to_string(dir.path().join("b")).unwrap(), "A");
    fs::create_dir(dir.path().join("d")).unwrap();
    let err = call(&roots, json!({"from": "d", "to": "full", "overwrite": true})).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("not empty"), "{}", err.message);
    assert!(dir.path().join("d").is_dir() && dir.path().join("full/x").is_dir());
}

#[test]
fn missing_sources_roots_and_paths_outside_are_refused() {
    let dir = Scratch::new("refused");
    fs::create_dir(dir.path().join("d")).unwrap();
    fs::write(dir.path().join("f"), "F").unwrap();
    let roots = dir.roots();
    let code = |args: Value| call(&roots, args).unwrap_err().code;
    assert_eq!(code(json!({"from": "nope", "to": "x"})), ErrorCode::NotFound);
    assert_eq!(code(json!({"from": "f", "to": "missing/x"})), ErrorCode::NotFound);
    assert_eq!(code(json!({"from": "f", "to": "f/x"})), ErrorCode::InvalidArgument);
    assert_eq!(code(json!({"from": "f", "to": "f"})), ErrorCode::InvalidArgument);
    assert_eq!(code(json!({"from": "d", "to": "d/sub"})), ErrorCode::InvalidArgument);
    assert_eq!(code(json!({"from": ".", "to": "x"})), ErrorCode::PermissionDenied);
    assert_eq!(code(json!({"from": "d", "to": ".", "overwrite": true})), ErrorCode::PermissionDenied);
    assert_eq!(code(json!({"from": "f", "to": "../escaped"})), ErrorCode::PermissionDenied);
    assert_eq!(code(json!({"from": "../elsewhere", "to": "x"})), ErrorCode::PermissionDenied);
    assert_eq!(code(json!({"from": "f"})), ErrorCode::InvalidArgument);
    let err = call(&roots, json!({"from": "f", "to": "/not/a/root/x"})).unwrap_err();
    assert!(err.message.starts_with("`to`:"), "{}", err.message);
    assert!(dir.path().join("f").is_file() && dir.path().join("d").is_dir());
}

#[test]
fn the_tool_pages_its_one_item_and_resuming_moves_nothing() {
    let dir = Scratch::new("paging");
    fs::write(dir.path().join("a"), "A").unwrap();
    let args = json!({"from": "a", "to": "b"}).to_string();
    let ctx = cordon_sdk::Context { roots: dir.roots() };
    let mut stream = MoveTool::open(&ctx, &args, None).unwrap();
    let info = stream.info();
    let first = stream.next(Budget { bytes: 6, items: 1 }).unwrap().unwrap();
    assert!(first.continued);
    fs::write(dir.path().join("a"), "new A").unwrap();
    let mut resumed = MoveTool::open(&ctx, &args, Some(&first.resume)).unwrap();
    let mut text = String::from_utf8(first.payload.as_bytes().to_vec()).unwrap();
    while let Some(chunk) = resumed.next(Budget { bytes: 6, items: 1 }).unwrap() {
        text.push_str(std::str::from_utf8(chunk.payload.as_bytes()).unwrap());
    }
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), info);
    assert_eq!(fs::read_to_string(dir.path().join("b")).unwrap(), "A", "resuming moved again");
    let manifest = MoveTool::manifest();
    assert!(!manifest.read_only && manifest.destructive && !manifest.idempotent);
}
