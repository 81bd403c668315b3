//! The read stream: a file's bytes, in chunks of at most a budget of bytes and
//! line ends, cut at line ends where possible and on character boundaries always.
//!
//! Every `next` call costs time in proportion to the chunk it returns (plus one
//! read-ahead from the file): the buffer is consumed through a `head` index and
//! only compacted when it runs low, and newlines are only searched for within
//! the chunk's window.

use std::io::{Read, Seek, SeekFrom};

pub use cordon_sdk::utf8::Piece;
use cordon_sdk::utf8::split_valid;
use cordon_sdk::{Error, ErrorCode};

/// How many bytes to ask the file for at a time.
const READ_AHEAD: usize = 64 * 1024;

/// The fewest bytes a chunk may be limited to, so that a UTF-8 character fits.
pub const MIN_BYTES: usize = 4;

/// The most bytes this tool puts in one chunk, whatever the budget: a chunk may
/// hold less than the budget, and this keeps a careless budget from making the
/// tool buffer gigabytes.
pub const MAX_BYTES: usize = 16 * 1024 * 1024;

/// The first bytes of a file, read to sniff what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub bytes: Vec<u8>,
    /// The read met the file's end.
    pub ended: bool,
}

impl Head {
    /// Reads at most `most` bytes from `src`'s position, asking for no more
    /// than a file of `size` bytes holds and one byte more, to see its end.
    pub fn read(src: &mut impl Read, size: u64, most: usize) -> std::io::Result<Head> {
        let ask = usize::try_from(size.saturating_add(1)).map_or(most, |left| left.min(most));
        let mut bytes = vec![0; ask];
        let got = read_into(src, &mut bytes, usize::try_from(size).unwrap_or(usize::MAX))?;
        bytes.truncate(got);
        Ok(Head { bytes, ended: got < ask })
    }
}

