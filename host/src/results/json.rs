//! The JSON form (`format: "json"`), what programs read: the structured
//! content of a page (its payload as items, text or base64, the tool's
//! `info`, the span, what remains and the cursor), and the schema of it that
//! `cordon tools --json` shows. A model reads the text form (see `text`).

use serde_json::{Map, Value, json};

use super::base64_encode;
use super::exact::Exact;
use super::model::footer::remaining;
use crate::pager::page::{Block, Ended, Page};
use crate::protocol::mcp::Version;
use crate::tool::Manifest;

/// A structured answer as a result: the JSON as the one text block (for
/// clients that show only `content`, as the specification asks) and, where
/// the protocol version has it, as the structured content.
pub(super) fn mirrored(structured: Value, version: Version, is_error: bool) -> Value {
    let text = structured.to_string();
    let mut result = json!({ "content": [{ "type": "text", "text": text }], "isError": is_error });
    if version.structured() {
        result["structuredContent"] = structured;
    }
    result
}

/// Appends `text` to `out` as a JSON string, quotes included, byte for byte
/// what `serde_json` writes. A page's text is escaped twice (into the
/// structured content, then that into the text block) and `serde_json` looks
/// at one byte at a time: on pages of a file it took half the transport
/// thread. `json-escape-simd` (sonic-rs's kernel, AVX2 or AVX-512 when the
/// processor has them) skips a register's width of plain bytes at once. It
/// reserves six bytes of room per byte of `text` first.
pub(super) fn string_into(out: &mut Vec<u8>, text: &str) {
    json_escape_simd::escape_into(text, out);
}

/// The fields the host adds to every result's structured content.
fn page_properties() -> Value {
    let span = json!({
        "start_line": { "type": "integer", "minimum": 1, "description": "First line on this page (1-based), when known." },
        "end_line": { "type": "integer", "minimum": 1, "description": "Last line on this page (1-based, inclusive), when known." },
        "start_byte": { "type": "integer", "minimum": 0, "description": "Offset of this page's first byte." },
        "end_byte": { "type": "integer", "minimum": 0, "description": "Offset just after this page's last byte." }
    });
    let mut props = span;
    let extra = json!({
        "complete": { "type": "boolean", "description": "True on the last page." },
        "ended": { "const": "time", "description": "Present when the page ended at its time limit rather than its size: it may hold few items or none, and the counts in the tool's fields say how far the work got; continuing goes on from there." },
        "next_cursor": { "type": ["string", "null"], "description": "Pass as `cursor` to get the next page (a short handle); null when complete." },
        "items": { "type": "array", "description": "This page's payload when it is whole JSON items: the items (left out when the tool's own fields hold its one item whole)." },
        "text": { "type": "string", "description": "This page's payload when it is text (or items split across pages): the text, exactly." },
        "base64": { "type": "string", "description": "This page's payload when it holds bytes that are not UTF-8: every byte, base64." },
        "remaining": {
            "type": "object",
            "description": "When more remains and the tool can tell: the bytes (and estimated tokens) and items after this page.",
            "properties": { "bytes": { "type": "integer" }, "estimated_tokens": { "type": "integer" }, "items": { "type": "integer" } }
        },
        "summary": {
            "type": "object",
            "description": "On the first page of a longer result: totals (exact or lower bounds; left out when the tool's own fields hold them) and ways to narrow the request."
        },
        "whole": {
            "type": "object",
            "description": "On the first page of a longer result: the whole result counted (items, bytes, estimated_tokens, paths and top_paths for items naming a path); exact false when a bound stopped the count (lower bounds).",
            "properties": {
                "items": { "type": "integer" }, "bytes": { "type": "integer" }, "estimated_tokens": { "type": "integer" },
                "exact": { "type": "boolean" }, "paths": { "type": "integer" }, "top_paths": { "type": "array" }
            }
        }
    });
    if let (Some(p), Value::Object(extra)) = (props.as_object_mut(), extra) {
        p.extend(extra);
    }
    props
}

/// The tool's output schema with the host's page fields added.
pub(super) fn output_schema(m: &Manifest) -> Value {
    let mut schema = m.output_schema.clone();
    merge_properties(&mut schema, page_properties());
    if let Some(obj) = schema.as_object_mut() {
        let required = obj.entry("required").or_insert_with(|| json!([]));
        if let Some(list) = required.as_array_mut() {
            for name in ["complete", "next_cursor"] {
                if !list.iter().any(|v| v == name) {
                    list.push(name.into());
                }
            }
        }
    }
    schema
}

