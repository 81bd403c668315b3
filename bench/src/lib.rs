//! Cordon's benchmark harness: the real `cordon` binary, over MCP stdio and
//! through `cordon call --all`, side by side with ripgrep, fd and the
//! reference MCP filesystem server (`@modelcontextprotocol/server-filesystem`).
//!
//! Every measurement alternates its contenders run by run and reports the
//! median of the runs. The harness fails only on errors (a contender that
//! fails, result counts that differ), never on speed. `--smoke` runs every
//! section on a tiny corpus; the end-to-end suite runs it in process.

pub mod contenders;
pub mod corpus;
pub mod machine;
pub mod mcp;
pub mod report;
pub mod stats;

mod agent;
pub mod claude;
pub mod collector;
mod http;
mod issuer;
mod read;
mod search;
pub mod standin;
mod startup;
mod throughput;
mod tokens;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::contenders::Peers;
use crate::corpus::{Corpus, Sizes};
use crate::report::Report;

/// A part of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Section {
    Startup,
    Grep,
    Glob,
    Read,
    Throughput,
    Http,
    Tokens,
    /// Agent steps through the real Claude Code CLI: Cordon's tools against its built-ins.
    Agent,
}

impl Section {
    pub const ALL: [Section; 8] = [
        Section::Startup,
        Section::Grep,
        Section::Glob,
        Section::Read,
        Section::Throughput,
        Section::Http,
        Section::Tokens,
        Section::Agent,
    ];
}

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct Options {
    /// A smoke run (tiny corpus); said in the report.
    pub smoke: bool,
    /// The repository (for `git` and the default paths).
    pub workspace: PathBuf,
    /// The `cordon` binary measured.
    pub cordon: PathBuf,
    pub peers: Peers,
    /// Runs per measurement (the median is reported).
    pub runs: usize,
    /// How long each throughput run lasts.
    pub seconds: f64,
    /// Concurrent clients for throughput.
    pub clients: usize,
    /// N for `rg -jN` and `fd -jN`, and Cordon's `--shards N`.
    pub threads: usize,
    /// Count the syscalls per file of one grep and one glob under `strace`
    /// (after the timed runs, never timed).
    pub syscalls: bool,
    pub sizes: Sizes,
    /// Where the generated corpus is cached.
    pub corpus_dir: PathBuf,
    /// A large real source tree searched besides the generated one.
    pub real_tree: Option<PathBuf>,
    /// Cordon's state directory (its compile cache: warm after the first start).
    pub state_dir: PathBuf,
    pub sections: Vec<Section>,
    /// Before each section, wait until the 1-minute load is below this (0: do not wait)…
    pub wait_load: f64,
    /// …but no longer than this; then measure anyway and say so.
    pub wait_max: Duration,
    /// Lines for the report's preamble.
    pub preamble: Vec<String>,
}

impl Options {
    /// A smoke run: every section on a tiny corpus, one run each, 1 s of
    /// throughput; contenders that are not installed are skipped.
    pub fn smoke(workspace: &Path, cordon: &Path, corpus_dir: &Path, state_dir: &Path) -> Options {
        Options {
            smoke: true,
            workspace: workspace.to_path_buf(),
            cordon: cordon.to_path_buf(),
            peers: Peers::find(workspace),
            runs: 1,
            seconds: 1.0,
            clients: 8,
            threads: machine::cores(),
            syscalls: true,
            sizes: Sizes { files: 300, big_mib: 4, peer_mib: vec![1] },
            corpus_dir: corpus_dir.to_path_buf(),
            real_tree: None,
            state_dir: state_dir.to_path_buf(),
            sections: Section::ALL.to_vec(),
            wait_load: 0.0,
            wait_max: Duration::ZERO,
            preamble: Vec::new(),
        }
    }

    /// The full run's defaults: 5 runs, 10 s of throughput, 120,000 generated
    /// files, a 1 GiB file, and the cargo registry's sources.
    pub fn full(workspace: &Path, cordon: &Path) -> Options {
        Options {
            smoke: false,
            runs: 5,
            seconds: 10.0,
            sizes: Sizes { files: 120_000, big_mib: 1024, peer_mib: vec![1, 8, 64, 256] },
            corpus_dir: workspace.join("target/bench-corpus"),
            real_tree: corpus::registry_sources(),
            wait_load: 0.8,
            wait_max: Duration::from_secs(40 * 60),
            ..Options::smoke(
                workspace,
                cordon,
                &workspace.join("target/bench-corpus"),
                &workspace.join("target/bench/state"),
            )
        }
    }
}

