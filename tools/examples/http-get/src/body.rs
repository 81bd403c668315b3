//! Paging a response body as it arrives: text chunks cut on character
//! boundaries for a text-like body, bytes chunks otherwise, each within the
//! host's budget of bytes and line ends. Only a chunk's worth (and a read
//! ahead) is ever held, never the whole body.

pub use cordon_sdk::utf8::Piece;
use cordon_sdk::utf8::split_valid;
use cordon_sdk::{Error, ErrorCode};

/// How many bytes to ask the body for at a time.
pub const READ_AHEAD: usize = 64 * 1024;
/// The fewest bytes a chunk may be limited to, so a UTF-8 character fits.
pub const MIN_BYTES: usize = 4;
/// The most bytes this tool puts in one chunk, whatever the budget, so that
/// a careless budget does not make it buffer a huge body.
pub const MAX_BYTES: usize = 4 << 20;
/// How much of a body without a content type is looked at to tell text.
pub const SNIFF_BYTES: usize = 4096;

/// A response body, read as it arrives.
pub trait Body {
    /// Up to `max` more bytes (at least one), or `None` at the end of the
    /// body. Blocks until some arrive.
    fn read(&mut self, max: usize) -> Result<Option<Vec<u8>>, Error>;
}

/// How a body's chunks are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Text chunks (any bytes that are not UTF-8 still go as bytes chunks).
    Text,
    /// Bytes chunks.
    Bytes,
    /// No content type was given: text if the start of the body is UTF-8.
    Sniff,
}

/// The mode for a response's `content-type`: text for `text/*`, JSON, XML
/// and JavaScript (and `+json`, `+xml` types); bytes for anything else; sniff
/// when none is given.
pub fn classify(content_type: Option<&str>) -> Mode {
    let Some(content_type) = content_type else { return Mode::Sniff };
    let essence = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    if essence.is_empty() {
        return Mode::Sniff;
    }
    let (kind, subtype) = essence.split_once('/').unwrap_or((essence.as_str(), ""));
    let text = kind == "text"
        || matches!(essence.as_str(), "application/json" | "application/xml" | "application/javascript")
        || subtype.ends_with("+json")
        || subtype.ends_with("+xml");
    if text { Mode::Text } else { Mode::Bytes }
}

/// Whether the start of a body without a content type is text: valid UTF-8,
/// except that a character cut at its end is allowed unless `complete` (the
/// head is the whole body).
pub fn sniff(head: &[u8], complete: bool) -> bool {
    match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none() && !complete,
    }
}

/// A body being paged.
pub struct Pager<B> {
    body: B,
    /// Bytes read from the body; those from `head` on are not paged yet.
    buf: Vec<u8>,
    head: usize,
    /// Whether the body has ended (what is in `buf` is all that is left).
    eof: bool,
    /// The body's offset of `buf[head]`: the bytes paged (or skipped) so far.
    offset: u64,
    /// Whether the chunks are text (else bytes).
    text: bool,
}

impl<B: Body> Pager<B> {
    /// Starts paging `body` in `mode` at `offset`: a body without a content
    /// type is sniffed from its start, then `offset` bytes are read and
    /// dropped. A body shorter than `offset` is `stale`: it is not the one
    /// the position was made in.
    pub fn start(body: B, mode: Mode, offset: u64) -> Result<Pager<B>, Error> {
        let mut pager = Pager { body, buf: Vec::new(), head: 0, eof: false, offset: 0, text: mode == Mode::Text };
        if mode == Mode::Sniff {
            pager.fill(SNIFF_BYTES)?;
            let head = pager.pending();
            pager.text = sniff(&head[..head.len().min(SNIFF_BYTES)], pager.eof && head.len() <= SNIFF_BYTES);
        }
        pager.skip(offset)?;
        Ok(pager)
    }

    /// Whether the chunks are text.
    pub fn is_text(&self) -> bool {
        self.text
    }

    /// The bytes paged so far: the position after the last chunk.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The bytes read and not paged yet.
    fn pending(&self) -> &[u8] {
        &self.buf[self.head..]
    }

    /// Reads until at least `want` bytes are pending or the body has ended.
    fn fill(&mut self, want: usize) -> Result<(), Error> {
        while self.pending().len() < want && !self.eof {
            if self.head > 0 {
                self.buf.drain(..self.head);
                self.head = 0;
            }
            match self.body.read((want - self.buf.len()).max(READ_AHEAD))? {
                Some(bytes) => self.buf.extend_from_slice(&bytes),
                None => self.eof = true,
            }
        }
        Ok(())
    }

