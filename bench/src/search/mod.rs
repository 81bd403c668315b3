//! grep and glob: Cordon over MCP stdio and through `cordon call --all`, with
//! one shard and with N, against ripgrep ordered (`--sort path`), `-j1` and
//! `-jN` (grep), and fd and `rg --files` (glob), on each tree; result counts
//! are checked equal. Then, untimed, the syscalls per file of one grep and
//! one glob under strace.

mod measure;
mod syscalls;

use std::path::PathBuf;
use std::process::Command;

use anyhow::Result;
use serde_json::json;

use crate::Options;
use crate::contenders::cordon_serve;
use crate::mcp::Server;
use crate::report::{Report, Table};
use crate::stats::{count, ratio};
use measure::{
    Found, PAGE_TOKENS, Samples, Shards, call_command, call_search, check_counts, grep_found, lines_found, mcp_search,
    rg_count_found, strs, timed,
};

/// A tree searched.
#[derive(Clone, Debug)]
pub struct Tree {
    pub label: String,
    pub path: PathBuf,
    pub files: u64,
    pub bytes: u64,
}

const PATTERNS: [(&str, &str); 3] = [
    ("absent literal", "zqxjvkw_absent"),
    ("common literal", "fn "),
    ("regex with character classes", "[A-Z][a-z]+Error"),
];

/// ripgrep's grep flags besides the pattern and the threads.
const RG_GREP: [&str; 3] = ["-c", "--no-require-git", "--no-ignore-global"];

const GLOB: &str = "**/*.rs";

pub fn grep(opts: &Options, trees: &[Tree], report: &mut Report) -> Result<()> {
    let n = opts.threads;
    let shards = Shards::detect(opts);
    let (one, many) = (Shards::label(1), Shards::label(n));
    for tree in trees {
        let mut servers = start_servers(opts, tree, &shards)?;
        let mut table = Table::new(
            &format!("grep: {}", tree.label),
            &[
                "pattern",
                &format!("Cordon, MCP stdio, {one}"),
                &format!("Cordon, MCP stdio, {many}"),
                &format!("Cordon, `call --all`, {one}"),
                &format!("Cordon, `call --all`, {many}"),
                "rg --sort path",
                "rg -j1",
                &format!("rg -j{n}"),
                &format!("Cordon (MCP, {one}) speed vs rg --sort path"),
                &format!("Cordon (MCP, {many}) vs rg --sort path"),
                &format!("Cordon (MCP, {many}) vs rg -j{n}"),
                "result counts",
            ],
        );
        table.intro.push(intro(tree, opts.runs));
        table.intro.push(format!(
            "Cordon: `grep` with `output_mode: \"count\"` and {PAGE_TOKENS}-token pages, {}. ripgrep: `rg -c \
             --no-require-git --no-ignore-global PATTERN` (Cordon honours `.gitignore` without a `.git`), with \
             `--sort path` (ordered, one thread: ripgrep's only ordered mode, so the like-for-like comparison), \
             `-j1` and `-j{n}` (unordered, every core). Speed ratios are rg's time ÷ Cordon's (>1: Cordon faster).",
            cordon_method(&shards)
        ));
        for (label, pattern) in PATTERNS {
            let args = json!({"pattern": pattern, "output_mode": "count", "format": "json"});
            let mut cordon = Cordon::new(&shards);
            let (mut sorted, mut one_j, mut all_j) = Default::default();
            for _ in 0..opts.runs {
                cordon.run(opts, &mut servers, tree, ("grep", &args), grep_found)?;
                if let Some(rg) = &opts.peers.rg {
                    let run = |threads: &[&str]| {
                        let mut cmd = Command::new(rg);
                        cmd.args(threads).args(RG_GREP).arg("-e").arg(pattern);
                        timed(cmd, &tree.path, rg_count_found, true)
                    };
                    Samples::push(&mut sorted, run(&["--sort", "path"])?);
                    Samples::push(&mut one_j, run(&["-j1"])?);
                    Samples::push(&mut all_j, run(&[&format!("-j{n}")])?);
                }
            }
            let labels = cordon_labels(&shards);
            let mut contenders = cordon.contenders(&labels);
            let all_label = format!("rg -j{n}");
            contenders.extend([("rg --sort path", &sorted), ("rg -j1", &one_j), (all_label.as_str(), &all_j)]);
            let check = check_counts(report, &format!("grep {pattern:?} on {}", tree.label), &contenders);
            let mut row = vec![format!("{label} `{pattern}`")];
            row.extend(cordon.cells());
            row.extend([sorted.cell(), one_j.cell(), all_j.cell()]);
            row.extend([
                ratio(sorted.median(), cordon.mcp_median(0)),
                ratio(sorted.median(), cordon.mcp_median(1)),
                ratio(all_j.median(), cordon.mcp_median(1)),
                check,
            ]);
            table.row(row);
        }
        table.notes.extend(shards.note());
        if opts.peers.rg.is_none() {
            table.notes.push(missing("ripgrep", "rg"));
        }
        servers.into_iter().for_each(Server::finish);
        report.push(table);
        if opts.syscalls {
            let (_, pattern) = PATTERNS[0];
            let args = json!({"pattern": pattern, "output_mode": "count", "format": "json"});
            let rg = opts.peers.rg.as_ref().map(|rg| {
                let mut cmd = Command::new(rg);
                cmd.args(["-j1", "--sort", "path"]).args(RG_GREP).arg("-e").arg(pattern);
                cmd
            });
            let traced = syscalls::Traced {
                title: format!("syscalls per file: grep `{pattern}`, {}", tree.label),
                intro: format!(
                    "Cordon: `cordon call grep --all` (count mode, {PAGE_TOKENS}-token pages, {}); ripgrep: `rg -c \
                     -j1 --sort path --no-require-git --no-ignore-global -e {pattern}`.",
                    traced_flags(&shards)
                ),
                cordon: traced_calls(opts, &shards, tree, "grep", &args),
                rg,
            };
            report.push(syscalls::table(opts.peers.strace.as_deref(), tree, traced));
        }
    }
    Ok(())
}

