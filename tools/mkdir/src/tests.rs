//! The call as a whole, natively, on real directories: arguments, results,
//! paths outside the root, and paging the one result item.

use std::path::{Path, PathBuf};

use cordon_sdk::{Budget, ErrorCode, Tool};
use serde_json::{Value, json};

use crate::{Args, MkdirTool, mkdir};

/// A scratch directory removed when dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    /// A fresh directory for the test named `tag`.
    pub fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("cordon-mkdir-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir.canonicalize().unwrap())
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }

    fn roots(&self) -> Vec<String> {
        vec![self.0.display().to_string()]
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn call(dir: &Scratch, args: Value) -> Result<Value, cordon_sdk::Error> {
    mkdir(&dir.roots(), &cordon_sdk::parse_args::<Args>(&args.to_string())?)
}

fn abs(dir: &Scratch, rel: &str) -> String {
    dir.path().join(rel).display().to_string()
}

#[test]
fn creates_parents_by_default_and_reports_them_outermost_first() {
    let dir = Scratch::new("parents");
    let result = call(&dir, json!({"path": "a/b/c"})).unwrap();
    let expected = json!({
        "path": abs(&dir, "a/b/c"),
        "created": [abs(&dir, "a"), abs(&dir, "a/b"), abs(&dir, "a/b/c")],
        "created_count": 3,
        "existed": false
    });
    assert_eq!(result, expected);
    assert!(dir.path().join("a/b/c").is_dir());
    let again = call(&dir, json!({"path": abs(&dir, "a/b/c")})).unwrap();
    assert_eq!(again, json!({"path": abs(&dir, "a/b/c"), "created": [], "created_count": 0, "existed": true}));
}

#[test]
fn without_parents_the_parent_must_exist() {
    let dir = Scratch::new("noparents");
    let err = call(&dir, json!({"path": "x/y", "parents": false})).unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert!(!dir.path().join("x").exists());
    let made = call(&dir, json!({"path": "x", "parents": false})).unwrap();
    assert_eq!(made["created"], json!([abs(&dir, "x")]));
    let existing = call(&dir, json!({"path": "x", "parents": false})).unwrap();
    assert_eq!(existing["existed"], true);
}

#[test]
fn paths_outside_the_root_and_bad_arguments_are_refused() {
    let dir = Scratch::new("outside");
    for path in ["../escape", "/definitely/not/a/root"] {
        assert_eq!(call(&dir, json!({ "path": path })).unwrap_err().code, ErrorCode::PermissionDenied, "{path}");
    }
    assert!(!dir.path().parent().unwrap().join("escape").exists());
    for bad in [json!({}), json!({"path": "a", "parents": "yes"}), json!({"path": "a", "mode": 7})] {
        assert_eq!(call(&dir, bad.clone()).unwrap_err().code, ErrorCode::InvalidArgument, "{bad}");
    }
    let root = call(&dir, json!({"path": "."})).unwrap();
    assert_eq!(
        root,
        json!({"path": abs(&dir, "").trim_end_matches('/'), "created": [], "created_count": 0, "existed": true})
    );
}

#[test]
fn the_tool_pages_its_one_item_and_resuming_creates_nothing() {
    let dir = Scratch::new("paging");
    let args = json!({"path": "p/q"}).to_string();
    let ctx = cordon_sdk::Context { roots: dir.roots() };
    let mut stream = MkdirTool::open(&ctx, &args, None).unwrap();
    let info = stream.info();
    assert_eq!(info["created"].as_array().unwrap().len(), 2);
    assert_eq!(stream.summary().totals, json!({"created": 2}));
    let first = stream.next(Budget { bytes: 8, items: 1 }).unwrap().unwrap();
    assert!(first.continued);
    std::fs::remove_dir_all(dir.path().join("p")).unwrap();
    let mut resumed = MkdirTool::open(&ctx, &args, Some(&first.resume)).unwrap();
    let mut text = String::from_utf8(first.payload.as_bytes().to_vec()).unwrap();
    while let Some(chunk) = resumed.next(Budget { bytes: 8, items: 1 }).unwrap() {
        text.push_str(std::str::from_utf8(chunk.payload.as_bytes()).unwrap());
    }
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), info);
    assert!(!dir.path().join("p").exists(), "resuming created the directory again");
    let manifest = MkdirTool::manifest();
    assert!(!manifest.read_only && !manifest.destructive && manifest.idempotent);
}

#[test]
fn a_deep_path_lists_only_the_first_created_directories_and_counts_them_all() {
    let dir = Scratch::new("deep");
    let result = call(&dir, json!({"path": "d/".repeat(40)})).unwrap();
    assert_eq!(result["created_count"], 40);
    let listed = result["created"].as_array().unwrap();
    assert_eq!(listed.len(), crate::MAX_LISTED);
    assert_eq!(listed[0], json!(abs(&dir, "d")), "outermost first");
}
