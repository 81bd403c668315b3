//! `cordon audit verify FILE...`: checks the chain of audit files given
//! oldest first (`audit.log.2 audit.log.1 audit.log`) and names the first
//! line that breaks it.

use std::fmt;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::chain::{self, GENESIS};

/// A chain that holds: how many lines, from which `seq` to which.
#[derive(Debug, PartialEq, Eq)]
pub struct Verified {
    pub lines: u64,
    pub first_seq: u64,
    pub last_seq: u64,
    /// Whether the first line is the chain's very first (`prev` is the genesis).
    pub from_genesis: bool,
}

/// The first line that breaks the chain.
#[derive(Debug, PartialEq, Eq)]
pub struct Broken {
    pub file: PathBuf,
    /// 1-based, within `file`.
    pub line: u64,
    pub why: Why,
}

/// How a line breaks the chain.
#[derive(Debug, PartialEq, Eq)]
pub enum Why {
    /// The file cannot be read.
    Unreadable(String),
    /// The line's own hash fails, or it is not an audit line at all.
    Damaged(&'static str),
    /// Its `prev` is not the hash of the line before it.
    NotAfterPrevious,
    /// Its `seq` does not follow the line before it's.
    Sequence { expected: u64, found: u64 },
    /// No line at all.
    Empty,
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = format!("{} line {}", self.file.display(), self.line);
        match &self.why {
            Why::Unreadable(e) => write!(f, "{}: cannot be read: {e}", self.file.display()),
            Why::Damaged(what) => write!(f, "{at}: {what}"),
            Why::NotAfterPrevious => write!(
                f,
                "{at}: its `prev` is not the hash of the line before it (a line was deleted, moved or \
                 inserted before it, or a file is missing or out of order)"
            ),
            Why::Sequence { expected, found } => {
                write!(f, "{at}: seq {found} where {expected} was due (a line was deleted, moved or inserted)")
            }
            Why::Empty => write!(f, "{}: holds no audit line", self.file.display()),
        }
    }
}

/// Checks `files`, oldest first, as one chain.
pub fn verify(files: &[&Path]) -> Result<Verified, Broken> {
    let mut previous: Option<(u64, String)> = None;
    let mut verified = Verified { lines: 0, first_seq: 0, last_seq: 0, from_genesis: false };
    for &file in files {
        let broken = |line, why| Broken { file: file.to_path_buf(), line, why };
        let reader = crate::ambient::open_file(file).map_err(|e| broken(0, Why::Unreadable(e.to_string())))?;
        for (n, text) in std::io::BufReader::new(reader).lines().enumerate() {
            let at = n as u64 + 1;
            let text = text.map_err(|e| broken(at, Why::Unreadable(e.to_string())))?;
            let line = chain::check_line(&text).map_err(|what| broken(at, Why::Damaged(what)))?;
            match &previous {
                None => {
                    verified.first_seq = line.seq;
                    verified.from_genesis = line.prev == GENESIS;
                    if line.seq == 1 && line.prev != GENESIS {
                        return Err(broken(at, Why::NotAfterPrevious));
                    }
                }
                Some((seq, hash)) => {
                    if line.prev != *hash {
                        return Err(broken(at, Why::NotAfterPrevious));
                    }
                    if line.seq != seq + 1 {
                        return Err(broken(at, Why::Sequence { expected: seq + 1, found: line.seq }));
                    }
                }
            }
            verified.lines += 1;
            verified.last_seq = line.seq;
            previous = Some((line.seq, line.hash));
        }
    }
    match previous {
        Some(_) => Ok(verified),
        None => {
            Err(Broken { file: files.last().map(|f| f.to_path_buf()).unwrap_or_default(), line: 0, why: Why::Empty })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::chain::Chain;
    use serde_json::json;

    fn written(lines: u64) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let chain = Chain::open(&path, 1 << 20, 2).unwrap();
        for n in 0..lines {
            chain.append(json!({ "event": "test", "n": n }).as_object().unwrap().clone()).unwrap();
        }
        (dir, path)
    }

    fn rewrite(path: &Path, change: impl FnOnce(&mut Vec<String>)) {
        let mut lines: Vec<String> = std::fs::read_to_string(path).unwrap().lines().map(String::from).collect();
        change(&mut lines);
        std::fs::write(path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    }

    #[test]
    fn an_intact_chain_verifies() {
        let (_dir, path) = written(5);
        let verified = verify(&[&path]).unwrap();
        assert_eq!(verified, Verified { lines: 5, first_seq: 1, last_seq: 5, from_genesis: true });
    }

    #[test]
    fn an_edited_line_is_named() {
        let (_dir, path) = written(5);
        rewrite(&path, |lines| lines[2] = lines[2].replace("\"n\":2", "\"n\":9"));
        let broken = verify(&[&path]).unwrap_err();
        assert_eq!(
            (broken.line, &broken.why),
            (3, &Why::Damaged("its hash does not match its text (the line was changed)"))
        );
    }

    #[test]
    fn a_deleted_or_moved_line_is_named_where_the_chain_breaks() {
        let (_dir, path) = written(5);
        rewrite(&path, |lines| {
            lines.remove(1);
        });
        let broken = verify(&[&path]).unwrap_err();
        assert_eq!((broken.line, broken.why), (2, Why::NotAfterPrevious));

        let (_dir, path) = written(5);
        rewrite(&path, |lines| lines.swap(2, 3));
        assert_eq!(verify(&[&path]).unwrap_err().line, 3);

        // The first lines cannot be checked against anything: the report says
        // where the chain starts, and that it is not the genesis.
        let (_dir, path) = written(5);
        rewrite(&path, |lines| {
            lines.remove(0);
        });
        let verified = verify(&[&path]).unwrap();
        assert_eq!((verified.first_seq, verified.from_genesis), (2, false));
    }
}