    /// Reads and drops `n` bytes.
    fn skip(&mut self, mut n: u64) -> Result<(), Error> {
        while n > 0 {
            if self.pending().is_empty() {
                self.fill(1)?;
                if self.eof && self.pending().is_empty() {
                    return Err(Error::new(
                        ErrorCode::Stale,
                        format!(
                            "the response ended after {} bytes, before the position resumed ({} bytes on): it \
                             changed since the last page; start the call again",
                            self.offset,
                            self.offset + n
                        ),
                    ));
                }
            }
            let step = usize::try_from(n).unwrap_or(usize::MAX).min(self.pending().len());
            self.consume(step);
            n -= step as u64;
        }
        Ok(())
    }

    /// Marks `n` pending bytes paged.
    fn consume(&mut self, n: usize) {
        self.head += n;
        self.offset += n as u64;
        if self.head == self.buf.len() {
            self.buf.clear();
            self.head = 0;
        }
    }

    /// The next chunk: at most `bytes` payload bytes (taken as at least
    /// `MIN_BYTES` and at most `MAX_BYTES`) holding at most `items` line ends
    /// (at least 1), and whether the line it stops in goes on in the next
    /// chunk; `None` at the end of the body. Where the budget cuts a line, a
    /// text chunk ends at the last line end within it if it holds one, and a
    /// character that does not fit whole waits for the next chunk.
    pub fn next(&mut self, bytes: usize, items: usize) -> Result<Option<(Piece, bool)>, Error> {
        let budget = bytes.clamp(MIN_BYTES, MAX_BYTES);
        let items = items.max(1);
        // One byte past the budget tells whether more follows.
        self.fill(budget + 1)?;
        let pending = self.pending();
        if pending.is_empty() {
            return Ok(None);
        }
        let look = pending.len().min(budget + 1);
        let mut len = look.min(budget);
        if let Some(at) = memchr_nth(&pending[..len], items) {
            len = at + 1;
        } else if self.text
            && look > len
            && let Some(at) = pending[..len].iter().rposition(|&b| b == b'\n')
        {
            len = at + 1;
        }
        let (piece, used) = match self.text {
            true => split_valid(&pending[..len], len == pending.len() && self.eof),
            false => (Piece::Bytes(pending[..len].to_vec()), len),
        };
        // Nothing follows only when all that was pending is used and the body
        // has ended: `fill` stops short of `budget + 1` bytes only at the end.
        let continued = used < pending.len() && pending[used - 1] != b'\n';
        self.consume(used);
        Ok(Some((piece, continued)))
    }
}

