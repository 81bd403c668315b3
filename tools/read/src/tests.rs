//! The read stream's exactness: at every budget the chunks put back together are
//! the selection, the spans add up, the limits hold, and resuming at any chunk
//! boundary gives the rest. Then the call as a whole, on real files.

use std::io::Cursor;
use std::path::PathBuf;

use crate::reader::{Chunk, Piece, Position, ReadStream, Selection};
use cordon_sdk::ErrorCode;
use cordon_sdk::Stream as _;

type Stream = ReadStream<Cursor<Vec<u8>>>;

fn stream(bytes: &[u8], selection: Selection, resume: Option<Position>) -> Stream {
    ReadStream::open(Cursor::new(bytes.to_vec()), bytes.len() as u64, selection, resume).unwrap()
}

fn lines(start: u64, end: Option<u64>) -> Selection {
    Selection::Lines { start, end }
}

fn byte_range(start: u64, end: Option<u64>) -> Selection {
    Selection::Bytes { start, end }
}

fn drain(mut s: Stream, budget: usize, items: usize) -> Vec<Chunk> {
    let mut out = Vec::new();
    while let Some(chunk) = s.next(budget, items).unwrap() {
        out.push(chunk);
    }
    out
}

fn bytes_of(chunks: &[Chunk]) -> Vec<u8> {
    chunks.iter().flat_map(|c| c.piece.as_bytes().to_vec()).collect()
}

fn newlines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

/// A small deterministic generator, so the property tests need no crate.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn samples() -> Vec<Vec<u8>> {
    let mut long = "x".repeat(200_000).into_bytes();
    long.extend_from_slice("é\nshort\n".as_bytes());
    vec![
        b"".to_vec(),
        b"one line, no newline".to_vec(),
        b"a\nb\nc\n".to_vec(),
        b"\n\n\n\nx\n\n".to_vec(),
        b"crlf\r\nlines\r\n\r\n".to_vec(),
        "naïve 日本語 🎉\nsecond ✓\n".repeat(50).into_bytes(),
        b"valid\n\xff\xfe broken \xc3\n\xe6\x97 end".to_vec(),
        long,
    ]
}

/// Checks every chunk of a selection that starts at `start` and whose bytes
/// are `expect`: sizes, limits, spans, line numbers and `continued`.
fn check(chunks: &[Chunk], expect: &[u8], start: Position, budget: usize, items: usize) {
    assert_eq!(bytes_of(chunks), expect, "budget {budget}, items {items}");
    let mut at = start;
    for (i, c) in chunks.iter().enumerate() {
        let bytes = c.piece.as_bytes();
        let ends_line = bytes.last() == Some(&b'\n');
        assert!(!bytes.is_empty() && bytes.len() <= budget, "chunk of {} bytes at budget {budget}", bytes.len());
        assert!(newlines(bytes) <= items as u64, "{} line ends at items {items}", newlines(bytes));
        assert_eq!(c.start, at);
        assert_eq!(c.next.byte, c.start.byte + bytes.len() as u64);
        assert_eq!(c.next.line, c.start.line.map(|l| l + newlines(bytes)));
        assert_eq!(c.end_line, c.start.line.map(|l| l + newlines(bytes) - u64::from(ends_line)));
        assert_eq!(c.continued, !ends_line && i + 1 < chunks.len(), "chunk {i} of {}: {c:?}", chunks.len());
        at = c.next;
    }
}

#[test]
fn chunks_concatenate_to_the_file_at_every_budget() {
    let mut rng = Rng(0x5eed);
    for file in samples() {
        for budget in [4, 5, 7, 16, 100, 4096, 65536] {
            let items = [usize::MAX, 1 + rng.below(3) as usize, 1 + rng.below(50) as usize];
            for items in items {
                check(
                    &drain(stream(&file, Selection::ALL, None), budget, items),
                    &file,
                    Position::START,
                    budget,
                    items,
                );
            }
        }
    }
}

