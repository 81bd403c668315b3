//! Images and other binary files through `read`: in the text form an image is
//! one `image` block (gathered whole past the page's budget), any other
//! binary file one sentence, a byte range of one a hex dump, and a text file
//! with a few bad bytes stays text; the JSON form keeps every byte exactly.

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::{Fixture, Rng, Server, page_meta, read_all};

/// A valid 1x1 PNG (RGBA), as image tools write it.
const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

fn decode(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(text).unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    (0..len).map(|_| rng.next() as u8).collect()
}

/// A JPEG's header (SOI, JFIF APP0), then `len` bytes of scan data, then EOI.
fn jpeg(len: usize) -> Vec<u8> {
    let mut out = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00".to_vec();
    out.extend(random_bytes(len, 7));
    out.extend_from_slice(b"\xff\xd9");
    out
}

fn content(result: &Value) -> &Vec<Value> {
    result["content"].as_array().unwrap_or_else(|| panic!("no content: {result}"))
}

#[test]
fn an_image_comes_whole_as_one_image_block_even_past_the_page_budget() {
    let fx = Fixture::new();
    let png = decode(PNG_1X1);
    fx.write("pixel.dat", &png);
    // A PNG of 20 KB: the 1x1 image, then bytes a decoder ignores.
    let mut large = png.clone();
    large.extend(random_bytes(20_000, 3));
    fx.write("large.png", &large);
    fx.write("photo.jpg", jpeg(3000));
    let mut server = Server::initialized(&fx.root(), &[]);

    let result = server.call(1, "read", json!({"path": "pixel.dat"}));
    assert_eq!(result["isError"], false, "{result}");
    let blocks = content(&result);
    assert_eq!(blocks.len(), 2, "one image and one line: {result}");
    assert_eq!(blocks[0]["type"], "image");
    assert_eq!(blocks[0]["mimeType"], "image/png", "told by its bytes, not its name");
    assert_eq!(decode(blocks[0]["data"].as_str().unwrap()), png);
    assert_eq!(blocks[1]["text"], format!("pixel.dat: image/png, {} bytes", png.len()));

    // 20 KB at a page of 100 tokens (400 bytes): still one result, whole.
    let result = server.call(2, "read", json!({"path": "large.png", "max_tokens": 100}));
    let blocks = content(&result);
    assert_eq!(blocks.len(), 2, "no footer, no continuation: {result}");
    assert_eq!(decode(blocks[0]["data"].as_str().unwrap()), large);
    assert!(blocks[1]["text"].as_str().unwrap().starts_with("large.png: image/png, 19.6 KiB (20068 bytes)"));

    let result = server.call(3, "read", json!({"path": "photo.jpg"}));
    let blocks = content(&result);
    assert_eq!((&blocks[0]["type"], &blocks[0]["mimeType"]), (&json!("image"), &json!("image/jpeg")));
    assert_eq!(decode(blocks[0]["data"].as_str().unwrap()), jpeg(3000));
    assert!(server.finish());
}

#[test]
fn an_image_over_the_limit_is_refused_with_a_sentence_saying_how_to_get_its_bytes() {
    let fx = Fixture::new();
    let mut big = decode(PNG_1X1);
    big.extend(random_bytes(300_000, 5));
    fx.write("big.png", &big);
    // A response limit of 256 KiB leaves room for images of 144 KiB.
    let mut server = Server::initialized(&fx.root(), &["--max-response-bytes", "262144"]);
    let result = server.call(1, "read", json!({"path": "big.png"}));
    assert_eq!(result["isError"], false, "{result}");
    let blocks = content(&result);
    assert_eq!(blocks.len(), 1, "{result}");
    let said = blocks[0]["text"].as_str().unwrap();
    assert!(said.starts_with("big.png is an image (image/png) of 293.0 KiB (300068 bytes), larger than"), "{said}");
    assert!(said.contains("format \"json\"") && said.contains("start_byte/end_byte"), "{said}");
    // The largest image shown: (256 KiB - 64 KiB) * 3/4, whose response fits the limit.
    big.truncate((262_144 - 65_536) / 4 * 3);
    fx.write("edge.png", &big);
    let result = server.call(2, "read", json!({"path": "edge.png"}));
    assert_eq!(content(&result)[0]["type"], "image", "its response fits the limit");
    assert_eq!(decode(content(&result)[0]["data"].as_str().unwrap()), big);
    assert!(server.finish());
}

#[test]
fn random_bytes_cost_the_model_one_short_sentence() {
    let fx = Fixture::new();
    fx.write("noise.bin", random_bytes(100_000, 11));
    let mut server = Server::initialized(&fx.root(), &[]);
    let result = server.call(1, "read", json!({"path": "noise.bin"}));
    assert_eq!(result["isError"], false, "{result}");
    let whole = result.to_string();
    assert!(whole.len() <= 2_000, "{} characters: {whole}", whole.len());
    let blocks = content(&result);
    assert_eq!(blocks.len(), 1, "{result}");
    let said = blocks[0]["text"].as_str().unwrap();
    assert_eq!(
        said,
        "noise.bin is a binary file (type unknown) of 97.7 KiB (100000 bytes), not shown as text; for its exact \
         bytes call `read` with format \"json\" (base64, with SHA-256 hashes) or with start_byte/end_byte for a \
         hex dump of a range."
    );
    assert_eq!(said.matches(". ").count(), 0, "one sentence");
    assert!(result.get("structuredContent").is_none(), "the text form is content only: {result}");

    fx.write("doc.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n");
    let pdf = server.call(2, "read", json!({"path": "doc.pdf"}));
    assert!(content(&pdf)[0]["text"].as_str().unwrap().contains("(PDF document, application/pdf)"), "{pdf}");
    assert!(server.finish());
}

