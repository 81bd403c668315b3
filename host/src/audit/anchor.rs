//! The audit log's anchor: where the chain ends, kept apart from the log.
//!
//! A chain of hashes shows an edited, inserted or deleted line, but not lines
//! cut off its end (the last ones, the `stop` included) nor off its start:
//! what is left is still a valid chain. So every append also writes, under
//! the same lock, one fixed-size record to `audit.log.anchor` beside the log:
//! the last line's `seq` and `hash`, and `oldest`, the first `seq` of the
//! oldest file kept (1 until the log first rotates; recomputed at each
//! rotation), and `end` and `ino`, the log's size after that line and its
//! inode. A writer that finds the log (that inode) as long as `end` goes on
//! from the anchor's `seq` and `hash` without reading the log's last line.
//!
//! Each writing process maps the record into its memory (`Kept`), shared
//! with the file as SQLite shares its `-shm` index: it reads and rewrites
//! the anchor there, under the log's lock, without a system call (a `pread`
//! and a `pwrite` per append before). The page cache holds the one copy, so
//! what one process writes the others and `cordon audit verify` read at
//! once, and it outlives a killed writer. A new, empty anchor is first
//! extended to a record of zeros, which reads as no anchor yet. The mapping
//! has SQLite's one hazard: a file cut shorter while it is mapped (not
//! deleted: a deleted anchor stays mapped) makes the writer's next access
//! fault. The anchor is owner-only, in an owner-only directory, and nothing
//! in Cordon cuts it.
//!
//! `cordon audit verify` then checks that the files given end at the anchor's
//! line (a cut tail) and begin at its `oldest` (a cut head, or a file not
//! given). Whoever rewrites both the log and its anchor is not caught: the
//! anchor stops cuts, not a writer who can rewrite everything.

use std::fmt;

use cap_std::fs::{File, FileExt};
use memmap2::MmapMut;
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

    /// The anchor in a record's bytes (`None`: no bytes, or only zeros: a
    /// new anchor).
    fn from_record(bytes: &[u8]) -> Result<Option<Anchor>, AnchorError> {
        match bytes.iter().all(|&b| b == 0) {
            true => Ok(None),
            false => Anchor::decode(bytes).map(Some),
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
        Anchor::from_record(&record[..got])
    }
}

/// An anchor file mapped into this process's memory: its first `RECORD`
/// bytes, shared with the file and every process that maps it. Callers
/// serialize access with the log's lock; the type only owns the mapping.
pub struct Kept {
    map: MmapMut,
}

impl Kept {
    /// Maps the first record of `file` (open for reading and writing),
    /// extending a shorter file with zeros first (never cutting a longer one).
    pub fn map(file: &File) -> std::io::Result<Kept> {
        if file.metadata()?.len() < RECORD as u64 {
            // Growing to one record: a racing process that wrote a record
            // meanwhile keeps it (the length stays, nothing is cut).
            file.set_len(RECORD as u64)?;
        }
        // SAFETY: the file is the audit log's owner-only anchor, which
        // Cordon never cuts (see the module's notes on the one hazard, a
        // file cut shorter while mapped); every byte pattern is a valid
        // `u8`, and this process reads and writes it only under the log's
        // lock, as the other processes do.
        let map = unsafe { memmap2::MmapOptions::new().len(RECORD).map_mut(file)? };
        Ok(Kept { map })
    }

    /// The anchor as the mapped record holds it (`None`: a new anchor).
    pub fn read(&self) -> Result<Option<Anchor>, AnchorError> {
        Anchor::from_record(&self.map)
    }

    /// Writes `anchor` over the mapped record.
    pub fn write(&mut self, anchor: &Anchor) {
        self.map.copy_from_slice(&anchor.encode());
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
    fn a_mapped_anchor_is_shared_with_its_file_and_every_other_mapping() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log.anchor");
        let open = || {
            let file = std::fs::OpenOptions::new().create(true).truncate(false).read(true).write(true).open(&path);
            File::from_std(file.unwrap())
        };
        let (file, other) = (open(), open());
        let mut kept = Kept::map(&file).unwrap();
        assert_eq!(file.metadata().unwrap().len(), RECORD as u64, "a new anchor is one record long");
        assert!(kept.read().unwrap().is_none(), "a record of zeros is no anchor yet");
        assert!(Anchor::read(&file).unwrap().is_none(), "for a reader of the file too");
        let anchor = Anchor { seq: 7, hash: "cd".repeat(32), oldest: 2, end: Some(4096), ino: Some(12) };
        kept.write(&anchor);
        let second = Kept::map(&other).unwrap();
        assert_eq!(second.read().unwrap(), Some(anchor.clone()), "another mapping sees it, and is not zeroed");
        assert_eq!(Anchor::read(&file).unwrap(), Some(anchor), "the file holds it without a write call");
        std::fs::write(&path, b"not json").unwrap();
        assert!(matches!(kept.read(), Err(AnchorError::Malformed)), "a rewritten file is read as it now is");
        let long = dir.path().join("long");
        std::fs::write(&long, vec![b' '; 3 * RECORD]).unwrap();
        let long_file = File::from_std(std::fs::OpenOptions::new().read(true).write(true).open(&long).unwrap());
        let _mapped = Kept::map(&long_file).unwrap();
        assert_eq!(std::fs::metadata(&long).unwrap().len(), 3 * RECORD as u64, "a longer file is not cut");
    }

    #[test]
    fn garbage_is_no_anchor() {
        for bad in [&b"{}"[..], b"not json", br#"{"seq":1,"hash":"zz","oldest":1}"#] {
            assert!(matches!(Anchor::decode(bad), Err(AnchorError::Malformed)), "{bad:?}");
        }
    }
}
