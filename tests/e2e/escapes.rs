//! Path escapes, tried with every tool that takes a path: `..`, absolute paths,
//! the `root_evil` sibling, symlinks out (also swapped in while a read pages or
//! a write commits), hard links, FIFOs, sockets and devices, very long paths,
//! NUL bytes and Unicode look-alikes. Each case is named in its assertions. No
//! answer ever holds the canary, and after every test the tree outside the root
//! is exactly as it was: same entries, same bytes, same mtimes.

use std::fs;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::canary::Outside;
use crate::support::{CANARY, Fixture, Server, payload};

/// Calls a tool and checks that the answer is a tool result that never holds
/// the canary.
fn attempt(server: &mut Server, id: &mut i64, what: &str, tool: &str, args: &Value) -> Value {
    *id += 1;
    let reply = server.request(*id, "tools/call", json!({"name": tool, "arguments": args}));
    assert!(!reply.to_string().contains(CANARY), "{what} with {tool} {args}: the canary leaked: {reply}");
    assert!(reply.get("error").is_none(), "{what} with {tool} {args}: a protocol error: {reply}");
    reply["result"].clone()
}

fn code(result: &Value) -> &str {
    result["_meta"]["cordon/error"]["code"].as_str().unwrap_or("(no error)")
}

/// Asserts a refusal whose code is one of `codes`.
fn refused(result: &Value, codes: &[&str], what: &str, tool: &str, args: &Value) {
    assert_eq!(result["isError"], true, "{what} with {tool} {args} was not refused: {result}");
    assert!(codes.contains(&code(result)), "{what} with {tool} {args}: expected one of {codes:?}: {result}");
}

/// Every tool, with `p` as its path: the reading tools, then the writing ones.
fn every_tool(p: &Value) -> Vec<(&'static str, Value)> {
    vec![
        ("read", json!({"format": "json", "path": p})),
        ("stat", json!({"format": "json", "path": p, "count_lines": true})),
        ("list", json!({"path": p, "depth": 3})),
        ("glob", json!({"pattern": "**", "path": p, "hidden": true, "no_ignore": true})),
        ("grep", json!({"pattern": "CANAR[Y]", "path": p, "hidden": true, "no_ignore": true, "binary": true})),
        ("write", json!({"format": "json", "path": p, "content": "pwned"})),
        (
            "edit",
            json!({"format": "json", "path": p, "old_string": "must-never", "new_string": "pwned", "replace_all": true}),
        ),
        ("move", json!({"format": "json", "from": p, "to": "stolen.txt"})),
        ("move", json!({"format": "json", "from": "hello.txt", "to": p, "overwrite": true})),
        ("mkdir", json!({"format": "json", "path": p})),
    ]
}

