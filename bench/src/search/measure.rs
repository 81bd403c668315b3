//! What the search sections measure with: Cordon's shard configurations, the
//! timed runs (MCP pages, `cordon call --all`, a peer's process), what each
//! found, and the check that every contender found the same.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::Options;
use crate::contenders::{cordon_call, cordon_has_shards};
use crate::mcp::{Server, payload_text};
use crate::report::Report;
use crate::stats::{count, median_secs, secs};

/// The page size Cordon's searches use: its largest (fewest round trips).
pub const PAGE_TOKENS: u64 = 25_000;

/// What a search found: files and matches (grep), or files (glob).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Found {
    pub files: u64,
    pub matches: u64,
}

/// One contender's samples and what it found.
#[derive(Default)]
pub struct Samples {
    pub times: Vec<Duration>,
    pub found: Vec<Found>,
}

impl Samples {
    pub fn push(&mut self, (time, found): (Duration, Found)) {
        self.times.push(time);
        self.found.push(found);
    }

    pub fn median(&self) -> f64 {
        median_secs(&self.times)
    }

    pub fn cell(&self) -> String {
        if self.times.is_empty() { "not run".into() } else { secs(self.median()) }
    }
}

/// Cordon's shard configurations: one shard (one guest instance per call)
/// and N (`opts.threads`, the N of `rg -jN`), when this build has `--shards`.
#[derive(Clone, Copy, Debug)]
pub struct Shards {
    pub n: usize,
    /// Whether the build takes `--shards`; without it, it runs one instance.
    pub supported: bool,
}

impl Shards {
    /// Asks the build once (`cordon call --help`).
    pub fn detect(opts: &Options) -> Shards {
        Shards { n: opts.threads, supported: cordon_has_shards(&opts.cordon) }
    }

    /// The shard counts measured: 1 and N, or only 1 (the build's only way).
    pub fn counts(&self) -> Vec<usize> {
        if self.supported { vec![1, self.n] } else { vec![1] }
    }

    /// The flags for `shards` shards; none when the build has no `--shards`.
    pub fn flags(&self, shards: usize) -> Vec<String> {
        if self.supported { vec!["--shards".into(), shards.to_string()] } else { Vec::new() }
    }

    /// `1 shard`, `2 shards`.
    pub fn label(shards: usize) -> String {
        if shards == 1 { "1 shard".into() } else { format!("{shards} shards") }
    }

    /// The table note when the build has no `--shards`.
    pub fn note(&self) -> Option<String> {
        (!self.supported).then(|| {
            format!(
                "--shards not supported by this build: Cordon ran without it (one guest instance per call), in the \
                 1-shard columns; those for {} show `-`.",
                Shards::label(self.n)
            )
        })
    }
}

/// `&[String]` as `&[&str]`.
pub fn strs(flags: &[String]) -> Vec<&str> {
    flags.iter().map(String::as_str).collect()
}

/// Checks every run of every contender found the same; the table cell.
pub fn check_counts(report: &mut Report, what: &str, contenders: &[(&str, &Samples)]) -> String {
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
pub fn mcp_search(
    server: &mut Server,
    tool: &str,
    args: &Value,
    found: fn(&str) -> Found,
) -> Result<(Duration, Found)> {
    let start = Instant::now();
    let mut payload = String::new();
    let mut request = args.clone();
    request["max_tokens"] = PAGE_TOKENS.into();
    loop {
        let result = server.call(tool, request)?;
        payload.push_str(&payload_text(&result));
        match crate::mcp::next_cursor(&result).as_deref() {
            Some(cursor) => request = json!({"cursor": cursor, "max_tokens": PAGE_TOKENS}),
            None => break,
        }
    }
    Ok((start.elapsed(), found(&payload)))
}

/// `cordon call TOOL --all` with `extra` flags: the command.
pub fn call_command(opts: &Options, tool: &str, args: &Value, root: &Path, extra: &[&str]) -> Command {
    let mut args = args.clone();
    args["max_tokens"] = PAGE_TOKENS.into();
    cordon_call(&opts.cordon, tool, &args, root, &opts.state_dir, extra)
}

/// `cordon call TOOL --all` with `extra` flags, timed as a whole process.
pub fn call_search(
    opts: &Options,
    tool: &str,
    args: &Value,
    root: &Path,
    extra: &[&str],
    found: fn(&str) -> Found,
) -> Result<(Duration, Found)> {
    timed(call_command(opts, tool, args, root, extra), root, found, false)
}

/// Runs a command in `cwd` to its end, timed; it must exit 0, or 1 with no
/// output when `none_is_1` (rg: nothing found).
pub fn timed(mut cmd: Command, cwd: &Path, found: fn(&str) -> Found, none_is_1: bool) -> Result<(Duration, Found)> {
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
pub fn grep_found(payload: &str) -> Found {
    let mut found = Found::default();
    for line in payload.lines().filter(|l| !l.is_empty()) {
        let item: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        found.files += 1;
        found.matches += item["count"].as_u64().unwrap_or(0);
    }
    found
}

/// `rg -c`: `path:count` per line.
pub fn rg_count_found(out: &str) -> Found {
    let mut found = Found::default();
    for line in out.lines().filter(|l| !l.is_empty()) {
        found.files += 1;
        found.matches += line.rsplit(':').next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
    }
    found
}

/// One result per line (glob items, fd, rg --files).
pub fn lines_found(out: &str) -> Found {
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

    #[test]
    fn shard_flags() {
        let with = Shards { n: 4, supported: true };
        assert_eq!(with.counts(), vec![1, 4]);
        assert_eq!(with.flags(4), vec!["--shards".to_string(), "4".into()]);
        assert!(with.note().is_none());
        let without = Shards { n: 4, supported: false };
        assert_eq!(without.counts(), vec![1]);
        assert!(without.flags(1).is_empty());
        assert!(without.note().unwrap().starts_with("--shards not supported by this build"));
        assert_eq!(Shards::label(1), "1 shard");
        assert_eq!(Shards::label(2), "2 shards");
    }
}
