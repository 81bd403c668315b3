//! Files as resources in Claude Code: what declaring `resources` costs in every conversation
//! (the tools Claude Code adds of its own: none in the first request with its tool search on,
//! its default, which defers them; measured with it off), and its model reading a Cordon file
//! through them.

use serde_json::{Value, json};

use super::api::ToolResultSeen;
use super::run::{run_claude_seeing_tools, run_claude_with_tool_search};
use super::seen::model_text;
use crate::support::{Fixture, cordon_bin, shared_state_dir};

/// A tool definition's size as Claude Code sends it: name, description, input schema.
fn size(tool: &Value) -> usize {
    let name = tool["name"].as_str().map_or(0, str::len);
    name + tool["description"].as_str().map_or(0, str::len) + tool["input_schema"].to_string().len()
}

/// The tools of the first request that are not Cordon's, by name, with their sizes.
fn not_cordons(tools: &[Value]) -> Vec<(String, usize)> {
    let others = tools.iter().filter(|t| !t["name"].as_str().unwrap_or("").starts_with("mcp__"));
    others.map(|t| (t["name"].as_str().unwrap_or("").to_string(), size(t))).collect()
}

#[test]
fn claude_codes_model_reads_a_file_resource_and_resources_cost_what_is_measured() {
    crate::clients::warm_cache();
    let fx = Fixture::new();
    fx.write("notes.txt", "attached as a resource\n");
    let uri = url::Url::from_file_path(fx.root().join("notes.txt")).unwrap().to_string();
    let config = |extra: &[&str]| {
        let mut args = vec![json!("serve"), json!("--root"), json!(fx.root()), json!("--state-dir")];
        args.push(json!(shared_state_dir()));
        args.extend(extra.iter().map(|a| json!(a)));
        json!({"mcpServers": {"cordon": {"command": cordon_bin(), "args": args}}})
    };
    let allowed = ["mcp__cordon__read", "ListMcpResourcesTool", "ReadMcpResourceTool"];
    let nothing = |_: &[ToolResultSeen]| -> Option<(String, Value)> { None };
    // Tool search on (Claude Code's default): the resource tools are deferred, not sent.
    let (_, searched) = run_claude_with_tool_search(fx.dir.path(), &config(&[]), &allowed, nothing);
    let (_, searched_without) =
        run_claude_with_tool_search(fx.dir.path(), &config(&["--no-resources"]), &allowed, nothing);
    assert_eq!(not_cordons(&searched), not_cordons(&searched_without), "nothing added with tool search on");
    // Tool search off: the tools it adds, and the model reading a file through them.
    let calls = [("ReadMcpResourceTool".to_string(), json!({"server": "cordon", "uri": uri}))];
    let script = move |seen: &[ToolResultSeen]| -> Option<(String, Value)> { calls.get(seen.len()).cloned() };
    let (seen, with) = run_claude_seeing_tools(fx.dir.path(), &config(&[]), &allowed, script);
    let (_, without) = run_claude_seeing_tools(fx.dir.path(), &config(&["--no-resources"]), &allowed, nothing);
    let (with, without) = (not_cordons(&with), not_cordons(&without));
    let added: Vec<&(String, usize)> = with.iter().filter(|t| !without.contains(t)).collect();
    let cost: usize = added.iter().map(|(_, n)| n).sum();
    eprintln!("with tool search off, declaring resources adds {added:?} to the first request: {cost} characters");
    assert!(added.iter().any(|(name, _)| name == "ReadMcpResourceTool"), "{with:?}");
    let text: Vec<String> = seen.iter().map(model_text).collect();
    assert_eq!(seen.len(), 1, "{text:?}");
    assert!(!seen[0].is_error && text[0].contains("attached as a resource"), "{text:?}");
    eprintln!("the model read: {}", text[0]);
}
