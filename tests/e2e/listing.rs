//! The `list` and `stat` tools end to end: listings equal a native walk at
//! every depth, paged over many pages from parked and reopened streams;
//! symlinks are reported, never followed; paths outside the roots are denied;
//! stat describes files, directories and symlinks and counts lines.

use std::os::unix::fs::symlink;
use std::path::Path;

use serde_json::{Value, json};

use crate::corpus;
use crate::glob::items;
use crate::support::{CANARY, Fixture, Server};

/// The corpus, plus symlinks: to a file and a directory inside the root, to
/// the parent directory outside it, and a dangling one.
fn listing_fixture() -> Fixture {
    let fx = Fixture::new();
    let root = fx.root();
    corpus::generate(&root, 400, 21);
    symlink("hello.txt", root.join("link-to-file")).unwrap();
    symlink("src", root.join("link-to-src")).unwrap();
    symlink(fx.dir.path(), root.join("link-to-parent")).unwrap();
    symlink("nowhere", root.join("src/dangling")).unwrap();
    fx
}

/// What `list` must say about `dir`: a depth-first walk with std, names
/// sorted, symlinks not followed, as `(relative path, type, size, mtime_ns,
/// depth)`.
fn native(dir: &Path, rel: &Path, depth: u32, max: u32, hidden: bool, out: &mut Vec<Value>) {
    let mut names: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    for name in names {
        if !hidden && name.to_str().unwrap().starts_with('.') {
            continue;
        }
        let meta = std::fs::symlink_metadata(dir.join(&name)).unwrap();
        let kind = if meta.is_symlink() {
            "symlink"
        } else if meta.is_dir() {
            "dir"
        } else {
            "file"
        };
        let mtime = meta.modified().unwrap().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
        out.push(json!([rel.join(&name).to_str().unwrap(), kind, meta.len(), mtime, depth]));
        if meta.is_dir() && depth < max {
            native(&dir.join(&name), &rel.join(&name), depth + 1, max, hidden, out);
        }
    }
}

/// A listing's items in the shape of `native`'s.
fn comparable(root: &Path, items: &[Value]) -> Vec<Value> {
    items
        .iter()
        .map(|i| {
            let rel = Path::new(i["path"].as_str().unwrap()).strip_prefix(root).unwrap();
            json!([rel.to_str().unwrap(), i["type"], i["size"], i["mtime_ns"], i["depth"]])
        })
        .collect()
}

#[test]
fn listing_equals_a_native_walk_at_every_depth() {
    let fx = listing_fixture();
    let root = fx.root();
    let mut server = Server::initialized(&root, &[]);
    for (depth, hidden, max_tokens) in
        [(1, true, 60), (2, false, 200), (3, true, 300), (32, true, 500), (32, false, 90)]
    {
        let mut want = Vec::new();
        native(&root, Path::new(""), 1, depth, hidden, &mut want);
        let args = json!({"depth": depth, "hidden": hidden});
        let (got, pages) = items(&mut server, "list", args, max_tokens);
        assert_eq!(comparable(&root, &got), want, "depth {depth}, hidden {hidden}");
        assert!(pages > 2, "depth {depth}: {pages} pages");
    }
    let (default, _) = items(&mut server, "list", json!({}), 6000);
    let mut want = Vec::new();
    native(&root, Path::new(""), 1, 1, true, &mut want);
    assert_eq!(comparable(&root, &default), want, "default: depth 1 with hidden entries");
    let (sub, _) = items(&mut server, "list", json!({"path": "src", "depth": 2}), 6000);
    let mut want = Vec::new();
    native(&root.join("src"), Path::new("src"), 1, 2, true, &mut want);
    assert_eq!(comparable(&root, &sub), want, "a subdirectory");
}

#[test]
fn listing_resumes_exactly_from_reopened_streams() {
    let fx = listing_fixture();
    let root = fx.root();
    let mut server = Server::initialized(&root, &["--max-sessions", "0"]);
    let mut want = Vec::new();
    native(&root, Path::new(""), 1, 32, true, &mut want);
    let (got, pages) = items(&mut server, "list", json!({"depth": 32}), 40);
    assert_eq!(comparable(&root, &got), want);
    assert!(pages > want.len() / 2, "{pages} pages");
}

#[test]
fn listing_reports_symlinks_without_following_them() {
    let fx = listing_fixture();
    let root = fx.root();
    let mut server = Server::initialized(&root, &[]);
    let (got, _) = items(&mut server, "list", json!({"depth": 32}), 6000);
    let find = |name: &str| got.iter().find(|i| i["path"] == root.join(name).to_str().unwrap()).unwrap().clone();
    for (name, target) in [("link-to-file", "hello.txt"), ("link-to-src", "src"), ("src/dangling", "nowhere")] {
        let link = find(name);
        assert_eq!(link["type"], "symlink", "{link}");
        assert_eq!(link["size"], target.len(), "the link's own size: {link}");
    }
    let link = find("link-to-parent");
    assert_eq!(link["type"], "symlink");
    for prefix in ["link-to-src/", "link-to-parent/"] {
        let under = root.join(prefix);
        assert!(!got.iter().any(|i| i["path"].as_str().unwrap().starts_with(under.to_str().unwrap())), "{prefix}");
    }
    assert!(!serde_json::to_string(&got).unwrap().contains("outside.txt"));
}

