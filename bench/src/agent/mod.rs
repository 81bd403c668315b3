//! Agent steps through the real Claude Code CLI: the same steps on the same
//! tree, once with Cordon's MCP tools and once with Claude Code's built-in
//! Read, Grep, Glob and Edit, and what the model receives from each: every
//! `tool_result` exactly as Claude Code forwards it to the Messages API, which
//! a stand-in on loopback (`model`) plays. Also the tool definitions each side
//! puts in the first request (name, description and input schema).
//!
//! One `claude -p` conversation per side, tool search off
//! (`ENABLE_TOOL_SEARCH=false`, so every tool is listed in the request), in a
//! scratch HOME. The tree is generated afresh for each side (the edit changes
//! it). Without a `claude` binary the section is skipped with a note.

mod model;
mod steps;
mod tree;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use serde_json::{Value, json};

use crate::Options;
use crate::report::{Report, Table};
use crate::stats::count;
use model::{MessagesApi, Script, Seen, Transcript};
use steps::{Context, Kind, STEPS, Side, Step};

/// How long one conversation may take (Claude Code starts in a few seconds).
const CLAUDE_TIMEOUT: Duration = Duration::from_secs(300);

/// The built-in tools compared, which the Cordon side disallows.
const BUILT_INS: [&str; 4] = ["Read", "Grep", "Glob", "Edit"];

/// Cordon's tools compared with them.
const CORDON_CORE: [&str; 4] = ["read", "grep", "glob", "edit"];

/// The `claude` executable: `CORDON_BENCH_CLAUDE`, else the one `tests/interop/node-setup.sh`
/// installs (`$CORDON_TEST_NODE_DIR` or `target/interop/node`, `node_modules/.bin/claude`),
/// else `claude` on `PATH`.
pub fn claude_bin(workspace: &Path) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CORDON_BENCH_CLAUDE") {
        return Some(PathBuf::from(path));
    }
    let node_dir = std::env::var_os("CORDON_TEST_NODE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target/interop/node"));
    let local = node_dir.join("node_modules/.bin/claude");
    if local.exists() {
        return Some(local);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join("claude")).find(|p| p.is_file())
}

/// One side's conversation: each step's result (`None`: nothing to call) and the first request's tools.
struct Run {
    results: Vec<Option<Seen>>,
    tools: Vec<Value>,
    elapsed: Duration,
}

