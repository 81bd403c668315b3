//! Syscalls per file: `strace -f -c` of one search per tree, Cordon's
//! `cordon call --all` against ordered ripgrep, in runs of their own that
//! are never timed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use super::Tree;
use crate::report::Table;
use crate::stats::{count, ratio, sig3};

/// The rows: a label and the syscalls summed into it.
const ROWS: [(&str, &[&str]); 5] = [
    ("statx", &["statx"]),
    ("openat + openat2", &["openat", "openat2"]),
    ("getdents64", &["getdents64"]),
    ("read + pread64", &["read", "pread64"]),
    ("close", &["close"]),
];

/// Waits whose count grows with the wall time (which strace stretches), not
/// with the work: thread parking and the epoch timer's ticks.
const WAITS: [&str; 2] = ["futex", "clock_nanosleep"];

/// Cordon's per-call time limit under strace, which slows it several-fold.
pub const TIMEOUT_FLAGS: [&str; 2] = ["--timeout-secs", "3600"];

/// `strace -c`'s summary: calls per syscall, and the total.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub calls: BTreeMap<String, u64>,
    pub total: u64,
}

impl Summary {
    /// The calls of `names`, summed.
    pub fn sum(&self, names: &[&str]) -> u64 {
        names.iter().filter_map(|name| self.calls.get(*name)).sum()
    }
}

/// Parses `strace -c`'s table (`% time, seconds, usecs/call, calls, errors,
/// syscall`; the errors cell may be empty), ending in a `total` line.
pub fn parse_summary(text: &str) -> Result<Summary> {
    let mut summary = Summary::default();
    let mut saw_total = false;
    for line in text.lines() {
        let cells: Vec<&str> = line.split_whitespace().collect();
        if cells.len() < 5 || cells[0].parse::<f64>().is_err() {
            continue; // the header, the rules, anything else
        }
        let (Ok(calls), Some(name)) = (cells[3].parse::<u64>(), cells.last()) else { continue };
        if *name == "total" {
            summary.total = calls;
            saw_total = true;
        } else {
            *summary.calls.entry(name.to_string()).or_default() += calls;
        }
    }
    if !saw_total {
        bail!("no `total` line in strace's summary: {}", text.chars().take(300).collect::<String>());
    }
    Ok(summary)
}

/// Runs `cmd` in `cwd` under `strace -f -c` and parses the summary; the
/// command must exit 0, or 1 when `one_is_ok` (rg: nothing found).
pub fn trace(strace: &Path, cmd: &Command, cwd: &Path, one_is_ok: bool) -> Result<Summary> {
    let out_file = summary_file();
    let mut traced = Command::new(strace);
    traced
        .args(["-f", "-c", "-o"])
        .arg(&out_file)
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .current_dir(cwd)
        .env_remove("RIPGREP_CONFIG_PATH")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let out = traced.output().with_context(|| format!("running {traced:?}"));
    let text = std::fs::read_to_string(&out_file);
    let _ = std::fs::remove_file(&out_file);
    let out = out?;
    let exited_ok = out.status.success() || (one_is_ok && out.status.code() == Some(1));
    if !exited_ok {
        bail!(
            "{traced:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).chars().take(300).collect::<String>()
        );
    }
    parse_summary(&text.with_context(|| format!("reading strace's summary {}", out_file.display()))?)
}

fn summary_file() -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "cordon-bench-strace-{}-{}.txt",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// One search traced: the table's title and intro, Cordon's commands (a
/// label per shard configuration) and ripgrep's.
pub struct Traced {
    pub title: String,
    pub intro: String,
    pub cordon: Vec<(String, Command)>,
    pub rg: Option<Command>,
}

