//! Reading a tool's result as programs and models read it: a page's `_meta`,
//! its payload (JSON or text form), its cursor, its checks against its chunks,
//! and whole results paged through with cursors.

use serde_json::{Value, json};

use super::Server;

/// What programs check a page with: `_meta["cordon/page"]` (form, index,
/// bytes, payload blocks, chunks, and on the last page `payload_sha256`).
pub fn page_meta(result: &Value) -> &Value {
    &result["_meta"]["cordon/page"]
}

/// A page's payload, every byte: in the JSON form from its JSON (`text`,
/// `base64` decoded, or each of `items` and a line end); in the text form
/// its content blocks but the footer, text as is and base64 blobs decoded.
pub fn payload(result: &Value) -> Vec<u8> {
    use base64::Engine as _;
    if page_meta(result)["form"] == "json" {
        let shown = json_form(result);
        if let Some(text) = shown["text"].as_str() {
            return text.as_bytes().to_vec();
        }
        if let Some(raw) = shown["base64"].as_str() {
            return base64::engine::general_purpose::STANDARD.decode(raw).unwrap();
        }
        let items = shown["items"].as_array().map(Vec::as_slice).unwrap_or_default();
        return items.iter().flat_map(|item| format!("{item}\n").into_bytes()).collect();
    }
    let blocks = page_meta(result)["blocks"].as_u64().expect("the page's blocks") as usize;
    let mut out = Vec::new();
    for block in result["content"].as_array().unwrap().iter().take(blocks) {
        if let Some(text) = block["text"].as_str() {
            out.extend_from_slice(text.as_bytes());
        } else {
            let blob = block["resource"]["blob"].as_str().expect("a text or blob block");
            out.extend(base64::engine::general_purpose::STANDARD.decode(blob).unwrap());
        }
    }
    out
}

/// A JSON-form result's JSON: its one text block parsed, checked to be the
/// structured content where the protocol version has it.
pub fn json_form(result: &Value) -> Value {
    let content = result["content"].as_array().expect("content");
    assert_eq!(content.len(), 1, "the JSON form is one text block: {result}");
    let text = content[0]["text"].as_str().expect("a text block");
    let shown: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {result}"));
    if let Some(structured) = result.get("structuredContent") {
        assert_eq!(&shown, structured, "the text is the structured content's JSON");
        assert_eq!(text, structured.to_string(), "written the same way");
    }
    shown
}

/// The cursor that continues a result as a model continues it: the
/// JSON's `next_cursor` in the JSON form; in the text form the short handle
/// its footer names, which `_meta` carries too (else the signed cursor).
pub fn next_cursor(result: &Value) -> Option<String> {
    let meta = page_meta(result);
    if meta["form"] == "json" {
        return json_form(result)["next_cursor"].as_str().map(str::to_owned);
    }
    meta["handle"].as_str().or_else(|| meta["cursor"].as_str()).map(str::to_owned)
}

/// A JSON-form page checked: its text is its structured content's JSON, and
/// the payload it gives is every byte the page's chunks say: each of its
/// `items` written back is its chunk (same SHA-256); a page of text or bytes
/// has the page's size and, in one chunk, its hash. A page in the text form
/// has no JSON.
pub fn check_structured_payload(result: &Value) {
    use sha2::{Digest as _, Sha256};
    let meta = page_meta(result);
    if meta["form"] != "json" {
        assert!(result.get("structuredContent").is_none(), "the text form has no structured content: {result}");
        return;
    }
    let shown = json_form(result);
    let chunks = meta["chunks"].as_array().unwrap();
    if let Some(items) = shown["items"].as_array() {
        assert_eq!(items.len(), chunks.len(), "one item a chunk: {result}");
        for (item, chunk) in items.iter().zip(chunks) {
            let written = item.to_string();
            if written.contains(" items truncated]") {
                continue; // Cut where nested too deep: the hash is of the tool's whole item.
            }
            let sha = hex::encode(Sha256::digest(written));
            assert_eq!(chunk["sha256"].as_str(), Some(sha.as_str()), "the item is its chunk's bytes: {item}");
        }
        return;
    }
    let exact = payload(result);
    if chunks.iter().all(|c| c["encoding"] != "json") {
        assert_eq!(exact.len() as u64, meta["bytes"].as_u64().unwrap(), "the payload's size: {result}");
    }
    if let [chunk] = chunks.as_slice() {
        let sha = hex::encode(Sha256::digest(&exact));
        let line_ended = hex::encode(Sha256::digest(exact.strip_suffix(b"\n").unwrap_or(&exact)));
        let said = chunk["sha256"].as_str().unwrap();
        assert!(said == sha || said == line_ended, "one chunk's hash is the payload's: {result}");
    }
}

/// Pages through a whole result with cursors: the payload of every page
/// concatenated, and every page's result. Items come as JSON, what programs
/// read, unless the arguments ask for a `format` or continue a cursor (which
/// keeps its own).
pub fn read_all(server: &mut Server, tool: &str, arguments: Value, max_tokens: u64) -> (Vec<u8>, Vec<Value>) {
    let mut out = Vec::new();
    let mut pages = Vec::new();
    let mut args = arguments;
    args["max_tokens"] = max_tokens.into();
    if args.get("format").is_none() && args.get("cursor").is_none() {
        args["format"] = "json".into();
    }
    loop {
        let result = server.call(1000 + pages.len() as i64, tool, args.clone());
        assert_eq!(result["isError"], false, "page {}: {result}", pages.len());
        check_structured_payload(&result);
        out.extend(payload(&result));
        let next = next_cursor(&result);
        pages.push(result);
        match next.as_deref() {
            Some(cursor) => args = json!({ "cursor": cursor, "max_tokens": max_tokens }),
            None => return (out, pages),
        }
    }
}

/// Pages through `tool` called with `args` at `max_tokens`, calling it with `other` (and its
/// cursor) between every two pages: on a server that parks one stream at most
/// (`--max-sessions 1`), every page then reopens the tool at its cursor. The payload of every
/// page concatenated, and how many pages there were.
pub fn read_all_reopened(
    server: &mut Server,
    tool: &str,
    args: Value,
    other: Value,
    max_tokens: u64,
) -> (Vec<u8>, i64) {
    let (mut a, mut b) = (args, other);
    a["max_tokens"] = max_tokens.into();
    let (mut got, mut pages) = (Vec::new(), 0);
    loop {
        let page = server.call(2000 + pages, tool, a.clone());
        assert_eq!(page["isError"], false, "{page}");
        got.extend(payload(&page));
        pages += 1;
        let other_page = server.call(5000 + pages, tool, b.clone());
        if let Some(cursor) = next_cursor(&other_page) {
            b = json!({ "cursor": cursor });
        }
        match next_cursor(&page).as_deref() {
            Some(cursor) => a = json!({ "cursor": cursor, "max_tokens": max_tokens }),
            None => return (got, pages),
        }
    }
}

/// The text of a tool result: in the JSON form its structured content's
/// `text` (the payload, exactly), else its first content block's.
pub fn text(result: &Value) -> &str {
    if let Some(text) = result["structuredContent"]["text"].as_str().filter(|_| page_meta(result)["form"] == "json") {
        return text;
    }
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text content: {result}"))
}