/// Fills `room` from `src` until it is full or the file ends; how many bytes
/// came. Into room made for all of it: each `read` is a host call, and
/// `read_to_end` would start with a 32-byte probe and small reads. A read
/// that comes back short once `expected` bytes are in (what the file held
/// there when it was opened) is taken as the file's end: another read would
/// only confirm it, a host call and a `pread` more for every small file.
fn read_into(src: &mut impl Read, room: &mut [u8], expected: usize) -> std::io::Result<usize> {
    let mut got = 0;
    while got < room.len() {
        match src.read(&mut room[got..]) {
            Ok(0) => break,
            Ok(n) if got + n >= expected && got + n < room.len() => return Ok(got + n),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// A place in the file: the byte offset and, when known, the 1-based line it
/// lies on. Lines are unknown when reading started in the middle of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// The byte offset from the start of the file.
    pub byte: u64,
    /// The line the byte lies on, if known.
    pub line: Option<u64>,
}

impl Position {
    /// The start of the file.
    pub const START: Position = Position { byte: 0, line: Some(1) };

    /// The opaque text a chunk carries as its resume position: `BYTE:LINE`, or
    /// `BYTE:?` when the line is unknown.
    pub fn encode(self) -> String {
        match self.line {
            Some(line) => format!("{}:{line}", self.byte),
            None => format!("{}:?", self.byte),
        }
    }

    /// Parses what `encode` wrote; anything else is an invalid argument.
    pub fn decode(text: &str) -> Result<Position, Error> {
        let bad = || Error::new(ErrorCode::InvalidArgument, format!("malformed resume position `{text}`"));
        let (byte, line) = text.split_once(':').ok_or_else(bad)?;
        let byte = parse_digits(byte).ok_or_else(bad)?;
        let line = match line {
            "?" => None,
            digits => Some(parse_digits(digits).filter(|&line| line > 0).ok_or_else(bad)?),
        };
        Ok(Position { byte, line })
    }
}

/// Parses a plain run of ASCII digits (no sign, no spaces) as a `u64`.
fn parse_digits(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// What part of the file a call asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// Lines `start..=end` (1-based); `end` absent means to the end of the file.
    Lines {
        /// The first line.
        start: u64,
        /// The last line, inclusive.
        end: Option<u64>,
    },
    /// Bytes `start..end` (0-based, `end` exclusive); `end` absent or past the
    /// end of the file means to the end of the file.
    Bytes {
        /// The first byte.
        start: u64,
        /// The byte just after the last one.
        end: Option<u64>,
    },
}

impl Selection {
    /// The whole file.
    pub const ALL: Selection = Selection::Lines { start: 1, end: None };
}

/// A chunk of the file and where it lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The data.
    pub piece: Piece,
    /// Where the chunk starts.
    pub start: Position,
    /// The line of the chunk's last byte, when lines are known.
    pub end_line: Option<u64>,
    /// Where the next chunk starts.
    pub next: Position,
    /// True when the chunk stops inside a line that the next chunk continues.
    pub continued: bool,
}

/// Pages one file, or a range of its lines or bytes.
pub struct ReadStream<R> {
    src: R,
    /// Bytes read from `src`; those from `head` on are not returned yet and
    /// start at `pos`.
    buf: Vec<u8>,
    head: usize,
    pos: Position,
    /// The last line to return (inclusive), if the caller set one.
    end_line: Option<u64>,
    /// The byte offset to stop before, if the caller set one.
    end_byte: Option<u64>,
    eof: bool,
    /// The file's size when it was opened: reads ask for no more than it
    /// still holds (and a byte, to see its end).
    size: u64,
    /// Whether the file is binary: its chunks are then its bytes as they
    /// come, cut at the budget, not at line ends or runs of valid UTF-8.
    raw: bool,
}

impl<R> ReadStream<R> {
    /// The file the stream reads.
    pub fn source(&self) -> &R {
        &self.src
    }
}

impl<R: Read + Seek> ReadStream<R> {
    /// Opens a stream over `selection` of a file of `size` bytes, at `resume` if
    /// given (a position an earlier stream with the same selection handed out).
    pub fn open(mut src: R, size: u64, selection: Selection, resume: Option<Position>) -> Result<Self, Error> {
        let invalid = |message: String| Err(Error::new(ErrorCode::InvalidArgument, message));
        let (first, end_line, end_byte) = match selection {
            Selection::Lines { start: 0, .. } => return invalid("`start_line` counts from 1".into()),
            Selection::Lines { start, end: Some(end) } if end < start => {
                return invalid(format!("`end_line` ({end}) is before `start_line` ({start})"));
            }
            Selection::Bytes { start, end: Some(end) } if end < start => {
                return invalid(format!("`end_byte` ({end}) is before `start_byte` ({start})"));
            }
            Selection::Bytes { start, .. } if start > size => {
                return invalid(format!("`start_byte` {start} is past the end of the file, which has {size} bytes"));
            }
            Selection::Lines { end, .. } => (Position::START, end, None),
            Selection::Bytes { start, end } => (Position { byte: start, line: (start == 0).then_some(1) }, None, end),
        };
        if let Some(pos) = resume {
            if pos.byte > size {
                return Err(Error::new(
                    ErrorCode::Stale,
                    format!(
                        "the resume position is at byte {} but the file now has {size} bytes; start again",
                        pos.byte
                    ),
                ));
            }
            if pos.byte < first.byte || end_byte.is_some_and(|end| pos.byte > end) {
                return invalid(format!("the resume position (byte {}) is outside the requested byte range", pos.byte));
            }
            if end_line.is_some() && pos.line.is_none() {
                return invalid("the resume position has no line number, which `end_line` needs".into());
            }
        }
        let pos = resume.unwrap_or(first);
        src.seek(SeekFrom::Start(pos.byte)).map_err(|e| Error::io("the file", &e))?;
        let buf = Vec::new();
        let mut stream = ReadStream { src, buf, head: 0, pos, end_line, end_byte, eof: false, size, raw: false };
        if let (None, Selection::Lines { start, .. }) = (resume, selection)
            && start > 1
        {
            stream.skip_to_line(start)?;
        }
        Ok(stream)
    }

    /// Takes `head`, the file's first bytes, read already (to sniff them) with
    /// `src` standing right after them, as read: a stream from the file's
    /// start then does not read them again. `head.ended`: the read met the
    /// file's end.
    pub fn with_head(mut self, head: Head) -> Result<Self, Error> {
        if self.pos.byte == 0 && self.buf.is_empty() {
            self.src.seek(SeekFrom::Start(head.bytes.len() as u64)).map_err(|e| Error::io("the file", &e))?;
            self.buf = head.bytes;
            self.eof = head.ended;
        }
        Ok(self)
    }

    /// The stream of a binary file: each chunk is raw bytes up to the budget
    /// (still at most its line ends), not split into runs of text and bytes.
    pub fn raw(mut self, raw: bool) -> Self {
        self.raw = raw;
        self
    }

    /// Where the next chunk would start.
    pub fn position(&self) -> Position {
        self.pos
    }

    /// Drops whole lines until `line` is next; an error if the file is shorter.
    /// Only called from the start of the file, where lines are known.
    fn skip_to_line(&mut self, line: u64) -> Result<(), Error> {
        // Whether the bytes skipped so far end inside a line (no newline yet).
        let mut partial = false;
        loop {
            let now = self.pos.line.unwrap_or(1);
            if self.pending().is_empty() {
                self.fill(READ_AHEAD)?;
            }
            if self.pending().is_empty() {
                let lines = now - 1 + u64::from(partial);
                return Err(Error::new(
                    ErrorCode::InvalidArgument,
                    format!("`start_line` {line} is past the end of the file, which has {lines} lines"),
                ));
            }
            if now == line {
                return Ok(());
            }
            let want = line - now;
            match nth_newline(self.pending(), want) {
                Some(at) => {
                    self.consume(at + 1, want);
                    partial = false;
                }
                None => {
                    let pending = self.pending();
                    let (len, newlines) = (pending.len(), count_newlines(pending));
                    partial = pending.last() != Some(&b'\n');
                    self.consume(len, newlines);
                }
            }
        }
    }

    /// The bytes read but not yet returned.
    fn pending(&self) -> &[u8] {
        &self.buf[self.head..]
    }

    /// Advances `pos` past `n` pending bytes holding `newlines` line ends.
    fn consume(&mut self, n: usize, newlines: u64) {
        self.head += n;
        self.pos.byte += n as u64;
        if let Some(line) = &mut self.pos.line {
            *line += newlines;
        }
    }

    /// Reads until at least `want` bytes are pending or the file ends.
    fn fill(&mut self, want: usize) -> Result<(), Error> {
        if self.pending().len() >= want || self.eof {
            return Ok(());
        }
        self.buf.drain(..self.head);
        self.head = 0;
        // Read ahead generously so a budget just under the buffer's length does
        // not turn into alternating tiny reads.
        // No more than the file held at open still holds from here, and a
        // byte to see its end: a small file's read grows no memory. Past that
        // size (the file grew), read ahead as usual.
        let left = self.size.checked_sub(self.pos.byte + self.buf.len() as u64).map(|left| left + 1);
        let ask = (want - self.buf.len()).max(READ_AHEAD);
        let ask = left.map_or(ask, |left| ask.min(usize::try_from(left).unwrap_or(usize::MAX)));
        let start = self.buf.len();
        self.buf.resize(start + ask, 0);
        let expected = left.map_or(usize::MAX, |left| usize::try_from(left - 1).unwrap_or(usize::MAX));
        let got = match read_into(&mut self.src, &mut self.buf[start..], expected) {
            Ok(got) => got,
            Err(e) => {
                self.buf.truncate(start);
                return Err(Error::io("the file", &e));
            }
        };
        self.buf.truncate(start + got);
        self.eof = got < ask;
        Ok(())
    }

    /// The next chunk, of at most `bytes` payload bytes (taken as at least
    /// `MIN_BYTES` and at most `MAX_BYTES`) holding at most `items` line ends
    /// (at least 1), or `None` at the end of the selection.
    pub fn next(&mut self, bytes: usize, items: usize) -> Result<Option<Chunk>, Error> {
        let budget = bytes.clamp(MIN_BYTES, MAX_BYTES);
        let items = items.max(1) as u64;
        if let (Some(end), Some(line)) = (self.end_line, self.pos.line)
            && line > end
        {
            return Ok(None);
        }
        let range_left = match self.end_byte {
            Some(end) => usize::try_from(end.saturating_sub(self.pos.byte)).unwrap_or(usize::MAX),
            None => usize::MAX,
        };
        // One byte past the budget tells whether more of the selection follows.
        let window = range_left.min(budget + 1);
        if window == 0 {
            return Ok(None);
        }
        self.fill(window)?;
        let pending = self.pending();
        // `look`: the bytes of the selection in view; nothing of it follows
        // them unless `look` is `budget + 1`.
        let mut look = pending.len().min(window);
        if look == 0 {
            return Ok(None);
        }
        if let (Some(end), Some(line)) = (self.end_line, self.pos.line)
            && let Some(at) = nth_newline(&pending[..look], end - line + 1)
        {
            look = at + 1;
        }
        let mut len = look.min(budget);
        if let Some(at) = nth_newline(&pending[..len], items) {
            len = at + 1;
        } else if look > len
            && !self.raw
            && let Some(at) = pending[..len].iter().rposition(|&b| b == b'\n')
        {
            len = at + 1;
        }
        let (piece, len) = match self.raw {
            true => (Piece::Bytes(pending[..len].to_vec()), len),
            false => split_valid(&pending[..len], len == look),
        };
        let newlines = count_newlines(&pending[..len]);
        let ends_line = pending[len - 1] == b'\n';
        let continued = len < look && !ends_line;
        let start = self.pos;
        let end_line = start.line.map(|line| line + newlines - u64::from(ends_line));
        self.consume(len, newlines);
        Ok(Some(Chunk { piece, start, end_line, next: self.pos, continued }))
    }
}

/// How many line ends `bytes` holds.
fn count_newlines(bytes: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', bytes).count() as u64
}

/// The bytes `nth_newline` counts at a time before it looks for the newline
/// itself: counting is one vector pass, finding each newline a call of its own.
const COUNT_BLOCK: usize = 4 << 10;

/// The index of the `n`th newline (1-based, `n` ≥ 1) in `bytes`, if there are
/// that many (never when `bytes` is shorter than `n`: not looked for). Whole
/// blocks are counted; only the block that holds the newline is searched.
pub(crate) fn nth_newline(bytes: &[u8], n: u64) -> Option<usize> {
    if n == 0 || n > bytes.len() as u64 {
        return None;
    }
    let mut left = n;
    for (index, block) in bytes.chunks(COUNT_BLOCK).enumerate() {
        let here = count_newlines(block);
        if here >= left {
            let within = memchr::memchr_iter(b'\n', block).nth(usize::try_from(left - 1).ok()?)?;
            return Some(index * COUNT_BLOCK + within);
        }
        left -= here;
    }
    None
}