/// Runs the section: both conversations, then the steps table and the definitions table.
pub fn run(opts: &Options, report: &mut Report) -> Result<()> {
    let mut table = Table::new(
        "Agent steps through Claude Code: Cordon against the built-in tools",
        &[
            "step",
            "Cordon: call",
            "built-in: call",
            "Cordon chars",
            "built-in chars",
            "Cordon / built-in",
            "what each gave",
        ],
    );
    let Some(claude) = claude_bin(&opts.workspace).filter(|p| p.exists()) else {
        table.notes.push(
            "Skipped: no `claude` binary (tests/interop/node-setup.sh installs it into target/interop/node; or set \
             CORDON_BENCH_CLAUDE)."
                .into(),
        );
        report.push(table);
        return Ok(());
    };
    let version = Command::new(&claude).arg("--version").output().map_or_else(
        |e| format!("unknown ({e})"),
        |o| String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or("").trim().to_string(),
    );
    let work = opts.workspace.join("target/bench/agent");
    // The tree lives outside any repository (no parent .gitignore for either side), at a path of
    // a realistic and fixed length (the built-in tools print absolute paths), one per process.
    let root = std::env::temp_dir().join(format!("cordon-bench-agent-{:07}/tree", std::process::id()));
    let modules = if opts.smoke { 16 } else { 60 };
    let _ = std::fs::remove_dir_all(work.join("results"));
    std::fs::create_dir_all(work.join("results"))?;
    let setup = Setup { opts, claude: &claude, root: &root, modules, work: &work };

    let measured = (|| {
        let cordon = setup.converse(Side::Cordon, None, false)?;
        let next_rows = step_result(&cordon, Kind::LargeContinue)
            .and_then(|s| steps::rows_shown(&steps::text_of(&s.content)))
            .map(|(first, last, _)| (first, last));
        let builtin = setup.converse(Side::BuiltIn, next_rows, false)?;
        // Claude Code's default: tool search on. Only the first request is kept.
        let default = setup.converse(Side::Cordon, None, true)?;
        anyhow::Ok((cordon, builtin, default))
    })();
    let _ = std::fs::remove_dir_all(root.parent().unwrap_or(&root));
    let (cordon, builtin, default) = measured?;

    table.intro.push(format!(
        "The same steps through the real Claude Code CLI ({version}, `claude -p`, tool search off, \
         `--permission-mode acceptEdits`) against a stand-in for the Messages API that plays the model: once with \
         Cordon's MCP tools (`{}`, the built-in {} disallowed), once with Claude Code's own {}, on a generated \
         Python-like tree ({modules} modules, a 300-line module, a {} KB table module) at `{}`. *Chars*: the \
         characters of the `tool_result` the model receives, as Claude Code forwards it. One conversation per side, \
         whatever `--runs` says: the characters do not vary from run to run. Each result is written to \
         `target/bench/agent/results/` (and each first request's `tools`). Conversations: Cordon {:.1} s, \
         built-in {:.1} s.",
        opts.cordon.display(),
        BUILT_INS.join(", "),
        BUILT_INS.join(", "),
        tree::LARGE_BYTES / 1024,
        root.display(),
        cordon.elapsed.as_secs_f64(),
        builtin.elapsed.as_secs_f64(),
    ));
    let (mut ours, mut theirs) = (0usize, 0usize);
    for (i, step) in STEPS.iter().enumerate() {
        let (a, b) = (cordon.results[i].as_ref(), builtin.results[i].as_ref());
        let (ca, cb) = (a.map(|s| steps::chars(&s.content)), b.map(|s| steps::chars(&s.content)));
        // The first read of the large file is a page against a refusal: not the same content.
        // A partial answer on either side (an error, a spill to a file, a page elsewhere) shows
        // its ratio in brackets, out of the total.
        let partial =
            a.is_some_and(|s| steps::partial(s, step.kind)) || b.is_some_and(|s| steps::partial(s, step.kind));
        let ratio = match (ca, cb) {
            (Some(x), Some(y)) if step.kind != Kind::LargeOpen && y > 0 => {
                let ratio = x as f64 / y as f64;
                if partial {
                    format!("({ratio:.2}×)")
                } else {
                    ours += x;
                    theirs += y;
                    format!("{ratio:.2}×")
                }
            }
            _ => "–".into(),
        };
        let mut said: Vec<String> = [("Cordon", a), ("built-in", b)]
            .iter()
            .filter_map(|(who, s)| s.map(|s| (who, steps::describe(s))).filter(|(_, d)| !d.is_empty()))
            .map(|(who, d)| format!("{who}: {d}"))
            .collect();
        if a.is_none() && step.kind == Kind::LargeContinue {
            said.insert(0, "Cordon: no continuation found in its first page (the built-in Read: lines 1–2,000)".into());
        }
        let said = said.join("; ");
        table.row(vec![
            step.label.into(),
            a.map_or("–".into(), |s| shown_call(&s.tool, &s.input)),
            b.map_or("–".into(), |s| shown_call(&s.tool, &s.input)),
            ca.map_or("–".into(), |n| count(n as u64)),
            cb.map_or("–".into(), |n| count(n as u64)),
            ratio,
            said,
        ]);
    }
    if theirs > 0 {
        table.row(vec![
            "**comparable steps**".into(),
            String::new(),
            String::new(),
            count(ours as u64),
            count(theirs as u64),
            format!("**{:.2}×**", ours as f64 / theirs as f64),
            "goal: ≤ 0.9×".into(),
        ]);
    }
    table.notes.push(
        "Comparable steps: all but the first read of the large file (where the built-in Read refuses a file over \
         256 KB) and any step where one side gave a partial answer (an error, output Claude Code saved to a file \
         and showed as a preview, or a page with a continuation): their ratio is in brackets. The continuation of \
         the large file gives the built-in Read, by `offset` and `limit`, the same lines as Cordon's second page."
            .into(),
    );
    report.push(table);
    report.push(definitions(&cordon.tools, &builtin.tools, &default.tools));
    Ok(())
}

/// A call as the table shows it: the tool's short name and its input, cut to 70 characters.
fn shown_call(tool: &str, input: &Value) -> String {
    let mut input = input.clone();
    if let Some(path) = input.get_mut("file_path") {
        let short = path.as_str().and_then(|p| p.rsplit_once("/tree/")).map(|(_, rel)| format!("…/{rel}"));
        *path = json!(short.unwrap_or_default());
    }
    let text = format!("{} {input}", tool.trim_start_matches("mcp__cordon__"));
    let cut: String = text.chars().take(70).collect();
    let cut = if cut.len() < text.len() { format!("{cut}…") } else { cut };
    format!("`{}`", cut.replace('|', "\\|").replace('`', "'"))
}

/// The result of the step of kind `kind` in a run.
fn step_result(run: &Run, kind: Kind) -> Option<&Seen> {
    STEPS.iter().position(|s| s.kind == kind).and_then(|i| run.results[i].as_ref())
}