#[test]
fn resuming_at_any_boundary_gives_exactly_the_rest() {
    let mut rng = Rng(42);
    for file in samples() {
        let budget = if file.len() > 10_000 { 8192 } else { 7 };
        let items = 1 + rng.below(4) as usize;
        let chunks = drain(stream(&file, Selection::ALL, None), budget, items);
        for (i, c) in chunks.iter().enumerate() {
            let resume = Position::decode(&c.next.encode()).unwrap();
            let rest = drain(stream(&file, Selection::ALL, Some(resume)), budget, items);
            assert_eq!(rest, chunks[i + 1..]);
        }
    }
}

#[test]
fn text_is_never_cut_inside_a_character() {
    let file = "🎉".repeat(1000).into_bytes();
    for budget in [4, 5, 6, 7, 9] {
        for c in drain(stream(&file, Selection::ALL, None), budget, usize::MAX) {
            assert!(matches!(c.piece, Piece::Text(_)), "budget {budget}: {c:?}");
        }
    }
}

#[test]
fn invalid_utf8_comes_back_as_bytes_not_replacement_characters() {
    let file = b"ok\n\xff\xfeok".to_vec();
    let chunks = drain(stream(&file, Selection::ALL, None), 1024, 100);
    assert!(chunks.iter().any(|c| c.piece == Piece::Bytes(vec![0xff, 0xfe])), "{chunks:?}");
    assert_eq!(bytes_of(&chunks), file);
}

#[test]
fn chunks_are_cut_after_the_last_whole_line_that_fits() {
    let chunks = drain(stream(b"aaa\nbbb\ncccccc\n", Selection::ALL, None), 10, 100);
    let texts: Vec<_> = chunks.iter().map(|c| c.piece.clone()).collect();
    assert_eq!(texts, ["aaa\nbbb\n", "cccccc\n"].map(|t| Piece::Text(t.into())));
    assert!(chunks.iter().all(|c| !c.continued));
}

#[test]
fn items_limit_the_line_ends_per_chunk() {
    let file: String = (1..=100).map(|n| format!("line {n}\n")).collect();
    for items in [1, 7, 10, 33, 100, 1000] {
        let chunks = drain(stream(file.as_bytes(), Selection::ALL, None), 65536, items);
        assert_eq!(chunks.len(), 100usize.div_ceil(items), "items {items}");
        for (i, c) in chunks.iter().enumerate() {
            let want = if i + 1 < chunks.len() { items.min(100) } else { 100 - items * i };
            assert_eq!(newlines(c.piece.as_bytes()) as usize, want, "items {items}, chunk {i}");
            assert_eq!(c.end_line, Some(c.start.line.unwrap() + want as u64 - 1));
            assert!(!c.continued);
        }
    }
    // Zero is taken as one.
    assert_eq!(drain(stream(b"a\nb\n", Selection::ALL, None), 100, 0).len(), 2);
}

#[test]
fn continued_marks_pieces_of_a_line_larger_than_the_budget() {
    let mut file = "y".repeat(200 * 1024).into_bytes();
    file.push(b'\n');
    let chunks = drain(stream(&file, Selection::ALL, None), 64 * 1024, 1000);
    assert_eq!(chunks.len(), 4);
    let flags: Vec<bool> = chunks.iter().map(|c| c.continued).collect();
    assert_eq!(flags, [true, true, true, false]);
    assert!(chunks.iter().all(|c| c.start.line == Some(1) && c.end_line == Some(1)));
    assert_eq!(bytes_of(&chunks), file);

    // A last line with no newline ends the file, so it is not continued.
    let chunks = drain(stream(b"a\nlastline", Selection::ALL, None), 4, 1000);
    let flags: Vec<_> = chunks.iter().map(|c| (c.piece.as_bytes().to_vec(), c.continued)).collect();
    assert_eq!(flags, [(b"a\n".to_vec(), false), (b"last".to_vec(), true), (b"line".to_vec(), false)]);
    let one = drain(stream(b"a\nlast", Selection::ALL, None), 4096, 1000);
    assert_eq!(one.len(), 1);
    assert!(!one[0].continued);
}

