//! What an installed tool may be granted besides directories: variables of
//! the server's environment (`--grant env:NAME`). The granted variable is
//! the only one of the server's the tool sees, and its value shows nowhere
//! else: not in the lockfile, `tool add`/`list`/`inspect`, the audit trail,
//! the state directory, the server's log (at debug level) or an error.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::support::{Fixture, Server, cordon_bin};

/// The hostile test component: `{"behaviour": "environment"}` says what it sees.
const HOSTILE: &str = env!("CORDON_HOSTILE_COMPONENT");
/// The granted variable's value, and another variable's the tool must not see.
const SECRET: &str = "granted-7f1c2a9b-value";
const OTHER: &str = "ungranted-4d5e6f70-value";

/// Every file under `dir` that holds `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_holding(&path, needle));
        } else if std::fs::read(&path).is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes())) {
            found.push(path.display().to_string());
        }
    }
    found
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn an_env_grant_passes_one_variable_whose_value_shows_nowhere_else() {
    let fx = Fixture::new();
    let state = tempfile::tempdir().unwrap();
    let (tools, audit) = (state.path().join("tools"), state.path().join("audit.log"));
    let cordon = |args: &[&str]| {
        let mut command = Command::new(cordon_bin());
        command.args(args).arg("--tools-dir").arg(&tools).arg("--state-dir").arg(state.path());
        command.arg("--audit-log").arg(&audit);
        command.env("CORDON_GRANTED_TOKEN", SECRET).env("CORDON_OTHER_TOKEN", OTHER).env("RUST_LOG", "debug");
        command.env_remove("CORDON_UNSET_VAR");
        command
    };
    let grants = ["--grant", "env:CORDON_GRANTED_TOKEN", "--grant", "env:CORDON_UNSET_VAR"];
    let added = cordon(&[&["tool", "add", HOSTILE][..], &grants[..]].concat()).output().unwrap();
    assert!(added.status.success(), "{}", text(&added));
    assert!(text(&added).contains("grants: env:CORDON_GRANTED_TOKEN, env:CORDON_UNSET_VAR"), "{}", text(&added));
    for (bad, says) in
        [("env:1X", "env:NAME"), ("env:", "env:NAME"), ("env:A-B", "env:NAME"), ("net:x", "net:https://HOST")]
    {
        let refused = cordon(&["tool", "add", HOSTILE, "--grant", bad]).output().unwrap();
        assert_eq!(refused.status.code(), Some(2), "{bad}: {}", text(&refused));
        assert!(text(&refused).contains(says), "{bad}: {}", text(&refused));
    }

    // A call, through the same engine as a server's, at debug level.
    let root = fx.root();
    let call = |arguments: Value| {
        let json = arguments.to_string();
        cordon(&["call", "hostile", "--json", &json, "--root", root.to_str().unwrap()]).output().unwrap()
    };
    let seen = call(json!({"behaviour": "environment", "format": "json"}));
    let said = String::from_utf8_lossy(&seen.stdout);
    let result: Value = serde_json::from_str(&said).unwrap_or_else(|e| panic!("{e}: {}", text(&seen)));
    let environment = result["structuredContent"]["environment"].as_object().cloned().unwrap_or_default();
    assert_eq!(environment.get("CORDON_GRANTED_TOKEN"), Some(&json!(SECRET)), "{result}");
    let names: Vec<&String> = environment.keys().filter(|k| !k.starts_with("CORDON_MEMORY")).collect();
    assert_eq!(names, ["CORDON_GRANTED_TOKEN"], "nothing else of the server's environment: {environment:?}");
    let log = String::from_utf8_lossy(&seen.stderr);
    assert!(log.contains("env:CORDON_UNSET_VAR") && log.contains("does not set"), "{log}");
    let trapped = call(json!({"behaviour": "trap"}));

    // Over MCP too, from a server started with the variable set.
    let mut command = Command::new(cordon_bin());
    command.env("CORDON_GRANTED_TOKEN", SECRET).env("CORDON_OTHER_TOKEN", OTHER);
    let (tools_dir, state_dir, audit_log) =
        (tools.to_str().unwrap(), state.path().to_str().unwrap(), audit.to_str().unwrap());
    let flags = ["--tools-dir", tools_dir, "--state-dir", state_dir, "--audit-log", audit_log];
    let mut server = Server::start_with(command, &root, &flags);
    server.handshake();
    let reply = server.call(2, "hostile", json!({"behaviour": "environment", "format": "json"}));
    assert_eq!(reply["structuredContent"]["environment"]["CORDON_GRANTED_TOKEN"], SECRET, "{reply}");
    assert!(server.finish());

    // The value is nowhere but in the tool's own answer.
    let listed = cordon(&["tool", "list", "--json"]).output().unwrap();
    let inspected = cordon(&["tool", "inspect", "hostile", "--json"]).output().unwrap();
    assert!(text(&inspected).contains("env:CORDON_GRANTED_TOKEN"), "{}", text(&inspected));
    for (what, out) in [("add", &added), ("list", &listed), ("inspect", &inspected), ("a trap", &trapped)] {
        assert!(!text(out).contains(SECRET), "{what} shows the value: {}", text(out));
    }
    assert!(!log.contains(SECRET) && !log.contains(OTHER), "the debug log shows a value: {log}");
    assert_eq!(files_holding(state.path(), SECRET), Vec::<String>::new(), "the state directory holds the value");
    let lock = std::fs::read_to_string(tools.join("cordon-tools.lock")).unwrap();
    let entry = &serde_json::from_str::<Value>(&lock).unwrap()["tools"][0];
    assert_eq!(entry["env"], json!(["CORDON_GRANTED_TOKEN", "CORDON_UNSET_VAR"]), "{lock}");
}

