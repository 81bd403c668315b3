//! Pages bounded by time: a search that runs past the call's time limit is
//! answered in pages that end on time, each with what it found (possibly
//! nothing) and a continuation at the exact point reached; following them
//! gives exactly the unbounded result, also when every page reopens its
//! stream, and `cordon call --all` finishes under the same limit.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::{Fixture, Server, cordon_bin, page_meta, read_all, read_all_reopened};

/// A root of `copies` hard links to one 256 KiB text file that never
/// matches, with a small file that does after every 400th: a long search that
/// costs no disk and finds little. The files are small next to a page's
/// margin (a quarter of its time), so that a page ends on time between two
/// of them even on a slow, busy machine.
fn sparse_search_root(fx: &Fixture, copies: usize) {
    let line = "alpha beta gamma delta epsilon zeta theta lambda sigma omega\n";
    let first = fx.write("big-0000.txt", line.repeat((256 << 10) / line.len()));
    for i in 1..copies {
        std::fs::hard_link(&first, fx.root().join(format!("big-{i:04}.txt"))).unwrap();
        if i % 400 == 200 {
            fx.write(&format!("big-{i:04}-needle.txt"), format!("hay\nzqx needle {i}\n"));
        }
    }
}

/// The payload of `cordon call TOOL --all` over `root` with `flags`.
fn call_all(root: &Path, tool: &str, args: &Value, flags: &[&str]) -> Vec<u8> {
    let out = Command::new(cordon_bin())
        .args(["call", tool, "--all", "--root"])
        .arg(root)
        .args(flags)
        .args(["--json", &args.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// How many of `pages` (in the JSON form) ended on time; each that did
/// says how far the work got and continues.
fn ended_on_time(pages: &[Value]) -> usize {
    let timed: Vec<&Value> = pages.iter().filter(|p| p["structuredContent"]["ended"] == "time").collect();
    for page in &timed {
        assert_eq!(page_meta(page)["ended"], "time", "{page}");
        let shown = &page["structuredContent"];
        assert!(shown["files_searched"].is_u64() && shown["next_cursor"].is_string(), "{page}");
    }
    timed.len()
}

#[test]
fn a_search_past_the_time_limit_is_answered_in_pages_that_end_on_time_and_add_up_exactly() {
    let fx = Fixture::new();
    sparse_search_root(&fx, 2_400);
    let root = fx.root();
    let args = json!({"pattern": "zqx needle", "format": "json"});
    let unbounded = call_all(&root, "grep", &args, &[]);
    assert_eq!(unbounded.iter().filter(|&&b| b == b'\n').count(), 6, "{}", String::from_utf8_lossy(&unbounded));
    // 600 MiB to search (seconds in a debug build) under a limit of 0.5 s a page.
    let limit = ["--timeout-secs", "0.5"];
    let mut server = Server::initialized(&root, &limit);
    let (got, pages) = read_all(&mut server, "grep", args.clone(), 25_000);
    assert!(got == unbounded, "time-bounded pages differ from the unbounded search");
    let timed = ended_on_time(&pages);
    assert!(timed >= 2, "{} pages, {timed} ended on time", pages.len());
    assert!(pages.last().unwrap()["structuredContent"]["complete"] == true);
    // Every page reopens its stream from the cursor (nothing is parked).
    let mut reopening = Server::initialized(&root, &["--timeout-secs", "0.5", "--max-parked-streams", "0"]);
    let other = json!({"pattern": "omega", "output_mode": "count", "path": "big-0001.txt"});
    let (got, reopened) = read_all_reopened(&mut reopening, "grep", args.clone(), other, 25_000);
    assert!(got == unbounded, "pages reopened at their cursors differ from the unbounded search");
    assert!(reopened >= 3, "{reopened} pages");
    // A program following every cursor finishes under the same limit, on one shard and on several.
    for shards in ["1", "2"] {
        let flags = ["--timeout-secs", "0.5", "--shards", shards];
        assert!(call_all(&root, "grep", &args, &flags) == unbounded, "`cordon call --all` at {shards} shards");
    }
}

#[test]
fn a_huge_glob_that_matches_little_ends_its_pages_on_time_and_adds_up_exactly() {
    let fx = Fixture::new();
    for d in 0..40 {
        for f in 0..150 {
            let name = if f == 75 && d % 10 == 3 { "match.rs" } else { "plain.txt" };
            let path = fx.root().join(format!("d{d:02}/f{f:03}-{name}"));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
    }
    let root = fx.root();
    let args = json!({"pattern": "**/*.rs", "format": "json"});
    let mut unbounded = Server::initialized(&root, &[]);
    let (want, _) = read_all(&mut unbounded, "glob", args.clone(), 25_000);
    assert_eq!(want.iter().filter(|&&b| b == b'\n').count(), 4, "{}", String::from_utf8_lossy(&want));
    // A page time of 1 ms: every page ends at the first checkpoint it passes.
    for shards in ["1", "2"] {
        let mut server = Server::initialized(&root, &["--page-ms", "1", "--shards", shards]);
        let (got, pages) = read_all(&mut server, "glob", args.clone(), 25_000);
        assert!(got == want, "{shards} shards: time-bounded pages differ from the unbounded glob");
        let timed = pages.iter().filter(|p| p["structuredContent"]["ended"] == "time").count();
        assert!(timed >= 2, "{shards} shards: {} pages, {timed} ended on time", pages.len());
    }
}

#[test]
fn pages_ended_on_time_render_the_text_form_exactly_as_unbounded_ones() {
    // Files with a lone match, whose rendering depends on the next item
    // (`path:line:text`), and files with several (under a heading).
    let fx = Fixture::new();
    for f in 0..40 {
        let hits = if f % 3 == 0 { 1 } else { 3 };
        let text: String =
            (0..6).map(|l| if l < hits { format!("needle {f} {l}\n") } else { "hay\n".to_string() }).collect();
        std::fs::create_dir_all(fx.root().join(format!("d{}", f % 4))).unwrap();
        fx.write(&format!("d{}/f{f:02}.txt", f % 4), text);
    }
    let args = json!({"pattern": "needle", "format": "text"});
    let mut unbounded = Server::initialized(&fx.root(), &[]);
    let (want, _) = read_all(&mut unbounded, "grep", args.clone(), 25_000);
    let want_text = String::from_utf8_lossy(&want);
    assert!(want_text.contains("needle 0 0\n") && want_text.contains("\n1:needle 1 0\n"), "{want_text}");
    // A page time of 1 ms: every page ends on time as soon as it moved, also
    // where a match opening a file would need one more pull to be rendered.
    let mut server = Server::initialized(&fx.root(), &["--page-ms", "1"]);
    let (got, pages) = read_all(&mut server, "grep", args, 25_000);
    assert!(pages.len() > 2, "{} pages", pages.len());
    assert_eq!(String::from_utf8_lossy(&got), want_text, "pages ended on time render differently");
}