#[test]
fn a_byte_range_of_a_binary_file_is_a_hex_dump() {
    let fx = Fixture::new();
    fx.write("pixel.png", decode(PNG_1X1));
    let mut server = Server::initialized(&fx.root(), &[]);
    let result = server.call(1, "read", json!({"path": "pixel.png", "start_byte": 0, "end_byte": 20}));
    let blocks = content(&result);
    assert_eq!(blocks.len(), 1, "{result}");
    assert_eq!(
        blocks[0]["text"],
        "00000000: 8950 4e47 0d0a 1a0a 0000 000d 4948 4452  .PNG........IHDR\n\
         00000010: 0000 0001                                ....\n"
    );
    assert!(server.finish());
}

#[test]
fn a_text_file_with_two_bad_bytes_stays_text_with_a_note() {
    let fx = Fixture::new();
    fx.write("latin.txt", b"caf\xe9 au lait\nna\xefve\nplain line\n");
    let mut server = Server::initialized(&fx.root(), &[]);
    let result = server.call(1, "read", json!({"path": "latin.txt"}));
    let blocks = content(&result);
    assert_eq!(blocks.len(), 2, "the text and its note: {result}");
    assert_eq!(blocks[0]["text"], "1\tcaf\u{FFFD} au lait\n2\tna\u{FFFD}ve\n3\tplain line\n");
    let plain = server.call(2, "read", json!({"path": "latin.txt", "line_numbers": false}));
    assert_eq!(content(&plain)[0]["text"], "caf\u{FFFD} au lait\nna\u{FFFD}ve\nplain line\n", "{plain}");
    assert_eq!(content(&plain).len(), 2, "one text block, not runs, and the note: {plain}");
    let note = blocks[1]["text"].as_str().unwrap();
    assert!(note.contains("not UTF-8 at byte 3, byte 15 are shown as \u{FFFD}"), "{note}");
    assert!(note.contains("format \"json\""), "{note}");

    // The JSON form has the bytes exactly.
    let (got, _) = read_all(&mut server, "read", json!({"path": "latin.txt"}), 1000);
    assert_eq!(got, b"caf\xe9 au lait\nna\xefve\nplain line\n");
    assert!(server.finish());
}

#[test]
fn the_json_form_of_a_binary_file_reassembles_exactly_with_its_hashes() {
    let fx = Fixture::new();
    let noise = random_bytes(100_000, 13);
    fx.write("noise.bin", &noise);
    let mut server = Server::initialized(&fx.root(), &[]);
    for max_tokens in [1_000, 6_000] {
        let (got, pages) = read_all(&mut server, "read", json!({"path": "noise.bin"}), max_tokens);
        assert!(got == noise, "{} bytes back of {}", got.len(), noise.len());
        assert!(pages.len() > 1, "paged at {max_tokens} tokens");
        let mut at = 0usize;
        for page in &pages {
            assert_eq!(page["structuredContent"]["media_type"], "application/octet-stream");
            for chunk in page_meta(page)["chunks"].as_array().unwrap() {
                let len = chunk["bytes"].as_u64().unwrap() as usize;
                assert_eq!(chunk["encoding"], "base64");
                assert_eq!(chunk["start_byte"], at as u64);
                assert_eq!(chunk["sha256"], hex(&Sha256::digest(&noise[at..at + len])), "chunk at {at}");
                at += len;
            }
        }
        assert_eq!(at, noise.len(), "the chunks cover the file");
        let whole = &page_meta(pages.last().unwrap())["payload_sha256"];
        assert_eq!(*whole, hex(&Sha256::digest(&noise)), "the whole payload's hash");
    }
    assert!(server.finish());
}

#[test]
fn a_notebook_is_shown_as_its_cells_with_their_outputs() {
    let fx = Fixture::new();
    let notebook = json!({
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "cells": [
            {"cell_type": "markdown", "id": "a", "metadata": {}, "source": ["# Sales\n", "By month."]},
            {"cell_type": "code", "id": "b", "metadata": {}, "execution_count": 1,
             "source": ["total = sum(sales)\n", "print(total)"],
             "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1234\n"]},
                         {"output_type": "display_data", "metadata": {},
                          "data": {"image/png": PNG_1X1, "text/plain": ["<Figure size 640x480>"]}}]}
        ]
    });
    let raw = serde_json::to_string_pretty(&notebook).unwrap();
    fx.write("sales.ipynb", &raw);
    let mut server = Server::initialized(&fx.root(), &[]);
    // A page of 100 tokens is smaller than the notebook: it is gathered whole all the same.
    let result = server.call(1, "read", json!({"path": "sales.ipynb", "max_tokens": 100}));
    let blocks = content(&result);
    assert_eq!(blocks.len(), 1, "{result}");
    assert_eq!(
        blocks[0]["text"],
        "sales.ipynb: Jupyter notebook, 2 cells (python)\n\
         \n[cell 1: markdown]\n# Sales\nBy month.\n\
         \n[cell 2: code, In [1]]\ntotal = sum(sales)\nprint(total)\n[output]\n1234\n\
         [output]\n<Figure size 640x480>\n[image/png output (92 bytes in the notebook), not shown]\n"
    );
    // Its lines are its JSON, exactly; so is the JSON form.
    let lines = server.call(2, "read", json!({"path": "sales.ipynb", "start_line": 1, "end_line": 2}));
    let numbered: String = raw.lines().take(2).enumerate().map(|(i, l)| format!("{}\t{l}\n", i + 1)).collect();
    assert_eq!(content(&lines)[0]["text"], numbered);
    let (got, _) = read_all(&mut server, "read", json!({"path": "sales.ipynb"}), 1000);
    assert_eq!(got, raw.as_bytes());
    assert!(server.finish());
}
