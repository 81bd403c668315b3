//! grep and glob: Cordon over MCP stdio and through `cordon call --all`,
//! against `rg -jN` (grep), and `fd` and `rg --files` (glob), on each tree;
//! result counts are checked equal.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::Options;
use crate::contenders::{cordon_call, cordon_serve};
use crate::mcp::{Server, payload_text};
use crate::report::{Report, Table};
use crate::stats::{count, median_secs, ratio, secs};

/// A tree searched.
#[derive(Clone, Debug)]
pub struct Tree {
    pub label: String,
    pub path: PathBuf,
    pub files: u64,
    pub bytes: u64,
}

/// The page size Cordon's searches use: its largest (fewest round trips).
const PAGE_TOKENS: u64 = 25_000;

const PATTERNS: [(&str, &str); 3] = [
    ("absent literal", "zqxjvkw_absent"),
    ("common literal", "fn "),
    ("regex with character classes", "[A-Z][a-z]+Error"),
];

/// What a search found: files and matches (grep), or files (glob).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Found {
    files: u64,
    matches: u64,
}

/// One contender's samples and what it found.
#[derive(Default)]
struct Samples {
    times: Vec<Duration>,
    found: Vec<Found>,
}

impl Samples {
    fn push(&mut self, (time, found): (Duration, Found)) {
        self.times.push(time);
        self.found.push(found);
    }

    fn median(&self) -> f64 {
        median_secs(&self.times)
    }

    fn cell(&self) -> String {
        if self.times.is_empty() { "not run".into() } else { secs(self.median()) }
    }
}

pub fn grep(opts: &Options, trees: &[Tree], report: &mut Report) -> Result<()> {
    let n = opts.threads;
    for tree in trees {
        let launch = cordon_serve(&opts.cordon, &[&tree.path], &opts.state_dir, &[]);
        let mut server = Server::start(&launch)?;
        let mut table = Table::new(
            &format!("grep: {}", tree.label),
            &[
                "pattern",
                "Cordon, MCP stdio",
                "Cordon, `cordon call --all`",
                "rg -j1",
                &format!("rg -j{n}"),
                "Cordon (MCP) speed vs rg -j1",
                &format!("vs rg -j{n}"),
                "result counts",
            ],
        );
        table.intro.push(intro(tree, opts.runs));
        table.intro.push(format!(
            "Cordon: `grep` with `output_mode: \"count\"` and {PAGE_TOKENS}-token pages. *MCP stdio* is request to \
             last page on a running server (one session, compile cache warm); *`cordon call --all`* is the whole \
             process (start, loading the compiled tools, every page). Cordon's grep runs in one guest instance \
             (one thread) per call, so `rg -j1` is the like-for-like comparison; `rg -j{n}` uses every core. \
             ripgrep: `rg -c -jN --no-require-git --no-ignore-global PATTERN` (Cordon honours `.gitignore` \
             without a `.git`), unsorted. Speed ratios are rg's time ÷ Cordon's (>1: Cordon faster)."
        ));
        for (label, pattern) in PATTERNS {
            let args = json!({"pattern": pattern, "output_mode": "count", "format": "json"});
            let (mut mcp, mut call, mut one, mut all) = Default::default();
            for _ in 0..opts.runs {
                Samples::push(&mut mcp, mcp_search(&mut server, "grep", &args, grep_found)?);
                Samples::push(&mut call, call_search(opts, "grep", &args, &tree.path, grep_found)?);
                if let Some(rg) = &opts.peers.rg {
                    let flags = ["-c", "--no-require-git", "--no-ignore-global"];
                    let run = |j: usize| {
                        let mut cmd = Command::new(rg);
                        cmd.arg(format!("-j{j}")).args(flags).arg("-e").arg(pattern);
                        timed(cmd, &tree.path, rg_count_found, true)
                    };
                    Samples::push(&mut one, run(1)?);
                    Samples::push(&mut all, run(n)?);
                }
            }
            let check = check_counts(
                report,
                &format!("grep {pattern:?} on {}", tree.label),
                &[
                    ("Cordon over MCP", &mcp),
                    ("cordon call --all", &call),
                    ("rg -j1", &one),
                    (&format!("rg -j{n}"), &all),
                ],
            );
            table.row(vec![
                format!("{label} `{pattern}`"),
                mcp.cell(),
                call.cell(),
                one.cell(),
                all.cell(),
                ratio(one.median(), mcp.median()),
                ratio(all.median(), mcp.median()),
                check,
            ]);
        }
        if opts.peers.rg.is_none() {
            table.notes.push(missing("ripgrep", "rg"));
        }
        server.finish();
        report.push(table);
    }
    Ok(())
}

