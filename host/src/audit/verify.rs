//! `cordon audit verify FILE...`: checks the chain of audit files given
//! oldest first (`audit.log.2 audit.log.1 audit.log`) against the log's
//! anchor (`audit.log.anchor`, see `anchor`), and names the first line that
//! breaks it, or what is missing: lines cut off the end (the anchor names a
//! later line than the files end with), off the start (the files begin after
//! the oldest line kept), or a cut that a writer found and recorded.

use std::fmt;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::anchor::{self, Anchor, AnchorError};
use super::chain::{self, GENESIS};

/// A chain that holds: how many lines, from which `seq` to which.
#[derive(Debug, PartialEq, Eq)]
pub struct Verified {
    pub lines: u64,
    pub first_seq: u64,
    pub last_seq: u64,
    /// Whether the first line is the chain's very first (`prev` is the genesis).
    pub from_genesis: bool,
    /// Whether an anchor was checked.
    pub anchored: bool,
    /// What holds but deserves a look: an anchor written again, lines after
    /// the anchor.
    pub notes: Vec<String>,
}

/// The first line that breaks the chain, or what is missing.
#[derive(Debug, PartialEq, Eq)]
pub struct Broken {
    pub file: PathBuf,
    /// 1-based, within `file` (0: the file as a whole).
    pub line: u64,
    pub why: Why,
}

/// How a line breaks the chain, or what is missing.
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
    /// The anchor cannot be read.
    NoAnchor(String),
    /// The files end at `last` where the anchor names `anchored`.
    TailCut { last: u64, anchored: u64 },
    /// The line the anchor names (`seq`) is not the one in the files.
    NotAnchored { seq: u64 },
    /// The files begin at `first` where the oldest line kept is `oldest`.
    HeadCut { oldest: u64, first: u64 },
    /// A writer found the log ending at `found` where its anchor named `anchored`.
    CutRecorded { found: u64, anchored: u64 },
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = format!("{} line {}", self.file.display(), self.line);
        let file = self.file.display();
        match &self.why {
            Why::Unreadable(e) => write!(f, "{file}: cannot be read: {e}"),
            Why::Damaged(what) => write!(f, "{at}: {what}"),
            Why::NotAfterPrevious => write!(
                f,
                "{at}: its `prev` is not the hash of the line before it (a line was deleted, moved or \
                 inserted before it, or a file is missing or out of order)"
            ),
            Why::Sequence { expected, found } => {
                write!(f, "{at}: seq {found} where {expected} was due (a line was deleted, moved or inserted)")
            }
            Why::Empty => write!(f, "{file}: holds no audit line"),
            Why::NoAnchor(why) => write!(
                f,
                "{file}: the anchor {why}, so lines cut off the end or the start cannot be told; give \
                 --anchor FILE, or --no-anchor to check the chain alone"
            ),
            Why::TailCut { last, anchored } => write!(
                f,
                "{file}: the log ends at seq {last} but its anchor names seq {anchored}: seq {}–{anchored} \
                 are missing (lines were cut off the end)",
                last + 1
            ),
            Why::NotAnchored { seq } => {
                write!(f, "{at}: seq {seq} is not the line the anchor names (the end of the log was rewritten)")
            }
            Why::HeadCut { oldest, first } => write!(
                f,
                "{file}: the files begin at seq {first} but the oldest line kept is seq {oldest}: seq \
                 {oldest}–{} are missing (lines were cut off the start, or give the rotated files too, \
                 oldest first)",
                first - 1
            ),
            Why::CutRecorded { found, anchored } => write!(
                f,
                "{at}: a writer found the log ending at seq {found} where its anchor named seq {anchored}: \
                 the end of the log was cut or rewritten before this line"
            ),
        }
    }
}

/// Which anchor to check the files against.
#[derive(Debug, Clone, Copy)]
pub enum Anchoring<'a> {
    /// The anchor of the last file (`audit.log` → `audit.log.anchor`).
    Beside,
    /// This anchor file.
    File(&'a Path),
    /// None: the chain alone (a copy shipped elsewhere, a log from before anchors).
    Off,
}

/// Where the walk stands.
struct Walk {
    verified: Verified,
    previous: Option<(u64, String)>,
    /// The hash of the line whose `seq` the anchor names, once met.
    anchored_hash: Option<String>,
}

