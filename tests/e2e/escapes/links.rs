//! Links inside the root that lead out of it: symlinks (never followed by the
//! reading tools or the walks, never written through) and a hard link to a
//! file outside (never modified).

use std::fs;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::PathBuf;

use serde_json::{Value, json};

use super::{attempt, every_tool, json_items, refused, s};
use crate::canary::Outside;
use crate::support::{CANARY, Fixture, payload};

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

fn symlinks_leading_outside_are_never_followed_by_the_reading_tools() {
    let fx = Fixture::new();
    let links = outward_links(&fx);
    symlink("link-loop", fx.root().join("link-loop")).unwrap();
    let outside = Outside::snapshot(&fx);
    let mut server = super::serve(&fx.root(), &[]);
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

fn writes_through_symlinks_leading_outside_never_touch_the_outside() {
    let fx = Fixture::new();
    let root = fx.root();
    let links = outward_links(&fx);
    let outside = Outside::snapshot(&fx);
    let mut server = super::serve(&root, &[]);
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
    let mut server = super::serve(&root, &[]);
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

mod tests {
    super::super::both! {
        symlinks_leading_outside_are_never_followed_by_the_reading_tools => symlinks_leading_outside_are_never_followed_by_the_reading_tools_as_a_confined_principal,
        writes_through_symlinks_leading_outside_never_touch_the_outside => writes_through_symlinks_leading_outside_never_touch_the_outside_as_a_confined_principal,
        a_hard_link_to_a_file_outside_is_never_modified_by_write_edit_or_move => a_hard_link_to_a_file_outside_is_never_modified_by_write_edit_or_move_as_a_confined_principal,
    }
}