pub fn glob(opts: &Options, trees: &[Tree], report: &mut Report) -> Result<()> {
    let n = opts.threads;
    let shards = Shards::detect(opts);
    let (one, many) = (Shards::label(1), Shards::label(n));
    for tree in trees {
        let mut servers = start_servers(opts, tree, &shards)?;
        let mut table = Table::new(
            &format!("glob: {}", tree.label),
            &[
                "glob",
                &format!("Cordon, MCP stdio, {one}"),
                &format!("Cordon, MCP stdio, {many}"),
                &format!("Cordon, `call --all`, {one}"),
                &format!("Cordon, `call --all`, {many}"),
                "fd -j1",
                &format!("fd -j{n}"),
                "rg --files --sort path",
                "rg --files -j1",
                &format!("rg --files -j{n}"),
                &format!("Cordon (MCP, {one}) speed vs rg --files --sort path"),
                &format!("Cordon (MCP, {many}) vs rg --files --sort path"),
                &format!("Cordon (MCP, {many}) vs fd -j{n}"),
                &format!("Cordon (MCP, {many}) vs rg --files -j{n}"),
                "results",
            ],
        );
        table.intro.push(intro(tree, opts.runs));
        table.intro.push(format!(
            "Cordon: `glob` with `pattern: \"{GLOB}\"` and {PAGE_TOKENS}-token pages, {}. fd: `fd -jN -t f -g \
             '*.rs' --no-global-ignore-file` (unordered); ripgrep: `rg --files -g '{GLOB}' --no-ignore-global` \
             with `--sort path` (ordered, one thread: the like-for-like comparison), `-j1` and `-j{n}` (unordered). \
             Like them, and unlike Cordon's grep, Cordon's glob reads `.gitignore` only inside a git repository \
             (the generated tree has a `.git`). Speed ratios are the peer's time ÷ Cordon's (>1: Cordon faster).",
            cordon_method(&shards)
        ));
        let args = json!({"pattern": GLOB, "format": "json"});
        let mut cordon = Cordon::new(&shards);
        let (mut fd1, mut fdn, mut rgs, mut rg1, mut rgn) = Default::default();
        for _ in 0..opts.runs {
            cordon.run(opts, &mut servers, tree, ("glob", &args), lines_found)?;
            if let Some(fd) = &opts.peers.fd {
                let run = |j: usize| {
                    let mut cmd = Command::new(fd);
                    cmd.arg(format!("-j{j}"))
                        .args(["-t", "f", "-g", "*.rs", "--no-global-ignore-file", "--color"])
                        .arg("never");
                    timed(cmd, &tree.path, lines_found, false)
                };
                Samples::push(&mut fd1, run(1)?);
                Samples::push(&mut fdn, run(n)?);
            }
            if let Some(rg) = &opts.peers.rg {
                let run = |threads: &[&str]| {
                    let mut cmd = Command::new(rg);
                    cmd.args(threads).args(["--files", "-g", GLOB, "--no-ignore-global"]);
                    timed(cmd, &tree.path, lines_found, true)
                };
                Samples::push(&mut rgs, run(&["--sort", "path"])?);
                Samples::push(&mut rg1, run(&["-j1"])?);
                Samples::push(&mut rgn, run(&[&format!("-j{n}")])?);
            }
        }
        let labels = cordon_labels(&shards);
        let mut contenders = cordon.contenders(&labels);
        let rgn_label = format!("rg --files -j{n}");
        contenders.extend([("rg --files --sort path", &rgs), ("rg --files -j1", &rg1), (rgn_label.as_str(), &rgn)]);
        let mut check = check_counts(report, &format!("glob {GLOB:?} on {}", tree.label), &contenders);
        // fd's glob is not an override the way rg's `-g` is (rg, and Cordon, list a
        // hidden or ignored *file* that a glob names), so it may differ on real trees.
        if let (Some(ours), Some(theirs)) = (cordon.mcp[0].found.first(), fd1.found.first())
            && ours.files != theirs.files
        {
            check.push_str(&format!("; fd: {}", count(theirs.files)));
            table.notes.push(format!(
                "fd lists {} files where Cordon and rg list {}: rg's and Cordon's `-g` globs also admit hidden or \
                 ignored files they name; fd's do not.",
                count(theirs.files),
                count(ours.files)
            ));
        }
        let mut row = vec![format!("`{GLOB}`")];
        row.extend(cordon.cells());
        row.extend([fd1.cell(), fdn.cell(), rgs.cell(), rg1.cell(), rgn.cell()]);
        row.extend([
            ratio(rgs.median(), cordon.mcp_median(0)),
            ratio(rgs.median(), cordon.mcp_median(1)),
            ratio(fdn.median(), cordon.mcp_median(1)),
            ratio(rgn.median(), cordon.mcp_median(1)),
            check,
        ]);
        table.row(row);
        table.notes.extend(shards.note());
        if opts.peers.fd.is_none() {
            table.notes.push(missing("fd", "fd-find"));
        }
        if opts.peers.rg.is_none() {
            table.notes.push(missing("ripgrep", "rg"));
        }
        servers.into_iter().for_each(Server::finish);
        report.push(table);
        if opts.syscalls {
            let rg = opts.peers.rg.as_ref().map(|rg| {
                let mut cmd = Command::new(rg);
                cmd.args(["--files", "--sort", "path", "-g", GLOB, "--no-ignore-global"]);
                cmd
            });
            let traced = syscalls::Traced {
                title: format!("syscalls per file: glob `{GLOB}`, {}", tree.label),
                intro: format!(
                    "Cordon: `cordon call glob --all` ({PAGE_TOKENS}-token pages, {}); ripgrep: `rg --files --sort \
                     path -g '{GLOB}' --no-ignore-global`.",
                    traced_flags(&shards)
                ),
                cordon: traced_calls(opts, &shards, tree, "glob", &args),
                rg,
            };
            report.push(syscalls::table(opts.peers.strace.as_deref(), tree, traced));
        }
    }
    Ok(())
}