fn s(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn paths_that_climb_out_of_the_root_are_denied_for_every_tool() {
    let fx = Fixture::new();
    let (root, base) = (fx.root(), fx.dir.path().canonicalize().unwrap());
    symlink(&base, root.join("link-dir")).unwrap();
    symlink(base.join("root_evil"), root.join("link-evil")).unwrap();
    let outside = Outside::snapshot(&fx);
    let canary_rel = s(&fx.outside()).trim_start_matches('/').to_string();
    let cases = [
        ("dot-dot, shallow", json!("../outside.txt")),
        ("dot-dot, deep through real directories", json!("sub/../../outside.txt")),
        ("dot-dot, deep through missing directories", json!("a/b/c/../../../../outside.txt")),
        ("dot-dot past the filesystem root", json!(format!("{}{canary_rel}", "../".repeat(64)))),
        ("dot-dot alone", json!("..")),
        ("absolute path outside", json!(s(&fx.outside()))),
        ("absolute path that climbs out of the root", json!(format!("{}/sub/../../outside.txt", s(&root)))),
        ("absolute parent of the root", json!(s(&base))),
        ("sibling with the root as prefix", json!(s(&base.join("root_evil/secret.txt")))),
        ("sibling directory with the root as prefix", json!(s(&base.join("root_evil")))),
        ("the root's path plus a suffix", json!(format!("{}_evil/secret.txt", s(&root)))),
        ("sibling via dot-dot", json!("../root_evil/secret.txt")),
        ("through a symlinked directory leading outside", json!("link-dir/outside.txt")),
        ("through a symlinked directory to the sibling", json!("link-evil/secret.txt")),
        ("out through a symlink and back into the root", json!("link-dir/root/hello.txt")),
    ];
    let mut server = Server::initialized(&root, &[]);
    let mut id = 0;
    for (what, path) in &cases {
        for (tool, args) in every_tool(path) {
            let result = attempt(&mut server, &mut id, what, tool, &args);
            refused(&result, &["permission_denied"], what, tool, &args);
        }
    }
    outside.assert_unchanged();
    assert_eq!(fs::read_to_string(root.join("hello.txt")).unwrap(), "hello\nworld\n");
}

/// Symlinks inside the root that lead out of it, by name and target.
fn outward_links(fx: &Fixture) -> Vec<(&'static str, &'static str)> {
    let (root, base) = (fx.root(), fx.dir.path().canonicalize().unwrap());
    let links = [
        ("to a file outside", "link-file", base.join("outside.txt")),
        ("to a file outside, relative", "link-relative", PathBuf::from("../outside.txt")),
        ("to a directory outside", "link-dir", base.clone()),
        ("to the sibling directory", "link-evil", base.join("root_evil")),
        ("dangling, to a missing file outside", "link-dangling", base.join("nowhere.txt")),
        ("dangling and relative", "link-dangling-relative", PathBuf::from("../nowhere-relative.txt")),
        ("to a symlink that leads outside", "link-chain", PathBuf::from("link-file")),
    ];
    links
        .into_iter()
        .map(|(what, name, target)| {
            symlink(target, root.join(name)).unwrap();
            (what, name)
        })
        .collect()
}

#[test]
fn symlinks_leading_outside_are_never_followed_by_the_reading_tools() {
    let fx = Fixture::new();
    let links = outward_links(&fx);
    symlink("link-loop", fx.root().join("link-loop")).unwrap();
    let outside = Outside::snapshot(&fx);
    let mut server = Server::initialized(&fx.root(), &[]);
    let mut id = 0;
    for (what, name) in links.iter().copied().chain([("a symlink loop", "link-loop")]) {
        for (tool, args) in every_tool(&json!(name)).into_iter().take(5) {
            let result = attempt(&mut server, &mut id, what, tool, &args);
            let codes: &[&str] = match name {
                "link-loop" => &["permission_denied", "not_found", "io", "invalid_argument"],
                n if n.contains("dangling") => &["permission_denied", "not_found"],
                _ => &["permission_denied"],
            };
            refused(&result, codes, what, tool, &args);
        }
    }
    // Walking the root reports the links as links, never what is behind them.
    for (tool, args) in [
        ("list", json!({"depth": 5})),
        ("glob", json!({"pattern": "**", "hidden": true, "no_ignore": true, "include_dirs": true})),
        ("grep", json!({"pattern": ".", "hidden": true, "no_ignore": true, "binary": true})),
    ] {
        let args = json_items(args);
        let result = attempt(&mut server, &mut id, "a walk of the root", tool, &args);
        assert_eq!(result["isError"], false, "{tool}: {result}");
        let root = s(&fx.root());
        for line in String::from_utf8(payload(&result)).unwrap().lines() {
            let item: Value = serde_json::from_str(line).unwrap();
            let path = item["path"].as_str().unwrap();
            assert!(path.starts_with(&format!("{root}/")), "{tool} listed {path}");
            assert!(
                !path.contains("secret.txt") && !path.contains("/root/link-dir/"),
                "{tool} followed a link: {path}"
            );
        }
    }
    outside.assert_unchanged();
}

#[test]
fn writes_through_symlinks_leading_outside_never_touch_the_outside() {
    let fx = Fixture::new();
    let root = fx.root();
    let links = outward_links(&fx);
    let outside = Outside::snapshot(&fx);
    let mut server = Server::initialized(&root, &[]);
    let mut id = 0;
    for &(what, name) in &links {
        let inner = format!("{name}/planted.txt");
        let attempts = [
            ("write", json!({"format": "json", "path": name, "content": "pwned"})),
            ("write", json!({"format": "json", "path": name, "content": "pwned", "mode": "create"})),
            ("write", json!({"format": "json", "path": name, "content": "pwned", "mode": "append"})),
            ("write", json!({"format": "json", "path": name, "content": "pwned", "allow_hardlinks": true})),
            ("write", json!({"format": "json", "path": inner, "content": "pwned"})),
            ("edit", json!({"format": "json", "path": name, "old_string": "must-never", "new_string": "pwned"})),
            (
                "edit",
                json!({"format": "json", "path": format!("{name}/outside.txt"), "old_string": "must-never", "new_string": "x"}),
            ),
            ("mkdir", json!({"format": "json", "path": name})),
            ("mkdir", json!({"format": "json", "path": format!("{name}/made/deeper")})),
            ("move", json!({"format": "json", "from": "hello.txt", "to": inner})),
            ("move", json!({"format": "json", "from": "hello.txt", "to": name})),
            ("move", json!({"format": "json", "from": format!("{name}/outside.txt"), "to": "stolen.txt"})),
        ];
        for (tool, args) in &attempts {
            let result = attempt(&mut server, &mut id, what, tool, args);
            refused(&result, &["permission_denied", "invalid_argument", "conflict", "not_found"], what, tool, args);
        }
        outside.assert_unchanged();
    }
    // Replacing a link by a move replaces the link itself, inside the root.
    for &(what, name) in links.iter().filter(|(_, n)| *n != "link-dir" && *n != "link-evil") {
        fs::write(root.join("src.txt"), "replacement").unwrap();
        let args = json!({"from": "src.txt", "to": name, "overwrite": true});
        let result = attempt(&mut server, &mut id, what, "move", &args);
        assert_eq!(result["isError"], false, "{what}: {result}");
        assert!(fs::symlink_metadata(root.join(name)).unwrap().is_file(), "{what}: the link itself was replaced");
    }
    outside.assert_unchanged();
    assert_eq!(fs::read_to_string(fx.outside()).unwrap(), CANARY);
}

/// Runs `swap` in a loop on another thread until `body` returns.
fn while_swapping(swap: impl Fn() + Send + 'static, body: impl FnOnce()) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let swapper = std::thread::spawn(move || {
        while !flag.load(Ordering::Relaxed) {
            swap();
        }
    });
    body();
    stop.store(true, Ordering::Relaxed);
    swapper.join().expect("the swapper thread");
}