/// A tool definition's characters as Claude Code sends it: name, description, input schema (JSON).
fn definition_chars(tool: &Value) -> usize {
    let text = |v: &Value| v.as_str().map_or(0, |s| s.chars().count());
    text(&tool["name"]) + text(&tool["description"]) + tool["input_schema"].to_string().chars().count()
}

/// The definitions table: what each side's tools cost in the first request (`default`: Cordon's
/// side with tool search on).
fn definitions(cordon: &[Value], builtin: &[Value], default: &[Value]) -> Table {
    let mut table =
        Table::new("Tool definitions in Claude Code's first request", &["tools", "Cordon", "built-in", "ratio"]);
    table.intro.push(
        "Characters of each tool's name, description and input schema (compact JSON) in the first request's \
         `tools`, as Claude Code sends them with tool search off."
            .into(),
    );
    let named = |tools: &[Value], names: &[String]| -> usize {
        tools.iter().filter(|t| names.iter().any(|n| t["name"] == n.as_str())).map(definition_chars).sum()
    };
    let core: Vec<String> = CORDON_CORE.iter().map(|t| format!("mcp__cordon__{t}")).collect();
    let built: Vec<String> = BUILT_INS.iter().map(|t| t.to_string()).collect();
    let (a, b) = (named(cordon, &core), named(builtin, &built));
    let ratio = |a: usize, b: usize| if b > 0 { format!("{:.2}×", a as f64 / b as f64) } else { "–".into() };
    table.row(vec!["read+grep+glob+edit / Read+Grep+Glob+Edit".into(), count(a as u64), count(b as u64), ratio(a, b)]);
    let all: Vec<&Value> =
        cordon.iter().filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("mcp__"))).collect();
    let all_chars: usize = all.iter().map(|t| definition_chars(t)).sum();
    table.row(vec![format!("all {} Cordon tools", all.len()), count(all_chars as u64), "–".into(), "–".into()]);
    // Tools Claude Code adds because of the server (its resource tools), beside Cordon's own.
    let extra: Vec<&Value> = cordon
        .iter()
        .filter(|t| {
            let name = t["name"].as_str().unwrap_or_default();
            !name.starts_with("mcp__") && !builtin.iter().any(|b| b["name"] == name) && !built.iter().any(|b| b == name)
        })
        .collect();
    if !extra.is_empty() {
        let names: Vec<&str> = extra.iter().filter_map(|t| t["name"].as_str()).collect();
        let chars: usize = extra.iter().map(|t| definition_chars(t)).sum();
        table.row(vec![
            format!("added by Claude Code for the server: {}", names.join(", ")),
            count(chars as u64),
            "–".into(),
            "–".into(),
        ]);
    }
    let loaded: Vec<&Value> =
        default.iter().filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("mcp__"))).collect();
    let loaded_chars: usize = loaded.iter().map(|t| definition_chars(t)).sum();
    let names: Vec<&str> = loaded.iter().filter_map(|t| t["name"].as_str()?.strip_prefix("mcp__cordon__")).collect();
    table.row(vec![
        if names.is_empty() {
            "tool search on (the default): Cordon tools loaded up front: none".into()
        } else {
            format!("tool search on (the default): Cordon tools loaded up front ({})", names.join(", "))
        },
        count(loaded_chars as u64),
        "–".into(),
        "–".into(),
    ]);
    let total = |tools: &[Value]| tools.iter().map(definition_chars).sum::<usize>();
    let (ta, tb) = (total(cordon), total(builtin));
    table.row(vec![
        format!("every tool in the first request ({} / {})", cordon.len(), builtin.len()),
        count(ta as u64),
        count(tb as u64),
        ratio(ta, tb),
    ]);
    table.notes.push(
        "Cordon's side disallows the built-in Read, Grep, Glob and Edit; the built-in side runs with no MCP server. \
         Goals (issue 30): read+grep+glob+edit ≤ 7,036 characters; all Cordon tools ≤ 14,000."
            .into(),
    );
    table
}

/// What every conversation shares.
struct Setup<'a> {
    opts: &'a Options,
    claude: &'a Path,
    /// Where the tree is generated afresh for each conversation.
    root: &'a Path,
    modules: usize,
    /// `target/bench/agent`: the results and each conversation's scratch HOME.
    work: &'a Path,
}

