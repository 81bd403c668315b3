//! The write tools `mkdir` and `move` end to end: what they change, what they
//! refuse (and that a refusal changes nothing, inside the roots or out), read-only
//! roots, and paging a result whose cursor is resumed without repeating the change.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{CANARY, Fixture, Server, next_cursor, payload};

/// The one item of a successful write call.
fn item(result: &Value) -> Value {
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"]["complete"], true, "{result}");
    let text = String::from_utf8(payload(result)).unwrap();
    assert_eq!(text.lines().count(), 1, "one item: {text}");
    serde_json::from_str(&text).unwrap()
}

/// The error code of a failed call, checking the message mentions each of `says`.
fn error(result: &Value, says: &[&str]) -> String {
    assert_eq!(result["isError"], true, "{result}");
    let err = &result["_meta"]["cordon/error"];
    let message = err["message"].as_str().unwrap();
    for s in says {
        assert!(message.contains(s), "`{s}` not in: {message}");
    }
    assert!(!message.contains(CANARY), "the canary leaked: {message}");
    err["code"].as_str().unwrap().to_string()
}

fn s(path: &Path) -> String {
    path.display().to_string()
}

/// A directory outside the root with one file, and what it holds.
fn canary_dir(fx: &Fixture) -> PathBuf {
    let dir = fx.dir.path().join("canary_dir");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("canary.txt"), CANARY).unwrap();
    dir.canonicalize().unwrap()
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    names
}

/// The tree outside the root is as `Fixture` made it, plus `canary_dir`.
fn assert_outside_untouched(fx: &Fixture, canary: &Path) {
    assert_eq!(listing(fx.dir.path()), ["canary_dir", "outside.txt", "root", "root_evil"]);
    assert_eq!(listing(canary), ["canary.txt"]);
    assert_eq!(listing(&fx.dir.path().join("root_evil")), ["secret.txt"]);
    assert_eq!(fs::read_to_string(canary.join("canary.txt")).unwrap(), CANARY);
    assert_eq!(fs::read_to_string(fx.outside()).unwrap(), CANARY);
}

/// A read-only root beside the fixture's root, holding `kept.txt` and `dir/`.
fn read_only_root(fx: &Fixture) -> PathBuf {
    let ro = fx.dir.path().join("ro");
    fs::create_dir_all(ro.join("dir")).unwrap();
    fs::write(ro.join("kept.txt"), "kept").unwrap();
    ro.canonicalize().unwrap()
}

#[test]
fn mkdir_creates_missing_parents_and_reports_what_it_made() {
    let fx = Fixture::new();
    let root = fx.root();
    let mut server = Server::initialized(&root, &[]);
    let made = item(&server.call(1, "mkdir", json!({"format": "json", "path": "a/b/c"})));
    let expected = json!({
        "path": s(&root.join("a/b/c")),
        "created": [s(&root.join("a")), s(&root.join("a/b")), s(&root.join("a/b/c"))],
        "created_count": 3,
        "existed": false
    });
    assert_eq!(made, expected);
    assert!(root.join("a/b/c").is_dir());

    let again = item(&server.call(2, "mkdir", json!({"format": "json", "path": s(&root.join("a/b/c"))})));
    assert_eq!(again, json!({"path": s(&root.join("a/b/c")), "created": [], "created_count": 0, "existed": true}));
    let existing = item(&server.call(3, "mkdir", json!({"format": "json", "path": "sub", "parents": false})));
    assert_eq!(existing["existed"], true);

    let one = item(&server.call(4, "mkdir", json!({"format": "json", "path": "a/d", "parents": false})));
    assert_eq!(one["created"], json!([s(&root.join("a/d"))]));
    let orphan = server.call(5, "mkdir", json!({"format": "json", "path": "x/y", "parents": false}));
    assert_eq!(error(&orphan, &["parents: true"]), "not_found");
    assert!(!root.join("x").exists());

    let file = server.call(6, "mkdir", json!({"format": "json", "path": "hello.txt"}));
    assert_eq!(error(&file, &["already exists and is a file"]), "conflict");
    let through_file = server.call(7, "mkdir", json!({"format": "json", "path": "hello.txt/inner"}));
    assert_eq!(error(&through_file, &["hello.txt"]), "conflict");
    assert_eq!(fs::read_to_string(root.join("hello.txt")).unwrap(), "hello\nworld\n");
}

