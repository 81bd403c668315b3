//! The audit file: JSON lines, each chained to the one before it.
//!
//! A line is a JSON object whose last two fields are `prev`, the hash of the
//! line before it (64 zeros for the first line ever), and `hash`, the SHA-256
//! of the line's text up to the `,"hash":` that introduces it. Editing a line
//! breaks its own `hash`; deleting or moving one breaks the `prev` (and the
//! `seq`) of the line after it. The chain goes on across rotations and across
//! the processes that share the file.
//!
//! Every `cordon` process started with the same configuration appends to the
//! same file (an MCP client starts one `cordon serve` per session). The lines
//! that a process's threads record at once are written together (`group`):
//! the writing thread takes an exclusive lock on a lock file beside the log,
//! finds where the chain stands (from the anchor when the log is as long as
//! the anchor says, else from the log's last line), rotates when the file is
//! full, writes the lines in one write, updates the anchor, and lets go; each
//! caller returns once its line is written. A line whose
//! write failed halfway (a full disk) is cut off again at once, or, if the
//! process died before, by the next append: a torn last line without its
//! newline was never a record. Rotation crates (`file-rotate`,
//! `tracing-appender`) keep a file's state in one process and rotate without
//! a lock, which would fork the chain here; this module renames under the
//! same lock instead: `audit.log` → `audit.log.1` → … → `audit.log.N`.
//!
//! Each append also rewrites the anchor (`anchor`: the last line's `seq` and
//! `hash`, and the first `seq` of the oldest file kept) under the same lock,
//! so that lines cut off the end or the start of the log can be told. When a
//! process finds the log shorter than its anchor (lines were cut while no
//! process was appending), it records that in the chain itself, a `cut` line
//! naming what the anchor held, before its own line: the evidence is not
//! overwritten by the next anchor. An anchor that is missing or unreadable
//! while the log has lines (a log written before anchors, or a deleted
//! anchor) is written again after an `anchor_reset` line.
//!
//! Every file is created owner-only (`private`), and at open the log, its
//! lock, its anchor and its rotated files lose any group or other bits.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, File, FileExt, MetadataExt};

use serde_json::{Map, Value, json};

use super::anchor::{self, Anchor, AnchorError};
use super::group::Group;
use crate::private;
use crate::sha256::Sha256;

/// What introduces a line's own hash; everything before it is hashed.
const HASH_FIELD: &str = ",\"hash\":\"";

/// The `prev` of the first line ever written.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// How much of a file's end is read at first to find its last line.
const TAIL: u64 = 4 * 1024;

/// An audit file and how it rotates.
pub struct Chain {
    path: PathBuf,
    /// The audit file's directory, and the file's name in it.
    dir: Dir,
    name: String,
    lock: crate::ambient::LockFile,
    /// The anchor file, kept open: each append rewrites its one record.
    anchor: File,
    /// The file as this process last appended to it.
    open: std::sync::Mutex<Option<Open>>,
    /// The lines waiting to be written, and the thread writing them (the
    /// file lock does not exclude threads that share its open file).
    group: Group,
    /// Rotate once the file holds this many bytes.
    max_bytes: u64,
    /// Rotated files kept (`audit.log.1` … `audit.log.N`).
    keep: usize,
}

/// The audit file kept open between appends, and where its chain stood when
/// this process last wrote to it.
struct Open {
    file: File,
    /// The file's inode: another process's rotation gives the path a new one.
    ino: u64,
    /// The file's size after this process's last line, and that line's tail:
    /// still the chain's end while the size is the same.
    end: u64,
    tail: Option<Tail>,
    /// The first `seq` of the oldest file kept, as the anchor says.
    oldest: u64,
}

/// Where the chain stands: the last line's number and hash.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tail {
    seq: u64,
    hash: String,
}

