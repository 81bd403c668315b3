//! The agent steps, each as the model calls it on either side (Cordon's MCP
//! tools, or Claude Code's built-in Read, Grep, Glob and Edit), and what the
//! model receives: the characters of a `tool_result` as Claude Code forwards
//! it, whatever shape the server gives it.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};

use super::model::Seen;
use super::tree::{EDIT_NEW, EDIT_OLD, LARGE, LARGE_HEADER, WHOLE};

/// The side measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Cordon's tools, `mcp__cordon__*`.
    Cordon,
    /// Claude Code's own Read, Grep, Glob and Edit.
    BuiltIn,
}

/// What a step does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Glob(&'static str),
    /// Matching lines with their numbers.
    Grep(&'static str),
    /// The paths of the files that match.
    GrepFiles(&'static str),
    /// Matching lines with two lines of context either side.
    GrepContext(&'static str),
    ReadWhole,
    /// Lines 100 to 150.
    ReadRange,
    /// A one-line edit of the file read before.
    Edit,
    /// The first read of the ~300 KB file, as a model makes it without knowing its size.
    LargeOpen,
    /// The next part: Cordon follows its continuation; the built-in Read is given the same
    /// lines by `offset` and `limit` (or its first 2,000 lines when Cordon had no next page).
    LargeContinue,
}

/// One step of the conversation.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub label: &'static str,
    pub kind: Kind,
}

/// The steps, in the order each conversation makes them (the edit after the reads of its file).
pub const STEPS: [Step; 10] = [
    Step { label: "glob `**/*.py`", kind: Kind::Glob("**/*.py") },
    Step { label: "grep `def __init__` (~1 match a file)", kind: Kind::Grep("def __init__") },
    Step { label: "grep `raise ValueError` (several a file)", kind: Kind::Grep("raise ValueError") },
    Step { label: "grep -l `^import json`", kind: Kind::GrepFiles("^import json") },
    Step { label: "grep -C 2 `TODO`", kind: Kind::GrepContext("TODO") },
    Step { label: "read a 300-line file", kind: Kind::ReadWhole },
    Step { label: "read lines 100–150", kind: Kind::ReadRange },
    Step { label: "one-line edit", kind: Kind::Edit },
    Step { label: "open a ~300 KB file", kind: Kind::LargeOpen },
    Step { label: "continue the ~300 KB file", kind: Kind::LargeContinue },
];

/// What the script needs beyond the step: the tree's root, the tools offered, and (for the
/// built-in side) the rows Cordon's continuation showed.
pub struct Context<'a> {
    pub root: &'a Path,
    pub tools: &'a [Value],
    pub results: &'a [Seen],
    /// The rows (first, last) of the large file that Cordon's continuation page showed.
    pub cordon_next_rows: Option<(u64, u64)>,
}

impl Context<'_> {
    /// Whether the offered tool `name` takes the argument `arg` (its `input_schema`).
    fn takes(&self, name: &str, arg: &str) -> bool {
        self.tools.iter().any(|t| t["name"] == name && !t["input_schema"]["properties"][arg].is_null())
    }

    fn abs(&self, rel: &str) -> String {
        self.root.join(rel).display().to_string()
    }
}

/// The call the model makes for `step` on `side`, or `None` when the step has nothing to call
/// (Cordon's continuation when its first page held the whole file).
pub fn call(side: Side, step: &Step, cx: &Context) -> Option<(String, Value)> {
    match side {
        Side::Cordon => cordon_call(step, cx).map(|(tool, input)| (format!("mcp__cordon__{tool}"), input)),
        Side::BuiltIn => Some(builtin_call(step, cx)),
    }
}

fn cordon_call(step: &Step, cx: &Context) -> Option<(&'static str, Value)> {
    Some(match step.kind {
        Kind::Glob(pattern) => ("glob", json!({"pattern": pattern})),
        Kind::Grep(pattern) => ("grep", json!({"pattern": pattern})),
        Kind::GrepFiles(pattern) => ("grep", json!({"pattern": pattern, "output_mode": "files_with_matches"})),
        Kind::GrepContext(pattern) if cx.takes("mcp__cordon__grep", "context") => {
            ("grep", json!({"pattern": pattern, "context": 2}))
        }
        Kind::GrepContext(pattern) => ("grep", json!({"pattern": pattern, "context_before": 2, "context_after": 2})),
        Kind::ReadWhole => ("read", json!({"path": WHOLE})),
        Kind::ReadRange => ("read", json!({"path": WHOLE, "start_line": 100, "end_line": 150})),
        Kind::Edit => ("edit", json!({"path": WHOLE, "old_string": EDIT_OLD, "new_string": EDIT_NEW})),
        Kind::LargeOpen => ("read", json!({"path": LARGE})),
        Kind::LargeContinue => {
            let opened = cx.results.iter().rev().find(|s| s.input["path"] == LARGE)?;
            ("read", json!({"cursor": continuation(&text_of(&opened.content))?}))
        }
    })
}