#[test]
fn mkdir_never_creates_anything_outside_the_roots() {
    let fx = Fixture::new();
    let root = fx.root();
    let canary = canary_dir(&fx);
    symlink(&canary, root.join("link-out")).unwrap();
    symlink(fx.dir.path(), root.join("link-parent")).unwrap();
    let mut server = Server::initialized(&root, &[]);
    let cases = [
        json!("../made"),
        json!("sub/../../made"),
        json!(s(&fx.dir.path().join("made"))),
        json!(s(&fx.dir.path().join("root_evil/made"))),
        json!("link-out/made"),
        json!("link-out/deeper/made"),
        json!("link-parent/made"),
        json!("link-parent/root_evil/made"),
    ];
    for (i, path) in cases.iter().enumerate() {
        let result = server.call(i as i64 + 1, "mkdir", json!({"format": "json",  "path": path }));
        assert_eq!(error(&result, &[]), "permission_denied", "{path}: {result}");
    }
    assert_outside_untouched(&fx, &canary);
    assert_eq!(listing(&root), ["hello.txt", "link-out", "link-parent", "sub"]);
}

#[test]
fn mkdir_under_a_read_only_root_is_denied_but_an_existing_directory_is_fine() {
    let fx = Fixture::new();
    let ro = read_only_root(&fx);
    let flag = format!("{}:ro", s(&ro));
    let mut server = Server::initialized(&fx.root(), &["--root", &flag]);
    let denied = server.call(1, "mkdir", json!({"format": "json", "path": s(&ro.join("new/deeper"))}));
    assert_eq!(error(&denied, &["read-only", &s(&ro)]), "permission_denied");
    assert_eq!(listing(&ro), ["dir", "kept.txt"]);
    let existing = item(&server.call(2, "mkdir", json!({"format": "json", "path": s(&ro.join("dir"))})));
    assert_eq!(existing["existed"], true);
    let made = item(&server.call(3, "mkdir", json!({"format": "json", "path": "rw-still-works"})));
    assert_eq!(made["existed"], false);
}

#[test]
fn move_renames_files_and_directories() {
    let fx = Fixture::new();
    let root = fx.root();
    fs::create_dir_all(root.join("tree/deep")).unwrap();
    fs::write(root.join("tree/deep/leaf.txt"), "leaf").unwrap();
    let mut server = Server::initialized(&root, &[]);
    let file = item(&server.call(1, "move", json!({"format": "json", "from": "hello.txt", "to": "sub/greeting.txt"})));
    let expected = json!({"from": s(&root.join("hello.txt")), "to": s(&root.join("sub/greeting.txt")), "type": "file", "overwrote": false});
    assert_eq!(file, expected);
    assert!(!root.join("hello.txt").exists());
    assert_eq!(fs::read_to_string(root.join("sub/greeting.txt")).unwrap(), "hello\nworld\n");

    let dir = item(&server.call(2, "move", json!({"format": "json", "from": s(&root.join("tree")), "to": "renamed"})));
    assert_eq!((dir["type"].as_str(), dir["overwrote"].as_bool()), (Some("dir"), Some(false)));
    assert_eq!(fs::read_to_string(root.join("renamed/deep/leaf.txt")).unwrap(), "leaf");
    assert!(!root.join("tree").exists());

    let missing = server.call(3, "move", json!({"format": "json", "from": "nope.txt", "to": "x.txt"}));
    assert_eq!(error(&missing, &["nope.txt"]), "not_found");
    let no_dir = server.call(4, "move", json!({"format": "json", "from": "renamed", "to": "absent/renamed"}));
    assert_eq!(error(&no_dir, &["absent", "mkdir"]), "not_found");
    let into_itself = server.call(5, "move", json!({"format": "json", "from": "renamed", "to": "renamed/deep/again"}));
    assert_eq!(error(&into_itself, &["into itself"]), "invalid_argument");
    let the_root = server.call(6, "move", json!({"format": "json", "from": ".", "to": "sub/root"}));
    assert_eq!(error(&the_root, &["root"]), "permission_denied");
    assert!(root.join("renamed/deep/leaf.txt").is_file());
}

