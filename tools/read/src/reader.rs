//! The read stream: a file's bytes, in chunks of at most a budget, cut at line
//! ends where possible and on character boundaries always.

use std::io::{Read, Seek, SeekFrom};

use crate::error::{Error, ErrorCode};

/// How many bytes to ask the file for at a time.
const READ_AHEAD: usize = 64 * 1024;

/// A place in the file: the byte offset and the 1-based line it lies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub byte: u64,
    pub line: u64,
}

impl Position {
    /// The start of the file.
    pub const START: Position = Position { byte: 0, line: 1 };

    /// The opaque text a chunk carries as its resume position.
    pub fn encode(self) -> String {
        format!("{}:{}", self.byte, self.line)
    }

    /// Parses what `encode` wrote.
    pub fn decode(text: &str) -> Result<Position, Error> {
        let bad = || Error::new(ErrorCode::InvalidArgument, format!("malformed resume position `{text}`"));
        let (byte, line) = text.split_once(':').ok_or_else(bad)?;
        let byte = byte.parse().map_err(|_| bad())?;
        let line: u64 = line.parse().map_err(|_| bad())?;
        if line == 0 {
            return Err(bad());
        }
        Ok(Position { byte, line })
    }
}

/// What one chunk holds, before it is put in the WIT shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Bytes(Vec<u8>),
}

/// A chunk of the file and where it lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub piece: Piece,
    pub start: Position,
    /// The line of the chunk's last byte.
    pub end_line: u64,
    /// Where the next chunk starts.
    pub next: Position,
}

/// Pages one file from a position up to an optional last line.
pub struct ReadStream<R> {
    src: R,
    /// Bytes read from `src`; those from `head` on are not returned yet and
    /// start at `pos`.
    buf: Vec<u8>,
    head: usize,
    pos: Position,
    /// The last line to return (inclusive), if the caller set one.
    end_line: Option<u64>,
    eof: bool,
}

impl<R: Read + Seek> ReadStream<R> {
    /// Opens a stream at `resume`, or at `start_line` when starting afresh.
    pub fn open(
        mut src: R,
        size: u64,
        start_line: u64,
        end_line: Option<u64>,
        resume: Option<Position>,
    ) -> Result<Self, Error> {
        if start_line == 0 {
            return Err(Error::new(ErrorCode::InvalidArgument, "`start_line` counts from 1"));
        }
        if let Some(end) = end_line
            && end < start_line
        {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format!("`end_line` ({end}) is before `start_line` ({start_line})"),
            ));
        }
        let pos = match resume {
            Some(pos) if pos.byte > size => {
                return Err(Error::new(
                    ErrorCode::Stale,
                    format!(
                        "the resume position is at byte {} but the file now has {size} bytes; start again",
                        pos.byte
                    ),
                ));
            }
            Some(pos) => pos,
            None => Position::START,
        };
        src.seek(SeekFrom::Start(pos.byte)).map_err(|e| Error::io("the file", &e))?;
        let mut stream = ReadStream { src, buf: Vec::new(), head: 0, pos, end_line, eof: false };
        if resume.is_none() && start_line > 1 {
            stream.skip_to_line(start_line)?;
        }
        Ok(stream)
    }

    /// Where the next chunk would start.
    pub fn position(&self) -> Position {
        self.pos
    }

    /// Drops whole lines until `line` is next; an error if the file is shorter.
    fn skip_to_line(&mut self, line: u64) -> Result<(), Error> {
        // Whether the bytes skipped so far end inside a line (no newline yet).
        let mut partial = false;
        loop {
            if self.pending().is_empty() {
                self.fill(READ_AHEAD)?;
            }
            if self.pending().is_empty() {
                let lines = self.pos.line - 1 + u64::from(partial);
                return Err(Error::new(
                    ErrorCode::InvalidArgument,
                    format!("`start_line` {line} is past the end of the file, which has {lines} lines"),
                ));
            }
            if self.pos.line == line {
                return Ok(());
            }
            match self.pending().iter().position(|&b| b == b'\n') {
                Some(at) => {
                    self.consume(at + 1, 1);
                    partial = false;
                }
                None => {
                    let len = self.pending().len();
                    self.consume(len, 0);
                    partial = true;
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
        self.pos.line += newlines;
    }

    /// Reads until at least `want` bytes are pending or the file ends.
    fn fill(&mut self, want: usize) -> Result<(), Error> {
        if self.pending().len() >= want || self.eof {
            return Ok(());
        }
        self.buf.drain(..self.head);
        self.head = 0;
        while self.buf.len() < want && !self.eof {
            let have = self.buf.len();
            let ask = want.max(READ_AHEAD) - have;
            self.buf.resize(have + ask, 0);
            let got = loop {
                match self.src.read(&mut self.buf[have..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.buf.truncate(have);
                        return Err(Error::io("the file", &e));
                    }
                }
            };
            self.buf.truncate(have + got);
            self.eof = got == 0;
        }
        Ok(())
    }

    /// The next chunk of at most `budget` bytes (`budget` ≥ 4), or `None` at the end.
    pub fn next(&mut self, budget: usize) -> Result<Option<Chunk>, Error> {
        let budget = budget.max(4);
        if self.end_line.is_some_and(|end| self.pos.line > end) {
            return Ok(None);
        }
        self.fill(budget + 1)?;
        if self.pending().is_empty() {
            return Ok(None);
        }
        let mut len = self.pending().len().min(budget);
        // Stop after the last requested line.
        if let Some(end) = self.end_line {
            let allowed = end - self.pos.line + 1;
            if let Some(at) = nth_newline(&self.pending()[..len], allowed) {
                len = at + 1;
            }
        }
        let cut_by_budget = len == budget && self.pending().len() > budget;
        if cut_by_budget && let Some(at) = self.pending()[..len].iter().rposition(|&b| b == b'\n') {
            len = at + 1;
        }
        let (piece, len) = split_valid(&self.pending()[..len], !cut_by_budget);
        let newlines = self.pending()[..len].iter().filter(|&&b| b == b'\n').count() as u64;
        let start = self.pos;
        let end_line = start.line + newlines - u64::from(self.pending()[len - 1] == b'\n');
        self.consume(len, newlines);
        Ok(Some(Chunk { piece, start, end_line, next: self.pos }))
    }
}

/// The index of the `n`th newline (1-based) in `bytes`, if there are that many.
fn nth_newline(bytes: &[u8], n: u64) -> Option<usize> {
    bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(n as usize - 1).map(|(i, _)| i)
}

/// Takes the longest text prefix of `bytes`, or, when it starts with bytes that
/// are not UTF-8, the run of such bytes. `complete` says no more bytes follow
/// `bytes` in this chunk's range, so an unfinished character at its end is
/// returned as raw bytes rather than left for later.
fn split_valid(bytes: &[u8], complete: bool) -> (Piece, usize) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (Piece::Text(text.to_owned()), bytes.len()),
        Err(e) if e.valid_up_to() > 0 => {
            let valid = e.valid_up_to();
            let text = std::str::from_utf8(&bytes[..valid]).expect("checked prefix");
            (Piece::Text(text.to_owned()), valid)
        }
        Err(_) => {
            let mut used = 0;
            while used < bytes.len() {
                match std::str::from_utf8(&bytes[used..]) {
                    Err(e) if e.valid_up_to() == 0 => match e.error_len() {
                        Some(n) => used += n,
                        None if complete || used == 0 => used = bytes.len(),
                        None => break,
                    },
                    _ => break,
                }
            }
            (Piece::Bytes(bytes[..used].to_vec()), used)
        }
    }
}