fn error_code(result: &Value) -> &str {
    assert_eq!(result["isError"], true, "{result}");
    assert!(!result.to_string().contains(CANARY), "leaked the canary: {result}");
    result["_meta"]["cordon/error"]["code"].as_str().unwrap()
}

#[test]
fn listing_outside_the_roots_is_denied_and_bad_arguments_refused() {
    let fx = listing_fixture();
    let root = fx.root();
    let mut server = Server::initialized(&root, &[]);
    let evil = fx.dir.path().join("root_evil").canonicalize().unwrap();
    let outside = fx.dir.path().canonicalize().unwrap();
    for path in [json!(".."), json!("src/../.."), json!(outside), json!(evil), json!("link-to-parent")] {
        let result = server.call(1, "list", json!({ "path": path }));
        assert_eq!(error_code(&result), "permission_denied", "{path}");
    }
    assert_eq!(error_code(&server.call(2, "list", json!({"path": "missing"}))), "not_found");
    assert_eq!(error_code(&server.call(3, "list", json!({"path": "hello.txt"}))), "invalid_argument");
    let first = server.call(4, "list", json!({"depth": 3, "max_tokens": 100, "format": "json"}));
    let meta = &first["structuredContent"];
    assert_eq!(meta["depth"], json!(3), "{meta}");
    assert!(meta["listed"].as_u64().unwrap() >= 1, "{meta}");
    assert!(meta.get("summary").is_none() && meta["whole"]["exact"] == true, "counted instead: {meta}");
}

/// The one item of a `stat` call.
fn stat(server: &mut Server, args: Value) -> Value {
    let (got, pages) = items(server, "stat", args, 6000);
    assert_eq!((got.len(), pages), (1, 1));
    got.into_iter().next().unwrap()
}

#[test]
fn stat_describes_files_directories_and_symlinks() {
    let fx = listing_fixture();
    let root = fx.root();
    fx.write("crlf.txt", "one\r\ntwo\r\nthree\r\n");
    fx.write("no-final-newline.txt", "one\ntwo");
    fx.write("empty.txt", "");
    let mut server = Server::initialized(&root, &[]);
    let hello = stat(&mut server, json!({"path": "hello.txt"}));
    let meta = std::fs::metadata(root.join("hello.txt")).unwrap();
    let mtime = meta.modified().unwrap().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    assert_eq!(
        hello,
        json!({"path": root.join("hello.txt").to_str().unwrap(), "type": "file", "size": 12, "mtime_ns": mtime,
               "permissions": {"readonly": null}, "is_symlink": false})
    );
    for (path, lines) in [("hello.txt", 2), ("crlf.txt", 3), ("no-final-newline.txt", 2), ("empty.txt", 0)] {
        let item = stat(&mut server, json!({"path": path, "count_lines": true}));
        assert_eq!(item["lines"], lines, "{path}: {item}");
    }
    let dir = stat(&mut server, json!({"path": root.join("src"), "count_lines": true}));
    assert_eq!((&dir["type"], &dir["is_symlink"]), (&json!("dir"), &json!(false)));
    assert!(dir.get("lines").is_none(), "{dir}");
    let link = stat(&mut server, json!({"path": "link-to-file", "count_lines": true}));
    assert_eq!(
        (&link["type"], &link["size"], &link["is_symlink"], &link["lines"]),
        (&json!("file"), &json!(12), &json!(true), &json!(2))
    );
    let link = stat(&mut server, json!({"path": "link-to-src"}));
    assert_eq!((&link["type"], &link["is_symlink"]), (&json!("dir"), &json!(true)));
    // One item still pages: at 10 tokens it is split over several pages.
    let (bytes, pages) = crate::support::read_all(&mut server, "stat", json!({"path": "crlf.txt"}), 10);
    assert!(pages.len() > 2);
    let whole: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(whole["size"], 17);
}

#[test]
fn stat_errors_not_found_and_outside_the_roots() {
    let fx = listing_fixture();
    let root = fx.root();
    let mut server = Server::initialized(&root, &[]);
    assert_eq!(error_code(&server.call(1, "stat", json!({"path": "missing.txt"}))), "not_found");
    assert_eq!(error_code(&server.call(2, "stat", json!({"path": "src/dangling"}))), "not_found");
    for path in [json!("../outside.txt"), json!(fx.outside()), json!("link-to-parent/outside.txt")] {
        assert_eq!(error_code(&server.call(3, "stat", json!({ "path": path }))), "permission_denied", "{path}");
    }
    assert_eq!(error_code(&server.call(4, "stat", json!({"path": "link-to-parent"}))), "permission_denied");
}