pub fn glob(opts: &Options, trees: &[Tree], report: &mut Report) -> Result<()> {
    let n = opts.threads;
    let pattern = "**/*.rs";
    for tree in trees {
        let launch = cordon_serve(&opts.cordon, &[&tree.path], &opts.state_dir, &[]);
        let mut server = Server::start(&launch)?;
        let mut table = Table::new(
            &format!("glob: {}", tree.label),
            &[
                "glob",
                "Cordon, MCP stdio",
                "Cordon, `cordon call --all`",
                "fd -j1",
                &format!("fd -j{n}"),
                "rg --files -j1",
                &format!("rg --files -j{n}"),
                "Cordon (MCP) speed vs fd -j1",
                &format!("vs fd -j{n}"),
                &format!("vs rg --files -j{n}"),
                "results",
            ],
        );
        table.intro.push(intro(tree, opts.runs));
        table.intro.push(format!(
            "Cordon: `glob` with `pattern: \"{pattern}\"` and {PAGE_TOKENS}-token pages, results in path order (MCP \
             stdio and `cordon call --all` as for grep; one guest instance). fd: `fd -jN -t f -g '*.rs' \
             --no-global-ignore-file` (unsorted); ripgrep: `rg --files -jN -g '{pattern}' --no-ignore-global` \
             (unsorted). Like them, and unlike Cordon's grep, Cordon's glob reads `.gitignore` only inside a git \
             repository (the generated tree has a `.git`). Speed ratios are the peer's time ÷ Cordon's \
             (>1: Cordon faster)."
        ));
        let args = json!({"pattern": pattern, "format": "json"});
        let (mut mcp, mut call, mut fd1, mut fdn, mut rg1, mut rgn) = Default::default();
        for _ in 0..opts.runs {
            Samples::push(&mut mcp, mcp_search(&mut server, "glob", &args, lines_found)?);
            Samples::push(&mut call, call_search(opts, "glob", &args, &tree.path, lines_found)?);
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
                let run = |j: usize| {
                    let mut cmd = Command::new(rg);
                    cmd.arg(format!("-j{j}")).args(["--files", "-g", pattern, "--no-ignore-global"]);
                    timed(cmd, &tree.path, lines_found, true)
                };
                Samples::push(&mut rg1, run(1)?);
                Samples::push(&mut rgn, run(n)?);
            }
        }
        let mut check = check_counts(
            report,
            &format!("glob {pattern:?} on {}", tree.label),
            &[
                ("Cordon over MCP", &mcp),
                ("cordon call --all", &call),
                ("rg --files -j1", &rg1),
                (&format!("rg --files -j{n}"), &rgn),
            ],
        );
        // fd's glob is not an override the way rg's `-g` is (rg, and Cordon, list a
        // hidden or ignored *file* that a glob names), so it may differ on real trees.
        if let (Some(ours), Some(theirs)) = (mcp.found.first(), fd1.found.first())
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
        table.row(vec![
            format!("`{pattern}`"),
            mcp.cell(),
            call.cell(),
            fd1.cell(),
            fdn.cell(),
            rg1.cell(),
            rgn.cell(),
            ratio(fd1.median(), mcp.median()),
            ratio(fdn.median(), mcp.median()),
            ratio(rgn.median(), mcp.median()),
            check,
        ]);
        if opts.peers.fd.is_none() {
            table.notes.push(missing("fd", "fd-find"));
        }
        if opts.peers.rg.is_none() {
            table.notes.push(missing("ripgrep", "rg"));
        }
        server.finish();
        report.push(table);
    }
    Ok(())
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

