//! The read stream's exactness: at every budget the chunks put back together are
//! the file, the spans add up, and resuming at any chunk boundary gives the rest.

use std::io::Cursor;

use crate::error::ErrorCode;
use crate::reader::{Chunk, Piece, Position, ReadStream};

fn stream(bytes: &[u8], start: u64, end: Option<u64>, resume: Option<Position>) -> ReadStream<Cursor<Vec<u8>>> {
    ReadStream::open(Cursor::new(bytes.to_vec()), bytes.len() as u64, start, end, resume).unwrap()
}

fn drain(mut s: ReadStream<Cursor<Vec<u8>>>, budget: usize) -> Vec<Chunk> {
    let mut out = Vec::new();
    while let Some(chunk) = s.next(budget).unwrap() {
        out.push(chunk);
    }
    out
}

fn bytes_of(chunks: &[Chunk]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in chunks {
        match &c.piece {
            Piece::Text(t) => out.extend_from_slice(t.as_bytes()),
            Piece::Bytes(b) => out.extend_from_slice(b),
        }
    }
    out
}

fn samples() -> Vec<Vec<u8>> {
    let mut long = "x".repeat(200_000).into_bytes();
    long.extend_from_slice("é\nshort\n".as_bytes());
    vec![
        b"".to_vec(),
        b"one line, no newline".to_vec(),
        b"a\nb\nc\n".to_vec(),
        b"crlf\r\nlines\r\n\r\n".to_vec(),
        "naïve 日本語 🎉\nsecond ✓\n".repeat(50).into_bytes(),
        b"valid\n\xff\xfe broken \xc3\n\xe6\x97 end".to_vec(),
        long,
    ]
}

#[test]
fn chunks_concatenate_to_the_file_at_every_budget() {
    for file in samples() {
        for budget in [4, 5, 7, 16, 100, 4096, 65536] {
            let chunks = drain(stream(&file, 1, None, None), budget);
            assert_eq!(bytes_of(&chunks), file, "budget {budget}");
            let mut expect = Position::START;
            for c in &chunks {
                let len = match &c.piece {
                    Piece::Text(t) => t.len(),
                    Piece::Bytes(b) => b.len(),
                };
                assert!(len <= budget && len > 0, "chunk of {len} bytes at budget {budget}");
                assert_eq!(c.start, expect);
                assert_eq!(c.next.byte, c.start.byte + len as u64);
                expect = c.next;
            }
        }
    }
}

#[test]
fn text_is_never_cut_inside_a_character() {
    let file = "🎉".repeat(1000).into_bytes();
    for budget in [4, 5, 6, 7, 9] {
        for c in drain(stream(&file, 1, None, None), budget) {
            assert!(matches!(c.piece, Piece::Text(_)), "budget {budget}: {c:?}");
        }
    }
}

#[test]
fn invalid_utf8_comes_back_as_bytes_not_replacement_characters() {
    let file = b"ok\n\xff\xfeok".to_vec();
    let chunks = drain(stream(&file, 1, None, None), 1024);
    assert!(chunks.iter().any(|c| c.piece == Piece::Bytes(vec![0xff, 0xfe])), "{chunks:?}");
    assert_eq!(bytes_of(&chunks), file);
}

#[test]
fn resuming_at_any_boundary_gives_exactly_the_rest() {
    for file in samples() {
        let budget = if file.len() > 10_000 { 8192 } else { 7 };
        let chunks = drain(stream(&file, 1, None, None), budget);
        for (i, c) in chunks.iter().enumerate() {
            let rest = drain(stream(&file, 1, None, Some(Position::decode(&c.next.encode()).unwrap())), 4096);
            assert_eq!(bytes_of(&rest), bytes_of(&chunks[i + 1..]));
        }
    }
}

#[test]
fn line_ranges_select_whole_lines() {
    let file = b"l1\nl2\nl3\nl4\nl5".to_vec();
    let read = |s, e, budget| String::from_utf8(bytes_of(&drain(stream(&file, s, e, None), budget))).unwrap();
    assert_eq!(read(2, Some(3), 4096), "l2\nl3\n");
    assert_eq!(read(2, Some(3), 4), "l2\nl3\n");
    assert_eq!(read(5, None, 4096), "l5");
    assert_eq!(read(4, Some(99), 4), "l4\nl5");
    assert_eq!(read(1, Some(1), 4096), "l1\n");
}

#[test]
fn spans_give_lines_and_bytes() {
    let file = b"l1\nl2\nl3\n".to_vec();
    let chunks = drain(stream(&file, 2, None, None), 4096);
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].start, Position { byte: 3, line: 2 });
    assert_eq!(chunks[0].end_line, 3);
    assert_eq!(chunks[0].next, Position { byte: 9, line: 4 });
}

#[test]
fn start_line_past_the_end_is_an_error_naming_the_length() {
    for (file, lines) in [(&b"a\nb\n"[..], 2), (&b"a\nb"[..], 2)] {
        let err = ReadStream::open(Cursor::new(file.to_vec()), file.len() as u64, 3, None, None).err().unwrap();
        assert_eq!(err.code, ErrorCode::InvalidArgument);
        assert!(err.message.contains(&format!("has {lines} lines")), "{}", err.message);
    }
    let ok = ReadStream::open(Cursor::new(b"a\nb".to_vec()), 3, 2, None, None);
    assert!(ok.is_ok());
}

#[test]
fn bad_ranges_and_positions_are_rejected() {
    let open = |s, e, r| ReadStream::open(Cursor::new(b"abc".to_vec()), 3, s, e, r).err().map(|e| e.code);
    assert_eq!(open(0, None, None), Some(ErrorCode::InvalidArgument));
    assert_eq!(open(3, Some(2), None), Some(ErrorCode::InvalidArgument));
    assert_eq!(open(1, None, Some(Position { byte: 9, line: 1 })), Some(ErrorCode::Stale));
    assert!(Position::decode("nonsense").is_err());
    assert!(Position::decode("5:0").is_err());
}