fn merge_properties(schema: &mut Value, extra: Value) {
    let props = schema.as_object_mut().expect("checked at load").entry("properties").or_insert_with(|| json!({}));
    if let (Some(props), Value::Object(extra)) = (props.as_object_mut(), extra) {
        for (key, value) in extra {
            props.entry(key).or_insert(value);
        }
    }
}

/// The structured content of a page in the JSON form: the tool's `info`
/// fields and the host's, with the payload kept apart so that it is written
/// once, as it is (see `written`).
pub(super) struct Structured {
    /// Every field in order; the payload's place holds `null`.
    pub fields: Map<String, Value>,
    /// The payload, unless the page ended on time with nothing on it.
    pub payload: Option<Payload>,
}

pub(super) fn structured(page: Page) -> Structured {
    let remaining = remaining(&page);
    let payload = Payload::of(&page);
    let mut out = match page.info {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    if let Some(span) = page.span {
        insert_span(&mut out, &span);
    }
    // A page that ended on time with nothing on it has no payload to show.
    let nothing = page.ended == Ended::Time && page.chunks.is_empty();
    if !nothing {
        out.insert(payload.field().into(), Value::Null);
    }
    out.insert("complete".into(), page.next_cursor.is_none().into());
    // A page cut short by its time, not its size, says so: more may follow
    // even when it holds nothing.
    if page.ended == Ended::Time {
        out.insert("ended".into(), "time".into());
    }
    if let Some(remaining) = remaining {
        out.insert("remaining".into(), remaining.to_json());
    }
    // The model copies the short handle; the signed cursor is in `_meta`.
    let next = page.handle.or(page.next_cursor);
    out.insert("next_cursor".into(), next.map_or(Value::Null, Value::String));
    if let Some(whole) = &page.whole {
        out.insert("whole".into(), whole.to_json());
    }
    // The tool's own totals, which may be lower bounds, only where the
    // whole result was not counted (the count says more, exactly), and not
    // when the tool's own fields already say each of them (grep's counts so far).
    if let (0, Some(summary), None) = (page.index, page.summary, &page.whole) {
        let said = summary.totals.as_object().is_some_and(|t| t.iter().all(|(k, v)| out.get(k) == Some(v)));
        let mut shown = json!({ "suggestions": summary.suggestions });
        if !said {
            shown["totals"] = summary.totals;
            shown["totals_exact"] = summary.exact.into();
        }
        out.insert("summary".into(), shown);
    }
    Structured { fields: out, payload: (!nothing).then_some(payload) }
}

/// The page's payload inside the structured content, every byte of it.
pub(super) enum Payload {
    /// `items`, the JSON values, when the page holds whole items (lines of
    /// text that each parse, and write back as the same bytes: each item then
    /// a line end is the payload). The text, whose lines are the items.
    Items(String),
    /// `base64` of every payload byte, when the page holds bytes that are not UTF-8.
    Base64(String),
    /// Else `text`, exactly.
    Text(String),
}

impl Payload {
    fn of(page: &Page) -> Payload {
        let mut text = String::new();
        for block in &page.blocks {
            match block {
                Block::Text(t) => text.push_str(t),
                Block::Bytes(_) => return Payload::Base64(base64_encode(&page_bytes(&page.blocks))),
            }
        }
        let all_items = !page.chunks.is_empty() && page.chunks.iter().all(|c| c.encoding == "json");
        match all_items && text.ends_with('\n') && items_exact(&text) {
            true => Payload::Items(text),
            false => Payload::Text(text),
        }
    }

    /// Its field in the structured content.
    pub fn field(&self) -> &'static str {
        match self {
            Payload::Items(_) => "items",
            Payload::Base64(_) => "base64",
            Payload::Text(_) => "text",
        }
    }

    /// Its bytes before they are written.
    pub fn len(&self) -> usize {
        match self {
            Payload::Items(text) | Payload::Base64(text) | Payload::Text(text) => text.len(),
        }
    }

    /// Writes its JSON value: the items as they are, or the text as a string.
    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            Payload::Items(text) => {
                out.push(b'[');
                for (i, item) in text.split_terminator('\n').enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(item.as_bytes());
                }
                out.push(b']');
            }
            Payload::Base64(text) | Payload::Text(text) => string_into(out, text),
        }
    }
}

/// Whether every line of `text` is a JSON value that writes back as the same bytes.
fn items_exact(text: &str) -> bool {
    let mut exact = Exact::default();
    text.split_terminator('\n').all(|line| exact.writes_back(line))
}

/// Every payload byte of a page, in order.
pub(super) fn page_bytes(blocks: &[Block]) -> Vec<u8> {
    let mut raw = Vec::new();
    for block in blocks {
        match block {
            Block::Text(t) => raw.extend_from_slice(t.as_bytes()),
            Block::Bytes(b) => raw.extend_from_slice(b),
        }
    }
    raw
}

