//! MCP results: what each method answers, rendered from the host's own types
//! (pages, tools, call failures) into the protocol's vocabulary: the tool list with the host's paging
//! options added to every schema, and one page of a tool's output as a
//! `tools/call` result.

use serde_json::{Map, Value, json};

pub mod faults;
mod exact;
mod json;
mod loading;
pub mod model;
pub mod outcome;
pub mod resources;
mod written;
pub use faults::{Failed, Fault, Kind, ToolFailure, WithKind};
pub use loading::Loading;
pub use model::compact::CompactPrinters;
pub use model::explain_denial;
pub use model::instructions::instructions;

use crate::args::Form;
use crate::pager::BYTES_PER_TOKEN;
use crate::pager::page::{Page, View};
use crate::protocol::body::Body;
use crate::protocol::jsonrpc::ErrorObject;
use crate::protocol::mcp::Version;
use crate::protocol::modern;
use crate::registry::Entry;
use json::output_schema;
use model::footer::footer;
use model::{media, text};

/// What the server offers, in either era: tools (and word when they
/// change), log messages on request, (empty) prompts, so clients that list
/// them get an answer, and, unless `--no-resources`, the files under the roots
/// as resources, with subscriptions. A legacy session is told of changes on
/// its own stream; a stateless client asks for them with
/// `subscriptions/listen`, where the resource list's changes can be asked for
/// too. Declaring `resources` has a cost: Claude Code adds resource tools of
/// its own to every conversation with such a server (see the README).
pub fn capabilities(version: Version, resources: bool) -> Value {
    let mut offered = json!({ "tools": { "listChanged": true }, "logging": {}, "prompts": {} });
    if resources {
        offered["resources"] = json!({ "subscribe": true, "listChanged": version.is_modern() });
        // The Skills extension (SEP-2640) for its directory reads alone: no skills are served.
        offered["extensions"] = json!({ resources::SKILLS: { "directoryRead": true } });
    }
    offered
}

/// The `initialize` result.
pub fn initialize_result(version: Version, instructions: &str, resources: bool) -> Value {
    json!({
        "protocolVersion": version.as_str(),
        "capabilities": capabilities(version, resources),
        "serverInfo": modern::server_info(),
        "instructions": instructions,
    })
}

/// The answer to a resource or prompt list: the server has none.
pub fn empty_list(field: &str) -> Value {
    json!({ field: [] })
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
    /// The call failed, mapped once (from a `CallFailure`) into what the
    /// answer, the audit record and the log all read.
    Failed(Failed),
}

/// A call's answer as an MCP result, or, for a failure that is the server's
/// and not the call's, a JSON-RPC error (see `call_failure`). A page renders
/// in its own form, a failure in the form the call's arguments ask for
/// (`asked`).
pub fn answer(answer: Answer, version: Version, asked: Form) -> Result<Body, ErrorObject> {
    match answer {
        Answer::Page(page) => Ok(call_result(*page, version)),
        Answer::Host(value) => Ok(host_tool_result(value, version).into()),
        Answer::Failed(failure) => call_failure(failure, version, asked).map(Body::from),
    }
}

