//! A page in the JSON form written straight to text: the structured content
//! once, mirrored as the one text block, and the metadata with each chunk's
//! span and hash. A page can hold a thousand items and more; building a tree
//! of them only to serialize it cost more than searching for them.

use super::json::{Structured, structured};
use super::{PAGE_META, page_meta};
use crate::pager::page::Page;
use crate::protocol::body::Written;
use crate::protocol::mcp::Version;

/// A JSON-form page as a `tools/call` result: what `json::mirrored` would
/// make of its structured content, with `_meta[PAGE_META]` holding the
/// page's metadata, its form and its chunks.
pub(super) fn page(page: Page, version: Version) -> Written {
    let mut meta = page_meta(&page);
    meta["form"] = "json".into();
    let chunks = chunks(&page);
    let shown = content(structured(page));
    // Room for the text block as `string_into` reserves it (six bytes a
    // byte), then the structured content and the rest: one allocation.
    let mut out = Vec::with_capacity(7 * shown.len() + chunks.len() + 1024);
    out.extend_from_slice(br#"{"content":[{"type":"text","text":"#);
    super::json::string_into(&mut out, &shown);
    out.extend_from_slice(br#"}],"isError":false"#);
    if version.structured() {
        out.extend_from_slice(br#","structuredContent":"#);
        out.extend_from_slice(shown.as_bytes());
    }
    out.extend_from_slice(br#","_meta":{"#);
    serde_json::to_writer(&mut out, PAGE_META).expect("a string serializes");
    out.push(b':');
    let meta = serde_json::to_vec(&meta).expect("metadata serializes");
    // The metadata object, open for one more field.
    out.extend_from_slice(&meta[..meta.len() - 1]);
    out.extend_from_slice(br#","chunks":"#);
    out.extend_from_slice(&chunks);
    out.push(b'}');
    let meta_end = out.len();
    out.extend_from_slice(b"}}");
    Written::new(text(out), Some(meta_end))
}

/// The bytes a writer here made, as text. Every byte came from a `&str`, an
/// ASCII literal, or `serde_json` writing one, so it is UTF-8 whole; checking
/// it again took a tenth of the transport thread's time on pages of a file.
fn text(out: Vec<u8>) -> String {
    debug_assert!(std::str::from_utf8(&out).is_ok(), "written from strings");
    // SAFETY: as above, `out` is UTF-8 by construction.
    unsafe { String::from_utf8_unchecked(out) }
}

/// The structured content as JSON text, its payload written as it is.
fn content(shown: Structured) -> String {
    let Structured { fields, payload } = shown;
    let size = payload.as_ref().map_or(0, super::json::Payload::len);
    let mut out = Vec::with_capacity(size + 1024);
    out.push(b'{');
    for (i, (key, value)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, key).expect("a string serializes");
        out.push(b':');
        match &payload {
            Some(payload) if payload.field() == key => payload.write(&mut out),
            _ => serde_json::to_writer(&mut out, value).expect("a value serializes"),
        }
    }
    out.push(b'}');
    text(out)
}

/// Each chunk on the page: span, payload bytes, SHA-256, encoding (utf8,
/// base64, json) and whether it ends inside an item. Written field by field,
/// without `fmt`: a page of a thousand items has a thousand of them.
fn chunks(page: &Page) -> Vec<u8> {
    let mut out = Vec::with_capacity(page.chunks.len() * 160 + 2);
    out.push(b'[');
    for (i, chunk) in page.chunks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'{');
        if let Some(span) = &chunk.span {
            if let Some((start, end)) = span.lines {
                field(&mut out, br#""start_line":"#, start);
                field(&mut out, br#","end_line":"#, end);
                out.push(b',');
            }
            field(&mut out, br#""start_byte":"#, span.start_byte);
            field(&mut out, br#","end_byte":"#, span.end_byte);
            out.push(b',');
        }
        field(&mut out, br#""bytes":"#, chunk.bytes as u64);
        out.extend_from_slice(br#","sha256":""#);
        page.chunk_sha256_into(chunk, &mut out);
        out.extend_from_slice(br#"","encoding":"#);
        serde_json::to_writer(&mut out, chunk.encoding).expect("a string serializes");
        out.extend_from_slice(match chunk.continued {
            true => br#","continued":true}"#.as_slice(),
            false => br#","continued":false}"#.as_slice(),
        });
    }
    out.push(b']');
    out
}

/// Appends `name` (the field's key, its colon and what comes before) and
/// the number `n`.
fn field(out: &mut Vec<u8>, name: &[u8], n: u64) {
    out.extend_from_slice(name);
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::*;
    use crate::pager::page::{Builder, Ended, Piece};
    use crate::results::json::{Payload, insert_span, mirrored};
    use crate::tool::{Budget, Chunk, Payload as Out, Span};

    /// The page as a tree, built field by field the way the writer's text
    /// must read: the structured content with its payload as a value,
    /// mirrored, and the metadata with a map per chunk.
    fn tree(page: Page, version: Version) -> Value {
        let mut meta = page_meta(&page);
        meta["form"] = "json".into();
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
        meta["chunks"] = Value::Array(chunks.collect());
        let Structured { mut fields, payload } = structured(page);
        if let Some(payload) = payload {
            let field = payload.field();
            let value = match payload {
                Payload::Items(text) => text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).collect(),
                Payload::Base64(text) | Payload::Text(text) => Value::String(text),
            };
            fields.insert(field.into(), value);
        }
        let mut result = mirrored(Value::Object(fields), version, false);
        result["_meta"] = json!({ PAGE_META: meta });
        result
    }

    fn page_of(pieces: Vec<(Out, Option<Span>, bool)>, info: Value) -> Page {
        let mut builder = Builder::new(Budget { bytes: 1 << 20, items: 1000 }, 16);
        for (payload, span, continued) in pieces {
            builder.push(Piece::Chunk(Chunk { payload, span, continued, resume: String::new() }));
        }
        builder.finish("t", 0, info)
    }

    #[test]
    fn a_written_page_is_byte_for_byte_the_json_of_its_tree() {
        let lines = Some(Span { start_byte: 0, end_byte: 4, lines: Some((1, 2)) });
        let bytes_only = Some(Span { start_byte: 4, end_byte: 9, lines: None });
        let items = || {
            let a = r#"{"path":"/r/a \"q\".rs","count":2}"#;
            vec![(Out::Item(a.into()), None, false), (Out::Item("[1,\"\\u0001\"]".into()), None, false)]
        };
        let mut continued = page_of(items(), json!({"matches": 3, "root": "/r"}));
        (continued.next_cursor, continued.handle) = (Some("c1.x".into()), Some("h1_y.1".into()));
        let mut timed = page_of(Vec::new(), json!({"files_searched": 7}));
        (timed.next_cursor, timed.ended) = (Some("c".into()), Ended::Time);
        let mut last = page_of(vec![(Out::Text("ab\ncd\n".into()), lines, false)], json!({"path": "f"}));
        last.sha256 = Some("whole".into());
        let pages = [
            page_of(items(), json!({"matches": 3, "items": "the tool's own"})),
            continued,
            timed,
            last,
            page_of(vec![(Out::Text("é\"\t".into()), bytes_only, true)], json!({})),
            page_of(vec![(Out::Text("ok ".into()), None, false), (Out::Bytes(vec![0xff, 0]), None, false)], json!({})),
            page_of(vec![(Out::Item("{ \"spaced\": 1 }".into()), None, false)], json!({})),
        ];
        for version in [Version::LATEST, Version::negotiate("2025-03-26")] {
            for page in pages.clone() {
                let want = tree(page.clone(), version).to_string();
                assert_eq!(super::page(page, version).as_str(), want);
            }
        }
    }
}
