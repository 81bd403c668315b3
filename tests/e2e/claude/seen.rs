//! What the model read of a result, whatever its format: text, JSON or JSON Lines.

use serde_json::Value;

use super::api::ToolResultSeen;

/// What the model reads of a result: its content when Claude Code sent a string, else the text
/// of its blocks one per line (a block that is not text shows as `[type]`).
pub(super) fn model_text(seen: &ToolResultSeen) -> String {
    match &seen.content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| {
                b["text"].as_str().map_or_else(|| format!("[{}]", b["type"].as_str().unwrap_or("?")), str::to_string)
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// A text as the model reads it, part by part: the whole text when it is JSON, else each line,
/// parsed when it is a JSON object or array (JSON Lines) and kept as text when not.
fn parts(text: &str) -> Vec<Result<Value, &str>> {
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return vec![Ok(value)];
    }
    let json = |line: &str| serde_json::from_str::<Value>(line).ok().filter(|v| v.is_object() || v.is_array());
    text.lines().map(|line| json(line).ok_or(line)).collect()
}

/// The JSON documents in a text: the whole text, or else each line that is a JSON object or array.
pub(super) fn json_documents(text: &str) -> Vec<Value> {
    parts(text).into_iter().filter_map(Result::ok).collect()
}

/// Every string in `value`, object keys included (a path may be a key), depth first.
fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(fields) => fields.iter().for_each(|(k, v)| {
            out.push(k.clone());
            collect_strings(v, out);
        }),
        _ => {}
    }
}

/// The strings a text shows the model, whatever its format: when it is JSON (or JSON Lines),
/// all its string values and keys, recursively; each line that is not JSON, as it is.
pub(super) fn strings_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in parts(text) {
        match part {
            Ok(value) => collect_strings(&value, &mut out),
            Err(line) => out.push(line.to_string()),
        }
    }
    out
}

/// Whether a string names the file `path` (relative to the root): `path` itself, or a path ending with it.
pub(super) fn names(s: &str, path: &str) -> bool {
    s == path || s.ends_with(&format!("/{path}"))
}

/// Whether a number appears in `value`, as a number.
fn has_number(value: &Value, n: u64) -> bool {
    match value {
        Value::Number(x) => x.as_u64() == Some(n),
        Value::Array(items) => items.iter().any(|v| has_number(v, n)),
        Value::Object(fields) => fields.values().any(|v| has_number(v, n)),
        _ => false,
    }
}

/// Whether the model saw the number `n`: as a JSON number, or as a word of its text.
pub(super) fn saw_number(text: &str, n: u64) -> bool {
    let word = n.to_string();
    json_documents(text).iter().any(|v| has_number(v, n))
        || strings_in(text).iter().any(|s| s.split(|c: char| !c.is_ascii_digit()).any(|w| w == word))
}

/// A grep match the model must see.
pub(super) struct Match<'a> {
    pub(super) path: &'a str,
    pub(super) line: u64,
    pub(super) text: &'a str,
}

/// Whether JSON holds the match: an object whose fields hold the line number and the line's
/// text, that names the file itself or lies inside an object that does (by a field or a key).
fn json_match(value: &Value, m: &Match, in_file: bool) -> bool {
    match value {
        Value::Array(items) => items.iter().any(|v| json_match(v, m, in_file)),
        Value::Object(fields) => {
            let in_file = in_file || fields.values().any(|v| v.as_str().is_some_and(|s| names(s, m.path)));
            let line = fields.values().any(|v| v.as_u64() == Some(m.line) || v.as_str() == Some(&m.line.to_string()));
            let text = fields.values().any(|v| v.as_str().is_some_and(|s| s.contains(m.text)));
            (in_file && line && text) || fields.iter().any(|(k, v)| json_match(v, m, in_file || names(k, m.path)))
        }
        _ => false,
    }
}

/// Whether plain text holds the match: `path:line:text` on a line (rg), or a heading naming the
/// file followed by `line:text` (rg --heading).
fn text_match(text: &str, m: &Match) -> bool {
    let (prefix, mut in_file) = (format!("{}:", m.line), false);
    for line in text.lines() {
        if line.contains(&format!("{}:{}:", m.path, m.line)) && line.contains(m.text) {
            return true;
        }
        if line.starts_with(|c: char| c.is_ascii_digit()) {
            if in_file && line.starts_with(&prefix) && line.contains(m.text) {
                return true;
            }
        } else {
            in_file = names(line.trim(), m.path);
        }
    }
    false
}

/// Whether the model saw the match, in any format: in JSON, or in plain text (the whole text,
/// or a string inside its JSON).
pub(super) fn saw_match(text: &str, m: &Match) -> bool {
    let documents = json_documents(text);
    let mut strings = Vec::new();
    documents.iter().for_each(|d| collect_strings(d, &mut strings));
    documents.iter().any(|d| json_match(d, m, false)) || text_match(text, m) || strings.iter().any(|s| text_match(s, m))
}

/// The value of the first `key` in a JSON document, depth first.
fn find_key<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    match value {
        Value::Object(fields) => fields.get(key).or_else(|| fields.values().find_map(|v| find_key(v, key))),
        Value::Array(items) => items.iter().find_map(|v| find_key(v, key)),
        _ => None,
    }
}

/// The continuation the model saw: a `next_cursor` string in the JSON, or else a cursor named in
/// the text (`cursor: X`, `"cursor": "X"`, `cursor=X`).
pub(super) fn continuation(text: &str) -> Option<String> {
    let documents = json_documents(text);
    if let Some(cursor) = documents.iter().find_map(|d| find_key(d, "next_cursor")) {
        return cursor.as_str().map(str::to_string);
    }
    text.match_indices("cursor").find_map(|(at, _)| {
        let rest = text[at + "cursor".len()..].trim_start_matches(['"', '\'', ':', '=', ' ', '`']);
        let token: String = rest.chars().take_while(|c| !c.is_whitespace() && !"\"'`,)}]".contains(*c)).collect();
        (!token.is_empty() && token != "null").then_some(token)
    })
}