/// Turns `root/name` into a symlink to the canary and back into a regular file
/// holding `content`, each time by an atomic rename; the file then stays for
/// `hold` (zero: swap as fast as possible).
fn swapper(fx: &Fixture, name: &str, content: Vec<u8>, hold: Duration) -> impl Fn() + Send + 'static {
    let (root, canary) = (fx.root(), fx.outside());
    let name = name.to_string();
    move || {
        let (link, file) = (root.join(".swap-link"), root.join(".swap-file"));
        let _ = fs::remove_file(&link);
        symlink(&canary, &link).unwrap();
        fs::rename(&link, root.join(&name)).unwrap();
        fs::write(&file, &content).unwrap();
        fs::rename(&file, root.join(&name)).unwrap();
        std::thread::sleep(hold);
    }
}

#[test]
fn a_symlink_swapped_during_a_paged_read_never_yields_the_canary() {
    let fx = Fixture::new();
    let real: Vec<u8> = (0..400).map(|i| format!("real line {i:04}\n")).collect::<String>().into_bytes();
    fx.write("swap.txt", &real);
    let outside = Outside::snapshot(&fx);
    // One parked stream at a time: a page of swap.txt after a page of
    // hello.txt reopens the file by its path, racing the swapper.
    let mut server = Server::initialized(&fx.root(), &["--max-sessions", "1"]);
    let (mut pages, mut refusals, mut id) = (0, 0, 0);
    // Flat out, then holding the real file a moment so that pages get through
    // and cursors are followed across swaps.
    for hold in [Duration::ZERO, Duration::from_millis(4)] {
        while_swapping(swapper(&fx, "swap.txt", real.clone(), hold), || {
            for round in 0..30 {
                let mut args = json!({"path": "swap.txt", "max_tokens": 200, "format": "json"});
                for _ in 0..8 {
                    let result = attempt(&mut server, &mut id, "a swapped symlink", "read", &args);
                    if result["isError"] == true {
                        let codes = ["permission_denied", "stale", "not_found"];
                        refused(&result, &codes, "a swapped symlink", "read", &args);
                        refusals += 1;
                        break;
                    }
                    let meta = &result["structuredContent"];
                    let (from, to) = (meta["start_byte"].as_u64().unwrap(), meta["end_byte"].as_u64().unwrap());
                    assert!(
                        payload(&result) == real[from as usize..to as usize],
                        "page {from}..{to} is not the file's"
                    );
                    pages += 1;
                    let Some(next) = meta["next_cursor"].as_str() else { break };
                    args = json!({"cursor": next, "max_tokens": 200});
                    if round % 2 == 1 {
                        let evict = json!({"path": "hello.txt", "max_tokens": 1});
                        attempt(&mut server, &mut id, "eviction", "read", &evict);
                    }
                }
                let stat = attempt(
                    &mut server,
                    &mut id,
                    "a swapped symlink",
                    "stat",
                    &json!({"format": "json", "path": "swap.txt"}),
                );
                if stat["isError"] == false {
                    assert_eq!(serde_json::from_slice::<Value>(&payload(&stat)).unwrap()["size"], real.len());
                }
            }
        });
    }
    assert!(pages + refusals >= 60, "{pages} pages, {refusals} refusals");
    outside.assert_unchanged();
}