/// The result of a tool the host serves itself (the upload steps): its
/// small JSON answer, which is all it has to say, in either form as text and
/// as structured content (clients that prefer the latter show the same JSON).
fn host_tool_result(answer: Value, version: Version) -> Value {
    json::mirrored(answer, version, false)
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

/// The `_meta` key of a page's metadata for programs: its form, index and
/// size, the cursor, on the last page the SHA-256 of the whole payload, and
/// in the JSON form each chunk's span and SHA-256 (see `call_result`).
pub const PAGE_META: &str = "cordon/page";

/// A page as a `tools/call` result.
///
/// In the text form (`View::Text`, `View::Numbered`), what a model reads:
/// the content blocks only, the payload as text (see `text`) then, when more
/// remains, a short footer saying how to continue. No structured content,
/// since clients that find it (Claude Code, Codex, VS Code) hand their model
/// its JSON instead of the text.
///
/// In the JSON form, what programs read (see `json`): the structured
/// content, and the same JSON as the one text block, as the specification
/// asks of a structured result, for clients that show only `content`.
///
/// In both, what programs continue and check pages with (the form, the
/// page's size, the whole payload's SHA-256, the signed cursor; in the JSON
/// form each chunk's span and SHA-256, in the text form the payload's
/// content blocks) is in `_meta` (`PAGE_META`), which most clients do not
/// show their model.
pub fn call_result(page: Page, version: Version) -> Body {
    if page.view == View::Json {
        return Body::Written(written::page(page, version));
    }
    let mut meta = page_meta(&page);
    // No chunks: their hashes are of bytes the text form does not show as
    // they are, and a client that passes the whole result on (Cline) would
    // give its model more of them than of the text.
    meta["form"] = "text".into();
    let footer = footer(&page);
    let mut content = text::in_parts(media::content(&page).unwrap_or_else(|| text::blocks(&page)));
    if content.is_empty() {
        content.push(json!({ "type": "text", "text": "" }));
    }
    // The content blocks the payload took, before the footer.
    meta["blocks"] = content.len().into();
    if let Some(footer) = footer {
        content.push(json!({ "type": "text", "text": footer }));
    }
    json!({ "content": content, "isError": false, "_meta": { PAGE_META: meta } }).into()
}

/// What a program continues and checks a page with: its place and size, the
/// whole payload's SHA-256 on the last page, and the cursor and its handle.
fn page_meta(page: &Page) -> Value {
    let mut meta = page_log(page);
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

/// The `_meta` key of a failed call's error for programs, in either form:
/// its code, sentence and, for a timeout or a busy server, the limit's name.
pub const ERROR_META: &str = "cordon/error";

/// A failed call, as a result the model can read (`isError`, the code and
/// the sentence as text), in the JSON form as structured content (`error`)
/// mirrored as text; the error is in `_meta` (`ERROR_META`) in both. Or a
/// JSON-RPC error (see `tool_failure`).
fn call_failure(failure: Failed, version: Version, asked: Form) -> Result<Value, ErrorObject> {
    let failure = match failure {
        Failed::Tool(failure) => failure,
        Failed::Server(error) => return Err(error),
    };
    let mut error = json!({ "code": failure.code, "message": failure.message });
    if let Some(limit) = failure.limit {
        error["limit"] = limit.into();
    }
    let mut result = match asked {
        Form::Text => json!({ "content": [{ "type": "text", "text": failure.to_string() }], "isError": true }),
        Form::Json => json::mirrored(json!({ "error": error.clone() }), version, true),
    };
    result["_meta"] = json!({ ERROR_META: error });
    Ok(result)
}

/// Bytes as standard base64, as every blob in a result is written.
pub(crate) fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::pager::page::{Builder, Piece};
    use crate::tool::{Budget, Chunk, Payload};

    /// A complete page of `payloads`, with the tool's `info`.
    pub(super) fn page(payloads: Vec<(Payload, bool)>, info: Value) -> Page {
        let mut builder = Builder::new(Budget { bytes: 1 << 20, items: 1000 }, 16);
        for (payload, continued) in payloads {
            builder.push(Piece::Chunk(Chunk { payload, span: None, continued, resume: String::new() }));
        }
        builder.finish("t", 0, info)
    }

    #[test]
    fn what_programs_check_pages_with_is_in_meta() {
        let mut last = page(vec![(Payload::Text("abc".into()), false)], json!({}));
        last.sha256 = Some("whole".into());
        let result = call_result(last, Version::LATEST).into_value();
        let meta = &result["_meta"][PAGE_META];
        assert_eq!((&meta["index"], &meta["bytes"], &meta["form"]), (&json!(0), &json!(3), &json!("json")));
        assert_eq!(meta["chunks"][0]["bytes"], 3);
        assert_eq!(meta["chunks"][0]["sha256"], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(meta["payload_sha256"], "whole");
        let model = &result["structuredContent"];
        assert!(["chunks", "page", "payload_sha256"].iter().all(|k| model.get(*k).is_none()), "{model}");
        assert_eq!(
            (&model["text"], &model["complete"], &model["next_cursor"]),
            (&json!("abc"), &json!(true), &Value::Null)
        );
        let mirrored: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(&mirrored, model, "the one text block is the structured content's JSON");
        assert_eq!(result["content"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn a_failure_is_text_unless_the_call_asked_for_json_then_mirrored() {
        use crate::runtime::CallFailure;
        use crate::tool::{ErrorCode, ToolError};
        let slow = || Answer::Failed(CallFailure::Timeout { wall_time: std::time::Duration::from_secs(1) }.into());
        let text = answer(slow(), Version::LATEST, Form::Text).unwrap().into_value();
        assert!(text.get("structuredContent").is_none(), "{text}");
        assert_eq!(text["_meta"][ERROR_META]["limit"], "wall_time", "programs read the error in `_meta`");
        assert!(text["content"][0]["text"].as_str().unwrap().starts_with("timeout: "), "{text}");
        let json = answer(slow(), Version::LATEST, Form::Json).unwrap().into_value();
        let error = &json["structuredContent"]["error"];
        assert_eq!(
            (&error["code"], &error["limit"], &json["isError"]),
            (&json!("timeout"), &json!("wall_time"), &json!(true))
        );
        assert_eq!(json["content"][0]["text"], json["structuredContent"].to_string());
        let missing = Answer::Failed(CallFailure::Tool(ToolError::new(ErrorCode::NotFound, "no")).into());
        let old = answer(missing, Version::negotiate("2025-03-26"), Form::Json).unwrap().into_value();
        assert!(old.get("structuredContent").is_none(), "a version without structured content: {old}");
        assert_eq!(old["content"][0]["text"], r#"{"error":{"code":"not_found","message":"no"}}"#);
        let host = answer(Answer::Host(json!({"ok": true})), Version::LATEST, Form::Text).unwrap().into_value();
        assert_eq!(
            (&host["structuredContent"], &host["content"][0]["text"]),
            (&json!({"ok": true}), &json!(r#"{"ok":true}"#))
        );
    }
}
