//! Running `codex exec` against the stand-in, bounded in time, in a scratch home, with every
//! process it starts (Cordon among them) ended however the run goes.

use crate::agents::Ended;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::api::{Script, Seen};
use crate::support::{cordon_bin, node_dir, shared_state_dir};

/// How long one Codex run may take (a run of these scripts takes a few seconds).
const CODEX_TIMEOUT: Duration = Duration::from_secs(120);

/// The variable that holds the dummy key Codex sends the stand-in.
const KEY_VAR: &str = "CORDON_E2E_CODEX_KEY";

/// How one run is set up: the model Codex asks for (its catalog decides whether MCP tools are
/// deferred behind `tool_search`) and the folder it works in.
pub(super) struct Setup<'a> {
    pub(super) model: &'a str,
    /// Cordon's root, also Codex's working directory.
    pub(super) root: &'a Path,
}

/// What a run left: every output the model was given, in order, and the tools of its first request.
pub(super) struct Ran {
    pub(super) seen: Vec<Seen>,
    pub(super) first_tools: Vec<Value>,
}

/// The real `codex` executable that tests/interop/node-setup.sh installs (npm's `codex` is a
/// Node launcher for it).
fn codex_bin() -> PathBuf {
    let vendor = node_dir().join("node_modules/@openai/codex-linux-x64/vendor");
    let found = std::fs::read_dir(&vendor)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|target| target.path().join("bin/codex"))
        .find(|bin| bin.is_file());
    found.unwrap_or_else(|| {
        panic!(
            "Codex CLI is not installed under {}: tests/interop/node-setup.sh installs it with npm \
             (or point CORDON_TEST_NODE_DIR at a folder that has it)",
            vendor.display()
        )
    })
}

/// A TOML string (a JSON string is one, escapes included).
fn toml_str(text: impl AsRef<str>) -> String {
    json!(text.as_ref()).to_string()
}

/// Codex's `config.toml`: the stand-in as its only provider, no approvals, a read-only sandbox,
/// nothing sent elsewhere, and Cordon over stdio as the MCP server `cordon`.
fn config_toml(setup: &Setup<'_>, base_url: &str) -> String {
    let args = [
        "serve".to_string(),
        "--root".into(),
        setup.root.display().to_string(),
        "--state-dir".into(),
        shared_state_dir().display().to_string(),
    ];
    let args: Vec<String> = args.iter().map(toml_str).collect();
    format!(
        "model = {model}\nmodel_provider = \"mock\"\napproval_policy = \"never\"\nsandbox_mode = \"read-only\"\n\
         check_for_update_on_startup = false\n\n\
         [analytics]\nenabled = false\n\n[feedback]\nenabled = false\n\n[history]\npersistence = \"none\"\n\n\
         [model_providers.mock]\nname = \"mock\"\nbase_url = {base_url}\nwire_api = \"responses\"\n\
         env_key = \"{KEY_VAR}\"\n\n\
         [mcp_servers.cordon]\ncommand = {command}\nargs = [{args}]\n",
        model = toml_str(setup.model),
        base_url = toml_str(base_url),
        command = toml_str(cordon_bin()),
        args = args.join(", "),
    )
}

/// The processes descended from `root` (itself first), from `/proc`.
fn descendants(root: u32) -> Vec<u32> {
    let parent_of = |entry: std::fs::DirEntry| {
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
        // `pid (comm) state ppid …`: the name may hold spaces and parentheses.
        let ppid: u32 = stat[stat.rfind(')')? + 1..].split_whitespace().nth(1)?.parse().ok()?;
        Some((pid, ppid))
    };
    let procs: Vec<(u32, u32)> =
        std::fs::read_dir("/proc").into_iter().flatten().flatten().filter_map(parent_of).collect();
    let mut found = vec![root];
    let mut at = 0;
    while let Some(&parent) = found.get(at) {
        let children: Vec<u32> =
            procs.iter().filter(|&&(pid, ppid)| ppid == parent && !found.contains(&pid)).map(|p| p.0).collect();
        found.extend(children);
        at += 1;
    }
    found
}

