//! A search's resume position: the counts so far, and where in which file
//! the search goes on.
//!
//! A position is `S,M,N,B,E,I<TAB>WHERE<TAB>PATH`: the counts so far (files
//! searched, files matched, matches, binary files, errors, ignore files
//! skipped), then in file `PATH` either `L<line>:<byte>` (search on from that
//! line, which starts at that byte), `E` (the file is done), `S` (nothing of
//! it is: a shard's boundary) or `N<k>` (the first `k` ignore files not
//! applied that the walk says at `PATH` were named; nothing else of it is
//! done). Reopening walks again, pruning what sorts before `PATH`, and seeks
//! into `PATH` rather than searching it anew.

use std::path::PathBuf;

use cordon_sdk::{Error, ErrorCode};

use crate::render;

/// What a search has counted so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Files opened and searched.
    pub files_searched: u64,
    /// Files with at least one match emitted.
    pub files_matched: u64,
    /// Matches emitted: matching lines (blocks in multiline mode; in count
    /// mode, the counts; in files mode, one per file).
    pub matches: u64,
    /// Files skipped (or cut short) because they hold a NUL byte.
    pub binary_files: u64,
    /// Files or directories that could not be read or searched.
    pub errors: u64,
    /// Ignore files not applied (too large or unreadable).
    pub ignore_files_skipped: u64,
}

/// Where in a file a position points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Where {
    /// Nothing of the path is done: a shard's boundary, before the path.
    Start,
    /// Search on from this line number, which starts at this byte offset.
    Line(u64, u64),
    /// The file is done.
    End,
    /// The first this many ignore files not applied that the walk says at
    /// the path were named; nothing else of it is done.
    Noted(u32),
}

/// A decoded resume position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    /// The counts at that point.
    pub counts: Counts,
    /// The file the position is in.
    pub path: PathBuf,
    /// Where in that file.
    pub at: Where,
}

impl Position {
    /// The position's text.
    pub fn encode(&self) -> String {
        encode(&self.counts, self.at, &self.path.to_string_lossy())
    }

    /// Parses a position written by `encode`.
    pub fn decode(text: &str) -> Result<Position, Error> {
        let bad = || Error::new(ErrorCode::InvalidArgument, format!("malformed resume position `{text}`"));
        let mut parts = text.splitn(3, '\t');
        let (Some(counts), Some(at), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        let numbers: Vec<u64> = counts.split(',').map(str::parse).collect::<Result<_, _>>().map_err(|_| bad())?;
        let (files_searched, files_matched, matches, binary_files, errors, ignore_files_skipped) = match numbers[..] {
            [s, m, n, b, e, i] => (s, m, n, b, e, i),
            // Written before ignore files were counted.
            [s, m, n, b, e] => (s, m, n, b, e, 0),
            _ => return Err(bad()),
        };
        let at = if at == "E" {
            Where::End
        } else if at == "S" {
            Where::Start
        } else if let Some(k) = at.strip_prefix('N') {
            Where::Noted(k.parse().map_err(|_| bad())?)
        } else {
            let (line, byte) = at.strip_prefix('L').and_then(|r| r.split_once(':')).ok_or_else(bad)?;
            Where::Line(line.parse().map_err(|_| bad())?, byte.parse().map_err(|_| bad())?)
        };
        if path.is_empty() {
            return Err(bad());
        }
        let counts = Counts { files_searched, files_matched, matches, binary_files, errors, ignore_files_skipped };
        Ok(Position { counts, path: PathBuf::from(path), at })
    }
}

/// The text of the position with `counts` at `at` in the file shown as `path`.
/// Written without `core::fmt`: every item carries one.
pub fn encode(counts: &Counts, at: Where, path: &str) -> String {
    let c = counts;
    let mut text = String::with_capacity(path.len() + 48);
    let numbers = [c.files_searched, c.files_matched, c.matches, c.binary_files, c.errors, c.ignore_files_skipped];
    for (k, number) in numbers.into_iter().enumerate() {
        if k > 0 {
            text.push(',');
        }
        render::push_u64(&mut text, number);
    }
    match at {
        Where::Line(line, byte) => {
            text.push_str("\tL");
            render::push_u64(&mut text, line);
            text.push(':');
            render::push_u64(&mut text, byte);
        }
        Where::End => text.push_str("\tE"),
        Where::Start => text.push_str("\tS"),
        Where::Noted(k) => {
            text.push_str("\tN");
            render::push_u64(&mut text, u64::from(k));
        }
    }
    text.push('\t');
    text.push_str(path);
    text
}