/// Runs the selected sections; the report carries every result and error.
pub fn run(opts: &Options) -> Report {
    let mut report = Report::default();
    let machine = machine::Machine::detect();
    report.preamble.push(format!(
        "Run of {} ({}), {} run(s) per measurement, median reported; contenders alternate run by run.",
        machine::today(),
        if opts.smoke { "smoke run on a tiny corpus: the numbers mean nothing" } else { "full run" },
        opts.runs
    ));
    report.preamble.push(String::new());
    report.preamble.push(format!("- Machine: {}.", machine.describe()));
    for (name, version) in opts.peers.versions(&opts.cordon, &opts.workspace) {
        report.preamble.push(format!("- {name}: {version}"));
    }
    for line in &opts.preamble {
        report.preamble.push(format!("- {line}"));
    }
    // The agent section brings its own tree: the corpus is made only for the others.
    let corpus = if opts.sections.iter().all(|s| *s == Section::Agent) {
        check_cordon(opts).map(|()| None)
    } else {
        prepare(opts).map(Some)
    };
    let corpus = match corpus {
        Ok(corpus) => corpus,
        Err(e) => {
            report.error("setup", e);
            return report;
        }
    };
    let mut trees = Vec::new();
    if let Some(corpus) = &corpus {
        trees.push(search::Tree {
            label: format!("generated tree ({} files)", stats::count(corpus.tree_files)),
            path: corpus.tree.clone(),
            files: corpus.tree_files,
            bytes: corpus.tree_bytes,
        });
        if let Some(real) = &opts.real_tree {
            let (files, bytes) = corpus::count_files(real);
            trees.push(search::Tree {
                label: format!("cargo registry sources ({} files)", stats::count(files)),
                path: real.clone(),
                files,
                bytes,
            });
        }
    }
    for section in &opts.sections {
        let waited = (opts.wait_load > 0.0).then(|| machine::wait_until_quiet(opts.wait_load, opts.wait_max));
        let (tables, before) = (report.tables.len(), machine::load().0);
        let outcome = match (section, &corpus) {
            (Section::Agent, _) => agent::run(opts, &mut report),
            (_, None) => Err(anyhow::anyhow!("no corpus")),
            (Section::Startup, Some(corpus)) => startup::run(opts, corpus, &mut report),
            (Section::Grep, _) => search::grep(opts, &trees, &mut report),
            (Section::Glob, _) => search::glob(opts, &trees, &mut report),
            (Section::Read, Some(corpus)) => read::run(opts, corpus, &mut report),
            (Section::Throughput, Some(corpus)) => throughput::run(opts, corpus, &mut report),
            (Section::Http, Some(corpus)) => http::run(opts, corpus, &mut report),
            (Section::Tokens, _) => tokens::run(opts, &trees, &mut report),
        };
        if let Err(e) = outcome {
            report.error(&format!("{section:?}"), e);
        }
        // The load says how much else ran beside the measurement.
        let after = machine::load().0;
        for table in &mut report.tables[tables..] {
            match &waited {
                Some(waited) => table.notes.push(format!("Load: {waited}; {after:.2} after this section.")),
                None => table.notes.push(format!("1-minute load: {before:.2} before this section, {after:.2} after.")),
            }
        }
    }
    let (one, five, _) = machine::load();
    report.preamble.push(format!("- Load at the end: {one:.2} (1 minute), {five:.2} (5 minutes)."));
    report
}

/// The corpus, and a warm compile cache in the state directory.
fn prepare(opts: &Options) -> Result<Corpus> {
    if !opts.cordon.is_file() {
        bail!("no cordon binary at {} (build it, or pass --cordon)", opts.cordon.display());
    }
    let corpus = corpus::prepare(&opts.corpus_dir, &opts.sizes)?;
    check_cordon(opts)?;
    Ok(corpus)
}

/// The `cordon` binary runs, and its compile cache in the state directory is warm.
fn check_cordon(opts: &Options) -> Result<()> {
    if !opts.cordon.is_file() {
        bail!("no cordon binary at {} (build it, or pass --cordon)", opts.cordon.display());
    }
    std::fs::create_dir_all(&opts.state_dir)?;
    let out = std::process::Command::new(&opts.cordon)
        .arg("tools")
        .arg("--state-dir")
        .arg(&opts.state_dir)
        .output()
        .context("running `cordon tools` to fill the compile cache")?;
    if !out.status.success() {
        bail!(
            "`cordon tools --state-dir {}` failed: {}",
            opts.state_dir.display(),
            String::from_utf8_lossy(&out.stderr).chars().take(500).collect::<String>()
        );
    }
    Ok(())
}

/// The longest any single server read may take before the harness gives up on it.
pub(crate) const WATCHDOG: Duration = Duration::from_secs(600);
