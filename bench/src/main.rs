//! `cordon-bench`: Cordon side by side with ripgrep, fd and the reference MCP
//! filesystem server. See the README's "Performance" section.
//!
//! `cargo run --release -p cordon-bench` runs everything (installing the peers
//! into `target/interop` when missing) and writes `target/bench/report.md`;
//! `--smoke` runs every section on a tiny corpus. Exit 0 unless something
//! failed; never because of speed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use cordon_bench::{Options, Section, machine};

/// Benchmarks the `cordon` binary against ripgrep, fd and the reference MCP
/// filesystem server, and writes a Markdown report.
#[derive(Parser, Debug)]
#[command(name = "cordon-bench")]
struct Cli {
    /// A smoke run: every section on a tiny corpus, 1 run, 1 s of throughput;
    /// missing peers are skipped, nothing is installed, no waiting for a quiet machine.
    #[arg(long)]
    smoke: bool,
    /// The `cordon` binary [default: target/release/cordon; for --smoke, target/debug/cordon if there is no release build].
    #[arg(long, value_name = "PATH")]
    cordon: Option<PathBuf>,
    /// Runs per measurement; the median is reported [default: 5; smoke: 1].
    #[arg(long, value_name = "N")]
    runs: Option<usize>,
    /// Seconds per throughput run [default: 10; smoke: 1].
    #[arg(long, value_name = "S")]
    seconds: Option<f64>,
    /// Concurrent clients in the throughput runs.
    #[arg(long, value_name = "N", default_value_t = 8)]
    clients: usize,
    /// N for `rg -jN` and `fd -jN`, and Cordon's `--shards N` [default: the number of cores].
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// Skip the syscall counts (`strace -f -c` of one grep and one glob per tree, untimed).
    #[arg(long)]
    no_syscalls: bool,
    /// Files in the generated tree [default: 120000; smoke: 300].
    #[arg(long, value_name = "N")]
    files: Option<u64>,
    /// Size of the file read to the end, in MiB [default: 1024; smoke: 4].
    #[arg(long, value_name = "MIB")]
    big_mib: Option<u64>,
    /// Smaller files the reference server reads first, in MiB, comma-separated [default: 1,8,64,256; smoke: 1].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    peer_mib: Option<Vec<u64>>,
    /// A real source tree to search besides the generated one [default: the cargo registry's
    /// sources, ~/.cargo/registry/src; smoke: none].
    #[arg(long, value_name = "DIR")]
    tree: Option<PathBuf>,
    /// Search the generated tree only.
    #[arg(long, conflicts_with = "tree")]
    no_real_tree: bool,
    /// Where the generated corpus is kept and reused [default: target/bench-corpus; smoke: target/bench-corpus/smoke].
    #[arg(long, value_name = "DIR")]
    corpus_dir: Option<PathBuf>,
    /// Cordon's state directory (compile cache) for the warm runs [default: target/bench/state].
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Where to write the Markdown report [default: target/bench/report.md; smoke: target/bench/smoke.md].
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Run only these sections (repeatable, or comma-separated).
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<Section>,
    /// Do not install missing peers (they are then skipped, with a note).
    #[arg(long)]
    no_install: bool,
    /// Before each section, wait until the 1-minute load is below this (0: do not wait)
    /// [default: 0.8; smoke: 0].
    #[arg(long, value_name = "LOAD")]
    wait_load: Option<f64>,
    /// The longest wait for a quiet machine, in minutes; then it runs anyway and says so.
    #[arg(long, value_name = "MIN", default_value_t = 40.0)]
    wait_max_mins: f64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf();
    let cordon = cli.cordon.clone().unwrap_or_else(|| cordon_bench::contenders::default_cordon(&workspace, cli.smoke));
    let mut opts = if cli.smoke {
        Options::smoke(
            &workspace,
            &cordon,
            &workspace.join("target/bench-corpus/smoke"),
            &workspace.join("target/bench/state"),
        )
    } else {
        Options::full(&workspace, &cordon)
    };
    opts.runs = cli.runs.unwrap_or(opts.runs).max(1);
    opts.seconds = cli.seconds.unwrap_or(opts.seconds);
    opts.clients = cli.clients.max(1);
    opts.threads = cli.threads.unwrap_or(opts.threads).max(1);
    opts.syscalls = !cli.no_syscalls;
    opts.sizes.files = cli.files.unwrap_or(opts.sizes.files);
    opts.sizes.big_mib = cli.big_mib.unwrap_or(opts.sizes.big_mib).max(1);
    opts.sizes.peer_mib = cli.peer_mib.unwrap_or(opts.sizes.peer_mib);
    if let Some(tree) = cli.tree {
        opts.real_tree = Some(tree.canonicalize().unwrap_or(tree));
    }
    if cli.no_real_tree {
        opts.real_tree = None;
    }
    if let Some(dir) = cli.corpus_dir {
        opts.corpus_dir = dir;
    }
    if let Some(dir) = cli.state_dir {
        opts.state_dir = dir;
    }
    if !cli.only.is_empty() {
        opts.sections = Section::ALL.into_iter().filter(|s| cli.only.contains(s)).collect();
    }
    let out = cli
        .out
        .unwrap_or_else(|| workspace.join(if cli.smoke { "target/bench/smoke.md" } else { "target/bench/report.md" }));
    if !cli.smoke
        && !cli.no_install
        && let Err(e) = opts.peers.install_missing(&workspace)
    {
        eprintln!("cordon-bench: {e:#}");
        return ExitCode::from(2);
    }
    opts.wait_load = cli.wait_load.unwrap_or(opts.wait_load).max(0.0);
    opts.wait_max = Duration::from_secs_f64(cli.wait_max_mins.max(0.0) * 60.0);
    let (one, five, _) = machine::load();
    opts.preamble.push(format!(
        "Load at the start: {one:.2} (1 minute), {five:.2} (5 minutes); {}.",
        if opts.wait_load > 0.0 {
            format!("before each section the run waits until the 1-minute load is below {}", opts.wait_load)
        } else {
            "not waited for".into()
        }
    ));

    let report = cordon_bench::run(&opts);
    let text = report.markdown();
    if let Some(dir) = out.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Err(e) = std::fs::write(&out, &text) {
        eprintln!("cordon-bench: writing {}: {e}", out.display());
        return ExitCode::from(2);
    }
    eprintln!("cordon-bench: report written to {}", out.display());
    if report.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!("cordon-bench: {} error(s); see the report", report.errors.len());
        ExitCode::FAILURE
    }
}
