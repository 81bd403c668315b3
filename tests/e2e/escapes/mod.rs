//! Path escapes, tried with every tool that takes a path: `..`, absolute paths,
//! the `root_evil` sibling, symlinks out (also swapped in while a read pages or
//! a write commits), hard links, FIFOs, sockets and devices, very long paths,
//! NUL bytes and Unicode look-alikes. Each case is named in its assertions. No
//! answer ever holds the canary, and after every test the tree outside the root
//! is exactly as it was: same entries, same bytes, same mtimes.
//!
//! One module a kind of escape: [`climbing`] (`..`, absolute paths, the
//! sibling, patterns), [`links`] (symlinks and hard links), [`swaps`] (symlinks
//! swapped in during reads and writes), [`special`] (FIFOs, sockets, devices),
//! [`long`] (very long and deep paths) and [`names`] (NUL bytes, Unicode
//! look-alikes). Here: the helpers they share.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::{CANARY, Server};

mod climbing;
mod links;
mod long;
mod names;
mod special;
mod swaps;

/// Calls a tool and checks that the answer is a tool result that never holds
/// the canary.
fn attempt(server: &mut Server, id: &mut i64, what: &str, tool: &str, args: &Value) -> Value {
    *id += 1;
    let reply = server.request(*id, "tools/call", json!({"name": tool, "arguments": args}));
    assert!(!reply.to_string().contains(CANARY), "{what} with {tool} {args}: the canary leaked: {reply}");
    assert!(reply.get("error").is_none(), "{what} with {tool} {args}: a protocol error: {reply}");
    reply["result"].clone()
}

fn code(result: &Value) -> &str {
    result["_meta"]["cordon/error"]["code"].as_str().unwrap_or("(no error)")
}

/// Asserts a refusal whose code is one of `codes`.
fn refused(result: &Value, codes: &[&str], what: &str, tool: &str, args: &Value) {
    assert_eq!(result["isError"], true, "{what} with {tool} {args} was not refused: {result}");
    assert!(codes.contains(&code(result)), "{what} with {tool} {args}: expected one of {codes:?}: {result}");
}

/// Every tool, with `p` as its path: the reading tools, then the writing ones.
fn every_tool(p: &Value) -> Vec<(&'static str, Value)> {
    vec![
        ("read", json!({"format": "json", "path": p})),
        ("stat", json!({"format": "json", "path": p, "count_lines": true})),
        ("list", json!({"path": p, "depth": 3})),
        ("glob", json!({"pattern": "**", "path": p, "hidden": true, "no_ignore": true})),
        ("grep", json!({"pattern": "CANAR[Y]", "path": p, "hidden": true, "no_ignore": true, "binary": true})),
        ("write", json!({"format": "json", "path": p, "content": "pwned"})),
        (
            "edit",
            json!({"format": "json", "path": p, "old_string": "must-never", "new_string": "pwned", "replace_all": true}),
        ),
        ("move", json!({"format": "json", "from": p, "to": "stolen.txt"})),
        ("move", json!({"format": "json", "from": "hello.txt", "to": p, "overwrite": true})),
        ("mkdir", json!({"format": "json", "path": p})),
    ]
}

fn s(path: &Path) -> String {
    path.display().to_string()
}

/// `args` asking for JSON items, so each line names its absolute path.
fn json_items(mut args: Value) -> Value {
    args["format"] = "json".into();
    args
}
