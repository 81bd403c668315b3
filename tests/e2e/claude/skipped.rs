//! What cannot be searched, as the model in Claude Code reads it (issue 37, finding 6): a grep
//! over a tree holding a one-line file longer than a search may hold finds the other files'
//! matches and names the file with why, and a grep of that file alone says it was not searched
//! rather than coming back empty. Under `--memory-mib 32` a 12 MB line is already too long.

use serde_json::{Value, json};

use super::api::ToolResultSeen;
use super::payload_text;
use super::run::run_claude;
use super::seen::{Match, model_text, saw_match};
use crate::agents::trimmed;
use crate::support::{Fixture, cordon_bin, shared_state_dir};

/// What the model must read for the long line.
const NOT_SEARCHED: &str = "big.log: not searched: a line longer than 8 MiB, a quarter of the 32 MiB of memory this \
                            search may use; the lines before it were searched";

#[test]
fn claude_code_reads_which_file_was_not_searched_and_why() {
    crate::clients::warm_cache();
    let fx = Fixture::new();
    fx.write("a.txt", "needle in a\n");
    fx.write("big.log", vec![b'x'; 12_000_000]);
    fx.write("z.txt", "needle in z\n");
    let args =
        json!(["serve", "--root", fx.root(), "--state-dir", shared_state_dir(), "--memory-mib", "32", "--shards", "1"]);
    let config = json!({"mcpServers": {"cordon": {"command": cordon_bin(), "args": args}}});
    let calls = [json!({"pattern": "needle"}), json!({"pattern": "needle", "path": "big.log"})];
    let script = move |seen: &[ToolResultSeen]| -> Option<(String, Value)> {
        calls.get(seen.len()).map(|input| ("mcp__cordon__grep".to_string(), input.clone()))
    };
    let seen = run_claude(fx.dir.path(), &config, &["mcp__cordon__grep"], script);
    let read: Vec<String> = seen.iter().map(model_text).collect();
    let shown = || read.iter().map(|r| trimmed(r, 600)).collect::<Vec<_>>().join("\n");
    assert_eq!(read.len(), 2, "{}", shown());
    assert!(seen.iter().all(|s| !s.is_error), "{}", shown());
    let tree = payload_text(&seen[0]);
    assert!(tree.contains(NOT_SEARCHED), "the tree's grep does not name big.log: {}", shown());
    for (path, text) in [("a.txt", "needle in a"), ("z.txt", "needle in z")] {
        assert!(saw_match(&read[0], &Match { path, line: 1, text }), "{path} not shown: {}", shown());
    }
    let alone = payload_text(&seen[1]);
    assert_eq!(alone, format!("{NOT_SEARCHED}\n"), "{}", shown());
}