#[test]
fn a_symlink_swapped_during_writes_never_modifies_the_canary() {
    let fx = Fixture::new();
    let root = fx.root();
    fx.write("swap.txt", "real must-never content\n");
    let outside = Outside::snapshot(&fx);
    let mut server = Server::initialized(&root, &[]);
    let (mut done, mut id) = (0, 0);
    for hold in [Duration::ZERO, Duration::from_millis(2)] {
        while_swapping(swapper(&fx, "swap.txt", b"real must-never content\n".to_vec(), hold), || {
            for i in 0..30 {
                let attempts = [
                    ("write", json!({"format": "json", "path": "swap.txt", "content": format!("written {i}\n")})),
                    ("write", json!({"format": "json", "path": "swap.txt", "content": "appended\n", "mode": "append"})),
                    (
                        "write",
                        json!({"format": "json", "path": "swap.txt", "content": "linked\n", "allow_hardlinks": true}),
                    ),
                    (
                        "edit",
                        json!({"format": "json", "path": "swap.txt", "old_string": "must-never", "new_string": "edited"}),
                    ),
                ];
                for (tool, args) in &attempts {
                    let result = attempt(&mut server, &mut id, "a swapped symlink", tool, args);
                    if result["isError"] == true {
                        let codes = ["invalid_argument", "permission_denied", "not_found", "io"];
                        refused(&result, &codes, "a swapped symlink", tool, args);
                    }
                    done += 1;
                }
            }
        });
    }
    assert_eq!(done, 240);
    outside.assert_unchanged();
    assert_eq!(fs::read_to_string(fx.outside()).unwrap(), CANARY);
    let left: Vec<_> = fs::read_dir(&root).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert!(!left.iter().any(|n| n.to_string_lossy().starts_with(".cordon-")), "temporary files left: {left:?}");
}