pub(super) fn insert_span(out: &mut Map<String, Value>, span: &crate::tool::Span) {
    if let Some((start, end)) = span.lines {
        out.insert("start_line".into(), start.into());
        out.insert("end_line".into(), end.into());
    }
    out.insert("start_byte".into(), span.start_byte.into());
    out.insert("end_byte".into(), span.end_byte.into());
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::mcp::Version;
    use crate::results::call_result;
    use crate::results::tests::page;
    use crate::tool::{Payload, Summary};

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let every_ascii: String = (0u8..0x80).map(char::from).collect();
        let mut texts = vec![String::new(), every_ascii.clone(), "ünïcödé ✓ 𝄞 \u{2028}\u{2029}".to_string()];
        // Escapes at every offset of a long run, across the SIMD registers' edges.
        for at in 0..70 {
            let mut text = "x".repeat(140);
            text.insert(at, '"');
            text.insert(at * 2, '\n');
            texts.push(text);
        }
        texts.push(every_ascii.repeat(300) + &"ü\u{1}".repeat(5000));
        for text in texts {
            let mut out = b"prefix".to_vec();
            string_into(&mut out, &text);
            assert_eq!(out[6..], serde_json::to_vec(&text).unwrap()[..], "{text:?}");
            assert_eq!(&out[..6], b"prefix");
        }
    }

    fn structured_of(page: Page) -> Value {
        call_result(page, Version::LATEST).into_value()["structuredContent"].clone()
    }

    #[test]
    fn the_structured_content_carries_the_payload_a_model_needs() {
        let text = structured_of(page(vec![(Payload::Text("a\nb\n".into()), false)], json!({"path": "f"})));
        assert_eq!((&text["text"], &text["path"]), (&json!("a\nb\n"), &json!("f")));
        let items =
            vec![(Payload::Item(r#"{"path":"a","line":1}"#.into()), false), (Payload::Item("[2]".into()), false)];
        let items = structured_of(page(items, json!({"matches": 2})));
        assert_eq!(items["items"], json!([{"path": "a", "line": 1}, [2]]));
        assert!(items.get("text").is_none());
        let split = vec![(Payload::Item(r#"{"a":"#.into()), true)];
        assert_eq!(structured_of(page(split, json!({})))["text"], r#"{"a":"#, "half an item stays text");
        let bytes = vec![(Payload::Text("ok ".into()), false), (Payload::Bytes(vec![0xff, 0]), false)];
        assert_eq!(structured_of(page(bytes, json!({})))["base64"], base64_encode(b"ok \xff\0"));
    }

    #[test]
    fn items_are_kept_only_where_they_write_back_as_the_same_bytes() {
        let answer = r#"{"path":"f","replacements":1}"#;
        let kept = structured_of(page(vec![(Payload::Item(answer.into()), false)], json!({"path": "f"})));
        assert_eq!(kept["items"], json!([{"path": "f", "replacements": 1}]), "{kept}");
        assert_eq!(serde_json::to_string(&kept["items"][0]).unwrap(), answer, "the item keeps its fields' order");
        let spaced = "{ \"path\": \"f\" }";
        let text = structured_of(page(vec![(Payload::Item(spaced.into()), false)], json!({})));
        assert_eq!(text["text"], format!("{spaced}\n"), "an item written another way stays text: {text}");
    }

    #[test]
    fn a_summary_does_not_repeat_totals_the_tools_own_fields_hold() {
        let counts = json!({"files_searched": 7, "matches": 0});
        let mut first = page(Vec::new(), counts.clone());
        first.next_cursor = Some("c".into());
        first.summary = Some(Summary { totals: counts, exact: false, suggestions: vec!["narrow".into()] });
        let said = structured_of(first.clone())["summary"].clone();
        assert_eq!(said, json!({"suggestions": ["narrow"]}));
        first.summary.as_mut().unwrap().totals = json!({"bytes": 10});
        let said = structured_of(first)["summary"].clone();
        assert_eq!((&said["totals"]["bytes"], &said["totals_exact"]), (&json!(10), &json!(false)));
    }

    #[test]
    fn a_page_that_ended_on_time_empty_shows_no_payload_field() {
        let mut timed = page(Vec::new(), json!({"files_searched": 7}));
        (timed.next_cursor, timed.ended) = (Some("c".into()), Ended::Time);
        let shown = structured_of(timed);
        assert!(shown.get("text").is_none() && shown.get("items").is_none(), "{shown}");
        assert_eq!((&shown["ended"], &shown["files_searched"]), (&json!("time"), &json!(7)));
        assert_eq!(structured_of(page(Vec::new(), json!({})))["text"], "", "an empty last page says so");
    }
}