/// Checks `files`, oldest first, as one chain, and against `anchoring`.
pub fn verify(files: &[&Path], anchoring: Anchoring<'_>) -> Result<Verified, Broken> {
    let last_file = files.last().map(|f| f.to_path_buf()).unwrap_or_default();
    let anchor = match anchoring {
        Anchoring::Off => None,
        Anchoring::Beside => Some(read_anchor(&anchor::beside(&last_file))?),
        Anchoring::File(path) => Some(read_anchor(path)?),
    };
    let verified = Verified {
        lines: 0,
        first_seq: 0,
        last_seq: 0,
        from_genesis: false,
        anchored: anchor.is_some(),
        notes: Vec::new(),
    };
    let mut walk = Walk { verified, previous: None, anchored_hash: None };
    let mut last_lines = 0;
    for &file in files {
        last_lines = walk_file(file, anchor.as_ref(), &mut walk)?;
    }
    let Walk { mut verified, previous, anchored_hash } = walk;
    let Some((last_seq, last_hash)) = previous else {
        return Err(Broken { file: last_file, line: 0, why: Why::Empty });
    };
    let Some(anchor) = anchor else { return Ok(verified) };
    if verified.first_seq > anchor.oldest {
        let why = Why::HeadCut { oldest: anchor.oldest, first: verified.first_seq };
        return Err(Broken { file: files[0].to_path_buf(), line: 1, why });
    }
    if last_seq < anchor.seq {
        return Err(Broken { file: last_file, line: 0, why: Why::TailCut { last: last_seq, anchored: anchor.seq } });
    }
    let hash = if last_seq == anchor.seq { Some(last_hash) } else { anchored_hash };
    if hash.as_deref() != Some(anchor.hash.as_str()) {
        let line = if last_seq == anchor.seq { last_lines } else { 0 };
        return Err(Broken { file: last_file, line, why: Why::NotAnchored { seq: anchor.seq } });
    }
    if last_seq > anchor.seq {
        verified.notes.push(format!(
            "{} line(s) after the anchor's seq {} (a writer stopped between a line and its anchor)",
            last_seq - anchor.seq,
            anchor.seq
        ));
    }
    Ok(verified)
}

fn read_anchor(path: &Path) -> Result<Anchor, Broken> {
    let broken = |why: String| Broken { file: path.to_path_buf(), line: 0, why: Why::NoAnchor(why) };
    let file = crate::ambient::open_file(path).map_err(|e| broken(format!("cannot be read ({e})")))?;
    match Anchor::read(&cap_std::fs::File::from_std(file)) {
        Ok(Some(anchor)) => Ok(anchor),
        Ok(None) => Err(broken("is empty".into())),
        Err(AnchorError::Malformed) => Err(broken("holds no anchor record".into())),
        Err(AnchorError::Io(e)) => Err(broken(format!("cannot be read ({e})"))),
    }
}