/// Traces each command once and tabulates the calls per file of the tree.
pub fn table(strace: Option<&Path>, tree: &Tree, traced: Traced) -> Table {
    let mut header = vec!["syscall, calls per file".to_string()];
    header.extend(traced.cordon.iter().map(|(label, _)| format!("Cordon, {label}")));
    header.push("rg".into());
    header.extend(traced.cordon.iter().map(|(label, _)| format!("Cordon ({label}) ÷ rg")));
    let mut table = Table { title: traced.title, header, ..Table::default() };
    table.intro.push(format!(
        "{} Each command runs once under `strace -f -c` (every thread counted), apart from the timed runs. Per \
         file: calls ÷ the tree's {} files (every file on disk, ignored and hidden ones included; the same divisor \
         for both, so the ratio is that of the calls). `futex` and `clock_nanosleep` (parked threads, the epoch \
         timer's ticks) grow with the wall time, which strace stretches; the last row leaves them out.",
        traced.intro,
        count(tree.files)
    ));
    let Some(strace) = strace else {
        table.notes.push("Not run: `strace` was not found (PATH, or CORDON_BENCH_STRACE).".into());
        return table;
    };
    let mut run = |label: &str, cmd: &Command, one_is_ok: bool| match trace(strace, cmd, &tree.path, one_is_ok) {
        Ok(summary) => Some(row_calls(&summary)),
        Err(e) => {
            table.notes.push(format!("{label} under strace failed: {e:#}"));
            None
        }
    };
    let ours: Vec<Option<Vec<u64>>> =
        traced.cordon.iter().map(|(label, cmd)| run(&format!("Cordon, {label}"), cmd, false)).collect();
    let theirs = match &traced.rg {
        Some(cmd) => run("rg", cmd, true),
        None => {
            table.notes.push("rg was not run: not installed.".into());
            None
        }
    };
    let files = tree.files.max(1) as f64;
    for (i, label) in row_labels().into_iter().enumerate() {
        let mut row = vec![label.to_string()];
        let cell = |calls: &Option<Vec<u64>>| calls.as_ref().map_or("-".into(), |c| per_file(c[i] as f64 / files));
        row.extend(ours.iter().map(cell));
        row.push(cell(&theirs));
        for calls in &ours {
            row.push(match (calls, &theirs) {
                (Some(a), Some(b)) => ratio(a[i] as f64, b[i] as f64),
                _ => "-".into(),
            });
        }
        table.row(row);
    }
    let totals: Vec<String> = traced
        .cordon
        .iter()
        .zip(&ours)
        .filter_map(|((label, _), c)| c.as_ref().map(|c| format!("Cordon, {label}: {}", count(c[TOTAL]))))
        .chain(theirs.as_ref().map(|c| format!("rg: {}", count(c[TOTAL]))))
        .collect();
    if !totals.is_empty() {
        table.notes.push(format!("Calls in all: {}.", totals.join("; ")));
    }
    table
}

/// The rows' labels: [`ROWS`], then the totals.
fn row_labels() -> Vec<&'static str> {
    let mut labels: Vec<&str> = ROWS.iter().map(|(label, _)| *label).collect();
    labels.extend(["total", "total, less futex and clock_nanosleep"]);
    labels
}

/// Where the total is among [`row_calls`].
const TOTAL: usize = ROWS.len();

/// A summary's calls per row of [`row_labels`].
fn row_calls(summary: &Summary) -> Vec<u64> {
    let mut calls: Vec<u64> = ROWS.iter().map(|(_, names)| summary.sum(names)).collect();
    calls.push(summary.total);
    calls.push(summary.total.saturating_sub(summary.sum(&WAITS)));
    calls
}

/// Calls per file: three significant digits, at most three decimals.
fn per_file(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x >= 1.0 {
        sig3(x)
    } else if x >= 0.001 {
        format!("{x:.3}")
    } else {
        "<0.001".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_strace_summaries() {
        let text = "\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ------------------
 39.94   20.706286       16698      1240      1229 futex
  7.80    4.044283          10    370871         2 statx
  6.17    3.197819          13    240005           pread64
  3.15    1.632440          12    135233     12631 openat2
  0.11    0.058575          11      5195         1 openat
  0.01    0.003254          61        53           read
  0.00    0.000000           0         1           set_tid_address
------ ----------- ----------- --------- --------- ------------------
100.00   51.842260          57    752598     13874 total
";
        let summary = parse_summary(text).unwrap();
        assert_eq!(summary.total, 752_598);
        assert_eq!(summary.sum(&["statx"]), 370_871);
        assert_eq!(summary.sum(&["openat", "openat2"]), 140_428);
        assert_eq!(summary.sum(&["read", "pread64"]), 240_058);
        assert_eq!(summary.sum(&["close", "getdents64"]), 0);
        assert_eq!(summary.sum(&WAITS), 1240);
        assert!(parse_summary("strace: ptrace(PTRACE_TRACEME, ...): Operation not permitted\n").is_err());
        assert_eq!(per_file(2.9412), "2.94");
        assert_eq!(per_file(0.0432), "0.043");
        assert_eq!(per_file(0.0), "0");
    }
}
