//! The directory store: one file per result, named by its 32 hex digits, a
//! line `<page> <expiry secs> <position> <cursor>` appended for each page
//! (files of the earlier format have no `<position>`). A page is appended
//! once; a result's file holds at most `MAX_RESULT_BYTES`; the directory at
//! most `Caps::results` files and `Caps::bytes` bytes, past which the files
//! written longest ago are removed first. Files are owner-only (`private`).

use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use cap_std::fs::Dir;

use super::{Caps, DIGITS, Entry, HandleError, MAX_RESULT_BYTES, is_handle};

/// What the directory holds, as this process last counted it and has
/// written since (`None`: not counted yet). Other processes sharing the
/// directory are seen at the next count: a sweep, or an eviction.
#[derive(Debug, Clone, Default)]
pub(super) struct Usage(Arc<Mutex<Option<Count>>>);

/// Results and bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Count {
    results: u64,
    bytes: u64,
}

impl Count {
    fn over(self, caps: Caps) -> bool {
        self.results > caps.results || self.bytes > caps.bytes
    }
}

/// The entry for `page` in the file of `stream`, if any.
pub(super) fn lookup(dir: &Dir, stream: &str, page: u64) -> Result<Option<Entry>, HandleError> {
    let file = match dir.open(stream) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(HandleError::Store(e)),
    };
    find_page(file, page).map_err(HandleError::Store)
}

/// Appends `entry` for `page` to the file of `stream` (created owner-only),
/// within the result's caps, and evicts the oldest results when the
/// directory is past `caps`.
pub(super) fn record(
    dir: &Dir,
    (stream, page): (&str, u64),
    entry: &Entry,
    caps: Caps,
    usage: &Usage,
) -> Result<(), HandleError> {
    let line = format!("{page} {} {} {}\n", entry.expires, entry.position, entry.cursor);
    let options = crate::private::file_options().append(true).create(true).clone();
    let mut file = dir.open_with(stream, &options).map_err(HandleError::Store)?;
    let size = file.metadata().map_err(HandleError::Store)?.len();
    if size + line.len() as u64 > MAX_RESULT_BYTES {
        return Err(HandleError::Full);
    }
    // One write of a whole line: appends from two servers do not interleave.
    file.write_all(line.as_bytes()).map_err(HandleError::Store)?;
    let mut counted = usage.0.lock().expect("usage lock");
    let now = match *counted {
        Some(was) => Count { results: was.results + u64::from(size == 0), bytes: was.bytes + line.len() as u64 },
        // The first write of this process: counted with the directory.
        None => count(dir),
    };
    *counted = Some(match now.over(caps) {
        true => evict(dir, caps),
        false => now,
    });
    Ok(())
}

/// The line for `page` in a result's file: its entry. Pages are appended in
/// order and the one asked for is nearly always among the last, so the file
/// is read from its end, a growing tail at a time, until a line of an earlier
/// page says it is not there.
fn find_page(mut file: cap_std::fs::File, page: u64) -> std::io::Result<Option<Entry>> {
    let size = file.seek(SeekFrom::End(0))?;
    let mut tail = 8 * 1024u64;
    loop {
        let from = size.saturating_sub(tail);
        file.seek(SeekFrom::Start(from))?;
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        // The first line of a tail may be cut: skip it unless the tail is the whole file.
        let lines = text.lines().skip(usize::from(from > 0)).collect::<Vec<_>>();
        for line in lines.iter().rev() {
            let Some((at, entry)) = parse_line(line) else { continue };
            if at == page {
                return Ok(Some(entry));
            }
            if at < page {
                return Ok(None);
            }
        }
        if from == 0 {
            return Ok(None);
        }
        tail *= 8;
    }
}

/// A line's page and entry; `None` when it is not a line of this store.
fn parse_line(line: &str) -> Option<(u64, Entry)> {
    let fields: Vec<&str> = line.split(' ').collect();
    let (at, expires, position, cursor) = match fields[..] {
        [at, expires, position, cursor] => (at, expires, position, cursor),
        [at, expires, cursor] => (at, expires, "", cursor),
        _ => return None,
    };
    let entry = Entry { expires: expires.parse().ok()?, position: position.into(), cursor: cursor.into() };
    Some((at.parse().ok()?, entry))
}

/// Sweeps `dir` on a thread of its own.
pub(super) fn sweep_on_a_thread(dir: &Dir, ttl_secs: u64, caps: Caps, usage: Usage) {
    if let Ok(dir) = dir.try_clone() {
        let sweep = move || {
            sweep(&dir, ttl_secs);
            let count = evict(&dir, caps);
            *usage.0.lock().expect("usage lock") = Some(count);
        };
        let _ = std::thread::Builder::new().name("cordon-handles-sweep".into()).spawn(sweep);
    }
}

/// A result's file in the directory: its name, size and when it was last written.
struct Stored {
    name: String,
    bytes: u64,
    written: SystemTime,
}

/// The results in `dir` (and the files of the earlier format, one per
/// handle, `h1_…`).
fn stored(dir: &Dir) -> Vec<Stored> {
    let Ok(entries) = dir.entries() else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let ours = (name.len() == DIGITS && !name.contains('.')) || is_handle(&name);
        let Some(meta) = ours.then(|| entry.metadata().ok()).flatten() else { continue };
        let written = meta.modified().map(|t| t.into_std()).unwrap_or(SystemTime::UNIX_EPOCH);
        found.push(Stored { name, bytes: meta.len(), written });
    }
    found
}

fn count(dir: &Dir) -> Count {
    let found = stored(dir);
    Count { results: found.len() as u64, bytes: found.iter().map(|s| s.bytes).sum() }
}

/// Removes the results written longest ago until the directory holds at most
/// nine tenths of `caps` (so an eviction is not due at the next page), and
/// returns what is left.
fn evict(dir: &Dir, caps: Caps) -> Count {
    let mut found = stored(dir);
    let mut left = Count { results: found.len() as u64, bytes: found.iter().map(|s| s.bytes).sum() };
    if !left.over(caps) {
        return left;
    }
    let target = Caps { results: caps.results - caps.results / 10, bytes: caps.bytes - caps.bytes / 10 };
    found.sort_by(|a, b| a.written.cmp(&b.written).then_with(|| a.name.cmp(&b.name)));
    let mut evicted = 0;
    for oldest in found {
        if !left.over(target) {
            break;
        }
        if dir.remove_file(&oldest.name).is_ok() {
            left.results -= 1;
            left.bytes -= oldest.bytes;
            evicted += 1;
        }
    }
    tracing::info!(
        evicted,
        results = left.results,
        bytes = left.bytes,
        "the handle store was full: oldest results evicted"
    );
    left
}

/// Removes from a directory store the results whose last page was written
/// longer ago than a cursor lives (one `stat` per result, no read).
fn sweep(dir: &Dir, ttl_secs: u64) {
    let now = SystemTime::now();
    for stored in stored(dir) {
        let age = now.duration_since(stored.written).map_or(0, |d| d.as_secs());
        if age > ttl_secs.saturating_add(1) {
            let _ = dir.remove_file(&stored.name);
        }
    }
}
