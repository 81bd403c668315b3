//! The command line: `cordon call` and `cordon tools` go through the same engine
//! as the server; bad configuration is refused with a message.

use std::process::{Command, Output};

use serde_json::Value;

use crate::support::{CANARY, Fixture, cordon_bin, shared_state_dir};

fn cordon(args: &[&str]) -> Output {
    Command::new(cordon_bin()).args(args).arg("--state-dir").arg(shared_state_dir()).output().unwrap()
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn call_prints_the_mcp_result_and_exits_by_outcome() {
    let fx = Fixture::new();
    let root = fx.root();
    let root = root.to_str().unwrap();
    let ok = cordon(&["call", "read", "--root", root, "--json", r#"{"path":"hello.txt"}"#]);
    assert_eq!(ok.status.code(), Some(0));
    assert_eq!(stdout_json(&ok)["content"][0]["text"], "1\thello\n2\tworld\n", "numbered, as cat -n");

    let denied = cordon(&["call", "read", "--root", root, "--json", r#"{"path":"../outside.txt"}"#]);
    assert_eq!(denied.status.code(), Some(1), "a tool error exits 1");
    assert_eq!(stdout_json(&denied)["_meta"]["cordon/error"]["code"], "permission_denied");
    assert!(!String::from_utf8_lossy(&denied.stdout).contains(CANARY));

    let unknown = cordon(&["call", "nope", "--root", root]);
    assert_eq!(unknown.status.code(), Some(2), "a protocol error exits 2");
    assert_eq!(stdout_json(&unknown)["error"]["code"], -32602);

    let bad_json = cordon(&["call", "read", "--root", root, "--json", "{"]);
    assert_eq!(bad_json.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_json.stderr).contains("--json is not valid JSON"));
}

#[test]
fn tools_lists_the_builtin_tools_with_schemas() {
    let out = cordon(&["tools", "--json"]);
    assert!(out.status.success());
    let listed = stdout_json(&out);
    let read = listed["tools"].as_array().unwrap().iter().find(|t| t["name"] == "read").unwrap();
    assert!(read["inputSchema"]["properties"]["path"].is_object());
    assert!(read["outputSchema"]["properties"]["size"].is_object());
}

#[test]
fn bad_configuration_is_refused_with_a_message() {
    let fx = Fixture::new();
    let no_roots = cordon(&["serve"]);
    assert_eq!(no_roots.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_roots.stderr).contains("no roots"));

    let missing = fx.dir.path().join("missing");
    let out = cordon(&["serve", "--root", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot be used"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let file = fx.root().join("hello.txt");
    let out = cordon(&["serve", "--root", file.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a directory"));

    let out = cordon(&["serve", "--root", fx.root().to_str().unwrap(), "--timeout-secs", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let out = cordon(&["serve", "--root", fx.root().to_str().unwrap(), "--memory-mib", "lots"]);
    assert_eq!(out.status.code(), Some(2), "an unparsable limit refuses to start");
}

/// Each tool's `_meta` as `cordon tools --json` lists it, by name.
fn tool_metas(extra: &[&str]) -> Vec<(String, Value)> {
    let output = cordon(&[&["tools", "--json"], extra].concat());
    assert!(output.status.success(), "{output:?}");
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let tools = listed["tools"].as_array().or(listed.as_array()).unwrap().clone();
    tools.iter().map(|t| (t["name"].as_str().unwrap().to_string(), t["_meta"].clone())).collect()
}

#[test]
fn everyday_tools_are_marked_to_load_up_front_unless_the_server_defers_them() {
    let up_front: Vec<String> = tool_metas(&[])
        .into_iter()
        .filter(|(_, meta)| meta["anthropic/alwaysLoad"] == true)
        .map(|(name, _)| name)
        .collect();
    assert_eq!(up_front, ["edit", "glob", "grep", "list", "read", "write"]);
    let deferred = tool_metas(&["--defer-tools"]);
    assert!(deferred.iter().all(|(_, meta)| meta.get("anthropic/alwaysLoad").is_none()), "{deferred:?}");
    assert!(deferred.iter().any(|(name, meta)| name == "stat" && meta["anthropic/searchHint"].is_string()));
}
