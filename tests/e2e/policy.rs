//! Least privilege: the configuration file, deny rules, `--read-only`, and the
//! client's roots narrowing the configured ones.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::support::{CANARY, Fixture, Server, cordon_bin, initialize_params, shared_state_dir, text};

fn cordon(args: &[&str]) -> Output {
    Command::new(cordon_bin()).args(args).arg("--state-dir").arg(shared_state_dir()).output().unwrap()
}

fn names(listed: &Value) -> Vec<String> {
    listed["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

fn error_code(result: &Value) -> &Value {
    &result["_meta"]["cordon/error"]["code"]
}

fn message(result: &Value) -> &str {
    result["_meta"]["cordon/error"]["message"].as_str().unwrap_or_default()
}

/// A root holding a repository's usual secrets, and links to them.
fn secrets(fx: &Fixture) {
    let root = fx.root();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/config"), format!("[core] {CANARY}\n")).unwrap();
    std::fs::write(root.join(".env"), format!("TOKEN={CANARY}\n")).unwrap();
    std::fs::write(root.join("sub/server.pem"), format!("{CANARY}\n")).unwrap();
    std::fs::write(root.join("sub/notes.txt"), "nothing secret\n").unwrap();
    symlink(".git/config", root.join("innocent.txt")).unwrap();
    symlink(".git", root.join("repo")).unwrap();
}

const DENY: [&str; 6] = ["--deny", ".git/**", "--deny", ".env", "--deny", "*.pem"];

#[test]
fn deny_rules_refuse_named_paths_naming_the_rule_even_through_symlinks() {
    let fx = Fixture::new();
    secrets(&fx);
    let mut server = Server::initialized(&fx.root(), &DENY);
    let cases = [
        ("read", json!({"format": "json", "path": ".env"}), ".env"),
        ("read", json!({"format": "json", "path": ".git/config"}), ".git/**"),
        ("read", json!({"format": "json", "path": "./sub/../.git/config"}), ".git/**"),
        ("read", json!({"format": "json", "path": "sub/server.pem"}), "*.pem"),
        ("read", json!({"format": "json", "path": "innocent.txt"}), ".git/**"),
        ("read", json!({"format": "json", "path": "repo/config"}), ".git/**"),
        ("stat", json!({"format": "json", "path": ".env"}), ".env"),
        ("list", json!({"path": ".git"}), ".git/**"),
        ("grep", json!({"pattern": "CANARY", "path": ".env"}), ".env"),
        ("write", json!({"format": "json", "path": "sub/new.pem", "content": "x"}), "*.pem"),
        ("write", json!({"format": "json", "path": "repo/hooks-evil", "content": "x"}), ".git/**"),
        ("edit", json!({"format": "json", "path": ".env", "old_string": "TOKEN", "new_string": "X"}), ".env"),
        ("move", json!({"format": "json", "from": "sub/notes.txt", "to": ".git/notes.txt"}), ".git/**"),
        ("move", json!({"format": "json", "from": ".env", "to": "env.txt"}), ".env"),
        ("mkdir", json!({"format": "json", "path": ".git/evil"}), ".git/**"),
    ];
    for (i, (tool, args, rule)) in cases.iter().enumerate() {
        let result = server.call(i as i64 + 1, tool, args.clone());
        assert_eq!(error_code(&result), "permission_denied", "{tool} {args}: {result}");
        assert!(message(&result).contains(&format!("rule `{rule}`")), "{tool} {args} names the rule: {result}");
        assert!(!result.to_string().contains(CANARY), "{tool} {args} leaked: {result}");
    }
    assert!(!fx.root().join("sub/new.pem").exists() && !fx.root().join(".git/evil").exists());
    assert_eq!(std::fs::read_to_string(fx.root().join(".env")).unwrap(), format!("TOKEN={CANARY}\n"));
    let allowed = server.call(90, "read", json!({"format": "json", "path": "sub/notes.txt"}));
    assert_eq!(text(&allowed), "nothing secret\n");
}

#[test]
fn deny_rules_leave_denied_entries_out_of_every_walk() {
    let fx = Fixture::new();
    secrets(&fx);
    let mut server = Server::initialized(&fx.root(), &DENY);
    let walks = [
        ("grep", json!({"pattern": "CANARY|secret|inner", "hidden": true, "no_ignore": true})),
        ("glob", json!({"pattern": "**/*", "hidden": true, "include_dirs": true, "no_ignore": true})),
        ("list", json!({"depth": 8})),
    ];
    for (i, (tool, args)) in walks.into_iter().enumerate() {
        let result = server.call(i as i64 + 1, tool, args.clone());
        assert_eq!(result["isError"], false, "{tool}: {result}");
        let shown = result.to_string();
        assert!(!shown.contains(CANARY), "{tool} leaked a denied file: {shown}");
        for denied in [".git/config", ".env\"", "server.pem"] {
            assert!(!shown.contains(denied), "{tool} listed {denied}: {shown}");
        }
        let expected = if tool == "grep" { "inner.txt" } else { "notes.txt" };
        assert!(shown.contains(expected), "{tool} still walks the rest: {shown}");
    }
}

#[test]
fn read_only_offers_no_writing_tool_and_refuses_calls_to_them() {
    let fx = Fixture::new();
    let mut server = Server::initialized(&fx.root(), &["--read-only"]);
    let listed = server.request(1, "tools/list", json!({}));
    let offered = names(&listed["result"]);
    for writer in ["write", "edit", "move", "mkdir", "upload"] {
        assert!(!offered.contains(&writer.to_string()), "{writer} offered read-only: {offered:?}");
    }
    for reader in ["read", "grep", "glob", "list", "stat"] {
        assert!(offered.contains(&reader.to_string()), "{reader} missing: {offered:?}");
    }
    let refused =
        server.request(2, "tools/call", json!({"name": "write", "arguments": {"path": "x.txt", "content": "x"}}));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(refused["error"]["data"]["error"], "read_only", "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("read-only"), "{refused}");
    assert!(!fx.root().join("x.txt").exists());
    assert_eq!(text(&server.call(3, "read", json!({"format": "json", "path": "hello.txt"}))), "hello\nworld\n");
}

/// Writes `cordon.toml` beside the fixture's root and returns its path.
fn config_file(fx: &Fixture, text: &str) -> String {
    let path = fx.dir.path().join("cordon.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn the_configuration_file_sets_roots_deny_rules_and_limits_and_flags_override_it() {
    let fx = Fixture::new();
    secrets(&fx);
    let config = config_file(
        &fx,
        "roots = [\"root\"]\ndeny = [\".env\"]\nread-only = true\n[limits]\nmax-line-bytes = \"64 KiB\"\n",
    );
    let listed = cordon(&["tools", "--json", "--config", &config]);
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert!(!names(&listed).contains(&"write".to_string()), "read-only from the file");

    let read = |extra: &[&str], path: &str| {
        let args = json!({ "path": path, "format": "json" }).to_string();
        let mut all = vec!["call", "read", "--config", &config, "--json", &args];
        all.extend_from_slice(extra);
        let out = cordon(&all);
        serde_json::from_slice::<Value>(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
    };
    // The root is relative to the file's directory.
    assert_eq!(text(&read(&[], "hello.txt")), "hello\nworld\n");
    assert_eq!(error_code(&read(&[], ".env")), "permission_denied");
    // Flags win: other deny rules, another root.
    assert_eq!(text(&read(&["--deny", "*.pem"], ".env")), format!("TOKEN={CANARY}\n"));
    let sub = fx.root().join("sub");
    let narrowed = read(&["--root", sub.to_str().unwrap()], "hello.txt");
    assert_eq!(error_code(&narrowed), "not_found", "relative to the flag's root now: {narrowed}");

    // The file's line limit applies to a served session.
    let mut server = Server::initialized(&fx.root(), &["--config", &config, "--max-line-bytes", "1024"]);
    let long = server.request(1, "tools/call", json!({"name": "read", "arguments": {"path": "x".repeat(2000)}}));
    assert_eq!(long["error"]["data"]["limit_bytes"], 1024, "the flag overrides the file: {long}");
}

#[test]
fn an_invalid_configuration_refuses_to_start_naming_the_problem() {
    let fx = Fixture::new();
    let root = fx.root();
    let root = root.to_str().unwrap();
    let cases = [
        ("rots = [\"root\"]\n", "unknown field `rots`"),
        ("[limits]\nmax-line-bytes = \"lots\"\n", "whole number"),
        ("[limits]\nmemory-mib = -5\n", "memory-mib"),
        ("[limits]\ntimeout-secs = 0\n", "--timeout-secs must be a positive"),
        ("[limits]\nmax-concurrent-calls = 0\n", "limits must be positive"),
        ("[limits]\nmax-handles = 0\n", "`max_handles` is zero"),
        ("[limits]\nmax-info-bytes = \"1 parsec\"\n", "unknown unit"),
        ("token = \"0123456789abcdef0123\"\n", "CORDON_TOKEN"),
        ("deny = [\"a[\"]\n", "deny rule `a[`"),
        ("roots = [\"no-such-dir\"]\n", "cannot be used"),
        ("roots = [", "invalid"),
    ];
    for (text, expected) in cases {
        let config = config_file(&fx, text);
        // A `--root` flag would override the file's roots.
        let out = match text.starts_with("roots") {
            true => cordon(&["tools", "--config", &config]),
            false => cordon(&["tools", "--config", &config, "--root", root]),
        };
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text:?} must refuse to start: {stderr}");
        assert!(stderr.contains(expected), "{text:?}: expected {expected:?} in {stderr}");
    }
    let missing = fx.dir.path().join("nope.toml");
    let out = cordon(&["tools", "--config", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be read"));
}

/// A session whose client declares roots, initialized; returns the server's
/// `roots/list` request, not yet answered.
fn declaring_roots(root: &Path) -> (Server, Value) {
    let mut server = Server::start(root, &[]);
    let mut params = initialize_params("2025-11-25");
    params["capabilities"] = json!({ "roots": { "listChanged": true } });
    let init = server.request(0, "initialize", params);
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    server.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let asked = server.recv();
    assert_eq!(asked["method"], "roots/list", "{asked}");
    (server, asked)
}

/// A session whose client answers the server's first `roots/list` with `roots`.
pub fn with_client_roots(root: &Path, roots: &[&Path]) -> Server {
    let (mut server, asked) = declaring_roots(root);
    answer(&mut server, &asked, roots);
    server
}

/// Takes the server's next `roots/list` request and answers it.
fn answer_roots(server: &mut Server, roots: &[&Path]) {
    let asked = server.recv();
    assert_eq!(asked["method"], "roots/list", "{asked}");
    answer(server, &asked, roots);
}

fn answer(server: &mut Server, asked: &Value, roots: &[&Path]) {
    let roots: Vec<Value> = roots.iter().map(|r| json!({ "uri": format!("file://{}", r.display()) })).collect();
    server.send_json(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": { "roots": roots }}));
}

#[test]
fn client_roots_narrow_the_configured_roots_and_never_widen_them() {
    let fx = Fixture::new();
    let (root, sub) = (fx.root(), fx.root().join("sub"));
    let mut server = with_client_roots(&root, &[&sub]);
    assert_eq!(text(&server.call(1, "read", json!({"format": "json", "path": sub.join("inner.txt")}))), "inner\n");
    let outside_sub = server.call(2, "read", json!({"format": "json", "path": root.join("hello.txt")}));
    assert_eq!(error_code(&outside_sub), "permission_denied", "{outside_sub}");
    assert!(message(&outside_sub).contains("client"), "names the client's roots: {outside_sub}");
    let write = server.call(3, "write", json!({"format": "json", "path": root.join("new.txt"), "content": "x"}));
    assert_eq!(error_code(&write), "permission_denied", "{write}");
    assert!(!root.join("new.txt").exists());

    // The client changes its roots to the root's parent: the server asks again,
    // and grants the configured root, not the parent.
    server.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
    answer_roots(&mut server, &[fx.dir.path()]);
    assert_eq!(
        text(&server.call(4, "read", json!({"format": "json", "path": root.join("hello.txt")}))),
        "hello\nworld\n"
    );
    let canary = server.call(5, "read", json!({"format": "json", "path": fx.outside()}));
    assert_eq!(error_code(&canary), "permission_denied", "{canary}");
    assert!(!canary.to_string().contains(CANARY));

    // Roots apart from the configured ones grant nothing at all.
    let elsewhere = tempfile::tempdir().unwrap();
    server.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
    answer_roots(&mut server, &[elsewhere.path()]);
    let nothing = server.call(6, "read", json!({"format": "json", "path": "hello.txt"}));
    assert_eq!(error_code(&nothing), "permission_denied", "{nothing}");
}

#[test]
fn a_client_that_refuses_roots_list_gets_the_configured_roots() {
    let fx = Fixture::new();
    let (mut server, asked) = declaring_roots(&fx.root());
    server.send_json(&json!({"jsonrpc": "2.0", "id": asked["id"], "error": {"code": -32601, "message": "no"}}));
    assert_eq!(text(&server.call(1, "read", json!({"format": "json", "path": "hello.txt"}))), "hello\nworld\n");
}

#[test]
fn calls_wait_for_the_clients_roots_and_fail_closed_without_them() {
    let fx = Fixture::new();
    let (mut server, _asked) = declaring_roots(&fx.root());
    // Never answered: the call is refused, never run with the configured roots.
    let refused =
        server.request(1, "tools/call", json!({"name": "read", "arguments": {"path": "hello.txt", "format": "json"}}));
    assert_eq!(refused["error"]["data"]["error"], "roots_unanswered", "{refused}");
    assert!(!refused.to_string().contains("world"));
}

#[test]
fn initialize_names_the_roots_with_their_modes_for_the_model() {
    let fx = Fixture::new();
    let root = fx.root();
    let docs = fx.dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    let docs = docs.canonicalize().unwrap();
    let ro = format!("{}:ro", docs.display());
    let mut server = Server::start(&root, &["--root", &ro]);
    let init = server.request(0, "initialize", initialize_params("2025-11-25"));
    let said = init["result"]["instructions"].as_str().unwrap_or_default().to_string();
    let named = format!("Roots: {} (read-write), {} (read-only).", root.display(), docs.display());
    assert!(said.contains(&named), "{said}");
    assert!(said.contains(&format!("taken from the first root, {};", root.display())), "{said}");
}