/// How Cordon was run, for a table's intro.
fn cordon_method(shards: &Shards) -> String {
    let runs = if shards.supported {
        format!(
            "Each runs with `--shards 1` (one guest instance per call) and `--shards {}` (the N of `rg -jN`)",
            shards.n
        )
    } else {
        "This build has no `--shards`: each runs one guest instance per call (the 1-shard columns)".into()
    };
    format!(
        "results in path order, the root read-only (`--root DIR:ro`, as every search here: a read-write root would \
         also start a background cleanup walk of the tree). *MCP stdio* is request to last page on a running \
         server (one session, compile cache warm); *`call --all`* is the whole `cordon call --all` process (start, \
         loading the compiled tools, every page). {runs}"
    )
}

/// A running server per shard configuration.
fn start_servers(opts: &Options, tree: &Tree, shards: &Shards) -> Result<Vec<Server>> {
    shards
        .counts()
        .into_iter()
        .map(|shard_count| {
            let flags = shards.flags(shard_count);
            Server::start(&cordon_serve(&opts.cordon, &[&tree.path], &opts.state_dir, &strs(&flags)))
        })
        .collect()
}

/// The names of Cordon's contenders per shard configuration, for the counts check.
fn cordon_labels(shards: &Shards) -> Vec<(String, String)> {
    shards
        .counts()
        .into_iter()
        .map(|c| (format!("Cordon over MCP, {}", Shards::label(c)), format!("cordon call --all, {}", Shards::label(c))))
        .collect()
}