fn builtin_call(step: &Step, cx: &Context) -> (String, Value) {
    let (tool, input) = match step.kind {
        Kind::Glob(pattern) => ("Glob", json!({"pattern": pattern})),
        Kind::Grep(pattern) => ("Grep", json!({"pattern": pattern, "output_mode": "content", "-n": true})),
        Kind::GrepFiles(pattern) => ("Grep", json!({"pattern": pattern, "output_mode": "files_with_matches"})),
        Kind::GrepContext(pattern) => {
            ("Grep", json!({"pattern": pattern, "output_mode": "content", "-n": true, "-C": 2}))
        }
        Kind::ReadWhole => ("Read", json!({"file_path": cx.abs(WHOLE)})),
        Kind::ReadRange => ("Read", json!({"file_path": cx.abs(WHOLE), "offset": 100, "limit": 51})),
        Kind::Edit => ("Edit", json!({"file_path": cx.abs(WHOLE), "old_string": EDIT_OLD, "new_string": EDIT_NEW})),
        Kind::LargeOpen => ("Read", json!({"file_path": cx.abs(LARGE)})),
        Kind::LargeContinue => {
            let (offset, limit) = match cx.cordon_next_rows {
                Some((first, last)) => (LARGE_HEADER + first + 1, last - first + 1),
                None => (1, 2_000),
            };
            ("Read", json!({"file_path": cx.abs(LARGE), "offset": offset, "limit": limit}))
        }
    };
    (tool.to_string(), input)
}

/// The text the model reads of a result: its content when it is a string, else its text
/// blocks one after another (any other block as `[type]`).
pub fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| {
                b["text"].as_str().map_or_else(|| format!("[{}]", b["type"].as_str().unwrap_or("?")), str::to_owned)
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// The characters the model receives: a string content's, or the sum of its text blocks'.
pub fn chars(content: &Value) -> usize {
    match content {
        Value::String(text) => text.chars().count(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).map(|t| t.chars().count()).sum(),
        other => other.to_string().chars().count(),
    }
}

/// The continuation a result offers, in any shape: a `next_cursor` in JSON, or the word
/// after `cursor` in text.
pub fn continuation(text: &str) -> Option<String> {
    fn find(value: &Value) -> Option<String> {
        match value {
            Value::Object(fields) => fields
                .get("next_cursor")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| fields.values().find_map(find)),
            Value::Array(items) => items.iter().find_map(find),
            _ => None,
        }
    }
    if let Some(cursor) = serde_json::from_str::<Value>(text).ok().as_ref().and_then(find) {
        return Some(cursor);
    }
    if let Some(cursor) = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find_map(|v| find(&v)) {
        return Some(cursor);
    }
    text.match_indices("cursor").find_map(|(at, _)| {
        let rest = text[at + "cursor".len()..].trim_start_matches(['"', '\'', ':', '=', ' ', '`']);
        let token: String = rest.chars().take_while(|c| !c.is_whitespace() && !"\"'`,)}]".contains(*c)).collect();
        (token.len() >= 8).then_some(token)
    })
}

/// The rows of the large file a text shows (`row_NNNNNN` markers): first and last, and how many.
pub fn rows_shown(text: &str) -> Option<(u64, u64, usize)> {
    let rows: BTreeSet<u64> = text
        .match_indices("row_")
        .filter_map(|(at, _)| text.get(at + 4..at + 10).and_then(|d| d.parse().ok()))
        .collect();
    Some((*rows.first()?, *rows.last()?, rows.len()))
}

/// Whether a result is not the whole answer: an error, output Claude Code saved to a file (the
/// model sees a preview and a path), or (but for the large file) a page with a continuation.
pub fn partial(seen: &Seen, kind: Kind) -> bool {
    let text = text_of(&seen.content);
    let paged = seen.tool.starts_with("mcp__") && continuation(&text).is_some();
    seen.is_error
        || SPILLED.iter().any(|mark| text.contains(mark))
        || (paged && !matches!(kind, Kind::LargeOpen | Kind::LargeContinue))
}

/// What Claude Code puts in place of a result it saved to a file (built-in tools, MCP tools).
const SPILLED: [&str; 2] = ["<persisted-output>", "exceeds maximum allowed tokens"];

/// A short reading of a result for the notes: an error, a continuation, rows shown, a cap.
pub fn describe(seen: &Seen) -> String {
    let text = text_of(&seen.content);
    let mut parts = Vec::new();
    if seen.is_error {
        let first: String = text.lines().next().unwrap_or_default().chars().take(110).collect();
        parts.push(format!("error: “{first}”"));
    }
    if let Some((first, last, n)) = rows_shown(&text) {
        let lines = (LARGE_HEADER + first + 1, LARGE_HEADER + last + 1);
        parts.push(format!("lines {}–{} ({n} rows)", lines.0, lines.1));
    }
    if seen.tool.starts_with("mcp__") && continuation(&text).is_some() {
        parts.push("a continuation".into());
    }
    if SPILLED.iter().any(|mark| text.contains(mark)) {
        parts.push("saved to a file by Claude Code (the model sees a preview)".into());
    }
    for cap in ["truncated", "Showing first", "head_limit"] {
        if !seen.is_error && text.contains(cap) {
            parts.push(format!("says “{cap}”"));
        }
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_continuation_in_json_and_in_text() {
        assert_eq!(continuation(r#"{"items":[],"next_cursor":"abcDEF123456"}"#).as_deref(), Some("abcDEF123456"));
        assert_eq!(continuation("1\tx\n[more: cursor \"abcDEF123456\"]").as_deref(), Some("abcDEF123456"));
        assert_eq!(continuation(r#"{"next_cursor":null}"#), None);
    }

    #[test]
    fn counts_rows_and_characters() {
        let text = "7\t    (\"row_000000\", …\n8\t    (\"row_000001\", …";
        assert_eq!(rows_shown(text), Some((0, 1, 2)));
        assert_eq!(chars(&json!([{"type": "text", "text": "ab"}, {"type": "text", "text": "ü"}])), 3);
        assert_eq!(chars(&json!("ünï")), 3);
    }
}
