//! Loaded up front: with Claude Code's tool search on (its default), MCP tools are deferred
//! unless marked `_meta["anthropic/alwaysLoad"]`. Cordon marks the everyday tools, so the
//! model's first request carries them and its first call can be Cordon's `read`: the stand-in
//! scripts calls only on requests that name `mcp__` tools, so the conversation ends as scripted
//! only if they were loaded. The same first request shows what the definitions cost: Cordon's
//! read, grep, glob and edit as Claude Code sends them (name, description, input schema) take
//! no more characters than its own Read, Grep, Glob and Edit (7,036 in 2.1.328).

use serde_json::{Value, json};

use super::api::ToolResultSeen;
use super::run::run_claude_with_tool_search;
use super::seen::model_text;
use crate::agents::trimmed;
use crate::support::{Fixture, cordon_bin, shared_state_dir};

#[test]
fn with_tool_search_on_the_everyday_tools_are_in_the_first_request() {
    crate::clients::warm_cache();
    let fx = Fixture::new();
    fx.write("notes.txt", "loaded up front\n");
    let args = json!(["serve", "--root", fx.root(), "--state-dir", shared_state_dir()]);
    let config = json!({"mcpServers": {"cordon": {"command": cordon_bin(), "args": args}}});
    let calls = [("mcp__cordon__read", json!({"path": "notes.txt"})), ("mcp__cordon__grep", json!({"pattern": "up"}))];
    let script = move |seen: &[ToolResultSeen]| -> Option<(String, Value)> {
        calls.get(seen.len()).map(|(tool, input)| (tool.to_string(), input.clone()))
    };
    let allowed = ["mcp__cordon__read", "mcp__cordon__grep"];
    let (seen, tools) = run_claude_with_tool_search(fx.dir.path(), &config, &allowed, script);
    let read: Vec<String> = seen.iter().map(model_text).collect();
    let shown = || read.iter().map(|r| trimmed(r, 400)).collect::<Vec<_>>().join("\n");
    assert_eq!(read.len(), 2, "{}", shown());
    assert!(seen.iter().all(|s| !s.is_error), "{}", shown());
    assert!(read.iter().all(|r| r.contains("loaded up front")), "{}", shown());
    let size = |name: &str| {
        let tool =
            tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name} not in the first request"));
        name.len() + tool["description"].as_str().map_or(0, str::len) + tool["input_schema"].to_string().len()
    };
    let everyday = ["read", "grep", "glob", "edit"].map(|t| size(&format!("mcp__cordon__{t}")));
    let total: usize = everyday.iter().sum();
    assert!(
        total <= BUILT_INS_CHARS,
        "read+grep+glob+edit cost {total} characters ({everyday:?}), over {BUILT_INS_CHARS}"
    );
}

/// What Claude Code 2.1.328's own Read, Grep, Glob and Edit cost in a request, as the issue measured them.
const BUILT_INS_CHARS: usize = 7_036;