#[test]
fn line_ranges_select_whole_lines() {
    let file = b"l1\nl2\nl3\nl4\nl5".to_vec();
    let read = |s, e, budget, items| {
        String::from_utf8(bytes_of(&drain(stream(&file, lines(s, e), None), budget, items))).unwrap()
    };
    assert_eq!(read(2, Some(3), 4096, 100), "l2\nl3\n");
    assert_eq!(read(2, Some(3), 4, 100), "l2\nl3\n");
    assert_eq!(read(2, Some(4), 4096, 1), "l2\nl3\nl4\n");
    assert_eq!(read(5, None, 4096, 100), "l5");
    assert_eq!(read(4, Some(99), 4, 100), "l4\nl5");
    assert_eq!(read(1, Some(1), 4096, 100), "l1\n");
    // The last chunk of a line range is not continued, even mid-file.
    let chunks = drain(stream(&file, lines(1, Some(2)), None), 4096, 100);
    assert!(chunks.iter().all(|c| !c.continued));
}

#[test]
fn spans_give_lines_and_bytes() {
    let file = b"l1\nl2\nl3\n".to_vec();
    let chunks = drain(stream(&file, lines(2, None), None), 4096, 100);
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].start, Position { byte: 3, line: Some(2) });
    assert_eq!(chunks[0].end_line, Some(3));
    assert_eq!(chunks[0].next, Position { byte: 9, line: Some(4) });
}

#[test]
fn start_line_past_the_end_is_an_error_naming_the_length() {
    for (file, lines_in_file) in [(&b"a\nb\n"[..], 2), (&b"a\nb"[..], 2), (&b""[..], 0)] {
        let err = ReadStream::open(Cursor::new(file.to_vec()), file.len() as u64, lines(3, None), None).err().unwrap();
        assert_eq!(err.code, ErrorCode::InvalidArgument);
        assert!(err.message.contains(&format!("has {lines_in_file} lines")), "{}", err.message);
    }
    assert!(ReadStream::open(Cursor::new(b"a\nb".to_vec()), 3, lines(2, None), None).is_ok());
}

#[test]
fn byte_ranges_give_exactly_their_bytes() {
    for file in samples() {
        let len = file.len() as u64;
        let ranges =
            [(0, None), (0, Some(len / 2)), (1, None), (len / 3, Some(len / 3 + 5)), (len, None), (2, Some(len + 50))];
        for (start, end) in ranges {
            let (start, end) = (start.min(len), end.map(|e: u64| e.max(start.min(len))));
            let expect = &file[start as usize..end.unwrap_or(len).min(len) as usize];
            let at = Position { byte: start, line: (start == 0).then_some(1) };
            for budget in [4, 7, 100, 65536] {
                for items in [1, 3, usize::MAX] {
                    let chunks = drain(stream(&file, byte_range(start, end), None), budget, items);
                    check(&chunks, expect, at, budget, items);
                    assert!(chunks.iter().all(|c| c.start.line.is_some() == (start == 0)));
                }
            }
        }
    }
}

#[test]
fn a_byte_range_starting_mid_character_begins_with_bytes() {
    let file = "日本語\n".as_bytes();
    let chunks = drain(stream(file, byte_range(1, None), None), 4096, 100);
    assert_eq!(chunks[0].piece, Piece::Bytes(vec![0x97, 0xa5]));
    assert_eq!(chunks[1].piece, Piece::Text("本語\n".into()));
    assert_eq!(chunks[0].start, Position { byte: 1, line: None });
    assert_eq!(chunks[0].end_line, None);
    // An end inside a character is kept exactly: its first bytes come as bytes.
    let chunks = drain(stream(file, byte_range(0, Some(4)), None), 4096, 100);
    assert_eq!(bytes_of(&chunks), &file[..4]);
    assert_eq!(chunks.last().unwrap().piece, Piece::Bytes(vec![0xe6]));
    assert_eq!(chunks.last().unwrap().next.byte, 4);
}

