//! MCP results: what each method answers, rendered from the host's own types
//! (pages, tools, call failures) into the protocol's vocabulary: the tool list with the host's paging
//! options added to every schema, and one page of a tool's output as a
//! `tools/call` result.

use serde_json::{Map, Value, json};

pub mod faults;
mod footer;
mod loading;
mod media;
pub mod outcome;
mod text;
pub use faults::Fault;
pub use loading::Loading;

use crate::pager::BYTES_PER_TOKEN;
use crate::pager::page::{Block, Ended, Page, View};
use crate::policy::{Mode, Root};
use crate::protocol::jsonrpc::{Code, ErrorObject, Kind};
use crate::protocol::mcp::Version;
use crate::protocol::modern;
use crate::registry::Entry;
use crate::runtime::CallFailure;
use crate::tool::Manifest;
use footer::{footer, remaining};

/// What the server offers, in either era: tools, log messages on request,
/// and (empty) prompts, so clients that list them get an answer. It offers
/// no resources and does not declare them: a client that finds `resources`
/// adds tools of its own to every conversation (Claude Code: three, ~2,100
/// characters); one that lists them anyway gets an empty list.
pub fn capabilities(version: Version) -> Value {
    // A legacy session is told when the tools change (a tool installed or
    // removed while serving); the stateless era has no session to tell.
    let list_changed = !version.is_modern();
    json!({ "tools": { "listChanged": list_changed }, "logging": {}, "prompts": {} })
}

/// What the server tells a model about itself (`instructions`): what the
/// tools are, and the roots they work in, named, with their modes, so the
/// model knows where relative paths go and what it may change.
pub fn instructions(roots: &[Root]) -> String {
    let Some(first) = roots.first() else {
        return "File tools sandboxed in WebAssembly. No roots are configured, so tools that use files see none."
            .into();
    };
    let named: Vec<String> = roots
        .iter()
        .map(|root| {
            let mode = match root.mode {
                Mode::ReadOnly => "read-only",
                Mode::ReadWrite => "read-write",
            };
            format!("{} ({mode})", root.path)
        })
        .collect();
    format!(
        "File tools sandboxed in WebAssembly. Roots: {}. Relative paths are taken from the first root, {}; \
         absolute paths must be inside a root.",
        named.join(", "),
        first.path
    )
}

/// The `initialize` result.
pub fn initialize_result(version: Version, instructions: &str) -> Value {
    json!({
        "protocolVersion": version.as_str(),
        "capabilities": capabilities(version),
        "serverInfo": modern::server_info(),
        "instructions": instructions,
    })
}

/// The answer to a resource or prompt list: the server has none.
pub fn empty_list(field: &str) -> Value {
    json!({ field: [] })
}

/// The error for a resource that does not exist (every one: the server has none).
pub fn unknown_resource(uri: &str) -> ErrorObject {
    ErrorObject::new(
        Code::InvalidParams,
        format!("Resource not found: `{uri}`; this server offers tools, not resources"),
    )
    .with_data(json!({ "uri": uri }))
}

/// The error for a prompt that does not exist.
pub fn unknown_prompt(name: &str) -> ErrorObject {
    ErrorObject::new(Code::InvalidParams, format!("Prompt not found: `{name}`; this server offers tools, not prompts"))
        .with_data(json!({ "name": name }))
}

/// The `tools/list` result; `loading` says whether the everyday tools are
/// marked to be loaded up front (see `loading`).
pub fn list_tools_result<'a>(tools: impl Iterator<Item = &'a Entry>, version: Version, loading: Loading) -> Value {
    let tools: Vec<Value> = tools.map(|t| describe_tool(t, version, loading)).collect();
    json!({ "tools": tools })
}

/// What one `tools/call` comes back with, before it is rendered for the wire.
#[derive(Debug)]
pub enum Answer {
    /// A page of a component tool's output.
    Page(Box<Page>),
    /// A host tool's small JSON answer.
    Host(Value),
    /// The call failed.
    Failed(CallFailure),
}

/// A call's answer as an MCP result, or, for a failure that is the server's
/// and not the call's, a JSON-RPC error (see `call_failure`).
pub fn answer(answer: Answer, version: Version) -> Result<Value, ErrorObject> {
    match answer {
        Answer::Page(page) => Ok(call_result(*page, version)),
        Answer::Host(value) => Ok(host_tool_result(value, version)),
        Answer::Failed(failure) => call_failure(failure, version),
    }
}

/// The result of a tool the host serves itself: its small JSON answer as text
/// and as structured content.
fn host_tool_result(answer: Value, version: Version) -> Value {
    let mut result = json!({ "content": [{ "type": "text", "text": answer.to_string() }], "isError": false });
    if version.structured() {
        result["structuredContent"] = answer;
    }
    result
}

