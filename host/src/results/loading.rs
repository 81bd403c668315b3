//! How a client that defers tools (Claude Code's tool search, on by default)
//! finds Cordon's: the tools a model uses on every turn are marked to be loaded
//! up front (`_meta["anthropic/alwaysLoad"]`), so they are in the model's first
//! request beside the client's own file tools; every built-in tool carries a
//! short hint its search matches (`_meta["anthropic/searchHint"]`). A server
//! run with `--defer-tools` marks none and leaves it to the client.
//!
//! The tools whose answers page say how large a result the client should
//! show inline (`_meta["anthropic/maxResultSizeChars"]`): Claude Code saves an
//! MCP result over 50,000 characters to a file and shows its model a 2 KB
//! preview, but a page is already cut to what a model should read at once
//! (a file's default page with its line numbers is about 66,000 characters).

use serde_json::{Map, Value, json};

/// The tools loaded up front: what a model reaches for on every turn.
const UP_FRONT: [&str; 6] = ["read", "grep", "glob", "list", "edit", "write"];

/// What the client's tool search matches each built-in tool by.
const HINTS: [(&str, &str); 9] = [
    ("read", "read a file's lines, text or image"),
    ("grep", "search file contents by regex"),
    ("glob", "find files by name pattern"),
    ("list", "list a directory"),
    ("stat", "file size, type and time"),
    ("edit", "replace text in a file"),
    ("write", "create or overwrite a file"),
    ("mkdir", "create a directory"),
    ("move", "move or rename a file"),
];

/// The tools whose answers page, with the largest result a client should show
/// its model inline, in characters: the largest page a call may ask for
/// (25,000 tokens, 100,000 bytes) with room for line numbers and the footer.
const PAGED: [&str; 4] = ["read", "grep", "glob", "list"];
const MAX_RESULT_CHARS: u64 = 120_000;

/// Whether tools are marked to be loaded up front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loading {
    /// The everyday tools are loaded up front (the default).
    UpFront,
    /// None is marked: the client defers them as it likes (`--defer-tools`).
    Deferred,
}

/// The `_meta` of the tool `name`, if it carries any.
pub fn tool_meta(name: &str, loading: Loading) -> Option<Value> {
    let mut meta = Map::new();
    if loading == Loading::UpFront && UP_FRONT.contains(&name) {
        meta.insert("anthropic/alwaysLoad".into(), json!(true));
    }
    if let Some((_, hint)) = HINTS.iter().find(|(tool, _)| *tool == name) {
        meta.insert("anthropic/searchHint".into(), json!(hint));
    }
    if PAGED.contains(&name) {
        meta.insert("anthropic/maxResultSizeChars".into(), json!(MAX_RESULT_CHARS));
    }
    (!meta.is_empty()).then_some(Value::Object(meta))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everyday_tools_load_up_front_unless_deferred_and_every_built_in_has_a_hint() {
        let read = tool_meta("read", Loading::UpFront).unwrap();
        assert_eq!(read["anthropic/alwaysLoad"], true);
        assert_eq!(read["anthropic/searchHint"], "read a file's lines, text or image");
        assert_eq!(read["anthropic/maxResultSizeChars"], MAX_RESULT_CHARS, "a page is shown inline");
        let stat = tool_meta("stat", Loading::UpFront).unwrap();
        assert!(stat.get("anthropic/alwaysLoad").is_none(), "stat is found by search");
        assert!(stat.get("anthropic/maxResultSizeChars").is_none(), "one short answer");
        let deferred = tool_meta("read", Loading::Deferred).unwrap();
        assert!(deferred.get("anthropic/alwaysLoad").is_none());
        assert_eq!(tool_meta("todos", Loading::UpFront), None, "a third-party tool: nothing");
        assert!(UP_FRONT.iter().all(|t| HINTS.iter().any(|(h, _)| h == t)));
    }
}
