//! The audit log's anchor: where the chain ends, kept apart from the log.
//!
//! A chain of hashes shows an edited, inserted or deleted line, but not lines
//! cut off its end (the last ones, the `stop` included) nor off its start:
//! what is left is still a valid chain. So every append also writes, under
//! the same lock, one fixed-size record to `audit.log.anchor` beside the log:
//! the last line's `seq` and `hash`, and `oldest`, the first `seq` of the
//! oldest file kept (1 until the log first rotates; recomputed at each
//! rotation), and `end` and `ino`, the log's size after that line and its
//! inode. It is one `pwrite`
//! of `RECORD` bytes at offset 0 of a file kept open, not a new file per
//! append. A writer that finds the log (that inode) as long as `end` goes on
//! from the anchor's `seq` and `hash` without reading the log's last line.
//!
//! `cordon audit verify` then checks that the files given end at the anchor's
//! line (a cut tail) and begin at its `oldest` (a cut head, or a file not
//! given). Whoever rewrites both the log and its anchor is not caught: the
//! anchor stops cuts, not a writer who can rewrite everything.

use std::fmt;

use cap_std::fs::{File, FileExt};
use serde::{Deserialize, Serialize};

/// The anchor's size in bytes: one JSON object padded with spaces, then a newline.
pub const RECORD: usize = 192;

/// The anchor of the audit file `name`.
pub fn name(log: &str) -> String {
    format!("{log}{SUFFIX}")
}

/// What the anchor's name adds to its log's.
const SUFFIX: &str = ".anchor";

/// The anchor beside the audit file at `log`.
pub fn beside(log: &std::path::Path) -> std::path::PathBuf {
    let mut path = log.as_os_str().to_owned();
    path.push(SUFFIX);
    path.into()
}

/// Where the chain stood after the last line written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchor {
    /// The last line's `seq`.
    pub seq: u64,
    /// The last line's `hash`.
    pub hash: String,
    /// The first `seq` of the oldest file kept.
    pub oldest: u64,
    /// The log's size in bytes after the last line (absent in anchors
    /// written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<u64>,
    /// The log's inode: `end` is that file's size, not a newer log's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ino: Option<u64>,
}

/// Why an anchor cannot be read.
#[derive(Debug)]
pub enum AnchorError {
    /// The file cannot be read.
    Io(std::io::Error),
    /// The file holds no anchor record.
    Malformed,
}

impl fmt::Display for AnchorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnchorError::Io(e) => write!(f, "it cannot be read: {e}"),
            AnchorError::Malformed => f.write_str("it holds no anchor record"),
        }
    }
}

impl std::error::Error for AnchorError {}

impl Anchor {
    /// The record: the JSON object, spaces, a newline; `RECORD` bytes.
    pub fn encode(&self) -> [u8; RECORD] {
        let mut record = [b' '; RECORD];
        // Written in place: the largest anchor (every number at its widest)
        // leaves room for the newline.
        serde_json::to_writer(&mut record[..RECORD - 1], self).expect("an anchor fits its record");
        record[RECORD - 1] = b'\n';
        record
    }

    /// An anchor from its record's bytes.
    pub fn decode(bytes: &[u8]) -> Result<Anchor, AnchorError> {
        let text = std::str::from_utf8(bytes).map_err(|_| AnchorError::Malformed)?;
        let anchor: Anchor = serde_json::from_str(text.trim_end()).map_err(|_| AnchorError::Malformed)?;
        let hex = anchor.hash.len() == 64 && anchor.hash.bytes().all(|b| b.is_ascii_hexdigit());
        match hex && anchor.seq >= anchor.oldest.saturating_sub(1) {
            true => Ok(anchor),
            false => Err(AnchorError::Malformed),
        }
    }

    /// The anchor in `file` (`None`: the file is empty, a new anchor).
    pub fn read(file: &File) -> Result<Option<Anchor>, AnchorError> {
        let mut record = [0u8; RECORD];
        let mut got = 0;
        while got < RECORD {
            match file.read_at(&mut record[got..], got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(AnchorError::Io(e)),
            }
        }
        match got {
            0 => Ok(None),
            _ => Anchor::decode(&record[..got]).map(Some),
        }
    }

    /// Writes this anchor over the one in `file`: one `pwrite` at offset 0.
    pub fn write(&self, file: &File) -> std::io::Result<()> {
        file.write_all_at(&self.encode(), 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_anchor_is_one_fixed_size_record_that_round_trips() {
        let anchor =
            Anchor { seq: u64::MAX, hash: "ab".repeat(32), oldest: u64::MAX, end: Some(u64::MAX), ino: Some(u64::MAX) };
        let record = anchor.encode();
        assert_eq!(record.len(), RECORD);
        assert_eq!(Anchor::decode(&record).unwrap(), anchor);
        let small = Anchor { seq: 3, hash: "00".repeat(32), oldest: 1, end: None, ino: None };
        assert_eq!(Anchor::decode(&small.encode()).unwrap(), small);
        let older = format!(r#"{{"seq":3,"hash":"{}","oldest":1}}"#, "00".repeat(32));
        assert_eq!(Anchor::decode(older.as_bytes()).unwrap(), small, "an anchor without `end` still reads");
    }

    #[test]
    fn garbage_is_no_anchor() {
        for bad in [&b"{}"[..], b"not json", br#"{"seq":1,"hash":"zz","oldest":1}"#] {
            assert!(matches!(Anchor::decode(bad), Err(AnchorError::Malformed)), "{bad:?}");
        }
    }
}