impl Chain {
    /// The chain in the file at `path` (its directory is created), rotated at
    /// `max_bytes`, keeping `keep` rotated files.
    pub fn open(path: &Path, max_bytes: u64, keep: usize) -> std::io::Result<Chain> {
        let parent = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "the audit log needs a UTF-8 file name")
        })?;
        let dir = crate::private::create_dir_at(parent)?;
        let (lock_name, anchor_name) = (format!("{name}.lock"), anchor::name(name));
        let rotated_names: Vec<String> = (1..=keep.max(1)).map(|k| rotated(name, k)).collect();
        let ours = [name, lock_name.as_str(), anchor_name.as_str()].into_iter();
        let tightened = private::tighten_files(&dir, ours.chain(rotated_names.iter().map(String::as_str)), parent)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::PermissionDenied, e))?;
        private::report(parent, &tightened);
        let lock = dir.open_with(&lock_name, private::file_options().create(true).write(true))?;
        let lock = crate::ambient::LockFile::new(lock);
        let anchor = dir.open_with(&anchor_name, private::file_options().create(true).read(true).write(true))?;
        Ok(Chain {
            path: path.to_path_buf(),
            dir,
            name: name.to_string(),
            lock,
            anchor,
            open: std::sync::Mutex::new(None),
            group: Group::default(),
            max_bytes: max_bytes.max(1),
            keep: keep.max(1),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one event (a JSON object without `seq`, `prev`, `hash`) as a
    /// line (the server appends text it made itself: `append_text`).
    #[cfg(test)]
    pub fn append(&self, event: Map<String, Value>) -> std::io::Result<()> {
        self.append_text(fields_text(event))
    }

    /// Appends one event given as its fields' text (see `fields_text`), as a
    /// line written before it returns, with the lines other threads append
    /// meanwhile (see `group`).
    pub fn append_text(&self, fields: String) -> std::io::Result<()> {
        self.group.commit(fields, |bodies| self.write(&bodies))
    }

    /// Writes the lines of these bodies (see `fields_text`), in order, under
    /// the file lock.
    fn write(&self, bodies: &[String]) -> std::io::Result<()> {
        let mut open = self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let _held = self.lock.exclusive()?;
        let appended = self.append_locked(&mut open, bodies);
        if appended.is_err() {
            // Read everything afresh next time.
            *open = None;
        }
        appended
    }

    /// Whether the file at the path can be opened for appending (it is
    /// opened, created if gone, as the next record would open it; nothing is
    /// written).
    pub fn writable(&self) -> std::io::Result<()> {
        let mut open = self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        self.current(&mut open).map(|_| ())
    }

    /// The file at the path, kept open unless another process rotated it,
    /// and its size when the path's `statx` gave it (no `fstat` needed). The
    /// path is looked at without following a link: a log that is a link is
    /// reopened at each write, which is slower, not wrong.
    fn current<'a>(&self, open: &'a mut Option<Open>) -> std::io::Result<(&'a mut Open, Option<u64>)> {
        let at_path = self.at_path()?;
        let kept = matches!((open.as_ref(), at_path), (Some(o), Some((ino, _))) if o.ino == ino);
        if !kept {
            let file = self.dir.open_with(&self.name, private::file_options().create(true).append(true).read(true))?;
            let ino = file.metadata()?.ino();
            *open = Some(Open { file, ino, end: 0, tail: None, oldest: 1 });
        }
        Ok((open.as_mut().expect("just opened"), at_path.filter(|_| kept).map(|(_, len)| len)))
    }

    /// The inode and size of the file at the path, not following a link
    /// (`None`: no file there), from a `statx` that asks for those two only.
    /// Asking for the file's times as well would mark them as read, and since
    /// Linux 6.13 (multigrain timestamps) the next write would then take a
    /// fine-grained time and dirty the log's inode: on every append, as every
    /// append looks here first. Without `statx`, or where the filesystem does
    /// not give both, the full `lstat` answers.
    fn at_path(&self) -> std::io::Result<Option<(u64, u64)>> {
        use rustix::fs::{AtFlags, StatxFlags};
        let wanted = StatxFlags::INO | StatxFlags::SIZE;
        match rustix::fs::statx(&self.dir, self.name.as_str(), AtFlags::SYMLINK_NOFOLLOW, wanted) {
            Ok(found) if StatxFlags::from_bits_retain(found.stx_mask).contains(wanted) => {
                return Ok(Some((found.stx_ino, found.stx_size)));
            }
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            _ => {}
        }
        match self.dir.symlink_metadata(&self.name) {
            Ok(meta) => Ok(Some((meta.ino(), meta.len()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Writes the lines of `bodies` after the chain's end, rotating first when
    /// the next line would take the file past `max_bytes` (what is pending
    /// goes into the full file, the rest into the new one), then the anchor.
    fn append_locked(&self, open: &mut Option<Open>, bodies: &[String]) -> std::io::Result<()> {
        let (mut current, known) = self.current(open)?;
        let mut size = match known {
            Some(size) => size,
            None => current.file.metadata()?.len(),
        };
        let mut text = String::new();
        if size != current.end || current.tail.is_none() {
            // Another process wrote since (or this is the first append).
            size = self.catch_up(current, size, &mut text)?;
        }
        let mut tail = current.tail.clone();
        let mut rotated_now = false;
        for body in bodies {
            let before = text.len();
            let after = line(&mut text, tail.as_ref(), body);
            let pending = size + before as u64;
            if pending > 0 && size + text.len() as u64 > self.max_bytes {
                // This line goes into the next file.
                write_text(current, &mut size, &text[..before])?;
                text.drain(..before);
                let oldest = current.oldest;
                self.rotate()?;
                current = self.current(open)?.0;
                (current.oldest, size, rotated_now) = (oldest, 0, true);
            }
            tail = Some(after);
        }
        write_text(current, &mut size, &text)?;
        if rotated_now {
            current.oldest = self.oldest_kept().unwrap_or(current.oldest);
        }
        let after = tail.expect("a batch holds a line");
        let anchor = Anchor {
            seq: after.seq,
            hash: after.hash.clone(),
            oldest: current.oldest,
            end: Some(current.end),
            ino: Some(current.ino),
        };
        current.tail = Some(after);
        anchor.write(&self.anchor)
    }

    /// Finds where the chain stands after another process's lines (or at the
    /// first append): from the anchor when the log ends where it says, else
    /// from the log's last whole line (a torn one is cut off), checked
    /// against the anchor, with the line that records a disagreement pushed
    /// to `text`. Returns the log's size.
    fn catch_up(&self, current: &mut Open, size: u64, text: &mut String) -> std::io::Result<u64> {
        let anchor = Anchor::read(&self.anchor);
        if let Ok(Some(anchor)) = &anchor
            && (anchor.ino, anchor.end) == (Some(current.ino), Some(size))
        {
            current.tail = Some(Tail { seq: anchor.seq, hash: anchor.hash.clone() });
            current.oldest = anchor.oldest;
            return Ok(size);
        }
        let (kept, last) = last_line(&mut current.file, size, Some(&self.path))?;
        current.tail = last.map(|line| tail_of(&line));
        if current.tail.is_none()
            && let Ok(mut previous) = self.dir.open(rotated(&self.name, 1))
        {
            // Just rotated: the chain goes on from the newest rotated file.
            let end = previous.metadata()?.len();
            current.tail = last_line(&mut previous, end, None)?.1.map(|line| tail_of(&line));
        }
        let (oldest, note) = self.against_anchor(current.tail.as_ref(), anchor);
        current.oldest = oldest;
        if let Some(note) = note {
            current.tail = Some(line(text, current.tail.as_ref(), &fields_text(note)));
        }
        Ok(kept)
    }

    /// The anchor checked against the chain's end as found in the files: the
    /// oldest `seq` kept, and the line to record first when they disagree
    /// (`cut`: the files end before the anchor; `anchor_reset`: no anchor).
    fn against_anchor(
        &self,
        tail: Option<&Tail>,
        anchor: Result<Option<Anchor>, AnchorError>,
    ) -> (u64, Option<Map<String, Value>>) {
        let note = |fields: Value| {
            let mut m = Map::new();
            m.insert("time".into(), humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string().into());
            m.insert("pid".into(), super::pid().into());
            m.extend(fields.as_object().expect("an object").clone());
            m
        };
        let found = tail.map_or(0, |t| t.seq);
        let next = found + 1;
        match anchor {
            Ok(Some(anchor)) => {
                let cut = anchor.seq > found || (anchor.seq == found && tail.is_some_and(|t| t.hash != anchor.hash));
                if !cut {
                    return (anchor.oldest, None);
                }
                tracing::error!(
                    path = %self.path.display(),
                    "the audit log ends at seq {found} but its anchor at seq {}: lines were cut; recorded",
                    anchor.seq
                );
                let fields =
                    json!({ "event": "cut", "anchor": { "seq": anchor.seq, "hash": anchor.hash }, "found": found });
                (anchor.oldest.min(next), Some(note(fields)))
            }
            Ok(None) if tail.is_none() => (1, None),
            anchor => {
                let why = match anchor {
                    Err(e) => e.to_string(),
                    Ok(_) => "it is missing".to_string(),
                };
                tracing::warn!(path = %self.path.display(), "the audit log's anchor is written again: {why}");
                let oldest = self.oldest_kept().unwrap_or(next);
                (oldest, Some(note(json!({ "event": "anchor_reset", "reason": why }))))
            }
        }
    }

    /// The first `seq` of the oldest file kept (the highest rotated one that
    /// exists, else the log itself), when it has a readable line.
    fn oldest_kept(&self) -> Option<u64> {
        let names = (1..=self.keep).rev().map(|k| rotated(&self.name, k)).chain([self.name.clone()]);
        for name in names {
            let Ok(file) = self.dir.open(&name) else { continue };
            let mut first = String::new();
            std::io::BufReader::new(file).read_line(&mut first).ok()?;
            return serde_json::from_str::<Value>(&first).ok()?["seq"].as_u64();
        }
        None
    }

    /// `audit.log.K` → `.K+1` for K = keep−1 … 1, then `audit.log` → `.1`.
    fn rotate(&self) -> std::io::Result<()> {
        for k in (1..self.keep).rev() {
            match self.dir.rename(rotated(&self.name, k), &self.dir, rotated(&self.name, k + 1)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        self.dir.rename(&self.name, &self.dir, rotated(&self.name, 1))
    }
}

/// The name of the `k`-th rotated file of the audit file `name`
/// (`audit.log.1` is the newest).
pub fn rotated(name: &str, k: usize) -> String {
    format!("{name}.{k}")
}

/// Appends `text` to the file, whose size is `size` (and is after), cutting
/// off what a failed write left of it: a line written halfway is no record.
fn write_text(current: &mut Open, size: &mut u64, text: &str) -> std::io::Result<()> {
    let written = current.file.write_all(text.as_bytes()).and_then(|()| current.file.flush());
    if written.is_err() {
        let _ = current.file.set_len(*size);
        return written;
    }
    *size += text.len() as u64;
    current.end = *size;
    Ok(())
}

/// An event's fields as they go between a line's `seq` and `prev`: each
/// `,"key":value`, in order (`seq`, `prev` and `hash` are the chain's own).
/// Made by the thread that records, before any lock.
pub fn fields_text(event: Map<String, Value>) -> String {
    let mut text = Vec::with_capacity(512);
    for (key, value) in event {
        if matches!(key.as_str(), "seq" | "prev" | "hash") {
            continue;
        }
        text.push(b',');
        serde_json::to_writer(&mut text, &key).expect("a string is JSON");
        text.push(b':');
        serde_json::to_writer(&mut text, &value).expect("a value is JSON");
    }
    String::from_utf8(text).expect("JSON is UTF-8")
}

/// Appends to `text` the line for an event's `fields` (see `fields_text`)
/// after `tail`, newline included; returns where the chain stands after it.
fn line(text: &mut String, tail: Option<&Tail>, fields: &str) -> Tail {
    let seq = tail.map_or(1, |t| t.seq + 1);
    let prev = tail.map_or(GENESIS, |t| t.hash.as_str());
    let start = text.len();
    text.reserve(fields.len() + 200);
    text.push_str("{\"seq\":");
    std::fmt::Write::write_fmt(text, format_args!("{seq}")).expect("to memory");
    text.push_str(fields);
    text.push_str(",\"prev\":\"");
    text.push_str(prev);
    text.push('"');
    let hash = Sha256::hex(&text.as_bytes()[start..]);
    text.push_str(HASH_FIELD);
    text.push_str(&hash);
    text.push_str("\"}\n");
    Tail { seq, hash }
}

/// The end of `file`, read with one `pread` when the last line is short: the
/// size that holds only whole lines, and the last whole line (without its
/// newline). Bytes after the last newline are the remains of a line whose
/// write failed halfway (a full disk, a killed process); `cut_torn` says
/// whether to cut them off.
fn last_line(file: &mut File, size: u64, cut_torn: Option<&Path>) -> std::io::Result<(u64, Option<String>)> {
    let mut want = TAIL;
    loop {
        let from = size.saturating_sub(want);
        let mut buf = vec![0u8; (size - from) as usize];
        file.read_exact_at(&mut buf, from)?;
        let whole = match buf.iter().rposition(|&b| b == b'\n') {
            Some(at) => at + 1,
            None if from == 0 => 0,
            None => {
                want *= 4;
                continue;
            }
        };
        let kept = from + whole as u64;
        if let (true, Some(path)) = (kept < size, cut_torn) {
            tracing::warn!(path = %path.display(), bytes = size - kept, "cut a torn last line off the audit log");
            file.set_len(kept)?;
        }
        let body = &buf[..whole.saturating_sub(1)];
        let start = match body.iter().rposition(|&b| b == b'\n') {
            Some(at) => at + 1,
            None if from == 0 => 0,
            // The last whole line began before what was read.
            None if whole > 0 => {
                want *= 4;
                continue;
            }
            None => 0,
        };
        let line = (whole > 0).then(|| String::from_utf8_lossy(&body[start..]).into_owned());
        return Ok((kept, line));
    }
}

/// The `seq` and `hash` to go on from after a line already in the file. A
/// damaged line (edited, or garbage) is not a reason to stop recording: the
/// chain goes on from the SHA-256 of its text as it is, with the `seq` it
/// claims (else 0), and `cordon audit verify` names it.
fn tail_of(line: &str) -> Tail {
    match check_line(line) {
        Ok(checked) => Tail { seq: checked.seq, hash: checked.hash },
        Err(why) => {
            tracing::error!("the audit log's last line is damaged ({why}); the chain goes on from it as it is");
            let seq = serde_json::from_str::<Value>(line).ok().and_then(|v| v["seq"].as_u64()).unwrap_or(0);
            Tail { seq, hash: Sha256::hex(line.as_bytes()) }
        }
    }
}

/// A line whose own hash holds.
#[derive(Debug)]
pub struct Checked {
    pub seq: u64,
    pub prev: String,
    pub hash: String,
}

/// Checks a line's own hash and reads its `seq` and `prev`.
pub fn check_line(line: &str) -> Result<Checked, &'static str> {
    let at = line.rfind(HASH_FIELD).ok_or("no hash field")?;
    let (body, rest) = line.split_at(at);
    let hash = rest[HASH_FIELD.len()..].strip_suffix("\"}").ok_or("the hash is not the last field")?;
    if Sha256::hex(body.as_bytes()) != hash {
        return Err("its hash does not match its text (the line was changed)");
    }
    let value: Value = serde_json::from_str(line).map_err(|_| "not a JSON object")?;
    let seq = value["seq"].as_u64().ok_or("no seq")?;
    let prev = value["prev"].as_str().ok_or("no prev")?.to_string();
    Ok(Checked { seq, prev, hash: hash.to_string() })
}

#[cfg(test)]
mod tests;
