//! A page of a file as a model reads it in the text form, where its bytes
//! are not all text (see `pager::media` for how a page is told apart):
//!
//! - a whole image: one MCP `image` block and one line beside it (path, size,
//!   media type);
//! - a whole Jupyter notebook: its cells with their outputs (see `notebook`);
//! - a binary file, or an image too large to show: one sentence (size, type,
//!   and how to get the exact bytes), never the bytes;
//! - a byte range of a binary file: a hex dump, as `xxd` prints it;
//! - a text file with bytes that are not UTF-8: the text (its lines
//!   numbered, unless the call turned that off), each bad sequence shown as
//!   U+FFFD, and a note saying where they are.
//!
//! The JSON form is never rendered here: it keeps every byte, base64 where
//! not UTF-8, with its hashes.

mod notebook;

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::pager::media::{File, Media};
use crate::pager::page::{Block, Page, View};
use crate::results::base64_encode;

/// Bytes per line of a hex dump.
const DUMP_WIDTH: usize = 16;

/// How many ranges of bad bytes a note lists before it only counts the rest.
const LISTED_RANGES: usize = 3;

/// The content blocks a page shows a model when they are not its payload's
/// own (`None`: show the payload as it is).
pub fn content(page: &Page) -> Option<Vec<Value>> {
    let text = match page.media.as_ref()? {
        Media::Image(file) => {
            let image = json!({ "type": "image", "data": base64_encode(&bytes(page)), "mimeType": file.media_type });
            return Some(vec![image, text_block(image_line(file))]);
        }
        Media::Text => {
            let note = bad_bytes_note(page)?;
            let mut blocks = match page.view {
                View::Numbered => super::text::blocks(page),
                View::Text | View::Json => vec![text_block(lossy(page).into_owned())],
            };
            blocks.push(text_block(note));
            return Some(blocks);
        }
        Media::Notebook { file, shown_bytes } => {
            let limit = *shown_bytes as usize;
            let shown = notebook::render(&bytes(page), &file.path, limit);
            // Named a notebook but not one: its text, as far as the page goes.
            shown.unwrap_or_else(|| notebook::cut(lossy(page).into_owned(), limit))
        }
        Media::Described { file, limit } => described(&page.tool, file, *limit),
        Media::Range => hex_dump(&bytes(page), page.span.map_or(0, |span| span.start_byte)),
    };
    Some(vec![text_block(text)])
}

fn text_block(text: String) -> Value {
    json!({ "type": "text", "text": text })
}

/// The line beside an image: `a.png: image/png, 8.0 KiB (8192 bytes)`.
fn image_line(file: &File) -> String {
    format!("{}: {}, {}", file.path, file.media_type, size(file.size))
}

/// The one sentence a binary file gets (or an image over `limit`).
fn described(tool: &str, file: &File, limit: Option<u64>) -> String {
    let what = match limit {
        Some(limit) => format!(
            "is an image ({}) of {}, larger than the {} an image may be to be shown",
            file.media_type,
            size(file.size),
            size(limit)
        ),
        None => format!("is a binary file ({}) of {}, not shown as text", kind(&file.media_type), size(file.size)),
    };
    format!(
        "{} {what}; for its exact bytes call `{tool}` with format \"json\" (base64, with SHA-256 hashes) \
         or with start_byte/end_byte for a hex dump of a range.",
        file.path
    )
}

/// A media type as a person names it: `PDF document (application/pdf)`.
fn kind(media_type: &str) -> String {
    let name = match media_type {
        "application/octet-stream" => return "type unknown".into(),
        "application/pdf" => "PDF document",
        "application/zip" => "ZIP archive",
        "application/gzip" => "gzip archive",
        "application/x-bzip2" => "bzip2 archive",
        "application/x-xz" => "xz archive",
        "application/zstd" => "zstd archive",
        "application/x-7z-compressed" => "7-Zip archive",
        "application/x-tar" => "tar archive",
        "application/x-elf" => "ELF executable",
        "application/x-mach-binary" => "Mach-O executable",
        "application/wasm" => "WebAssembly module",
        "application/vnd.sqlite3" => "SQLite database",
        other if other.starts_with("image/") => "image",
        other if other.starts_with("audio/") => "audio",
        other if other.starts_with("video/") => "video",
        other if other.starts_with("font/") => "font",
        other => return other.into(),
    };
    format!("{name}, {media_type}")
}

