//! A search past its page time, as the model in Claude Code pages it: the pages that end on
//! time say so in what the model reads (`"ended":"time"`, the counts so far and a handle), and
//! following the handle each showed reaches every match and the last page.

use serde_json::{Value, json};

use super::api::ToolResultSeen;
use super::run::run_claude;
use super::seen::{Match, continuation, model_text, saw_match};
use crate::agents::trimmed;
use crate::support::{Fixture, cordon_bin, shared_state_dir};

/// The files searched: many that never match, and a match early and late.
fn sparse_fixture() -> Fixture {
    crate::clients::warm_cache();
    let fx = Fixture::new();
    for i in 0..2400 {
        let path = fx.root().join(format!("d{:02}/f{i:04}.txt", i / 100));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text = if i == 3 || i == 2300 { format!("hay\nRARE needle {i}\n") } else { "hay stack\n".to_string() };
        std::fs::write(path, text).unwrap();
    }
    fx
}

#[test]
fn claude_code_follows_pages_that_ended_on_time_to_every_match() {
    let fx = sparse_fixture();
    // A page time of 1 ms: each page ends at the first checkpoint it passes.
    let args =
        json!(["serve", "--root", fx.root(), "--state-dir", shared_state_dir(), "--page-ms", "1", "--shards", "1"]);
    let config = json!({"mcpServers": {"cordon": {"command": cordon_bin(), "args": args}}});
    let script = |seen: &[ToolResultSeen]| -> Option<(String, Value)> {
        let tool = "mcp__cordon__grep".to_string();
        let Some(last) = seen.last() else { return Some((tool, json!({"pattern": "RARE needle"}))) };
        continuation(&model_text(last)).map(|cursor| (tool, json!({"cursor": cursor})))
    };
    let seen = run_claude(fx.dir.path(), &config, &["mcp__cordon__grep"], script);
    let read: Vec<String> = seen.iter().map(model_text).collect();
    let shown = || read.iter().map(|r| trimmed(r, 400)).collect::<Vec<_>>().join("\n");
    // A page that ended on time says so in its footer, with how far the search got and the
    // continuation.
    let timed: Vec<&String> = read.iter().filter(|text| text.contains("ended at its time limit")).collect();
    assert!(timed.len() >= 2, "{} pages, {} ended on time:\n{}", read.len(), timed.len(), shown());
    for text in &timed {
        assert!(text.contains("files_searched") && continuation(text).is_some(), "{text}");
    }
    for (path, line, text) in [("d00/f0003.txt", 2, "RARE needle 3"), ("d23/f2300.txt", 2, "RARE needle 2300")] {
        assert!(read.iter().any(|r| saw_match(r, &Match { path, line, text })), "{path} never shown:\n{}", shown());
    }
    let last = read.last().unwrap();
    assert!(continuation(last).is_none(), "the model reached the last page:\n{}", shown());
}