#[test]
fn a_hard_link_to_a_file_outside_is_never_modified_by_write_edit_or_move() {
    let fx = Fixture::new();
    let root = fx.root();
    let original = fx.dir.path().join("linked-outside.txt");
    fs::write(&original, "LINKED-OUTSIDE must-never change\n").unwrap();
    let link = root.join("hl.txt");
    let relink = || {
        let _ = fs::remove_file(&link);
        fs::hard_link(&original, &link).unwrap();
    };
    relink();
    let outside = Outside::snapshot(&fx);
    let mut server = Server::initialized(&root, &[]);
    let mut id = 0;
    let what = "a hard link to a file outside";
    for (tool, args, codes) in [
        ("write", json!({"format": "json", "path": "hl.txt", "content": "pwned"}), &["permission_denied"][..]),
        (
            "write",
            json!({"format": "json", "path": "hl.txt", "content": "pwned", "mode": "append"}),
            &["permission_denied"],
        ),
        (
            "write",
            json!({"format": "json", "path": "hl.txt", "content": "pwned", "mode": "create"}),
            &["conflict", "permission_denied"],
        ),
        (
            "edit",
            json!({"format": "json", "path": "hl.txt", "old_string": "must-never", "new_string": "pwned"}),
            &["permission_denied"],
        ),
    ] {
        let result = attempt(&mut server, &mut id, what, tool, &args);
        refused(&result, codes, what, tool, &args);
        if codes == ["permission_denied"] {
            assert!(result.to_string().contains("hard links"), "the refusal says why: {result}");
        }
        outside.assert_unchanged();
    }
    // allow_hardlinks: the name inside the root gets the new bytes by a
    // rename, which leaves the other link, outside, with the old ones.
    for (tool, args, now) in [
        ("write", json!({"format": "json", "path": "hl.txt", "content": "new\n", "allow_hardlinks": true}), "new\n"),
        (
            "edit",
            json!({"format": "json", "path": "hl.txt", "old_string": "must-never", "new_string": "did", "allow_hardlinks": true}),
            "LINKED-OUTSIDE did change\n",
        ),
        ("move", json!({"format": "json", "from": "sub/inner.txt", "to": "hl.txt", "overwrite": true}), "inner\n"),
    ] {
        relink();
        let result = attempt(&mut server, &mut id, what, tool, &args);
        assert_eq!(result["isError"], false, "{tool} {args}: {result}");
        assert_eq!(fs::read_to_string(&link).unwrap(), now);
        assert_eq!(fs::metadata(&link).unwrap().nlink(), 1, "{tool}: the name inside now has its own file");
        outside.assert_unchanged();
    }
}

#[test]
fn fifos_sockets_and_devices_inside_a_root_get_errors_without_hanging() {
    let fx = Fixture::new();
    let root = fx.root();
    fs::create_dir(root.join("special")).unwrap();
    let made = std::process::Command::new("mkfifo").arg(root.join("special/pipe")).status().unwrap();
    assert!(made.success());
    let _socket = std::os::unix::net::UnixListener::bind(root.join("special/sock")).unwrap();
    symlink("/dev/null", root.join("special/devnull-link")).unwrap();
    symlink("/dev/zero", root.join("special/devzero-link")).unwrap();
    // A real device node needs CAP_MKNOD and a filesystem that allows it.
    let device = std::process::Command::new("mknod").arg(root.join("special/zero")).args(["c", "1", "5"]).status();
    let mut specials = vec!["special/pipe", "special/sock"];
    if device.is_ok_and(|s| s.success()) {
        specials.push("special/zero");
    } else {
        eprintln!("mknod is not permitted here: the device node case is left out (the /dev symlinks remain)");
    }
    let outside = Outside::snapshot(&fx);
    let mut server = Server::initialized(&root, &[]);
    let mut id = 0;
    for name in &specials {
        let what = format!("the special file {name}");
        for (tool, args, codes) in [
            ("read", json!({"format": "json", "path": name}), &["unsupported"][..]),
            ("grep", json!({"pattern": "x", "path": name}), &["unsupported"]),
            ("list", json!({"path": name}), &["invalid_argument"]),
            ("glob", json!({"pattern": "*", "path": name}), &["invalid_argument"]),
            ("write", json!({"format": "json", "path": name, "content": "x"}), &["invalid_argument"]),
            (
                "edit",
                json!({"format": "json", "path": name, "old_string": "a", "new_string": "b"}),
                &["invalid_argument"],
            ),
        ] {
            let result = attempt(&mut server, &mut id, &what, tool, &args);
            refused(&result, codes, &what, tool, &args);
        }
        let stat =
            attempt(&mut server, &mut id, &what, "stat", &json!({"format": "json", "path": name, "count_lines": true}));
        let item: Value = serde_json::from_slice(&payload(&stat)).unwrap();
        assert_eq!((&item["type"], item.get("lines")), (&json!("other"), None), "{what}: {stat}");
    }
    for link in ["special/devnull-link", "special/devzero-link"] {
        for (tool, args) in every_tool(&json!(link)).into_iter().take(5) {
            let result = attempt(&mut server, &mut id, link, tool, &args);
            refused(&result, &["permission_denied"], link, tool, &args);
        }
    }
    // Walks pass them by: grep and glob only open regular files; list shows them.
    let grep = attempt(
        &mut server,
        &mut id,
        "a walk",
        "grep",
        &json!({"pattern": "x", "path": "special", "include": ["*"], "format": "json"}),
    );
    assert_eq!(
        (grep["isError"].clone(), grep["structuredContent"]["files_searched"].clone()),
        (json!(false), json!(0))
    );
    let glob =
        attempt(&mut server, &mut id, "a walk", "glob", &json!({"pattern": ["*", "pipe", "sock"], "path": "special"}));
    assert_eq!(payload(&glob), b"(no results)", "glob lists regular files only: {glob}");
    let list = attempt(&mut server, &mut id, "a walk", "list", &json!({"path": "special", "format": "json"}));
    let listed = String::from_utf8(payload(&list)).unwrap();
    assert_eq!(listed.lines().count(), specials.len() + 2, "{listed}");
    outside.assert_unchanged();
}