/// Walks the lines of one file; returns how many it holds.
fn walk_file(file: &Path, anchor: Option<&Anchor>, walk: &mut Walk) -> Result<u64, Broken> {
    let broken = |line, why| Broken { file: file.to_path_buf(), line, why };
    let reader = crate::ambient::open_file(file).map_err(|e| broken(0, Why::Unreadable(e.to_string())))?;
    let mut count = 0;
    for (n, text) in std::io::BufReader::new(reader).lines().enumerate() {
        let at = n as u64 + 1;
        count = at;
        let text = text.map_err(|e| broken(at, Why::Unreadable(e.to_string())))?;
        let line = chain::check_line(&text).map_err(|what| broken(at, Why::Damaged(what)))?;
        let verified = &mut walk.verified;
        match &walk.previous {
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
        // The chain's own events: a cut a writer found, an anchor written again.
        if text.contains(r#""event":"cut""#) || text.contains(r#""event":"anchor_reset""#) {
            let value: Value = serde_json::from_str(&text).unwrap_or_default();
            match value["event"].as_str() {
                Some("cut") => {
                    let (found, anchored) = (value["found"].as_u64(), value["anchor"]["seq"].as_u64());
                    let why = Why::CutRecorded { found: found.unwrap_or(0), anchored: anchored.unwrap_or(0) };
                    return Err(broken(at, why));
                }
                Some("anchor_reset") => verified.notes.push(format!(
                    "{} line {at}: the anchor was written again ({}); cuts before it cannot be told",
                    file.display(),
                    value["reason"].as_str().unwrap_or("unknown")
                )),
                _ => {}
            }
        }
        if anchor.is_some_and(|a| a.seq == line.seq) {
            walk.anchored_hash = Some(line.hash.clone());
        }
        verified.lines += 1;
        verified.last_seq = line.seq;
        walk.previous = Some((line.seq, line.hash));
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::chain::Chain;
    use serde_json::json;

    fn event(n: u64) -> serde_json::Map<String, Value> {
        json!({ "event": "test", "n": n }).as_object().unwrap().clone()
    }

    fn written(lines: u64) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let chain = Chain::open(&path, 1 << 20, 2).unwrap();
        for n in 0..lines {
            chain.append(event(n)).unwrap();
        }
        (dir, path)
    }

    fn rewrite(path: &Path, change: impl FnOnce(&mut Vec<String>)) {
        let mut lines: Vec<String> = std::fs::read_to_string(path).unwrap().lines().map(String::from).collect();
        change(&mut lines);
        std::fs::write(path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    }

    fn checked(path: &Path) -> Result<Verified, Broken> {
        verify(&[path], Anchoring::Beside)
    }

    #[test]
    fn an_intact_chain_verifies() {
        let (_dir, path) = written(5);
        let verified = checked(&path).unwrap();
        let expected =
            Verified { lines: 5, first_seq: 1, last_seq: 5, from_genesis: true, anchored: true, notes: Vec::new() };
        assert_eq!(verified, expected);
    }

    #[test]
    fn an_edited_line_is_named() {
        let (_dir, path) = written(5);
        rewrite(&path, |lines| lines[2] = lines[2].replace("\"n\":2", "\"n\":9"));
        let broken = checked(&path).unwrap_err();
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
        let broken = checked(&path).unwrap_err();
        assert_eq!((broken.line, broken.why), (2, Why::NotAfterPrevious));

        let (_dir, path) = written(5);
        rewrite(&path, |lines| lines.swap(2, 3));
        assert_eq!(checked(&path).unwrap_err().line, 3);
    }

    #[test]
    fn lines_cut_off_the_end_are_named_by_the_anchor() {
        for cut in [1, 3] {
            let (_dir, path) = written(6);
            rewrite(&path, |lines| lines.truncate(6 - cut));
            let broken = checked(&path).unwrap_err();
            assert_eq!(broken.why, Why::TailCut { last: 6 - cut as u64, anchored: 6 }, "{broken}");
            assert!(broken.to_string().contains("are missing"), "{broken}");
            // The chain alone cannot tell.
            assert!(verify(&[&path], Anchoring::Off).is_ok());
        }
        // The last line replaced by other valid lines, chained anew in a copy.
        let (_dir, path) = written(3);
        let elsewhere = tempfile::tempdir().unwrap();
        let copy = elsewhere.path().join("audit.log");
        let two: String = std::fs::read_to_string(&path).unwrap().lines().take(2).map(|l| format!("{l}\n")).collect();
        std::fs::write(&copy, two).unwrap();
        Chain::open(&copy, 1 << 20, 2).unwrap().append(event(7)).unwrap();
        std::fs::copy(&copy, &path).unwrap();
        let broken = checked(&path).unwrap_err();
        assert_eq!(broken.why, Why::NotAnchored { seq: 3 }, "{broken}");
    }

    #[test]
    fn lines_cut_off_the_start_of_a_log_that_never_rotated_are_named() {
        let (_dir, path) = written(5);
        rewrite(&path, |lines| {
            lines.drain(..3);
        });
        let broken = checked(&path).unwrap_err();
        assert_eq!((broken.line, &broken.why), (1, &Why::HeadCut { oldest: 1, first: 4 }), "{broken}");
        // The chain alone only says where it starts.
        let alone = verify(&[&path], Anchoring::Off).unwrap();
        assert_eq!((alone.first_seq, alone.from_genesis), (4, false));
    }

    #[test]
    fn a_rotated_log_verifies_whole_and_names_a_missing_head() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let chain = Chain::open(&path, 250, 3).unwrap();
        for n in 0..30 {
            chain.append(event(n)).unwrap();
        }
        let rotated: Vec<PathBuf> = (1..=3).rev().map(|k| dir.path().join(format!("audit.log.{k}"))).collect();
        assert!(rotated.iter().all(|f| f.exists()), "rotated three times at least");
        let mut files: Vec<&Path> = rotated.iter().map(PathBuf::as_path).collect();
        files.push(&path);
        let verified = verify(&files, Anchoring::Beside).unwrap();
        assert!(!verified.from_genesis, "the first files were rotated away");
        assert_eq!(verified.last_seq, 30);
        // Without the oldest kept file, its lines are missing.
        let broken = verify(&files[1..], Anchoring::Beside).unwrap_err();
        assert!(matches!(broken.why, Why::HeadCut { .. }), "{broken}");
        // And the first line of the oldest file cut off.
        rewrite(files[0], |lines| {
            lines.remove(0);
        });
        let broken = verify(&files, Anchoring::Beside).unwrap_err();
        assert!(matches!(broken.why, Why::HeadCut { .. }), "{broken}");
    }

    #[test]
    fn a_cut_found_by_the_next_writer_is_recorded_in_the_chain() {
        let (_dir, path) = written(5);
        rewrite(&path, |lines| lines.truncate(3));
        // A new process appends: the chain goes on from seq 3, and says what was cut.
        let chain = Chain::open(&path, 1 << 20, 2).unwrap();
        chain.append(event(9)).unwrap();
        let broken = checked(&path).unwrap_err();
        assert_eq!((broken.line, &broken.why), (4, &Why::CutRecorded { found: 3, anchored: 5 }), "{broken}");
    }

    #[test]
    fn a_missing_anchor_is_refused_unless_the_chain_alone_is_asked_for() {
        let (_dir, path) = written(3);
        let anchor = anchor::beside(&path);
        std::fs::remove_file(&anchor).unwrap();
        let broken = checked(&path).unwrap_err();
        assert!(matches!(broken.why, Why::NoAnchor(_)), "{broken}");
        assert!(verify(&[&path], Anchoring::Off).is_ok());
        // The next writer writes it again, and says so in the chain.
        let chain = Chain::open(&path, 1 << 20, 2).unwrap();
        chain.append(event(9)).unwrap();
        let verified = checked(&path).unwrap();
        assert_eq!((verified.last_seq, verified.notes.len()), (5, 1), "{verified:?}");
    }
}
