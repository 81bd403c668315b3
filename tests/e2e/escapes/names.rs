//! Names that are not what they look like: NUL bytes that would cut a path,
//! and Unicode look-alikes (NFC and NFD twins, fullwidth dots, dot leaders).

use std::fs;

use serde_json::{Value, json};

use super::{attempt, every_tool, refused, s};
use crate::canary::Outside;
use crate::support::{CANARY, Fixture, payload};

fn nul_bytes_in_paths_are_invalid_for_every_tool() {
    let fx = Fixture::new();
    let outside = Outside::snapshot(&fx);
    let mut server = super::serve(&fx.root(), &[]);
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
    let mut server = super::serve(&root, &[]);
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

mod tests {
    super::super::both! {
        nul_bytes_in_paths_are_invalid_for_every_tool => nul_bytes_in_paths_are_invalid_for_every_tool_as_a_confined_principal,
        unicode_look_alikes_never_reach_the_outside => unicode_look_alikes_never_reach_the_outside_as_a_confined_principal,
    }
}