#[test]
fn very_long_and_very_deep_paths_get_structured_errors_or_work() {
    let fx = Fixture::new();
    let root = fx.root();
    let deep_rel = format!("{}deep.txt", "n/".repeat(120));
    fs::create_dir_all(root.join("n/".repeat(120))).unwrap();
    fs::write(root.join(&deep_rel), "deep must-never\n").unwrap();
    // A tree deeper than PATH_MAX (4096 bytes): two halves, one moved into the other.
    let half = "ddd/".repeat(700);
    fs::create_dir_all(root.join("abyss").join(&half)).unwrap();
    fs::create_dir_all(root.join("c2").join(&half)).unwrap();
    fs::write(root.join("c2").join(&half).join("f.txt"), "bottom\n").unwrap();
    fs::rename(root.join("c2"), root.join("abyss").join(&half).join("c2")).unwrap();
    let abyss_file = format!("abyss/{half}c2/{half}f.txt");
    let outside = Outside::snapshot(&fx);
    let mut server = Server::initialized(&root, &[]);
    let mut id = 0;
    let long_name = "a".repeat(256);
    let documented =
        ["invalid_argument", "not_found", "permission_denied", "conflict", "too_large", "io", "unsupported"];
    for (what, path) in [
        ("a 256-byte name", long_name.clone()),
        ("a 256-byte name in a directory", format!("sub/{long_name}")),
        ("a 4200-byte relative path", format!("{}f", "d/".repeat(2100))),
        ("a 4200-byte absolute path", format!("{}/{}f", s(&root), "d/".repeat(2100))),
        ("a 70000-byte path", "x".repeat(70_000)),
    ] {
        for (tool, args) in every_tool(&json!(path)) {
            if tool == "mkdir" && path.contains("d/d/d/") {
                continue; // creating 2100 levels is its own test below
            }
            let result = attempt(&mut server, &mut id, what, tool, &args);
            refused(&result, &documented, what, tool, &args);
        }
    }
    // A file past PATH_MAX: the sandbox resolves one component at a time, so
    // it may be reachable; either way the answer is its content or an error.
    for (tool, args) in every_tool(&json!(abyss_file)).into_iter().take(5) {
        let result = attempt(&mut server, &mut id, "a file past PATH_MAX", tool, &args);
        assert!(result["isError"] == false || documented.contains(&code(&result)), "{tool}: {result}");
        if tool == "read" && result["isError"] == false {
            assert_eq!(payload(&result), b"bottom\n");
        }
    }
    // 120 levels deep, within PATH_MAX: every tool works.
    let read = attempt(&mut server, &mut id, "120 levels", "read", &json!({"format": "json", "path": deep_rel}));
    assert_eq!(payload(&read), b"deep must-never\n", "{read}");
    let glob =
        attempt(&mut server, &mut id, "120 levels", "glob", &json!({"pattern": "n/**/deep.txt", "format": "json"}));
    assert!(String::from_utf8(payload(&glob)).unwrap().contains(&deep_rel), "{glob}");
    let grep = attempt(
        &mut server,
        &mut id,
        "120 levels",
        "grep",
        &json!({"pattern": "must-never", "path": "n", "format": "json"}),
    );
    assert!(String::from_utf8(payload(&grep)).unwrap().contains(&deep_rel), "{grep}");
    let written = attempt(
        &mut server,
        &mut id,
        "120 levels",
        "write",
        &json!({"format": "json", "path": deep_rel, "content": "new\n"}),
    );
    assert_eq!(written["isError"], false, "{written}");
    let made =
        attempt(&mut server, &mut id, "130 levels", "mkdir", &json!({"format": "json", "path": "m/".repeat(130)}));
    assert_eq!(made["isError"], false, "{made}");
    // Past PATH_MAX: walks end, with or without errors, and the server goes on.
    for (tool, args) in [
        ("grep", json!({"pattern": "bottom", "path": "abyss"})),
        ("glob", json!({"pattern": "**/f.txt", "path": "abyss"})),
        ("list", json!({"path": "abyss", "depth": 32})),
    ] {
        let result = attempt(&mut server, &mut id, "a tree past PATH_MAX", tool, &args);
        assert!(result["isError"] == false || documented.contains(&code(&result)), "{tool}: {result}");
    }
    let after = attempt(&mut server, &mut id, "after", "read", &json!({"format": "json", "path": "hello.txt"}));
    assert_eq!(payload(&after), b"hello\nworld\n");
    outside.assert_unchanged();
}