#[test]
fn resuming_within_a_byte_range_gives_the_rest_with_lines_unknown() {
    let file = "naïve 日本語 🎉\nsecond ✓\n".repeat(20).into_bytes();
    let (start, end) = (5, file.len() as u64 - 9);
    let chunks = drain(stream(&file, byte_range(start, Some(end)), None), 11, 2);
    assert_eq!(bytes_of(&chunks), &file[start as usize..end as usize]);
    for (i, c) in chunks.iter().enumerate() {
        let resume = Position::decode(&c.next.encode()).unwrap();
        assert_eq!(resume.line, None);
        let rest = drain(stream(&file, byte_range(start, Some(end)), Some(resume)), 11, 2);
        assert_eq!(rest, chunks[i + 1..]);
        assert!(rest.iter().all(|c| c.start.line.is_none() && c.end_line.is_none() && c.next.byte <= end));
    }
}

#[test]
fn bad_ranges_and_positions_are_rejected() {
    let open = |sel, r| ReadStream::open(Cursor::new(b"abc".to_vec()), 3, sel, r).err().map(|e| (e.code, e.message));
    let code = |sel, r| open(sel, r).map(|(code, _)| code);
    assert_eq!(code(lines(0, None), None), Some(ErrorCode::InvalidArgument));
    assert_eq!(code(lines(3, Some(2)), None), Some(ErrorCode::InvalidArgument));
    assert_eq!(code(byte_range(2, Some(1)), None), Some(ErrorCode::InvalidArgument));
    let (code_past, message) = open(byte_range(4, None), None).unwrap();
    assert_eq!(code_past, ErrorCode::InvalidArgument);
    assert!(message.contains("3 bytes"), "{message}");
    assert_eq!(code(byte_range(3, None), None), None);
    assert_eq!(code(lines(1, None), Some(Position { byte: 9, line: Some(1) })), Some(ErrorCode::Stale));
    assert_eq!(code(byte_range(2, None), Some(Position { byte: 1, line: None })), Some(ErrorCode::InvalidArgument));
    assert_eq!(code(byte_range(0, Some(1)), Some(Position { byte: 2, line: None })), Some(ErrorCode::InvalidArgument));
    assert_eq!(code(lines(1, Some(2)), Some(Position { byte: 1, line: None })), Some(ErrorCode::InvalidArgument));
    for bad in ["nonsense", "5:0", "5", ":3", "5:", "-1:2", "+5:2", "5:?:1", "5: 2", "x:?"] {
        assert_eq!(Position::decode(bad).unwrap_err().code, ErrorCode::InvalidArgument, "{bad}");
    }
    assert_eq!(Position::decode("7:?").unwrap(), Position { byte: 7, line: None });
    assert_eq!(Position::decode("7:3").unwrap(), Position { byte: 7, line: Some(3) });
}

