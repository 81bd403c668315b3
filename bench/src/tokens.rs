//! Token economy: what a model reads from agent-like searches, globs and
//! listings, against what `rg -n`, `rg --files` and `ls` print for the same
//! results, and against the reference server where it has the tool.
//!
//! Cordon is called as a model's client calls it: default arguments (the
//! compact text form, the default page size), following the continuation.
//! Each page is measured twice: as Claude Code passes it to its model
//! (`JSON.stringify(structuredContent)` when a result has it, else the text
//! blocks; the text form has none) and as clients that forward `content` do
//! (every text block, footer included). Tokens are characters
//! divided by 4, as Claude Code estimates them.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::Options;
use crate::contenders::cordon_serve;
use crate::mcp::Server;
use crate::report::{Report, Table};
use crate::search::Tree;
use crate::stats::count;

/// Pages followed per task before "to the end" gives up (agents rarely go further).
const MAX_PAGES: usize = 40;

/// Claude Code shows a warning above this many tokens in one result.
const CLAUDE_WARNING_TOKENS: usize = 10_000;

/// What plain tools print for the same result.
#[derive(Clone, Debug)]
enum Plain {
    /// `rg` with these arguments, run in the tree's root.
    Rg(Vec<&'static str>),
    /// `ls -1AF` of the tree's root.
    Ls,
}

/// The reference server's tool for the same result, where it has one.
#[derive(Clone, Debug)]
enum Peer {
    None,
    /// `search_files` with this glob.
    Search(&'static str),
    /// `list_directory` of the root.
    List,
}

struct Task {
    label: String,
    tool: &'static str,
    args: Value,
    plain: Plain,
    peer: Peer,
}

fn grep(label: &str, pattern: &'static str, mode: Option<&'static str>) -> Task {
    let (flag, mut args) = match mode {
        None => ("-n", json!({"pattern": pattern})),
        Some("files_with_matches") => ("-l", json!({"pattern": pattern, "output_mode": "files_with_matches"})),
        Some(other) => ("-c", json!({"pattern": pattern, "output_mode": other})),
    };
    if let Some(obj) = args.as_object_mut() {
        obj.retain(|_, v| !v.is_null());
    }
    let plain = Plain::Rg(vec![flag, "--no-require-git", "--no-ignore-global", "-e", pattern]);
    Task { label: format!("{label} `{pattern}`"), tool: "grep", args, plain, peer: Peer::None }
}

fn glob(pattern: &'static str, rg_glob: &'static str) -> Task {
    Task {
        label: format!("glob `{pattern}`"),
        tool: "glob",
        args: json!({"pattern": pattern}),
        plain: Plain::Rg(vec!["--files", "--no-require-git", "--no-ignore-global", "-g", rg_glob]),
        peer: Peer::Search(pattern),
    }
}

fn list() -> Task {
    Task { label: "list the root".into(), tool: "list", args: json!({}), plain: Plain::Ls, peer: Peer::List }
}

/// The agent-like workload for one tree.
fn tasks(real: bool) -> Vec<Task> {
    if real {
        vec![
            grep("grep", "TODO", None),
            grep("grep", "unsafe fn", None),
            grep("grep", "fn main", None),
            grep("grep", "def __init__", None),
            grep("grep", "raise ValueError", None),
            grep("grep", "#\\[inline\\]", None),
            grep("grep", "impl.*Drop for", None),
            grep("grep -l", "unsafe impl", Some("files_with_matches")),
            grep("grep -c", "TODO", Some("count")),
            glob("**/Cargo.toml", "Cargo.toml"),
            list(),
        ]
    } else {
        vec![
            grep("grep", "TODO", None),
            grep("grep", "impl std::fmt::Display for ParseError", None),
            grep("grep", "TimeoutError::new\\(\"kernel", None),
            grep("grep", "fn matrix_7", None),
            grep("grep", "TODO: handle the queue case before stream", None),
            grep("grep -l", "ConfigError::new\\(\"alpha", Some("files_with_matches")),
            grep("grep -c", "fn kernel_", Some("count")),
            glob("**/*7.rs", "*7.rs"),
            list(),
        ]
    }
}

/// What a model reads of one result: characters as Claude Code passes it, and as `content`.
#[derive(Clone, Copy, Debug, Default)]
struct Read {
    claude: usize,
    content: usize,
}

impl Read {
    fn of(result: &Value) -> Read {
        let content: usize = result["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["text"].as_str())
            .map(|t| t.chars().count())
            .sum();
        let claude = match result.get("structuredContent") {
            Some(s) => serde_json::to_string(s).map(|t| t.chars().count()).unwrap_or(0),
            None => content,
        };
        Read { claude, content }
    }

    fn add(&mut self, other: Read) {
        self.claude += other.claude;
        self.content += other.content;
    }
}

fn tokens(chars: usize) -> usize {
    chars.div_ceil(4)
}

/// The whole result's size as the text form's footer says it: "shows 6 of
/// 6000 items" (exact) or "of at least 6000 items".
fn whole_in_footer(text: &str) -> Option<String> {
    let footer = &text[text.rfind("[Page ")?..];
    let (rest, exact) = match footer.find(" of at least ") {
        Some(at) => (&footer[at + " of at least ".len()..], false),
        None => (&footer[footer.find(" of ")? + " of ".len()..], true),
    };
    let n: u64 = rest.split(' ').next()?.parse().ok()?;
    Some(if exact { format!("exact: {}", count(n)) } else { format!("at least {}", count(n)) })
}

/// One task on Cordon: the first page, and the pages to the end (up to `MAX_PAGES`).
struct Paged {
    first: Read,
    shown: u64,
    whole: String,
    continuation: usize,
    all: Read,
    pages: usize,
    finished: bool,
    largest_claude: usize,
}

fn run_cordon(server: &mut Server, task: &Task) -> Result<Paged> {
    let mut result = server.call(task.tool, task.args.clone())?;
    let first = Read::of(&result);
    let meta = &result["_meta"]["cordon/page"];
    let shown = meta["items"].as_u64().unwrap_or(0);
    let structured = &result["structuredContent"];
    let next = crate::mcp::next_cursor(&result);
    let whole = match (&structured["whole"], next.is_none()) {
        (_, true) => "whole".to_string(),
        (Value::Object(w), false) => {
            let n = w.get("items").and_then(Value::as_u64).unwrap_or(0);
            match w.get("exact").and_then(Value::as_bool) {
                Some(true) => format!("exact: {}", count(n)),
                _ => format!("at least {}", count(n)),
            }
        }
        _ => {
            let blocks = result["content"].as_array().into_iter().flatten();
            let text: String = blocks.filter_map(|b| b["text"].as_str()).collect();
            whole_in_footer(&text).unwrap_or_else(|| "MISSING".to_string())
        }
    };
    let continuation = next.as_deref().map_or(0, str::len);
    let (mut all, mut pages, mut largest_claude) = (first, 1, first.claude);
    loop {
        let Some(cursor) = crate::mcp::next_cursor(&result) else {
            return Ok(Paged { first, shown, whole, continuation, all, pages, finished: true, largest_claude });
        };
        if pages >= MAX_PAGES {
            return Ok(Paged { first, shown, whole, continuation, all, pages, finished: false, largest_claude });
        }
        result = server.call(task.tool, json!({"cursor": cursor}))?;
        let read = Read::of(&result);
        largest_claude = largest_claude.max(read.claude);
        all.add(read);
        pages += 1;
    }
}

/// What the plain tool prints: characters and results (lines).
fn run_plain(opts: &Options, root: &Path, plain: &Plain) -> Result<Option<(usize, u64)>> {
    let mut cmd = match plain {
        Plain::Rg(args) => {
            let Some(rg) = &opts.peers.rg else { return Ok(None) };
            let mut cmd = Command::new(rg);
            cmd.args(args);
            cmd
        }
        Plain::Ls => {
            let mut cmd = Command::new("ls");
            cmd.arg("-1AF");
            cmd
        }
    };
    let out = cmd
        .current_dir(root)
        .env_remove("RIPGREP_CONFIG_PATH")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {cmd:?}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    // One result a line: a match (`-n`), a file (`-l`, `-c`, `--files`) or an entry.
    let results = text.lines().count() as u64;
    Ok(Some((text.chars().count(), results)))
}

/// The reference server's answer for the same result, as its model would read it.
fn run_peer(peer: Option<&mut Server>, root: &Path, task: &Task) -> Option<Read> {
    let server = peer?;
    let path = root.display().to_string();
    let result = match task.peer {
        Peer::None => return None,
        Peer::Search(pattern) => server.call("search_files", json!({"path": path, "pattern": pattern})),
        Peer::List => server.call("list_directory", json!({"path": path})),
    };
    result.ok().map(|r| Read::of(&r))
}

/// Runs the workload on every tree; one table per tree.
pub fn run(opts: &Options, trees: &[Tree], report: &mut Report) -> Result<()> {
    // Content searches over every tree: first-page characters and matches shown, plain characters and matches.
    let mut overall = (0usize, 0u64, 0usize, 0u64);
    for (i, tree) in trees.iter().enumerate() {
        let launch = cordon_serve(&opts.cordon, &[&tree.path], &opts.state_dir, &[]);
        let mut server = Server::start(&launch)?;
        let mut peer = match opts.peers.peer(&[&tree.path]) {
            Some(launch) => Some(Server::start(&launch)?),
            None => None,
        };
        let mut table = Table::new(
            &format!("Token economy: {}", tree.label),
            &[
                "task",
                "results",
                "plain tool",
                "first page: shown",
                "tokens (Claude Code / content)",
                "per shown result vs plain",
                "whole result",
                "to the end: pages",
                "tokens (Claude Code / content)",
                "vs plain",
                "continuation",
                "reference server",
            ],
        );
        table.intro.push(format!(
            "What a model reads from agent-like calls on `{}`, called as a model's client calls Cordon (default \
             arguments: the compact text form and the default page), following the continuation for at most {MAX_PAGES} \
             pages. Tokens are characters ÷ 4. *Claude Code*: what it passes its model, `JSON.stringify(structuredContent)` \
             when a result has it, else its text blocks (the text form has no structured content); *content*: every text block, footer included, what other clients pass. *Plain tool*: `rg -n` \
             (`-l`, `-c`, `--files`) or `ls -1AF` run in the root, relative paths, the same results. *Per shown result*: \
             the first page's Claude Code tokens per result shown ÷ the plain tool's tokens per result. *Reference \
             server*: its `search_files` / `list_directory` answer, as Claude Code passes it (it has no content search).",
            tree.path.display()
        ));
        let (mut shown_chars, mut shown, mut plain_chars, mut plain_results) = (0usize, 0u64, 0usize, 0u64);
        let mut largest = 0usize;
        for task in tasks(i > 0) {
            let paged = run_cordon(&mut server, &task).with_context(|| format!("{}: {}", tree.label, task.label))?;
            let plain = run_plain(opts, &tree.path, &task.plain)?;
            let peer_read = run_peer(peer.as_mut(), &tree.path, &task);
            if paged.whole == "MISSING" {
                report.error(
                    "tokens",
                    format!("{}: a truncated first page without the whole result's count", task.label),
                );
            }
            largest = largest.max(paged.largest_claude);
            let per_shown = match (plain, paged.shown) {
                (Some((chars, results)), shown_here) if results > 0 && shown_here > 0 => {
                    if task.tool == "grep" && task.args.get("output_mode").is_none() {
                        shown_chars += paged.first.claude;
                        shown += shown_here;
                        plain_chars += chars;
                        plain_results += results;
                    }
                    let ours = paged.first.claude as f64 / shown_here as f64;
                    let theirs = chars as f64 / results as f64;
                    format!("{:.2}×", ours / theirs)
                }
                _ => "–".into(),
            };
            let to_end_vs = match (plain, paged.finished) {
                (Some((chars, _)), true) if chars > 0 => format!("{:.2}×", paged.all.claude as f64 / chars as f64),
                _ => "–".into(),
            };
            let pages = if paged.finished { paged.pages.to_string() } else { format!("> {}", paged.pages) };
            table.row(vec![
                task.label.clone(),
                plain.map_or("–".into(), |(_, n)| count(n)),
                plain.map_or("–".into(), |(chars, _)| count(tokens(chars) as u64)),
                count(paged.shown),
                format!("{} / {}", count(tokens(paged.first.claude) as u64), count(tokens(paged.first.content) as u64)),
                per_shown,
                paged.whole.clone(),
                pages,
                format!("{} / {}", count(tokens(paged.all.claude) as u64), count(tokens(paged.all.content) as u64)),
                to_end_vs,
                if paged.continuation > 0 { format!("{} chars", paged.continuation) } else { "–".into() },
                peer_read.map_or("–".into(), |r| count(tokens(r.claude) as u64)),
            ]);
        }
        overall = (overall.0 + shown_chars, overall.1 + shown, overall.2 + plain_chars, overall.3 + plain_results);
        if shown > 0 && plain_results > 0 {
            let ratio = (shown_chars as f64 / shown as f64) / (plain_chars as f64 / plain_results as f64);
            table.notes.push(format!(
                "Content searches (`grep` default mode) over this tree: {:.1} characters per shown match on the first \
                 page as Claude Code passes it, against {:.1} per match for `rg -n`: **{ratio:.2}×** (goal: ≤ 0.8×).",
                shown_chars as f64 / shown as f64,
                plain_chars as f64 / plain_results as f64
            ));
        }
        table.notes.push(format!(
            "The largest page any task gave, as Claude Code passes it: {} tokens (its warning starts above {}).",
            count(tokens(largest) as u64),
            count(CLAUDE_WARNING_TOKENS as u64)
        ));
        if opts.peers.rg.is_none() {
            table.notes.push("ripgrep was not run: not installed.".into());
        }
        if peer.is_none() {
            table.notes.push("The reference server was not run: Node or the package is not installed.".into());
        }
        server.finish();
        if let Some(peer) = peer {
            peer.finish();
        }
        report.push(table);
    }
    let (shown_chars, shown, plain_chars, plain_results) = overall;
    if trees.len() > 1
        && shown > 0
        && plain_results > 0
        && let Some(last) = report.tables.last_mut()
    {
        let ratio = (shown_chars as f64 / shown as f64) / (plain_chars as f64 / plain_results as f64);
        last.notes.push(format!(
            "Every content search above, on both trees: **{ratio:.2}×** `rg -n`'s tokens per shown match, as Claude \
             Code passes the first page."
        ));
    }
    Ok(())
}