#[test]
fn mkdir_of_a_path_1200_levels_deep_answers_with_a_result_not_a_protocol_error() {
    // 2400 bytes, within PATH_MAX. The `created` list grows with the square of
    // the depth (1.5 MB here); the answer must still be a tool result, paged or
    // refused, never a response too large to send.
    let fx = Fixture::new();
    let outside = Outside::snapshot(&fx);
    let mut server = Server::initialized(&fx.root(), &[]);
    let mut id = 0;
    let args = json!({"path": "d/".repeat(1200), "format": "json"});
    let result = attempt(&mut server, &mut id, "1200 levels", "mkdir", &args);
    if result["isError"] == true {
        refused(&result, &["too_large", "invalid_argument"], "1200 levels", "mkdir", &args);
    } else {
        let mut cursor = result["structuredContent"]["next_cursor"].clone();
        while let Some(next) = cursor.as_str() {
            let page =
                attempt(&mut server, &mut id, "1200 levels", "mkdir", &json!({"format": "json", "cursor": next}));
            assert_eq!(page["isError"], false, "{page}");
            cursor = page["structuredContent"]["next_cursor"].clone();
        }
    }
    outside.assert_unchanged();
}

#[test]
fn nul_bytes_in_paths_are_invalid_for_every_tool() {
    let fx = Fixture::new();
    let outside = Outside::snapshot(&fx);
    let mut server = Server::initialized(&fx.root(), &[]);
    let mut id = 0;
    for (what, path) in [
        ("a NUL byte alone", "\0"),
        ("a NUL byte that would cut the path", "hello.txt\0/../../outside.txt"),
        ("a NUL byte before an escape", "sub\0../../outside.txt"),
        ("a trailing NUL byte", "hello.txt\0"),
    ] {
        for (tool, args) in every_tool(&json!(path)) {
            let result = attempt(&mut server, &mut id, what, tool, &args);
            refused(&result, &["invalid_argument"], what, tool, &args);
        }
    }
    assert_eq!(fs::read_to_string(fx.root().join("hello.txt")).unwrap(), "hello\nworld\n");
    outside.assert_unchanged();
}