/// A scratch directory removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("cordon-read-{}-{tag}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn roots(&self) -> Vec<String> {
        vec![self.0.display().to_string()]
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn arguments_take_one_kind_of_range() {
    let dir = Scratch::new("args");
    std::fs::write(dir.0.join("f.txt"), "hello\nworld\n").unwrap();
    let open = |args: &str| crate::Read::open(&dir.roots(), args, None);
    let err = open(r#"{"path":"f.txt","start_line":1,"end_byte":3}"#).err().unwrap();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("cannot be combined"), "{}", err.message);
    assert_eq!(open(r#"{"path":"f.txt","start_byte":99}"#).err().unwrap().code, ErrorCode::InvalidArgument);
    assert_eq!(open(r#"{"path":"f.txt","start_byte":-1}"#).err().unwrap().code, ErrorCode::InvalidArgument);
    assert_eq!(open(r#"{"path":"f.txt","bogus":1}"#).err().unwrap().code, ErrorCode::InvalidArgument);

    let mut read = open(r#"{"path":"f.txt","start_byte":6,"end_byte":9}"#).unwrap();
    let chunk = read.stream.next(4096, 100).unwrap().unwrap();
    assert_eq!(chunk.piece, Piece::Text("wor".into()));
    assert_eq!(read.stream.next(4096, 100).unwrap(), None);
    let summary = read.summary();
    assert_eq!(summary.totals, serde_json::json!({ "bytes": 12, "range_bytes": 3, "range_end": 9 }));
    assert!(summary.exact && !summary.suggestions.is_empty());
    assert_eq!(open(r#"{"path":"f.txt"}"#).unwrap().summary().totals, serde_json::json!({ "bytes": 12 }));
    let resumed = crate::Read::open(&dir.roots(), r#"{"path":"f.txt","start_byte":6}"#, Some("8:?")).unwrap();
    assert_eq!(bytes_of(&drain_file(resumed)), b"rld\n");
    let bad = crate::Read::open(&dir.roots(), r#"{"path":"f.txt"}"#, Some("garbage"));
    assert_eq!(bad.err().unwrap().code, ErrorCode::InvalidArgument);
}

fn drain_file(mut read: crate::Read) -> Vec<Chunk> {
    let mut out = Vec::new();
    while let Some(chunk) = read.stream.next(4096, 100).unwrap() {
        out.push(chunk);
    }
    out
}

#[test]
fn a_file_that_grew_or_shrank_since_it_was_opened_is_read_to_its_real_end() {
    // Reads ask for what the size at open says is left, and a byte more: a
    // file that grew since is read on past that size, one that shrank ends early.
    let text: Vec<u8> = (0..40_000u32).flat_map(|n| format!("line {n}\n").into_bytes()).collect();
    for size in [0, 5, 70_000, text.len() as u64 + 10] {
        let grown = ReadStream::open(Cursor::new(text.clone()), size, lines(1, None), None).unwrap();
        assert_eq!(bytes_of(&drain(grown, 3000, 1000)), text, "opened with a size of {size}");
    }
}

/// A file that gives at most `most` bytes a read, as a source may give short
/// reads before its end.
struct Trickle {
    file: Cursor<Vec<u8>>,
    most: usize,
}

impl std::io::Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.most);
        self.file.read(&mut buf[..n])
    }
}

impl std::io::Seek for Trickle {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        self.file.seek(to)
    }
}

/// Every byte a stream over a trickling file gives, from its head on.
fn trickled(file: &[u8], size: usize, most: usize) -> Vec<u8> {
    let mut src = Trickle { file: Cursor::new(file.to_vec()), most };
    let head = crate::reader::Head::read(&mut src, size as u64, 8 * 1024).unwrap();
    let mut stream = ReadStream::open(src, size as u64, lines(1, None), None).unwrap().with_head(head).unwrap();
    let mut out = Vec::new();
    while let Some(chunk) = stream.next(3000, 1000).unwrap() {
        out.push(chunk);
    }
    bytes_of(&out)
}

#[test]
fn short_reads_before_the_end_still_give_what_the_file_held_at_open() {
    // A read short of the size at open is not the end; one that reaches it
    // is taken as the end (another read would only confirm it).
    let text: Vec<u8> = (0..3_000u32).flat_map(|n| format!("line {n}\n").into_bytes()).collect();
    for most in [1, 5, 7, 4096] {
        for len in [0, 1, 41, 42, 100, 8 * 1024, 8 * 1024 + 1, text.len()] {
            let file = &text[..len];
            assert_eq!(trickled(file, len, most), file, "{len} bytes, {most} a read");
            // Shrunk since it was opened: what it still holds.
            assert_eq!(trickled(&file[..len / 2], len, most), &file[..len / 2], "shrunk, {most} a read");
            // Grown since: at least what it held at open, never past what it holds.
            let grown = [file, b"more\n"].concat();
            let got = trickled(&grown, len, most);
            assert!(got.len() >= len && grown.starts_with(&got), "grown from {len}, {most} a read: {}", got.len());
        }
    }
}

/// A file that counts the bytes read from it, and the reads (each a host call
/// in a component).
struct Counted {
    file: Cursor<Vec<u8>>,
    read: std::rc::Rc<std::cell::Cell<usize>>,
    calls: std::rc::Rc<std::cell::Cell<usize>>,
}

impl std::io::Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        self.read.set(self.read.get() + n);
        self.calls.set(self.calls.get() + 1);
        Ok(n)
    }
}

impl std::io::Seek for Counted {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        self.file.seek(to)
    }
}

#[test]
fn the_sniffed_head_is_not_read_again_and_every_selection_gives_the_same_bytes() {
    use crate::reader::Head;
    let text: Vec<u8> = (0..3_000u32).flat_map(|n| format!("line {n} ünï\n").into_bytes()).collect();
    for len in [0, 1, 100, 8 * 1024, 8 * 1024 + 1, text.len()] {
        let file = &text[..len];
        let resume_at = drain(stream(file, lines(1, None), None), 700, 1000).first().map(|c| c.next);
        let selections = [
            (lines(1, None), None),
            (lines(3, Some(40)), None),
            (byte_range(0, Some(500)), None),
            (byte_range(5, None), None),
            (lines(1, None), resume_at),
        ];
        for (selection, resume) in selections {
            let Ok(plain) = ReadStream::open(Cursor::new(file.to_vec()), len as u64, selection, resume) else {
                continue;
            };
            let (read, calls) = (std::rc::Rc::new(std::cell::Cell::new(0)), std::rc::Rc::new(std::cell::Cell::new(0)));
            let mut counted = Counted { file: Cursor::new(file.to_vec()), read: read.clone(), calls: calls.clone() };
            let head = Head::read(&mut counted, len as u64, 8 * 1024).unwrap();
            assert_eq!(head.bytes, file[..len.min(8 * 1024)], "{len} bytes");
            assert_eq!(head.ended, len < 8 * 1024, "{len} bytes");
            let with_head = ReadStream::open(counted, len as u64, selection, resume).unwrap().with_head(head).unwrap();
            let (want, got) = (drain(plain, 3000, 1000), drain_counted(with_head));
            assert_eq!(bytes_of(&got), bytes_of(&want), "{len} bytes, {selection:?} at {resume:?}");
            // From the file's start no byte is read twice; the whole file is read once.
            if resume.is_none()
                && matches!(selection, Selection::Lines { start: 1, .. } | Selection::Bytes { start: 0, .. })
            {
                assert!(read.get() <= len, "{len} bytes, {} read, {selection:?}", read.get());
            }
            if (selection, resume) == (lines(1, None), None) {
                assert_eq!(read.get(), len, "{len} bytes read once");
                // A short read at the size the file had is its end: no read
                // more to see it. A file under the head's 8 KiB is one read;
                // a larger one the head's and one for the rest.
                assert_eq!(calls.get(), if len < 8 * 1024 { 1 } else { 2 }, "{len} bytes: reads");
            }
        }
    }
}

fn drain_counted(mut s: ReadStream<Counted>) -> Vec<Chunk> {
    let mut out = Vec::new();
    while let Some(chunk) = s.next(3000, 1000).unwrap() {
        out.push(chunk);
    }
    out
}

#[test]
fn fingerprints_are_read_afresh_from_the_path() {
    let dir = Scratch::new("fingerprint");
    let path = dir.0.join("f.txt");
    std::fs::write(&path, "one\n").unwrap();
    let read = crate::Read::open(&dir.roots(), r#"{"path":"f.txt"}"#, None).unwrap();
    let first = read.fingerprint().unwrap().unwrap();
    assert_eq!(first.size, 4);
    assert_ne!(first.identity, 0);
    assert_eq!(read.fingerprint().unwrap(), Some(first));

    std::fs::write(&path, "one two\n").unwrap();
    let grown = read.fingerprint().unwrap().unwrap();
    assert_eq!((grown.size, grown.identity), (8, first.identity));

    // Replaced by another file: a new identity, even at the same size.
    let other = dir.0.join("g.txt");
    std::fs::write(&other, "one two\n").unwrap();
    std::fs::rename(&other, &path).unwrap();
    assert_ne!(read.fingerprint().unwrap().unwrap().identity, first.identity);

    std::fs::remove_file(&path).unwrap();
    assert_eq!(read.fingerprint().unwrap_err().code, ErrorCode::NotFound);
}

#[test]
fn progress_is_the_end_of_the_chunk_read_out_of_the_size() {
    let dir = Scratch::new("progress");
    std::fs::write(dir.0.join("f.txt"), "hello\nworld\n").unwrap();
    let mut read = crate::Read::open(&dir.roots(), r#"{"path":"f.txt"}"#, None).unwrap();
    let mut seen = Vec::new();
    while let Some(chunk) = cordon_sdk::Stream::next(&mut read, cordon_sdk::Budget { bytes: 4096, items: 1 }).unwrap() {
        seen.push(read.progress(chunk.span.unwrap().end_byte));
    }
    let expect = [(6, 12, "6 B of 12 B read".to_string()), (12, 12, "12 B of 12 B read".to_string())];
    assert_eq!(seen, expect);
    let ranged = crate::Read::open(&dir.roots(), r#"{"path":"f.txt","start_byte":2,"end_byte":9}"#, None).unwrap();
    assert_eq!(ranged.progress(9), (9, 9, "9 B of 9 B read".to_string()), "a range's end is the total");
    assert_eq!(read.progress(20).1, 20, "a file grown since it was opened: the total is no less than done");
}

#[test]
fn a_binary_file_comes_in_raw_chunks_and_its_info_says_what_it_is() {
    let dir = Scratch::new("binary");
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend((0u32..3000).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8));
    std::fs::write(dir.0.join("pic.dat"), &png).unwrap();
    let read = crate::Read::open(&dir.roots(), r#"{"path":"pic.dat"}"#, None).unwrap();
    let info = read.info();
    assert_eq!((&info["media_type"], &info["binary"]), (&serde_json::json!("image/png"), &serde_json::json!(true)));
    assert!(info.get("byte_range").is_none());
    let chunks = drain_file(read);
    assert!(chunks.iter().all(|c| matches!(c.piece, Piece::Bytes(_))), "no runs of text");
    assert!(chunks.len() <= 2, "cut at the budget, not at each run: {} chunks", chunks.len());
    assert_eq!(bytes_of(&chunks), png);

    std::fs::write(dir.0.join("t.txt"), b"caf\xe9 ok\n").unwrap();
    let text = crate::Read::open(&dir.roots(), r#"{"path":"t.txt","start_byte":1,"end_byte":99}"#, None).unwrap();
    let info = text.info();
    assert_eq!((&info["media_type"], &info["binary"]), (&serde_json::json!("text/plain"), &serde_json::json!(false)));
    assert_eq!(info["byte_range"], serde_json::json!([1, 8]));
    assert!(info.get("line_range").is_none());
    let lines = crate::Read::open(&dir.roots(), r#"{"path":"t.txt","start_line":2}"#, None);
    assert_eq!(lines.err().map(|e| e.code), Some(ErrorCode::InvalidArgument), "past the end: one line");
    let lines = crate::Read::open(&dir.roots(), r#"{"path":"t.txt","start_line":1}"#, None).unwrap();
    assert_eq!(lines.info()["line_range"], serde_json::json!([1, null]));
    assert_eq!(drain_file(text).len(), 3, "a text file keeps its runs: text, the bad byte, text");
}

#[test]
fn the_nth_newline_is_found_across_the_counted_blocks() {
    use crate::reader::nth_newline;
    // Newlines at uneven gaps, so that some fall on a block's first and last
    // byte.
    let mut bytes = vec![b'x'; 5 * (4 << 10) + 17];
    let mut at = 0;
    // The gap of 9,000 leaves the third block without one.
    for gap in [0, 4095, 1, 9000, 7, 4000, 95, 1, 3000] {
        at += gap;
        if at < bytes.len() {
            bytes[at] = b'\n';
        }
    }
    let naive: Vec<usize> = bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i).collect();
    for end in [0, 1, 4095, 4096, 4097, 8192, 8193, 12288, 13200, bytes.len()] {
        let window = &bytes[..end];
        let expected: Vec<usize> = naive.iter().copied().filter(|&i| i < end).collect();
        for n in 1..=expected.len() as u64 + 1 {
            assert_eq!(nth_newline(window, n), expected.get(n as usize - 1).copied(), "n {n} in {end} bytes");
        }
        assert_eq!(nth_newline(window, 0), None);
    }
}
