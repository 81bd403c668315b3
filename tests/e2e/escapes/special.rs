//! Files that are not regular files: FIFOs, sockets, device nodes and
//! symlinks to `/dev`; errors for every tool, and nothing hangs.

use std::fs;
use std::os::unix::fs::symlink;

use serde_json::{Value, json};

use super::{attempt, every_tool, refused};
use crate::canary::Outside;
use crate::support::{Fixture, payload};

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
    let mut server = super::serve(&root, &[]);
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

mod tests {
    super::super::both! {
        fifos_sockets_and_devices_inside_a_root_get_errors_without_hanging => fifos_sockets_and_devices_inside_a_root_get_errors_without_hanging_as_a_confined_principal,
    }
}