#[test]
fn no_request_widens_a_tools_grants() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.root().join("granted")).unwrap();
    fx.write("granted/a.txt", "TODO granted\n");
    fx.write("sub/b.txt", "TODO not granted\n");
    let state = tempfile::tempdir().unwrap();
    let tools = state.path().join("tools");
    let add = |args: &[&str]| {
        let mut command = Command::new(cordon_bin());
        command.args(["tool", "add"]).args(args).arg("--tools-dir").arg(&tools).arg("--state-dir").arg(state.path());
        let out = command.output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
    };
    let granted = format!("ro:{}", fx.root().join("granted").display());
    add(&[crate::tools::RUST_EXAMPLE, "--grant", &granted]);
    add(&[HOSTILE, "--grant", "env:CORDON_GRANTED_TOKEN"]);
    let lock = tools.join("cordon-tools.lock");
    let before = std::fs::read(&lock).unwrap();

    let mut command = Command::new(cordon_bin());
    command.env("CORDON_GRANTED_TOKEN", SECRET).env("CORDON_OTHER_TOKEN", OTHER);
    let (tools_dir, state_dir) = (tools.to_str().unwrap(), state.path().to_str().unwrap());
    let mut server = Server::start_with(command, &fx.root(), &["--tools-dir", tools_dir, "--state-dir", state_dir]);
    server.handshake();
    let listed = server.request(2, "tools/list", json!({}));
    let names: Vec<String> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect();
    assert!(names.contains(&"todos".to_string()) && names.contains(&"hostile".to_string()), "{names:?}");

    // Every tool, asked with what a grant looks like: in its arguments, beside
    // plausible ones, and in the request's `_meta`.
    let root = fx.root().display().to_string();
    let shapes = json!({
        "grant": "rw:/", "grants": ["rw:/", "env:CORDON_OTHER_TOKEN"], "--grant": "rw:/", "env": ["CORDON_OTHER_TOKEN"],
        "roots": ["/"], "access": "write", "tools_dir": "/tmp", "lockfile": {"tools": []},
    });
    let mut id = 10;
    for name in &names {
        for mut arguments in [json!({}), json!({"path": root, "pattern": "TODO", "behaviour": "environment"})] {
            arguments.as_object_mut().unwrap().extend(shapes.as_object().unwrap().clone());
            let meta = json!({"cordon/grants": ["rw:/"], "grants": ["rw:/"], "env": ["CORDON_OTHER_TOKEN"]});
            let params = json!({"name": name, "arguments": arguments, "_meta": meta});
            let reply = server.request(id, "tools/call", params);
            assert!(reply.get("result").is_some() || reply.get("error").is_some(), "{name}: {reply}");
            assert!(!reply.to_string().contains(OTHER), "{name} saw an ungranted variable: {reply}");
            id += 1;
        }
    }
    // No method installs a tool or changes a grant.
    for method in ["tools/add", "tools/install", "tools/grant", "cordon/grant", "cordon/tools/add", "grants/set"] {
        let reply = server.request(id, method, json!({"name": "todos", "grants": ["rw:/"], "path": HOSTILE}));
        assert_eq!(reply["error"]["code"], -32601, "{method}: {reply}");
        id += 1;
    }

    // Nothing changed: the lockfile, the tools, and what each may see.
    assert_eq!(std::fs::read(&lock).unwrap(), before, "the lockfile is untouched");
    assert_eq!(server.request(id, "tools/list", json!({}))["result"], listed["result"]);
    let inside = server.call(id + 1, "todos", json!({"path": fx.root().join("granted"), "format": "json"}));
    assert_eq!(inside["isError"], false, "{inside}");
    let outside = server.call(id + 2, "todos", json!({"path": fx.root().join("sub"), "format": "json"}));
    assert_eq!(outside["isError"], true, "still outside its grants: {outside}");
    let seen = server.call(id + 3, "hostile", json!({"behaviour": "environment", "format": "json"}));
    let environment = seen["structuredContent"]["environment"].as_object().cloned().unwrap_or_default();
    assert!(environment.contains_key("CORDON_GRANTED_TOKEN") && !environment.contains_key("CORDON_OTHER_TOKEN"));
    assert!(server.finish());
}