/// A tool's input and output schemas as clients see them: a component's with
/// the host's arguments (`args`) and page fields added; a host tool's as is.
pub fn schemas(entry: &Entry) -> (Value, Value) {
    match entry {
        Entry::Component(tool) => (crate::args::advertise(&tool.manifest), output_schema(&tool.manifest)),
        Entry::Host { manifest, .. } => (manifest.input_schema.clone(), manifest.output_schema.clone()),
    }
}

/// A tool as `tools/list` shows it: no `outputSchema`, because a tool that
/// declares one must answer with structured content, which clients then
/// hand their model instead of the text (see `call_result`); `cordon tools
/// --json` shows the schema of the JSON form.
fn describe_tool(entry: &Entry, version: Version, loading: Loading) -> Value {
    let m = entry.manifest();
    let (input, _) = schemas(entry);
    let mut tool = Map::new();
    tool.insert("name".into(), m.name.clone().into());
    tool.insert("description".into(), m.description.clone().into());
    tool.insert("inputSchema".into(), input);
    let mut annotations = json!({
        "readOnlyHint": m.read_only,
        "destructiveHint": m.destructive,
        "idempotentHint": m.idempotent,
        "openWorldHint": false,
    });
    if version.structured() {
        tool.insert("title".into(), m.title.clone().into());
        annotations["title"] = m.title.clone().into();
    }
    tool.insert("annotations".into(), annotations);
    if let Some(meta) = entry.is_built_in().then(|| loading::tool_meta(&m.name, loading)).flatten() {
        tool.insert("_meta".into(), meta);
    }
    Value::Object(tool)
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
fn output_schema(m: &Manifest) -> Value {
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

/// The `_meta` key of a page's metadata for programs: its index, size,
/// payload blocks, each chunk's span and SHA-256, and on the last page the
/// SHA-256 of the whole payload.
pub const PAGE_META: &str = "cordon/page";

/// A page as a `tools/call` result.
///
/// In the text form (`View::Text`, `View::Numbered`), what a model reads:
/// the content blocks only, the payload as text (see `text`) then, when more
/// remains, a short footer saying how to continue. No structured content,
/// since clients that find it (Claude Code, Codex) hand their model its JSON
/// instead of the text.
///
/// In the JSON form, what programs read: the payload exactly (text blocks,
/// and raw bytes as base64 blobs) with the footer, and the structured
/// content: the same payload (`items`, `text` or `base64`, see
/// `payload_field`), the tool's `info`, the span, what remains and the
/// cursor.
///
/// In both, what programs check pages with (the page's size and payload
/// blocks, each chunk's span and SHA-256, the whole payload's SHA-256, the
/// signed cursor) is in `_meta` (`PAGE_META`), which clients do not show
/// their model.
pub fn call_result(page: Page, version: Version) -> Value {
    let footer = footer(&page);
    let mut content: Vec<Value> = match media::content(&page) {
        Some(shown) => shown,
        None => match page.view {
            View::Json => page.blocks.iter().map(content_block).collect(),
            View::Text | View::Numbered => text::blocks(&page),
        },
    };
    if content.is_empty() {
        content.push(json!({ "type": "text", "text": "" }));
    }
    let mut meta = page_meta(&page);
    // The content blocks the payload took, before the footer.
    meta["blocks"] = content.len().into();
    if let Some(footer) = footer {
        content.push(json!({ "type": "text", "text": footer }));
    }
    let mut result = json!({ "content": content, "isError": false, "_meta": { PAGE_META: meta } });
    if version.structured() && page.view == View::Json {
        result["structuredContent"] = structured(page);
    }
    result
}

/// The content blocks a page's payload takes: one per block, and one empty
/// text block for an empty page.
fn payload_blocks(page: &Page) -> usize {
    page.blocks.len().max(1)
}

/// What a program checks a page with.
fn page_meta(page: &Page) -> Value {
    let mut meta = page_log(page);
    meta["chunks"] = chunks(page);
    if let Some(cursor) = &page.next_cursor {
        // The self-contained signed cursor, for programs; `next_cursor` in the
        // structured content is the handle that maps to it.
        meta["cursor"] = cursor.clone().into();
    }
    if let Some(handle) = &page.handle {
        // The short handle the model is told to continue with (in the
        // footer), which maps to the signed cursor.
        meta["handle"] = handle.clone().into();
    }
    meta
}

/// A page's metadata without its chunks, as the session logs an answered call.
pub fn page_log(page: &Page) -> Value {
    let mut meta = json!({
        "index": page.index,
        "items": page.items,
        "bytes": page.bytes,
        "estimated_tokens": page.bytes.div_ceil(u64::from(BYTES_PER_TOKEN)),
        "blocks": payload_blocks(page),
        "continued": page.continued,
        "max_tokens": page.budget.bytes / BYTES_PER_TOKEN,
        "page_size": page.budget.items,
        "ended": page.ended.as_str(),
    });
    if let Some(sha) = &page.sha256 {
        meta["payload_sha256"] = sha.clone().into();
    }
    meta
}

fn structured(page: Page) -> Value {
    let remaining = remaining(&page);
    let (field, payload) = payload_field(&page);
    let mut out = match page.info {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    if let Some(span) = page.span {
        insert_span(&mut out, &span);
    }
    // A page that ended on time with nothing on it has no payload to show.
    let nothing = page.ended == Ended::Time && page.chunks.is_empty();
    if !held_by(&payload, &out) && !nothing {
        out.insert(field.into(), payload);
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
    Value::Object(out)
}

/// The page's payload inside the structured content, for a model whose client
/// forwards only that: `items`, the JSON values, when the page holds whole
/// items (lines of text that each parse); `base64` of every payload byte when
/// it holds bytes that are not UTF-8; else `text`, exactly.
fn payload_field(page: &Page) -> (&'static str, Value) {
    let mut text = String::new();
    for block in &page.blocks {
        match block {
            Block::Text(t) => text.push_str(t),
            Block::Bytes(_) => return ("base64", base64_encode(&page_bytes(&page.blocks)).into()),
        }
    }
    let all_items = !page.chunks.is_empty() && page.chunks.iter().all(|c| c.encoding == "json");
    if all_items && text.ends_with('\n') {
        let items: Option<Vec<Value>> = text.lines().map(|line| serde_json::from_str(line).ok()).collect();
        if let Some(items) = items {
            return ("items", Value::Array(items));
        }
    }
    ("text", text.into())
}

/// Whether `payload` is one item whose every field the tool's own fields
/// (`info`) already hold, as `write`, `edit` and `move` answer: the model reads
/// it there once, not twice.
fn held_by(payload: &Value, info: &Map<String, Value>) -> bool {
    match payload.as_array().map(Vec::as_slice) {
        Some([Value::Object(item)]) => item.iter().all(|(k, v)| info.get(k) == Some(v)),
        _ => false,
    }
}

/// Every payload byte of a page, in order.
fn page_bytes(blocks: &[Block]) -> Vec<u8> {
    let mut raw = Vec::new();
    for block in blocks {
        match block {
            Block::Text(t) => raw.extend_from_slice(t.as_bytes()),
            Block::Bytes(b) => raw.extend_from_slice(b),
        }
    }
    raw
}

/// Each chunk on the page: span, payload bytes, SHA-256, encoding (utf8,
/// base64, json) and whether it ends inside an item.
fn chunks(page: &Page) -> Value {
    let chunks = page.chunks.iter().map(|c| {
        let mut m = Map::new();
        if let Some(span) = &c.span {
            insert_span(&mut m, span);
        }
        m.insert("bytes".into(), c.bytes.into());
        m.insert("sha256".into(), page.chunk_sha256(c).into());
        m.insert("encoding".into(), c.encoding.into());
        m.insert("continued".into(), c.continued.into());
        Value::Object(m)
    });
    Value::Array(chunks.collect())
}

fn insert_span(out: &mut Map<String, Value>, span: &crate::tool::Span) {
    if let Some((start, end)) = span.lines {
        out.insert("start_line".into(), start.into());
        out.insert("end_line".into(), end.into());
    }
    out.insert("start_byte".into(), span.start_byte.into());
    out.insert("end_byte".into(), span.end_byte.into());
}

/// A payload block as a content block: text, or raw bytes as a resource blob.
fn content_block(block: &Block) -> Value {
    match block {
        Block::Text(text) => json!({ "type": "text", "text": text }),
        Block::Bytes(raw) => json!({
            "type": "resource",
            "resource": {
                "uri": "cordon:raw-bytes",
                "mimeType": "application/octet-stream",
                "blob": base64_encode(raw),
            }
        }),
    }
}

/// A failed call the model reads about: a code (the tool's, or `timeout`,
/// `cancelled`, `busy`), a sentence, and the limit it hit, if one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFailure {
    pub code: &'static str,
    pub message: String,
    pub limit: Option<&'static str>,
}

impl std::fmt::Display for ToolFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// A failed call as the model reads it, or, for failures that are the
/// server's and not the call's, a JSON-RPC error: an internal error says what
/// kind of failure it was in `data.error`, and a limit's name and value.
pub fn tool_failure(failure: CallFailure) -> Result<ToolFailure, ErrorObject> {
    let limit = failure.limit_name();
    let internal = |kind: Kind, data: Value, message: String| {
        Err(ErrorObject::new(Code::InternalError, message).with_kind(kind, data))
    };
    let (code, message) = match failure {
        CallFailure::Tool(e) => (e.code.as_str(), e.message),
        timeout @ (CallFailure::Timeout { .. } | CallFailure::HostTimeout { .. }) => ("timeout", timeout.to_string()),
        CallFailure::Cancelled => ("cancelled", CallFailure::Cancelled.to_string()),
        busy @ CallFailure::Busy { .. } => ("busy", busy.to_string()),
        CallFailure::Limit { ref tool, limit: hit } => {
            let data = json!({ "tool": tool, "limit": hit.name(), "max": hit.max() });
            return internal(Kind::LimitExceeded, data, failure.to_string());
        }
        CallFailure::Stuck { ref tool, calls } => {
            return internal(Kind::ToolStuck, json!({ "tool": tool, "calls": calls }), failure.to_string());
        }
        CallFailure::Trapped { ref tool } => {
            return internal(Kind::Trapped, json!({ "tool": tool }), failure.to_string());
        }
        CallFailure::Contract { ref tool, .. } => {
            return internal(Kind::ContractViolation, json!({ "tool": tool }), failure.to_string());
        }
        CallFailure::Host(ref fault) => return internal(Kind::Host, json!({}), fault.to_string()),
    };
    Ok(ToolFailure { code, message, limit })
}

/// A failed call, as a result the model can read (`isError`; a timeout or a
/// busy server names the limit in `structuredContent.error.limit`), or a
/// JSON-RPC error (see `tool_failure`).
fn call_failure(failure: CallFailure, version: Version) -> Result<Value, ErrorObject> {
    let failure = tool_failure(failure)?;
    let mut result = json!({
        "content": [{ "type": "text", "text": failure.to_string() }],
        "isError": true,
    });
    if version.structured() {
        result["structuredContent"] = json!({ "error": { "code": failure.code, "message": failure.message } });
        if let Some(limit) = failure.limit {
            result["structuredContent"]["error"]["limit"] = limit.into();
        }
    }
    Ok(result)
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::pager::page::{Builder, Piece};
    use crate::tool::{Budget, Chunk, Payload, Summary};

    /// A complete page of `payloads`, with the tool's `info`.
    pub(super) fn page(payloads: Vec<(Payload, bool)>, info: Value) -> Page {
        let mut builder = Builder::new(Budget { bytes: 1 << 20, items: 1000 }, 16);
        for (payload, continued) in payloads {
            builder.push(Piece::Chunk(Chunk { payload, span: None, continued, resume: String::new() }));
        }
        builder.finish("t", 0, info)
    }

    fn structured_of(page: Page) -> Value {
        call_result(page, Version::LATEST)["structuredContent"].clone()
    }

    #[test]
    fn the_instructions_name_the_roots_with_their_modes() {
        let roots = [
            Root { path: "/work/src".into(), mode: Mode::ReadWrite },
            Root { path: "/work/docs".into(), mode: Mode::ReadOnly },
        ];
        let said = instructions(&roots);
        assert!(said.contains("Roots: /work/src (read-write), /work/docs (read-only)."), "{said}");
        assert!(said.contains("taken from the first root, /work/src;"), "{said}");
        assert!(instructions(&[]).contains("No roots are configured"));
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
    fn one_item_the_tools_own_fields_hold_is_not_repeated() {
        let answer = json!({"path": "f", "replacements": 1});
        let held = structured_of(page(vec![(Payload::Item(answer.to_string()), false)], answer.clone()));
        assert!(held.get("items").is_none(), "{held}");
        assert_eq!(held["replacements"], 1);
        let more = structured_of(page(vec![(Payload::Item(answer.to_string()), false)], json!({"path": "f"})));
        assert_eq!(more["items"], json!([answer]), "an item with fields the info lacks is kept");
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

    #[test]
    fn what_programs_check_pages_with_is_in_meta() {
        let mut last = page(vec![(Payload::Text("abc".into()), false)], json!({}));
        last.sha256 = Some("whole".into());
        let result = call_result(last, Version::LATEST);
        let meta = &result["_meta"][PAGE_META];
        assert_eq!((&meta["index"], &meta["bytes"], &meta["blocks"]), (&json!(0), &json!(3), &json!(1)));
        assert_eq!(meta["chunks"][0]["bytes"], 3);
        assert_eq!(meta["chunks"][0]["sha256"], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(meta["payload_sha256"], "whole");
        let model = &result["structuredContent"];
        assert!(["chunks", "page", "payload_sha256"].iter().all(|k| model.get(*k).is_none()), "{model}");
        assert_eq!(
            (&model["text"], &model["complete"], &model["next_cursor"]),
            (&json!("abc"), &json!(true), &Value::Null)
        );
    }
}
