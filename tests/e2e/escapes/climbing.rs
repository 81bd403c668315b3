//! Paths and patterns that climb out of the root lexically: `..`, absolute
//! paths, the `root_evil` sibling whose name has the root as a prefix, and
//! glob and grep patterns.

use std::fs;
use std::os::unix::fs::symlink;

use serde_json::{Value, json};

use super::{attempt, every_tool, json_items, refused, s};
use crate::canary::Outside;
use crate::support::{Fixture, payload};

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
    let mut server = super::serve(&root, &[]);
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

fn glob_and_grep_patterns_that_climb_out_match_nothing_outside() {
    let fx = Fixture::new();
    let outside = Outside::snapshot(&fx);
    let mut server = super::serve(&fx.root(), &[]);
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

mod tests {
    super::super::both! {
        paths_that_climb_out_of_the_root_are_denied_for_every_tool => paths_that_climb_out_of_the_root_are_denied_for_every_tool_as_a_confined_principal,
        glob_and_grep_patterns_that_climb_out_match_nothing_outside => glob_and_grep_patterns_that_climb_out_match_nothing_outside_as_a_confined_principal,
    }
}
