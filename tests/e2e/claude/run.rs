//! Running the `claude` CLI against the stand-in, bounded in time, in a scratch home.

use crate::agents::{Ended, tail};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::api::{Script, ToolResultSeen};
use crate::support::{node_dir, run_bounded};

/// How long one Claude Code run may take (a run of this script takes a few seconds).
const CLAUDE_TIMEOUT: Duration = Duration::from_secs(120);

/// The `claude` executable that tests/interop/node-setup.sh installs.
fn claude_bin() -> PathBuf {
    let bin = node_dir().join("node_modules/.bin/claude");
    assert!(
        bin.exists(),
        "Claude Code is not installed at {}: tests/interop/node-setup.sh installs it with npm \
         (or point CORDON_TEST_NODE_DIR at a folder that has it)",
        bin.display()
    );
    bin
}

/// The end of Claude Code's MCP logs under `home` (what it says about connecting to Cordon).
fn mcp_logs(home: &Path) -> String {
    let Ok(found) = Command::new("find").arg(home.join(".cache")).args(["-name", "*.jsonl"]).output() else {
        return String::new();
    };
    let files = String::from_utf8_lossy(&found.stdout).into_owned();
    let logs: String = files.lines().filter_map(|f| std::fs::read_to_string(f).ok()).collect();
    tail(&logs, 3000).to_string()
}

/// Runs `claude -p go` in `workdir` with `mcp_config` and `allowed_tools`, against a stand-in
/// for the Messages API driven by `script`, and returns every tool result the model was given,
/// in order. Claude Code writes only into a scratch HOME and TMPDIR. Panics, with the ends of its
/// output and the stand-in's log, if it fails, hangs, or the conversation did not end as scripted.
pub(super) fn run_claude(
    workdir: &Path,
    mcp_config: &Value,
    allowed_tools: &[&str],
    script: impl FnMut(&[ToolResultSeen]) -> Option<(String, Value)> + Send + 'static,
) -> Vec<ToolResultSeen> {
    run(workdir, mcp_config, allowed_tools, Box::new(script), false).0
}

/// `run_claude` with Claude Code's tool search on, its default: MCP tools not marked to be
/// loaded up front are deferred, and a main-loop request naming no `mcp__` tool gets no
/// scripted call from the stand-in, so the script runs only if the tools it calls were loaded.
pub(super) fn run_claude_with_tool_search(
    workdir: &Path,
    mcp_config: &Value,
    allowed_tools: &[&str],
    script: impl FnMut(&[ToolResultSeen]) -> Option<(String, Value)> + Send + 'static,
) -> (Vec<ToolResultSeen>, Vec<Value>) {
    run(workdir, mcp_config, allowed_tools, Box::new(script), true)
}

/// `run_claude` (tool search off), also giving the tools its first request defined.
pub(super) fn run_claude_seeing_tools(
    workdir: &Path,
    mcp_config: &Value,
    allowed_tools: &[&str],
    script: impl FnMut(&[ToolResultSeen]) -> Option<(String, Value)> + Send + 'static,
) -> (Vec<ToolResultSeen>, Vec<Value>) {
    run(workdir, mcp_config, allowed_tools, Box::new(script), false)
}

/// Runs Claude Code through `script`: every tool result the model read, and the tools its
/// first request defined.
fn run(
    workdir: &Path,
    mcp_config: &Value,
    allowed_tools: &[&str],
    script: Script,
    tool_search: bool,
) -> (Vec<ToolResultSeen>, Vec<Value>) {
    let claude = claude_bin();
    let scratch = tempfile::tempdir().unwrap();
    let (home, tmp, config) =
        (scratch.path().join("home"), scratch.path().join("tmp"), scratch.path().join("mcp.json"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(&config, mcp_config.to_string()).unwrap();
    let api = super::api::start(script);

    let mut command = Command::new(claude);
    command.args(["-p", "go", "--mcp-config"]).arg(&config).args(["--strict-mcp-config", "--allowedTools"]);
    command.arg(allowed_tools.join(",")).args(["--output-format", "stream-json", "--verbose"]);
    let url = api.url();
    cordon_bench::claude::headless(
        &mut command,
        &cordon_bench::claude::Headless { api_url: &url, home: &home, tmp: &tmp, tool_search },
    );
    command.current_dir(workdir);
    let started = Instant::now();
    let (status, stdout, stderr) = run_bounded(command, CLAUDE_TIMEOUT);
    let (stdout, stderr) =
        (String::from_utf8_lossy(&stdout).into_owned(), String::from_utf8_lossy(&stderr).into_owned());
    let elapsed = started.elapsed();

    let conversation = api.state();
    let ended = Ended {
        client: "Claude Code",
        stdout: &stdout,
        stderr: &stderr,
        requests: &conversation.requests,
        problems: &conversation.problems,
        finished: conversation.finished,
        more: format!("\nMCP logs (end):\n{}", mcp_logs(&home)),
    };
    ended.check(status, CLAUDE_TIMEOUT);
    let context = || ended.context();
    let result = stdout.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|m| m["type"] == "result");
    let result = result.unwrap_or_else(|| panic!("no result message from Claude Code\n{}", context()));
    assert!(result["subtype"] == "success" && result["is_error"] == false, "{result}\n{}", context());
    eprintln!(
        "Claude Code ran the script in {elapsed:.1?}: {} requests, {} tool results",
        conversation.requests.len(),
        conversation.seen.len()
    );
    (conversation.seen.clone(), conversation.first_tools.clone())
}