#[test]
fn move_onto_an_existing_path_needs_overwrite_and_never_goes_into_a_directory() {
    let fx = Fixture::new();
    let root = fx.root();
    fx.write("new.txt", "new");
    fs::create_dir(root.join("empty")).unwrap();
    fs::create_dir(root.join("dir")).unwrap();
    let mut server = Server::initialized(&root, &[]);
    let refused = server.call(1, "move", json!({"format": "json", "from": "new.txt", "to": "hello.txt"}));
    assert_eq!(error(&refused, &[&s(&root.join("hello.txt")), "overwrite"]), "conflict");
    assert_eq!(fs::read_to_string(root.join("hello.txt")).unwrap(), "hello\nworld\n");
    assert_eq!(fs::read_to_string(root.join("new.txt")).unwrap(), "new");

    let into_dir = server.call(2, "move", json!({"format": "json", "from": "new.txt", "to": "sub"}));
    assert_eq!(error(&into_dir, &["full new path"]), "conflict");
    assert_eq!(listing(&root.join("sub")), ["inner.txt"]);

    let replaced = item(&server.call(
        3,
        "move",
        json!({"format": "json", "from": "new.txt", "to": "hello.txt", "overwrite": true}),
    ));
    assert_eq!(replaced["overwrote"], true);
    assert_eq!(fs::read_to_string(root.join("hello.txt")).unwrap(), "new");
    assert!(!root.join("new.txt").exists());

    let full = server.call(4, "move", json!({"format": "json", "from": "dir", "to": "sub", "overwrite": true}));
    assert_eq!(error(&full, &["not empty"]), "invalid_argument");
    let file_over_dir =
        server.call(5, "move", json!({"format": "json", "from": "hello.txt", "to": "empty", "overwrite": true}));
    assert_eq!(error(&file_over_dir, &["directory"]), "invalid_argument");
    assert!(root.join("dir").is_dir() && root.join("sub/inner.txt").is_file() && root.join("hello.txt").is_file());
    let dir_over_empty =
        item(&server.call(6, "move", json!({"format": "json", "from": "dir", "to": "empty", "overwrite": true})));
    assert_eq!(dir_over_empty["overwrote"], true);
    assert!(!root.join("dir").exists() && root.join("empty").is_dir());
}

#[test]
fn move_never_reaches_outside_the_roots() {
    let fx = Fixture::new();
    let root = fx.root();
    let canary = canary_dir(&fx);
    symlink(&canary, root.join("link-out")).unwrap();
    let mut server = Server::initialized(&root, &[]);
    let evil = fx.dir.path().join("root_evil/secret.txt");
    let cases = [
        json!({"from": "../outside.txt", "to": "stolen.txt"}),
        json!({"from": s(&fx.outside()), "to": "stolen.txt"}),
        json!({"from": s(&evil), "to": "stolen.txt"}),
        json!({"from": "link-out/canary.txt", "to": "stolen.txt"}),
        json!({"from": "hello.txt", "to": "../planted.txt"}),
        json!({"from": "hello.txt", "to": s(&fx.dir.path().join("planted.txt"))}),
        json!({"from": "hello.txt", "to": "../root_evil/planted.txt"}),
        json!({"from": "hello.txt", "to": "link-out/planted.txt"}),
        json!({"from": "hello.txt", "to": "link-out/canary.txt", "overwrite": true}),
    ];
    for (i, args) in cases.iter().enumerate() {
        let result = server.call(i as i64 + 1, "move", args.clone());
        assert_eq!(error(&result, &[]), "permission_denied", "{args}: {result}");
    }
    assert_outside_untouched(&fx, &canary);
    assert_eq!(listing(&root), ["hello.txt", "link-out", "sub"]);
    assert_eq!(fs::read_to_string(root.join("hello.txt")).unwrap(), "hello\nworld\n");
    // The symlink itself is an entry inside the root: moving it moves the link, not its target.
    let link = item(&server.call(20, "move", json!({"format": "json", "from": "link-out", "to": "sub/link"})));
    assert_eq!(link["type"], "symlink");
    assert_outside_untouched(&fx, &canary);
}

