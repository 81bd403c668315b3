//! Very long names and paths, and trees deeper than `PATH_MAX`: structured
//! errors or answers, never a protocol error or a hang.

use std::fs;

use serde_json::json;

use super::{attempt, code, every_tool, refused, s};
use crate::canary::Outside;
use crate::support::{Fixture, payload};

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
    let mut server = super::serve(&root, &[]);
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

fn mkdir_of_a_path_1200_levels_deep_answers_with_a_result_not_a_protocol_error() {
    // 2400 bytes, within PATH_MAX. The `created` list grows with the square of
    // the depth (1.5 MB here); the answer must still be a tool result, paged or
    // refused, never a response too large to send.
    let fx = Fixture::new();
    let outside = Outside::snapshot(&fx);
    let mut server = super::serve(&fx.root(), &[]);
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

mod tests {
    super::super::both! {
        very_long_and_very_deep_paths_get_structured_errors_or_work => very_long_and_very_deep_paths_get_structured_errors_or_work_as_a_confined_principal,
        mkdir_of_a_path_1200_levels_deep_answers_with_a_result_not_a_protocol_error => mkdir_of_a_path_1200_levels_deep_answers_with_a_result_not_a_protocol_error_as_a_confined_principal,
    }
}