/// Checks every run of every contender found the same; the table cell.
fn check_counts(report: &mut Report, what: &str, contenders: &[(&str, &Samples)]) -> String {
    let reference = contenders.iter().find_map(|(_, s)| s.found.first().copied()).unwrap_or_default();
    let mut differ = Vec::new();
    for (name, samples) in contenders {
        for found in &samples.found {
            if *found != reference {
                differ.push(format!("{name}: {} files, {} matches", found.files, found.matches));
                break;
            }
        }
    }
    if differ.is_empty() {
        if reference.matches > 0 {
            format!("equal ({} in {} files)", count(reference.matches), count(reference.files))
        } else {
            format!("equal ({})", count(reference.files))
        }
    } else {
        report.error(
            "counts",
            format!(
                "{what}: results differ: first {} files, {} matches; {}",
                reference.files,
                reference.matches,
                differ.join("; ")
            ),
        );
        format!("DIFFER: {}", differ.join("; "))
    }
}

/// Every page of a search on a running server: the time from the first
/// request to the last answer, and what was found.
fn mcp_search(server: &mut Server, tool: &str, args: &Value, found: fn(&str) -> Found) -> Result<(Duration, Found)> {
    let start = Instant::now();
    let mut payload = String::new();
    let mut request = args.clone();
    request["max_tokens"] = PAGE_TOKENS.into();
    loop {
        let result = server.call(tool, request)?;
        payload.push_str(&payload_text(&result));
        match result["structuredContent"]["next_cursor"].as_str() {
            Some(cursor) => request = json!({"cursor": cursor, "max_tokens": PAGE_TOKENS}),
            None => break,
        }
    }
    Ok((start.elapsed(), found(&payload)))
}

/// `cordon call TOOL --all`, timed as a whole process.
fn call_search(
    opts: &Options,
    tool: &str,
    args: &Value,
    root: &Path,
    found: fn(&str) -> Found,
) -> Result<(Duration, Found)> {
    let mut args = args.clone();
    args["max_tokens"] = PAGE_TOKENS.into();
    let cmd = cordon_call(&opts.cordon, tool, &args, root, &opts.state_dir);
    timed(cmd, root, found, false)
}

/// Runs a command in `cwd` to its end, timed; it must exit 0, or 1 with no
/// output when `none_is_1` (rg: nothing found).
fn timed(mut cmd: Command, cwd: &Path, found: fn(&str) -> Found, none_is_1: bool) -> Result<(Duration, Found)> {
    cmd.current_dir(cwd).env_remove("RIPGREP_CONFIG_PATH").stdin(Stdio::null());
    let start = Instant::now();
    let out = cmd.output().with_context(|| format!("running {cmd:?}"))?;
    let elapsed = start.elapsed();
    let nothing_found = none_is_1 && out.status.code() == Some(1) && out.stdout.is_empty();
    if !out.status.success() && !nothing_found {
        bail!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).chars().take(300).collect::<String>()
        );
    }
    Ok((elapsed, found(&String::from_utf8_lossy(&out.stdout))))
}

/// Cordon's count items, `{"path", "count"}` per line.
fn grep_found(payload: &str) -> Found {
    let mut found = Found::default();
    for line in payload.lines().filter(|l| !l.is_empty()) {
        let item: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        found.files += 1;
        found.matches += item["count"].as_u64().unwrap_or(0);
    }
    found
}

/// `rg -c`: `path:count` per line.
fn rg_count_found(out: &str) -> Found {
    let mut found = Found::default();
    for line in out.lines().filter(|l| !l.is_empty()) {
        found.files += 1;
        found.matches += line.rsplit(':').next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
    }
    found
}

/// One result per line (glob items, fd, rg --files).
fn lines_found(out: &str) -> Found {
    Found { files: out.lines().filter(|l| !l.is_empty()).count() as u64, matches: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting() {
        let ours = "{\"path\":\"/a/b.rs\",\"count\":3}\n{\"path\":\"/a/c:d.rs\",\"count\":2}\n";
        assert_eq!(grep_found(ours), Found { files: 2, matches: 5 });
        assert_eq!(rg_count_found("b.rs:3\nc:d.rs:2\n"), Found { files: 2, matches: 5 });
        assert_eq!(lines_found("a\nb\n\n"), Found { files: 2, matches: 0 });
        assert_eq!(grep_found(""), Found::default());
    }
}