/// A child in a process group of its own, ended with everything it started when dropped: Codex
/// starts each MCP server in a group of its own, so the group and every descendant are killed,
/// whether the run ends, hangs or the test panics.
struct Group {
    child: Child,
    /// Whether the child was reaped: its pid may then name another process.
    exited: bool,
}

impl Group {
    fn kill(&self) {
        let id = self.child.id();
        let pids = if self.exited { Vec::new() } else { descendants(id) };
        let mut kill = Command::new("kill");
        kill.args(["-KILL", "--"]).arg(format!("-{id}")).args(pids.iter().map(u32::to_string));
        let _ = kill.stderr(Stdio::null()).status();
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
        let _ = self.child.wait();
    }
}

/// Runs `command` in a group of its own for up to `timeout`, then ends the whole group (also
/// after a normal exit, in which Codex ends its MCP server itself: a lingering child would hold
/// the output pipes open). Returns the status (`None` on timeout), stdout and stderr.
fn run_group(mut command: Command, timeout: Duration) -> (Option<ExitStatus>, String, String) {
    command.process_group(0).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = command.spawn().unwrap_or_else(|e| panic!("start {:?}: {e}", command.get_program()));
    let mut group = Group { child, exited: false };
    let collect = |mut source: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = source.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = collect(Box::new(group.child.stdout.take().unwrap()));
    let stderr = collect(Box::new(group.child.stderr.take().unwrap()));
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = group.child.try_wait().unwrap() {
            group.exited = true;
            break Some(status);
        }
        if Instant::now() > deadline {
            // Killed while Codex still runs, so that its MCP server is still its child.
            group.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(group);
    (status, stdout.join().unwrap(), stderr.join().unwrap())
}

/// Runs `codex exec go` in `setup.root` against a stand-in for the Responses API driven by
/// `script`, and returns what the model was given. Codex writes only into a scratch HOME,
/// CODEX_HOME and TMPDIR. Panics, with the ends of its output and the stand-in's log, if it
/// fails, hangs, or the conversation did not end as scripted.
pub(super) fn run_codex(setup: &Setup<'_>, script: Script) -> Ran {
    let codex = codex_bin();
    let scratch = tempfile::tempdir().unwrap();
    let (home, tmp) = (scratch.path().join("home"), scratch.path().join("tmp"));
    let codex_home = home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let api = super::api::start(script);
    std::fs::write(codex_home.join("config.toml"), config_toml(setup, &format!("{}/v1", api.url()))).unwrap();

    let mut command = Command::new(codex);
    command.args(["exec", "--strict-config", "--skip-git-repo-check", "--json", "go"]);
    command.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()));
    command.env("HOME", &home).env("CODEX_HOME", &codex_home).env("TMPDIR", &tmp).env(KEY_VAR, "cordon-dummy-key");
    command.current_dir(setup.root);
    let started = Instant::now();
    let (status, stdout, stderr) = run_group(command, CODEX_TIMEOUT);
    let elapsed = started.elapsed();

    let conversation = api.state();
    let ended = Ended {
        client: "Codex",
        stdout: &stdout,
        stderr: &stderr,
        requests: &conversation.requests,
        problems: &conversation.problems,
        finished: conversation.finished,
        more: String::new(),
    };
    ended.check(status, CODEX_TIMEOUT);
    let context = || ended.context();
    let events: Vec<Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert!(events.iter().any(|e| e["type"] == "turn.completed"), "no completed turn from Codex\n{}", context());
    eprintln!(
        "Codex ran the script in {elapsed:.1?}: {} requests, {} tool outputs",
        conversation.requests.len(),
        conversation.seen.len()
    );
    Ran { seen: conversation.seen.clone(), first_tools: conversation.first_tools.clone() }
}
