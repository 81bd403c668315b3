//! Paths judged where they really are, through the real tools: the adversarial
//! probe's findings (a deny rule bypassed by renaming an ancestor, a read-only
//! root nested in a read-write one written through a link, a nested root moved
//! away through a link, bricking the server) and their variants.

use std::os::unix::fs::symlink;
use std::path::Path;

use serde_json::{Value, json};

use crate::support::{CANARY, Fixture, Server, payload};

/// Writes `text` at `rel` under the fixture's root, making its directories.
fn put(fx: &Fixture, rel: &str, text: &str) {
    let path = fx.root().join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn refused(result: &Value, what: &str) -> String {
    assert_eq!(result["isError"], true, "{what} went through: {result}");
    assert_eq!(result["_meta"]["cordon/error"]["code"], "permission_denied", "{what}: {result}");
    result["_meta"]["cordon/error"]["message"].as_str().unwrap().to_string()
}

fn ok(result: &Value, what: &str) {
    assert_eq!(result["isError"], false, "{what}: {result}");
}

#[test]
fn renaming_an_ancestor_does_not_take_a_secret_out_from_under_its_deny_rule() {
    let fx = Fixture::new();
    put(&fx, "config/master.key", CANARY);
    put(&fx, "app/config/master.key", CANARY);
    put(&fx, "conf/secrets/db.yaml", CANARY);
    put(&fx, "conf/x/y/z.secret", CANARY);
    put(&fx, "sec/one", CANARY);
    put(&fx, "tmp/a.yaml", "not yet secret\n");
    put(&fx, "docs/readme.md", "docs\n");
    let rules = ["config/master.key", "app/config/master.key", "conf/secrets/*.yaml", "conf/**/*.secret", "sec/*"];
    let flags: Vec<&str> = rules.iter().flat_map(|r| ["--deny", r]).collect();
    let mut server = Server::initialized(&fx.root(), &flags);
    let mut id = 0;
    let mut call = |server: &mut Server, tool: &str, args: Value| {
        id += 1;
        server.call(id, tool, args)
    };
    refused(&call(&mut server, "read", json!({"format": "json", "path": "config/master.key"})), "the read");
    let moves = [
        ("config", "cfg"),
        ("app", "z"),
        ("conf", "c2"),
        ("conf/secrets", "conf/open"),
        ("sec", "sec2"),
        ("tmp", "conf/secrets"),
    ];
    for (from, to) in moves {
        let message = refused(
            &call(&mut server, "move", json!({"format": "json", "from": from, "to": to})),
            &format!("{from} → {to}"),
        );
        assert!(message.contains("deny rule") && message.contains("nothing was moved"), "{message}");
        assert!(fx.root().join(from).exists(), "{from} stays");
    }
    let grep = call(&mut server, "grep", json!({"pattern": CANARY, "format": "json"}));
    assert!(!String::from_utf8_lossy(&payload(&grep)).contains(CANARY), "a secret reached a grep: {grep}");
    ok(
        &call(&mut server, "move", json!({"format": "json", "from": "docs", "to": "documents"})),
        "a move no rule cares about",
    );
    ok(
        &call(&mut server, "move", json!({"format": "json", "from": "conf/x", "to": "conf/w"})),
        "still under `conf/**`",
    );
}

#[test]
fn a_read_only_root_nested_in_a_read_write_one_is_not_written_through_links() {
    let fx = Fixture::new();
    let root = fx.root();
    put(&fx, "vendor/v.txt", "vendored\n");
    put(&fx, "vendor/nested_ro/n.txt", "nested\n");
    put(&fx, "src/main.rs", "fn main() {}\n");
    symlink("vendor", root.join("lv")).unwrap();
    symlink(".", root.join("self")).unwrap();
    symlink("l2", root.join("l1")).unwrap();
    symlink("vendor/nested_ro", root.join("l2")).unwrap();
    symlink("../vendor", root.join("src/up")).unwrap();
    let vendor = format!("{}:ro", root.join("vendor").display());
    let mut server = Server::initialized(&root, &["--root", &vendor]);
    let edit = |path: &str| json!({"path": path, "old_string": "vendored", "new_string": "changed"});
    let attempts = [
        ("edit", edit("vendor/v.txt")),
        ("edit", edit("lv/v.txt")),
        ("edit", edit("self/vendor/v.txt")),
        ("edit", edit("src/up/v.txt")),
        ("write", json!({"format": "json", "path": "lv/new.txt", "content": "x"})),
        (
            "write",
            json!({"format": "json", "path": "self/vendor/nested_ro/n.txt", "content": "x", "mode": "overwrite"}),
        ),
        ("write", json!({"format": "json", "path": "l1/n.txt", "content": "x", "mode": "overwrite"})),
        ("mkdir", json!({"format": "json", "path": "lv/made"})),
        ("mkdir", json!({"format": "json", "path": "l1/deeper/still"})),
        ("move", json!({"format": "json", "from": "lv/v.txt", "to": "moved.txt"})),
        ("move", json!({"format": "json", "from": "src/main.rs", "to": "lv/main.rs"})),
    ];
    for (n, (tool, args)) in attempts.into_iter().enumerate() {
        let message = refused(&server.call(n as i64 + 1, tool, args.clone()), &format!("{tool} {args}"));
        assert!(message.contains("read-only"), "{tool} {args}: {message}");
    }
    assert_eq!(std::fs::read_to_string(root.join("vendor/v.txt")).unwrap(), "vendored\n");
    assert_eq!(std::fs::read_to_string(root.join("vendor/nested_ro/n.txt")).unwrap(), "nested\n");
    for made in ["vendor/new.txt", "vendor/made", "vendor/nested_ro/deeper", "moved.txt", "vendor/main.rs"] {
        assert!(!root.join(made).exists(), "{made} was made");
    }
    ok(
        &server.call(100, "write", json!({"format": "json", "path": "self/src/new.rs", "content": "x"})),
        "a link inside the rw root",
    );
    ok(&server.call(101, "move", json!({"format": "json", "from": "lv", "to": "lv2"})), "the link itself moves");
}

#[test]
fn a_nested_root_is_not_moved_away_through_a_link_and_the_server_keeps_serving() {
    let fx = Fixture::new();
    let root = fx.root();
    put(&fx, "p/q/f.txt", "inner\n");
    put(&fx, "other/o.txt", "other\n");
    symlink("p", root.join("lp")).unwrap();
    symlink(".", root.join("self")).unwrap();
    symlink("../p", root.join("other/up")).unwrap();
    let inner = format!("{}:ro", root.join("p/q").display());
    let mut server = Server::initialized(&root, &["--root", &inner]);
    let moves = [("lp/q", "q_moved"), ("self/p", "p_moved"), ("other/up/q", "q2"), ("p", "p2"), ("self/p/q", "q3")];
    for (n, (from, to)) in moves.into_iter().enumerate() {
        let message =
            refused(&server.call(n as i64 + 1, "move", json!({"format": "json", "from": from, "to": to})), from);
        assert!(message.contains("root"), "{from}: {message}");
    }
    assert!(Path::new(&root.join("p/q/f.txt")).exists());
    let read = server.call(10, "read", json!({"format": "json", "path": root.join("p/q/f.txt")}));
    assert_eq!(payload(&read), b"inner\n", "the server still serves its nested root: {read}");
    drop(server);
    let mut again = Server::initialized(&root, &["--root", &inner]);
    ok(
        &again.call(1, "read", json!({"format": "json", "path": "other/o.txt"})),
        "the server starts again with its configuration",
    );
}

#[test]
fn a_negated_deny_rule_refuses_to_start_with_a_sentence() {
    let fx = Fixture::new();
    let output = std::process::Command::new(crate::support::cordon_bin())
        .args(["call", "read", "--json", r#"{"path":"a"}"#, "--no-audit", "--root"])
        .arg(fx.root())
        .args(["--deny", "secrets/**", "--deny", "!secrets/README.md"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("deny rule `!secrets/README.md` is a negation"), "{stderr}");
}
