//! grep and glob throughput against ripgrep on the same tree, as a table.
//!
//! `cargo bench --bench search [-- --root DIR] [-- --runs N]`. The default tree
//! is the cargo registry's unpacked crate sources (a large real source tree
//! that is on every build machine). Each contender runs alternately, `runs`
//! times (default 5); the table gives medians, the ratio ripgrep/Cordon (1.0 =
//! as fast as ripgrep), and checks that the result counts are equal. ripgrep is
//! `$CORDON_BENCH_RG`, `target/interop/bin/rg`, or `rg`. Fails only on errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_cordon");

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let runs: usize = flag("--runs").and_then(|n| n.parse().ok()).unwrap_or(5);
    let root = flag("--root").map(PathBuf::from).unwrap_or_else(registry_sources).canonicalize().unwrap();
    let rg = std::env::var("CORDON_BENCH_RG").map(PathBuf::from).unwrap_or_else(|_| {
        let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/interop/bin/rg");
        if local.is_file() { local } else { PathBuf::from("rg") }
    });
    let state = tempfile::tempdir().unwrap();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let files = count_lines(Command::new(&rg).arg("--files").arg(&root));
    println!("\ntree: {} ({files} files that ripgrep searches), {runs} runs each, {cores} cores\n", root.display());
    println!(
        "| search | Cordon (`cordon call --all`) | rg -j1 | rg -j{cores} | rg -j1 / Cordon | rg -j{cores} / Cordon | results |"
    );
    println!("|---|---:|---:|---:|---:|---:|---|");
    for (label, pattern) in
        [("absent literal", "zqxjvkw_absent"), ("common literal", "fn "), ("regex with classes", "[A-Z][a-z]+Error")]
    {
        let cordon_args = serde_json::json!({ "pattern": pattern, "output_mode": "count" }).to_string();
        let mut ours = Vec::new();
        let mut one = Vec::new();
        let mut all = Vec::new();
        let (mut our_count, mut rg_count) = (0, 0);
        for _ in 0..runs {
            let (t, out) = time(cordon(&root, state.path(), "grep", &cordon_args));
            our_count = out
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter_map(|v| v["count"].as_u64())
                .sum();
            ours.push(t);
            let (t, out) = time(rg_cmd(&rg, &root, &["-j1", "-c", "--", pattern]));
            rg_count = out.lines().filter_map(|l| l.rsplit(':').next()?.parse::<u64>().ok()).sum();
            one.push(t);
            all.push(time(rg_cmd(&rg, &root, &[&format!("-j{cores}"), "-c", "--", pattern])).0);
        }
        row(&format!("grep, {label} `{pattern}`"), ours, one, all, our_count == rg_count, our_count, rg_count);
    }
    let glob_args = serde_json::json!({ "pattern": "**/*.rs" }).to_string();
    let (mut ours, mut one, mut all) = (Vec::new(), Vec::new(), Vec::new());
    let (mut our_count, mut rg_count) = (0, 0);
    for _ in 0..runs {
        let (t, out) = time(cordon(&root, state.path(), "glob", &glob_args));
        our_count = out.lines().count() as u64;
        ours.push(t);
        let (t, out) = time(rg_cmd(&rg, &root, &["-j1", "--files", "-g", "**/*.rs"]));
        rg_count = out.lines().count() as u64;
        one.push(t);
        all.push(time(rg_cmd(&rg, &root, &[&format!("-j{cores}"), "--files", "-g", "**/*.rs"])).0);
    }
    row("glob `**/*.rs`", ours, one, all, our_count == rg_count, our_count, rg_count);
}

fn registry_sources() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cargo"));
    let src = home.join("registry/src");
    std::fs::read_dir(&src)
        .expect("the cargo registry sources")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .next()
        .expect("an index dir")
}

fn cordon(root: &Path, state: &Path, tool: &str, args: &str) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["call", tool, "--all", "--max-page-tokens", "25000", "--page-tokens", "25000", "--json", args])
        .arg("--root")
        .arg(format!("{}:ro", root.display()))
        .arg("--state-dir")
        .arg(state);
    cmd
}

fn rg_cmd(rg: &Path, root: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(rg);
    cmd.arg("--sort").arg("path").args(args).current_dir(root);
    cmd
}

fn time(mut cmd: Command) -> (Duration, String) {
    let t = Instant::now();
    let out = cmd.stderr(Stdio::null()).output().unwrap();
    let elapsed = t.elapsed();
    assert!(out.status.success() || out.status.code() == Some(1), "{cmd:?} failed");
    (elapsed, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn count_lines(cmd: &mut Command) -> usize {
    String::from_utf8_lossy(&cmd.output().unwrap().stdout).lines().count()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn row(label: &str, ours: Vec<Duration>, one: Vec<Duration>, all: Vec<Duration>, equal: bool, a: u64, b: u64) {
    let (o, r1, rn) = (median(ours), median(one), median(all));
    let check = if equal { format!("equal ({a})") } else { format!("DIFFER: Cordon {a}, rg {b}") };
    println!(
        "| {label} | {:.3} s | {:.3} s | {:.3} s | {:.2}x | {:.2}x | {check} |",
        o.as_secs_f64(),
        r1.as_secs_f64(),
        rn.as_secs_f64(),
        r1.as_secs_f64() / o.as_secs_f64(),
        rn.as_secs_f64() / o.as_secs_f64()
    );
}
