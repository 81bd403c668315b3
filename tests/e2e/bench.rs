//! The benchmark harness (`bench/`, `cordon-bench`) in its smoke mode: every
//! section on a tiny corpus against this build's binary, checked for
//! completeness and errors, never for speed.

use std::path::Path;
use std::time::Instant;

use crate::support::{cordon_bin, shared_state_dir, workspace};

#[test]
fn smoke_run_reports_every_section_without_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = cordon_bench::Options::smoke(
        &workspace(),
        Path::new(cordon_bin()),
        &dir.path().join("corpus"),
        &shared_state_dir(),
    );
    // The suite's ripgrep (installed on first use); fd and the reference server
    // are compared when installed (a full run installs them) and noted otherwise.
    opts.peers.rg = Some(crate::corpus::ripgrep());
    let started = Instant::now();
    let report = cordon_bench::run(&opts);
    let elapsed = started.elapsed();
    let text = report.markdown();
    eprintln!("{text}\nthe smoke run took {:.1} s", elapsed.as_secs_f64());
    assert!(report.errors.is_empty(), "the smoke run had errors:\n{text}");
    for heading in [
        "## Start-up",
        "## grep: generated tree",
        "## glob: generated tree",
        "## Reading a 4 MiB file to the end",
        "## Small-call throughput and latency",
        // Run when Claude Code is installed, else a note that it was skipped.
        "## Agent steps through Claude Code: Cordon against the built-in tools",
        "## Errors\n\nNone.",
    ] {
        assert!(text.contains(heading), "no {heading:?} in the report:\n{text}");
    }
    for row in [
        "| cold: the first `tools/list` answer |",
        "| cold: the first answered `read` |",
        "| warm: the first `tools/list` answer |",
        "| warm: the first answered `read` |",
        "| common literal `fn `",
        "| `**/*.rs` |",
        "| Cordon | 4 MiB | 25,000 tokens",
        "| Cordon: 8 processes, one client each |",
        "| Cordon: 1 process, one session, 8 calls in flight |",
    ] {
        assert!(text.contains(row), "no {row:?} row in the report:\n{text}");
    }
    assert!(!text.contains("DIFFER"), "result counts differ:\n{text}");
    if opts.peers.peer(&[dir.path()]).is_none() {
        assert!(text.contains("The reference server was not run"), "{text}");
    }
}