/// A size as a person reads it, with the exact count: `8.0 KiB (8192 bytes)`.
fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let (mut value, mut unit) = (bytes as f64 / 1024.0, 0);
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        (value, unit) = (value / 1024.0, unit + 1);
    }
    format!("{value:.1} {} ({bytes} bytes)", UNITS[unit])
}

/// Every payload byte of the page, in order.
fn bytes(page: &Page) -> Vec<u8> {
    let mut out = Vec::with_capacity(page.bytes as usize);
    for block in &page.blocks {
        match block {
            Block::Text(text) => out.extend_from_slice(text.as_bytes()),
            Block::Bytes(raw) => out.extend_from_slice(raw),
        }
    }
    out
}

/// The page's text, each sequence of bytes that is not UTF-8 as U+FFFD.
fn lossy(page: &Page) -> Cow<'_, str> {
    match page.blocks.as_slice() {
        [Block::Text(text)] => Cow::Borrowed(text),
        blocks => Cow::Owned(
            blocks
                .iter()
                .map(|block| match block {
                    Block::Text(text) => Cow::Borrowed(text.as_str()),
                    Block::Bytes(raw) => String::from_utf8_lossy(raw),
                })
                .collect(),
        ),
    }
}

/// The note under text with bad bytes, naming where they are in the file
/// (the first few ranges, then how many more), or `None` when there are none.
fn bad_bytes_note(page: &Page) -> Option<String> {
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for chunk in page.chunks.iter().filter(|chunk| chunk.encoding == "base64") {
        let Some(span) = chunk.span else { continue };
        match ranges.last_mut() {
            Some(last) if last.1 == span.start_byte => last.1 = span.end_byte,
            _ => ranges.push((span.start_byte, span.end_byte)),
        }
    }
    let any_bytes = page.blocks.iter().any(|block| matches!(block, Block::Bytes(_)));
    if !any_bytes {
        return None;
    }
    let listed: Vec<String> = ranges
        .iter()
        .take(LISTED_RANGES)
        .map(|&(start, end)| match end - start {
            1 => format!("byte {start}"),
            _ => format!("bytes {start}–{}", end - 1),
        })
        .collect();
    let more = ranges.len().saturating_sub(LISTED_RANGES);
    let at = match (listed.is_empty(), more) {
        (true, _) => String::new(),
        (false, 0) => format!(" at {}", listed.join(", ")),
        (false, more) => format!(" at {} and {more} more place{}", listed.join(", "), if more == 1 { "" } else { "s" }),
    };
    Some(format!(
        "\n[Bytes that are not UTF-8{at} are shown as \u{FFFD}; format \"json\" gives them exactly (base64).]"
    ))
}