/// Cordon's commands traced: one per shard configuration, with a long time limit.
fn traced_calls(
    opts: &Options,
    shards: &Shards,
    tree: &Tree,
    tool: &str,
    args: &serde_json::Value,
) -> Vec<(String, Command)> {
    shards
        .counts()
        .into_iter()
        .map(|shard_count| {
            let mut flags = shards.flags(shard_count);
            flags.extend(syscalls::TIMEOUT_FLAGS.map(String::from));
            (Shards::label(shard_count), call_command(opts, tool, args, &tree.path, &strs(&flags)))
        })
        .collect()
}

/// The flags of the traced `cordon call`s, for the intro.
fn traced_flags(shards: &Shards) -> String {
    let shard_flags = if shards.supported {
        format!("`--shards 1` and `--shards {}`, ", shards.n)
    } else {
        "no `--shards` (not supported by this build), ".into()
    };
    format!(
        "{shard_flags}root read-only `--root DIR:ro` so that no background cleanup walk runs, `{}` as strace slows \
         it",
        syscalls::TIMEOUT_FLAGS.join(" ")
    )
}

/// Cordon's samples per shard configuration: over MCP on a running server,
/// and as a whole `cordon call --all` process.
struct Cordon<'s> {
    shards: &'s Shards,
    mcp: Vec<Samples>,
    call: Vec<Samples>,
}

impl<'s> Cordon<'s> {
    fn new(shards: &'s Shards) -> Cordon<'s> {
        let empty = || shards.counts().iter().map(|_| Samples::default()).collect();
        Cordon { shards, mcp: empty(), call: empty() }
    }

    /// One run of `tool` with `args` in every configuration: on `servers`
    /// (one per configuration), then as `cordon call --all`.
    fn run(
        &mut self,
        opts: &Options,
        servers: &mut [Server],
        tree: &Tree,
        (tool, args): (&str, &serde_json::Value),
        found: fn(&str) -> Found,
    ) -> Result<()> {
        for (samples, server) in self.mcp.iter_mut().zip(servers) {
            samples.push(mcp_search(server, tool, args, found)?);
        }
        for (samples, shard_count) in self.call.iter_mut().zip(self.shards.counts()) {
            let flags = self.shards.flags(shard_count);
            samples.push(call_search(opts, tool, args, &tree.path, &strs(&flags), found)?);
        }
        Ok(())
    }

    /// The samples named by `labels` (from `cordon_labels`), for the counts check.
    fn contenders<'a>(&'a self, labels: &'a [(String, String)]) -> Vec<(&'a str, &'a Samples)> {
        let mut contenders: Vec<(&str, &Samples)> = labels.iter().map(|(m, _)| m.as_str()).zip(&self.mcp).collect();
        contenders.extend(labels.iter().map(|(_, c)| c.as_str()).zip(&self.call));
        contenders
    }

    /// The table's Cordon cells: MCP at 1 and N shards, then `call --all`;
    /// `-` where a configuration was not measured.
    fn cells(&self) -> [String; 4] {
        let cell = |samples: &[Samples], k: usize| samples.get(k).map_or_else(|| "-".into(), Samples::cell);
        [cell(&self.mcp, 0), cell(&self.mcp, 1), cell(&self.call, 0), cell(&self.call, 1)]
    }

    /// The median over MCP of the `k`th configuration; 0 (no ratio) when not measured.
    fn mcp_median(&self, k: usize) -> f64 {
        self.mcp.get(k).map_or(0.0, Samples::median)
    }
}

fn intro(tree: &Tree, runs: usize) -> String {
    format!(
        "Tree: `{}`, {} files, {:.0} MB. Median of {runs} run(s), contenders alternating.",
        tree.path.display(),
        count(tree.files),
        tree.bytes as f64 / 1e6
    )
}

fn missing(what: &str, krate: &str) -> String {
    format!(
        "{what} was not run: not installed (a full run installs it with `cargo install --locked --root \
         target/interop {krate}`)."
    )
}