impl Setup<'_> {
    /// One conversation of every step on `side`, on a fresh copy of the tree; with `tool_search`
    /// (Claude Code's default), no step: only the first request's tools are kept.
    fn converse(&self, side: Side, cordon_next_rows: Option<(u64, u64)>, tool_search: bool) -> Result<Run> {
        let Setup { opts, claude, root, modules, work } = *self;
        let _ = std::fs::remove_dir_all(root);
        tree::generate(root, modules).context("generating the agent tree")?;
        let scratch = work.join(format!("scratch-{side:?}{}", if tool_search { "-tool-search" } else { "" }));
        let _ = std::fs::remove_dir_all(&scratch);
        let (home, tmp) = (scratch.join("home"), scratch.join("tmp"));
        std::fs::create_dir_all(&home)?;
        std::fs::create_dir_all(&tmp)?;

        // The script: each step in order; a step with nothing to call is skipped.
        let issued: Arc<Mutex<Vec<usize>>> = Arc::default();
        let (log, root_owned) = (Arc::clone(&issued), root.to_path_buf());
        let script: Script = Box::new(move |seen: &[Seen], tools: &[Value]| {
            let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
            let mut next = log.last().map_or(0, |i| i + 1);
            while next < STEPS.len() && !tool_search {
                let cx = Context { root: &root_owned, tools, results: seen, cordon_next_rows };
                if let Some(call) = steps::call(side, &STEPS[next], &cx) {
                    log.push(next);
                    return Some(call);
                }
                next += 1;
            }
            None
        });
        let api = MessagesApi::start(script).context("starting the stand-in for the Messages API")?;

        let mut command = Command::new(claude);
        command.args(["-p", "go", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits"]);
        match side {
            Side::Cordon => {
                let config = json!({"mcpServers": {"cordon": {
                    "command": opts.cordon, "args": ["serve", "--root", root, "--state-dir", opts.state_dir]}}});
                let path = scratch.join("mcp.json");
                std::fs::write(&path, config.to_string())?;
                command.arg("--mcp-config").arg(&path).arg("--strict-mcp-config");
                command.args(["--allowedTools", "mcp__cordon", "--disallowedTools", &BUILT_INS.join(",")]);
            }
            Side::BuiltIn => {
                let path = scratch.join("mcp.json");
                std::fs::write(&path, json!({"mcpServers": {}}).to_string())?;
                command.arg("--mcp-config").arg(&path).arg("--strict-mcp-config");
                command.args(["--allowedTools", &BUILT_INS.join(",")]);
            }
        }
        let url = api.url();
        crate::claude::headless(
            &mut command,
            &crate::claude::Headless { api_url: &url, home: &home, tmp: &tmp, tool_search },
        );
        command
            .current_dir(root)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(scratch.join("stdout.jsonl"))?)
            .stderr(std::fs::File::create(scratch.join("stderr.txt"))?);
        let started = Instant::now();
        let mut child = command.spawn().with_context(|| format!("starting {}", claude.display()))?;
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if started.elapsed() > CLAUDE_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                bail!(
                    "{side:?} side: Claude Code did not finish within {CLAUDE_TIMEOUT:?} (see {})",
                    scratch.display()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let elapsed = started.elapsed();
        let transcript: Transcript = api.take();
        drop(api);
        if !status.success() || !transcript.finished || !transcript.problems.is_empty() {
            let stderr = std::fs::read_to_string(scratch.join("stderr.txt")).unwrap_or_default();
            bail!(
                "{side:?} side: Claude Code {status}, conversation finished: {}, problems: {:?}, requests: {:?}, \
                 stderr: {} (see {})",
                transcript.finished,
                transcript.problems,
                transcript.requests,
                stderr.chars().rev().take(1500).collect::<String>().chars().rev().collect::<String>(),
                scratch.display()
            );
        }
        let issued = issued.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if transcript.seen.len() != issued.len() {
            bail!("{side:?} side: {} calls made, {} results recorded", issued.len(), transcript.seen.len());
        }
        let mut results: Vec<Option<Seen>> = vec![None; STEPS.len()];
        for (step, seen) in issued.into_iter().zip(transcript.seen) {
            let name = format!("{}-{:02}-{}.txt", side_name(side), step, slug(&STEPS[step]));
            let header = format!("{} {}\nis_error: {}\n\n", seen.tool, seen.input, seen.is_error);
            std::fs::write(work.join("results").join(name), header + &steps::text_of(&seen.content))?;
            results[step] = Some(seen);
        }
        let _ = std::fs::remove_dir_all(&scratch);
        let tools_file = format!("{}{}-tools.json", side_name(side), if tool_search { "-tool-search" } else { "" });
        std::fs::write(
            work.join("results").join(tools_file),
            Value::Array(transcript.first_tools.clone()).to_string(),
        )?;
        Ok(Run { results, tools: transcript.first_tools, elapsed })
    }
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Cordon => "cordon",
        Side::BuiltIn => "builtin",
    }
}

/// A file-name-safe form of a step's label.
fn slug(step: &Step) -> String {
    let s: String =
        step.label.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    s.split('-').filter(|w| !w.is_empty()).collect::<Vec<_>>().join("-")
}
