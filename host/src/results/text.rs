//! A page as a model reads it (the text form): the payload as text blocks,
//! a file's lines with their numbers as `cat -n` shows them (the number, a
//! tab, then the line's bytes exactly), and a word where there is nothing to
//! show. Programs read the exact payload in the JSON form instead.

use serde_json::{Value, json};

use crate::pager::page::{Block, ChunkMeta, Page, View};

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
    page.blocks.iter().map(super::content_block).collect()
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
    fn a_first_page_with_nothing_on_it_says_so() {
        let mut empty = page(Vec::new(), json!({}));
        empty.view = View::Text;
        assert_eq!(blocks(&empty), vec![json!({"type": "text", "text": NOTHING})]);
        let mut lines = page(vec![(Payload::Text("x\n".into()), false)], json!({}));
        lines.view = View::Numbered;
        assert_eq!(blocks(&lines)[0]["text"], "x\n", "a chunk the tool gave no lines is shown as it is");
    }
}