/// The index of the `n`th line end (1-based) in `bytes`, if it holds that many.
fn memchr_nth(bytes: &[u8], n: usize) -> Option<usize> {
    bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(n - 1).map(|(at, _)| at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body that arrives in reads of at most `step` bytes.
    struct Slow {
        data: Vec<u8>,
        at: usize,
        step: usize,
    }

    impl Body for Slow {
        fn read(&mut self, max: usize) -> Result<Option<Vec<u8>>, Error> {
            if self.at == self.data.len() {
                return Ok(None);
            }
            let end = (self.at + max.min(self.step)).min(self.data.len());
            let bytes = self.data[self.at..end].to_vec();
            self.at = end;
            Ok(Some(bytes))
        }
    }

    /// A pager over `data` arriving seven bytes at a time.
    fn pager(data: &[u8], mode: Mode, offset: u64) -> Result<Pager<Slow>, Error> {
        Pager::start(Slow { data: data.to_vec(), at: 0, step: 7 }, mode, offset)
    }

    /// Every chunk left, within `bytes` and `items` each.
    fn drain(mut pager: Pager<Slow>, bytes: usize, items: usize) -> Vec<(Piece, bool)> {
        std::iter::from_fn(|| pager.next(bytes, items).unwrap()).collect()
    }

    /// The chunks' bytes, joined.
    fn joined(chunks: &[(Piece, bool)]) -> Vec<u8> {
        chunks.iter().flat_map(|(piece, _)| piece.as_bytes().to_vec()).collect()
    }

    #[test]
    fn content_types_are_classified() {
        for text in [
            "text/plain",
            "text/html; charset=utf-8",
            "TEXT/CSV",
            "application/json",
            "application/problem+json",
            "application/xml",
            "image/svg+xml",
            "application/javascript",
            " application/json ; charset=UTF-8",
        ] {
            assert_eq!(classify(Some(text)), Mode::Text, "{text}");
        }
        for bytes in ["image/png", "application/octet-stream", "application/pdf", "application/jsonx", "video/mp4"] {
            assert_eq!(classify(Some(bytes)), Mode::Bytes, "{bytes}");
        }
        assert_eq!(classify(None), Mode::Sniff);
        assert_eq!(classify(Some("  ")), Mode::Sniff);
    }

    #[test]
    fn a_body_without_a_type_is_text_when_utf8() {
        assert!(sniff("héllo".as_bytes(), true));
        assert!(sniff(&"é".as_bytes()[..1], false), "a character cut by the sniff window");
        assert!(!sniff(&"é".as_bytes()[..1], true), "a body that ends inside a character");
        assert!(!sniff(b"\x89PNG\r\n\x1a\n\0\0", false));
        assert!(pager("plain text".as_bytes(), Mode::Sniff, 0).unwrap().is_text());
        assert!(!pager(b"\xff\xfe binary", Mode::Sniff, 0).unwrap().is_text());
        // A long UTF-8 body whose sniff window ends inside a character.
        let long = format!("{}é and more", "a".repeat(SNIFF_BYTES - 1));
        assert!(pager(long.as_bytes(), Mode::Sniff, 0).unwrap().is_text());
    }

    #[test]
    fn text_chunks_end_on_character_boundaries_within_the_budget() {
        let body = "aé€😀b\n".repeat(40);
        for budget in [4, 5, 6, 7, 9, 16, 100] {
            let chunks = drain(pager(body.as_bytes(), Mode::Text, 0).unwrap(), budget, usize::MAX);
            assert_eq!(joined(&chunks), body.as_bytes(), "budget {budget}");
            for (piece, _) in &chunks {
                assert!(matches!(piece, Piece::Text(_)), "budget {budget}: {piece:?}");
                assert!(!piece.as_bytes().is_empty() && piece.as_bytes().len() <= budget);
            }
        }
    }

    #[test]
    fn line_ends_are_limited_and_continued_marks_cut_lines() {
        let body = "one\ntwo\nthree is longer\nfour";
        let chunks = drain(pager(body.as_bytes(), Mode::Text, 0).unwrap(), 8, 1);
        let shown: Vec<(&[u8], bool)> = chunks.iter().map(|(p, c)| (p.as_bytes(), *c)).collect();
        assert_eq!(
            shown,
            [(&b"one\n"[..], false), (b"two\n", false), (b"three is", true), (b" longer\n", false), (b"four", false)]
        );
        // A budget that cuts inside a line ends a text chunk at the last line end.
        let chunks = drain(pager(b"ab\ncdefgh\n", Mode::Text, 0).unwrap(), 6, 10);
        assert_eq!(chunks[0], (Piece::Text("ab\n".into()), false));
        // Bytes are cut at the budget, and their line ends count as well.
        let chunks = drain(pager(b"a\nb\nc\nd", Mode::Bytes, 0).unwrap(), 5, 2);
        assert_eq!(chunks[0], (Piece::Bytes(b"a\nb\n".to_vec()), false));
        assert_eq!(chunks[1], (Piece::Bytes(b"c\nd".to_vec()), false));
    }

    #[test]
    fn invalid_bytes_in_a_text_body_go_as_bytes() {
        let body = b"ok \xff\xfe then text\n";
        let chunks = drain(pager(body, Mode::Text, 0).unwrap(), 64, 10);
        assert_eq!(joined(&chunks), body);
        assert_eq!(chunks[0].0, Piece::Text("ok ".into()));
        assert_eq!(chunks[1].0, Piece::Bytes(b"\xff\xfe".to_vec()));
        assert_eq!(chunks[2].0, Piece::Text(" then text\n".into()));
        // A body that ends inside a character gives those bytes at the end.
        let chunks = drain(pager(&"xé".as_bytes()[..2], Mode::Text, 0).unwrap(), 64, 10);
        assert_eq!(chunks[1].0, Piece::Bytes(vec![0xc3]));
    }

    #[test]
    fn starting_at_an_offset_gives_exactly_the_rest() {
        let body = "ligne été\n".repeat(30);
        let whole = drain(pager(body.as_bytes(), Mode::Text, 0).unwrap(), 13, 3);
        let mut offset = 0u64;
        for (i, (piece, _)) in whole.iter().enumerate() {
            offset += piece.as_bytes().len() as u64;
            let rest = drain(pager(body.as_bytes(), Mode::Text, offset).unwrap(), 13, 3);
            assert_eq!(rest, whole[i + 1..], "from {offset}");
        }
        let err = pager(body.as_bytes(), Mode::Text, body.len() as u64 + 1).err().unwrap();
        assert_eq!(err.code, ErrorCode::Stale);
        assert!(drain(pager(body.as_bytes(), Mode::Text, body.len() as u64).unwrap(), 13, 3).is_empty());
    }

    #[test]
    fn the_body_is_read_a_chunk_at_a_time() {
        let body = vec![b'x'; 10 * READ_AHEAD];
        let mut pager = pager(&body, Mode::Bytes, 0).unwrap();
        let (piece, _) = pager.next(100, 1).unwrap().unwrap();
        assert_eq!(piece.as_bytes().len(), 100);
        assert!(pager.buf.len() <= 101 + READ_AHEAD, "held {} bytes", pager.buf.len());
        assert_eq!(pager.offset(), 100);
        let (piece, _) = pager.next(usize::MAX, 1).unwrap().unwrap();
        assert_eq!(piece.as_bytes().len(), MAX_BYTES.min(body.len() - 100));
    }
}