/// `bytes` as `xxd` dumps them, the first at file offset `offset`:
/// `00000010: 8950 4e47 0d0a 1a0a 0000 000d 4948 4452  .PNG........IHDR`.
fn hex_dump(bytes: &[u8], offset: u64) -> String {
    let mut out = String::with_capacity(bytes.len() / DUMP_WIDTH * 68 + 68);
    for (row, line) in bytes.chunks(DUMP_WIDTH).enumerate() {
        let _ = write!(out, "{:08x}:", offset + (row * DUMP_WIDTH) as u64);
        for (i, byte) in line.iter().enumerate() {
            let gap = if i % 2 == 0 { " " } else { "" };
            let _ = write!(out, "{gap}{byte:02x}");
        }
        let missing = DUMP_WIDTH - line.len();
        out.push_str(&" ".repeat(missing * 2 + missing / 2 + 2));
        out.extend(line.iter().map(|&b| if b.is_ascii_graphic() || b == b' ' { b as char } else { '.' }));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pager::page::{Builder, Piece};
    use crate::tool::{Budget, Chunk, Payload, Span};

    /// A page of `payloads`, each with its span from byte `at`, shown as `media`.
    fn page(payloads: Vec<Payload>, at: u64, media: Media) -> Page {
        let mut builder = Builder::new(Budget { bytes: 1 << 20, items: 1000 }, 16);
        let mut start = at;
        for payload in payloads {
            let end = start + payload.as_bytes().len() as u64;
            let span = Some(Span { start_byte: start, end_byte: end, lines: None });
            builder.push(Piece::Chunk(Chunk { payload, span, continued: false, resume: String::new() }));
            start = end;
        }
        let mut page = builder.finish("read", 0, Value::Null);
        page.media = Some(media);
        page
    }

    /// The one text block a page shows.
    fn only_text(page: &Page) -> String {
        let blocks = content(page).unwrap();
        assert_eq!(blocks.len(), 1, "{blocks:?}");
        blocks[0]["text"].as_str().unwrap().to_string()
    }

    fn file(path: &str, size: u64, media_type: &str) -> File {
        File { path: path.into(), size, media_type: media_type.into() }
    }

    #[test]
    fn an_image_is_one_image_block_and_one_line() {
        let png = file("a.png", 4, "image/png");
        let blocks = content(&page(vec![Payload::Bytes(vec![0x89, b'P', b'N', b'G'])], 0, Media::Image(png)));
        let blocks = blocks.unwrap();
        assert_eq!(blocks[0], json!({"type": "image", "data": "iVBORw==", "mimeType": "image/png"}));
        assert_eq!(blocks[1], json!({"type": "text", "text": "a.png: image/png, 4 bytes"}));
        assert_eq!(blocks.len(), 2);
    }

    #[test]
    fn a_binary_file_is_one_sentence_saying_how_to_get_its_bytes() {
        let described = Media::Described { file: file("r.bin", 102_400, "application/octet-stream"), limit: None };
        let said = only_text(&page(Vec::new(), 0, described));
        assert_eq!(
            said,
            "r.bin is a binary file (type unknown) of 100.0 KiB (102400 bytes), not shown as text; for its exact \
             bytes call `read` with format \"json\" (base64, with SHA-256 hashes) or with start_byte/end_byte for \
             a hex dump of a range."
        );
        let big = Media::Described { file: file("b.gif", 5 << 20, "image/gif"), limit: Some(3 << 20) };
        let said = only_text(&page(Vec::new(), 0, big));
        assert!(said.starts_with("b.gif is an image (image/gif) of 5.0 MiB (5242880 bytes), larger than the 3.0 MiB"));
        assert_eq!(said.matches(". ").count(), 0, "one sentence: {said}");
        assert_eq!(kind("application/pdf"), "PDF document, application/pdf");
    }

    #[test]
    fn a_notebook_is_its_cells_and_a_file_named_so_that_is_not_one_its_text() {
        let nb = r#"{"cells": [{"cell_type": "code", "source": "x = 1", "outputs": []}]}"#;
        let media = || Media::Notebook { file: file("n.ipynb", 60, "application/x-ipynb+json"), shown_bytes: 400 };
        let blocks = content(&page(vec![Payload::Text(nb.into())], 0, media())).unwrap();
        assert_eq!(
            blocks,
            vec![json!({"type": "text", "text": "n.ipynb: Jupyter notebook, 1 cell\n\n[cell 1: code]\nx = 1\n"})]
        );
        let not = only_text(&page(vec![Payload::Text(format!("{{{}", "x".repeat(500)))], 0, media()));
        assert!(not.len() <= 400 && not.starts_with("{xxx") && not.contains("cut here"), "{not}");
    }

    #[test]
    fn a_range_of_a_binary_file_is_a_hex_dump_at_its_offsets() {
        let raw = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\x01".to_vec();
        let blocks = content(&page(vec![Payload::Bytes(raw)], 16, Media::Range)).unwrap();
        assert_eq!(
            blocks,
            vec![json!({"type": "text", "text":
                "00000010: 8950 4e47 0d0a 1a0a 0000 000d 4948 4452  .PNG........IHDR\n\
                 00000020: 0001                                     ..\n"})]
        );
    }

    #[test]
    fn text_with_bad_bytes_stays_text_with_a_note_of_where_they_are() {
        let payloads = vec![
            Payload::Text("caf".into()),
            Payload::Bytes(vec![0xe9]),
            Payload::Text(" ok ".into()),
            Payload::Bytes(vec![0xff, 0xfe]),
            Payload::Text("\n".into()),
        ];
        let blocks = content(&page(payloads, 100, Media::Text)).unwrap();
        assert_eq!(blocks[0]["text"], "caf\u{FFFD} ok \u{FFFD}\u{FFFD}\n");
        assert_eq!(
            blocks[1]["text"],
            "\n[Bytes that are not UTF-8 at byte 103, bytes 108–109 are shown as \u{FFFD}; format \"json\" gives \
             them exactly (base64).]"
        );
        assert_eq!(content(&page(vec![Payload::Text("fine\n".into())], 0, Media::Text)), None, "clean text as is");
        let many: Vec<Payload> = (0..5).flat_map(|_| [Payload::Text("a".into()), Payload::Bytes(vec![0xff])]).collect();
        let note = bad_bytes_note(&page(many, 0, Media::Text)).unwrap();
        assert!(note.contains("at byte 1, byte 3, byte 5 and 2 more places are"), "{note}");
    }
}