#[test]
fn move_touching_a_read_only_root_is_denied_and_between_read_write_roots_works() {
    let fx = Fixture::new();
    let root = fx.root();
    let ro = read_only_root(&fx);
    let other = fx.dir.path().join("other");
    fs::create_dir(&other).unwrap();
    let other = other.canonicalize().unwrap();
    let ro_flag = format!("{}:ro", s(&ro));
    let mut server = Server::initialized(&root, &["--root", &ro_flag, "--root", &s(&other)]);
    let cases = [
        json!({"from": s(&ro.join("kept.txt")), "to": s(&ro.join("renamed.txt"))}),
        json!({"from": s(&ro.join("kept.txt")), "to": "taken.txt"}),
        json!({"from": "hello.txt", "to": s(&ro.join("planted.txt"))}),
        json!({"from": "hello.txt", "to": s(&ro.join("kept.txt")), "overwrite": true}),
    ];
    for (i, args) in cases.iter().enumerate() {
        let result = server.call(i as i64 + 1, "move", args.clone());
        assert_eq!(error(&result, &["read-only"]), "permission_denied", "{args}: {result}");
    }
    assert_eq!(listing(&ro), ["dir", "kept.txt"]);
    assert_eq!(fs::read_to_string(ro.join("kept.txt")).unwrap(), "kept");
    assert!(root.join("hello.txt").is_file());

    // Both roots are on one filesystem here, so a single rename does it.
    let across =
        server.call(10, "move", json!({"format": "json", "from": "hello.txt", "to": s(&other.join("hello.txt"))}));
    if across["isError"] == true {
        assert_eq!(error(&across, &["different filesystems"]), "unsupported");
    } else {
        assert_eq!(item(&across)["to"], s(&other.join("hello.txt")));
        assert!(other.join("hello.txt").is_file() && !root.join("hello.txt").exists());
    }
}

/// Pages through a write call at tiny budgets, the second page smaller than
/// the first so that the host reopens the tool at the cursor's position.
fn paged(server: &mut Server, tool: &str, args: Value, between: impl FnOnce()) -> Value {
    let mut first_args = args;
    first_args["max_tokens"] = 3.into();
    let first = server.call(100, tool, first_args);
    assert_eq!(first["isError"], false, "{first}");
    assert_eq!(first["structuredContent"]["complete"], false, "{first}");
    between();
    let mut text = payload(&first);
    let mut cursor = next_cursor(&first).as_deref().unwrap().to_string();
    for page in 1.. {
        let next = server.call(100 + page, tool, json!({"cursor": cursor, "max_tokens": 1}));
        assert_eq!(next["isError"], false, "page {page}: {next}");
        text.extend(payload(&next));
        match next_cursor(&next).as_deref() {
            Some(c) => cursor = c.to_string(),
            None => break,
        }
    }
    let text = String::from_utf8(text).unwrap();
    assert!(text.ends_with('\n') && text.lines().count() == 1, "{text}");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_paged_result_resumes_without_repeating_the_change() {
    let fx = Fixture::new();
    let root = fx.root();
    let mut server = Server::initialized(&root, &[]);
    let made = paged(&mut server, "mkdir", json!({"format": "json", "path": "p/q"}), || {
        fs::remove_dir_all(root.join("p")).unwrap()
    });
    assert_eq!(made["created"], json!([s(&root.join("p")), s(&root.join("p/q"))]));
    assert!(!root.join("p").exists(), "resuming created the directories again");

    let moved = paged(&mut server, "move", json!({"format": "json", "from": "hello.txt", "to": "moved.txt"}), || {
        fs::write(root.join("hello.txt"), "a new file").unwrap()
    });
    assert_eq!(moved["to"], s(&root.join("moved.txt")));
    assert_eq!(fs::read_to_string(root.join("hello.txt")).unwrap(), "a new file", "resuming moved again");
    assert_eq!(fs::read_to_string(root.join("moved.txt")).unwrap(), "hello\nworld\n");
}

#[test]
fn the_write_tools_are_listed_with_write_annotations() {
    let fx = Fixture::new();
    let mut server = Server::initialized(&fx.root(), &[]);
    let list = server.request(1, "tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    let find = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name}: {list}"));
    let (mkdir, mv) = (&find("mkdir")["annotations"], &find("move")["annotations"]);
    assert_eq!(
        (&mkdir["readOnlyHint"], &mkdir["destructiveHint"], &mkdir["idempotentHint"]),
        (&json!(false), &json!(false), &json!(true))
    );
    assert_eq!(
        (&mv["readOnlyHint"], &mv["destructiveHint"], &mv["idempotentHint"]),
        (&json!(false), &json!(true), &json!(false))
    );
}