#[test]
fn unicode_look_alikes_never_reach_the_outside() {
    let fx = Fixture::new();
    let base = fx.dir.path().canonicalize().unwrap();
    let (nfc, nfd) = ("caf\u{e9}", "cafe\u{301}");
    // The root's name is NFC; a sibling spelled the same in NFD holds a canary.
    let root = base.join(format!("{nfc}-root"));
    fs::create_dir(&root).unwrap();
    fs::write(root.join("hello.txt"), "hello\n").unwrap();
    fs::write(root.join(format!("{nfc}.txt")), "inside, NFC\n").unwrap();
    fs::create_dir(base.join(format!("{nfd}-root"))).unwrap();
    fs::write(base.join(format!("{nfd}-root/secret.txt")), CANARY).unwrap();
    fs::write(base.join(format!("{nfc}.txt")), CANARY).unwrap();
    fs::write(base.join(format!("{nfd}.txt")), CANARY).unwrap();
    let outside = Outside::around(&fx, &root);
    let mut server = Server::initialized(&root, &[]);
    let mut id = 0;
    let cases = [
        ("dot-dot to an NFC name outside", format!("../{nfc}.txt")),
        ("dot-dot to an NFD name outside", format!("../{nfd}.txt")),
        ("the NFD twin of the root", s(&base.join(format!("{nfd}-root/secret.txt")))),
        ("the NFD twin of the root via dot-dot", format!("../{nfd}-root/secret.txt")),
        ("fullwidth dots", "\u{ff0e}\u{ff0e}/outside.txt".to_string()),
        ("fullwidth dots and solidus", "\u{ff0e}\u{ff0e}\u{ff0f}outside.txt".to_string()),
        ("a two-dot leader", "\u{2025}/outside.txt".to_string()),
        ("one-dot leaders", "\u{2024}\u{2024}/outside.txt".to_string()),
        ("the NFD form of a file inside", format!("{nfd}.txt")),
    ];
    let inside = format!("{}/", s(&root));
    for (what, path) in &cases {
        let lexical_escape = path.starts_with("..") || path.starts_with('/');
        for (tool, args) in every_tool(&json!(path)) {
            let result = attempt(&mut server, &mut id, what, tool, &args);
            if lexical_escape {
                refused(&result, &["permission_denied"], what, tool, &args);
            } else if ["read", "stat", "list", "glob", "grep"].contains(&tool) {
                refused(&result, &["not_found", "invalid_argument"], what, tool, &args);
            } else if result["isError"] == false {
                // A look-alike is just a name: whatever a write makes of it is inside the root.
                let item: Value = serde_json::from_slice(&payload(&result)).unwrap();
                for key in ["path", "from", "to"] {
                    let path = item[key].as_str().unwrap_or(&inside);
                    assert!(path.starts_with(&inside), "{what} with {tool}: {path} is not inside the root");
                }
            }
        }
    }
    let inside = attempt(
        &mut server,
        &mut id,
        "the NFC name inside",
        "read",
        &json!({"format": "json", "path": format!("{nfc}.txt")}),
    );
    assert_eq!(payload(&inside), b"inside, NFC\n");
    outside.assert_unchanged();
}

#[test]
fn glob_and_grep_patterns_that_climb_out_match_nothing_outside() {
    let fx = Fixture::new();
    let outside = Outside::snapshot(&fx);
    let mut server = Server::initialized(&fx.root(), &[]);
    let mut id = 0;
    let root = s(&fx.root());
    for (tool, args) in [
        ("glob", json!({"pattern": "../*", "hidden": true, "no_ignore": true})),
        ("glob", json!({"pattern": ["../**", "/**/outside.txt", "**/../../*"], "no_ignore": true})),
        ("glob", json!({"pattern": "*", "path": "sub/.."})),
        ("grep", json!({"pattern": "CANAR[Y]", "include": ["../*", "/**", "../root_evil/*"]})),
        ("grep", json!({"pattern": "CANAR[Y]", "path": "sub/..", "no_ignore": true, "hidden": true})),
    ] {
        let args = json_items(args);
        let result = attempt(&mut server, &mut id, "a pattern that climbs out", tool, &args);
        for line in String::from_utf8(payload(&result)).unwrap_or_default().lines() {
            let path = serde_json::from_str::<Value>(line).unwrap()["path"].as_str().unwrap().to_string();
            assert!(path.starts_with(&format!("{root}/")), "{tool} {args} reached {path}");
        }
    }
    outside.assert_unchanged();
}

/// `args` asking for JSON items, so each line names its absolute path.
fn json_items(mut args: Value) -> Value {
    args["format"] = "json".into();
    args
}
