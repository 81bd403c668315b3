//! A page as a model reads it (the text form): the payload as text blocks,
//! a file's lines with their numbers as `cat -n` shows them (the number, a
//! tab, then the line's bytes exactly), and a word where there is nothing to
//! show. No text block is longer than a client takes in one part
//! ([`MAX_PART_CHARS`]): a longer text is split at line ends into several.
//! Programs read the exact payload in the JSON form instead.

use serde_json::{Value, json};

use crate::pager::page::{Block, ChunkMeta, Page, View};
use crate::results::base64_encode;

/// The longest text block, in characters: VS Code (Copilot Chat) writes a
/// longer text part to a file its model must read back.
pub const MAX_PART_CHARS: usize = 8_192;

/// What a model reads for a complete first page that shows nothing.
const NOTHING: &str = "(no results)";

/// The payload's content blocks in the text form: one text block per
/// payload block, a file's lines numbered; raw bytes as a resource blob.
pub fn blocks(page: &Page) -> Vec<Value> {
    if page.blocks.is_empty() {
        let said = if page.index == 0 && page.next_cursor.is_none() { NOTHING } else { "" };
        return vec![json!({ "type": "text", "text": said })];
    }
    if page.view == View::Numbered {
        return vec![json!({ "type": "text", "text": numbered(&page.blocks, &page.chunks) })];
    }
    page.blocks.iter().map(content_block).collect()
}

/// `content` with every text block longer than [`MAX_PART_CHARS`] split,
/// after a line end where there is one in reach, into blocks that are not.
pub fn in_parts(content: Vec<Value>) -> Vec<Value> {
    let mut out = Vec::with_capacity(content.len());
    for block in content {
        let Some(text) = block["text"].as_str().filter(|t| t.len() > MAX_PART_CHARS) else {
            out.push(block);
            continue;
        };
        let mut rest = text;
        while !rest.is_empty() {
            let end = part_end(rest);
            out.push(json!({ "type": "text", "text": &rest[..end] }));
            rest = &rest[end..];
        }
    }
    out
}

/// Where the first part of `text` ends: all of it when it fits, else just
/// after the last line end that fits, else at the last character that does.
fn part_end(text: &str) -> usize {
    let mut fits = 0;
    for (chars, (at, c)) in text.char_indices().enumerate() {
        if chars == MAX_PART_CHARS {
            break;
        }
        fits = at + c.len_utf8();
    }
    if fits == text.len() {
        return fits;
    }
    text[..fits].rfind('\n').map_or(fits, |at| at + 1)
}

/// The page's payload with each line that starts on it prefixed by its
/// number and a tab. A chunk without line numbers is shown as it is; a line
/// that began on an earlier page (or was cut by a byte range) carries the
/// number of the line it is part of. Bytes that are not UTF-8 are shown as
/// U+FFFD.
fn numbered(blocks: &[Block], chunks: &[ChunkMeta]) -> String {
    let mut payload = Vec::new();
    for block in blocks {
        match block {
            Block::Text(text) => payload.extend_from_slice(text.as_bytes()),
            Block::Bytes(raw) => payload.extend_from_slice(raw),
        }
    }
    let mut out = String::with_capacity(payload.len() + payload.len() / 8);
    let (mut at, mut inside) = (0usize, false);
    for chunk in chunks {
        let bytes = &payload[at.min(payload.len())..(at + chunk.bytes).min(payload.len())];
        at += chunk.bytes;
        let Some((first, _)) = chunk.span.and_then(|s| s.lines) else {
            out.push_str(&String::from_utf8_lossy(bytes));
            inside = !bytes.ends_with(b"\n");
            continue;
        };
        let mut number = first;
        for line in bytes.split_inclusive(|b| *b == b'\n') {
            if !inside {
                out.push_str(&number.to_string());
                out.push('\t');
            }
            out.push_str(&String::from_utf8_lossy(line));
            inside = !line.ends_with(b"\n");
            if !inside {
                number += 1;
            }
        }
    }
    if at < payload.len() {
        out.push_str(&String::from_utf8_lossy(&payload[at..]));
    }
    out
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::pager::page::{ChunkHash, View};
    use crate::results::tests::page;
    use crate::tool::{Payload, Span};

    fn meta(bytes: usize, lines: Option<(u64, u64)>, continued: bool) -> ChunkMeta {
        let span = Some(Span { lines, start_byte: 0, end_byte: bytes as u64 });
        ChunkMeta { span, bytes, sha256: ChunkHash::At { offset: 0 }, encoding: "utf8", continued }
    }

    #[test]
    fn a_files_lines_are_shown_with_their_numbers_and_their_bytes_exactly() {
        let blocks = [Block::Text("fn a() {\n\tx\r\n\nlast".into())];
        let chunks = [meta(18, Some((41, 44)), false)];
        assert_eq!(numbered(&blocks, &chunks), "41\tfn a() {\n42\t\tx\r\n43\t\n44\tlast");
    }

    #[test]
    fn a_line_split_across_chunks_is_numbered_once() {
        let blocks = [Block::Text("ab".into()), Block::Bytes(vec![0xff]), Block::Text("c\nd\n".into())];
        let chunks = [meta(2, Some((7, 7)), true), meta(1, Some((7, 7)), true), meta(4, Some((7, 8)), false)];
        assert_eq!(numbered(&blocks, &chunks), "7\tab\u{fffd}c\n8\td\n");
        let plain = [meta(7, None, false)];
        assert_eq!(numbered(&blocks, &plain), "ab\u{fffd}c\nd\n", "no line numbers known: none shown");
    }

    #[test]
    fn a_long_text_is_split_after_line_ends_into_parts_a_client_takes_whole() {
        let line = format!("{}\n", "é".repeat(99));
        let long = line.repeat(200);
        let parts = in_parts(vec![json!({"type": "text", "text": long}), json!({"type": "image", "data": "x"})]);
        let texts: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        assert!(texts.len() > 2 && texts.iter().all(|t| t.chars().count() <= MAX_PART_CHARS), "{}", texts.len());
        assert!(texts.iter().all(|t| t.ends_with('\n')), "cut at line ends");
        assert_eq!(texts.concat(), long, "nothing lost");
        assert_eq!(parts.last().unwrap()["type"], "image", "other blocks kept in place");
        let one_line = "x".repeat(MAX_PART_CHARS * 2 + 5);
        let cut = in_parts(vec![json!({"type": "text", "text": one_line})]);
        assert_eq!(cut.len(), 3, "a line longer than a part is cut where the part ends");
    }

    #[test]
    fn a_first_page_with_nothing_on_it_says_so() {
        let mut empty = page(Vec::new(), json!({}));
        empty.view = View::Text;
        assert_eq!(blocks(&empty), vec![json!({"type": "text", "text": NOTHING})]);
        let mut lines = page(vec![(Payload::Text("x\n".into()), false)], json!({}));
        lines.view = View::Numbered;
        assert_eq!(blocks(&lines)[0]["text"], "x\n", "a chunk the tool gave no lines is shown as it is");
    }
}
