//! Reads that try to leave the roots get a structured permission error and never
//! the canary's content.

use std::os::unix::fs::symlink;

use serde_json::{Value, json};

use crate::support::{CANARY, Fixture, Server, text};

fn assert_denied(result: &Value, what: &str) {
    assert_eq!(result["isError"], true, "{what}: {result}");
    assert_eq!(result["_meta"]["cordon/error"]["code"], "permission_denied", "{what}: {result}");
    assert!(!result.to_string().contains(CANARY), "{what} leaked the canary: {result}");
}

#[test]
fn reads_outside_every_root_are_permission_errors() {
    let fx = Fixture::new();
    let root = fx.root();
    symlink(fx.outside(), root.join("link-to-outside")).unwrap();
    symlink(fx.dir.path(), root.join("dir-link-to-parent")).unwrap();
    symlink(root.join("nowhere"), root.join("dangling")).unwrap();
    let mut server = Server::initialized(&root, &[]);
    let evil = fx.dir.path().join("root_evil/secret.txt").canonicalize().unwrap();
    let cases = [
        ("dot-dot", json!("../outside.txt")),
        ("dot-dot deep", json!("sub/../../outside.txt")),
        ("absolute outside", json!(fx.outside())),
        ("sibling with the root as prefix", json!(evil)),
        ("dot-dot into the sibling", json!("../root_evil/secret.txt")),
        ("symlink to a file outside", json!("link-to-outside")),
        ("symlink to a directory outside", json!("dir-link-to-parent/outside.txt")),
    ];
    for (i, (what, path)) in cases.into_iter().enumerate() {
        let result = server.call(i as i64 + 1, "read", json!({"format": "json",  "path": path }));
        assert_denied(&result, what);
    }
    let dangling = server.call(99, "read", json!({"format": "json", "path": "dangling"}));
    assert_eq!(dangling["isError"], true);
}

#[test]
fn symlinks_that_stay_inside_the_root_are_followed() {
    let fx = Fixture::new();
    let root = fx.root();
    symlink("sub/inner.txt", root.join("inner-link")).unwrap();
    let mut server = Server::initialized(&root, &[]);
    assert_eq!(text(&server.call(1, "read", json!({"format": "json", "path": "inner-link"}))), "inner\n");
}

#[test]
fn a_fifo_inside_a_root_is_refused_without_hanging() {
    let fx = Fixture::new();
    let fifo = fx.root().join("pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let mut server = Server::initialized(&fx.root(), &[]);
    let result = server.call(1, "read", json!({"format": "json", "path": "pipe"}));
    assert_eq!(result["_meta"]["cordon/error"]["code"], "unsupported", "{result}");
}
