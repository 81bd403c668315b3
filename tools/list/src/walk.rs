//! A depth-first directory walk in path order that never follows symlinks,
//! with resume positions that skip whole directories already emitted.
//!
//! Path order: each entry comes right before its contents, and the entries of
//! a directory are sorted by name (bytes). That is the order of [`Path`]'s
//! `Ord`, which compares component by component, so "the entries after `a/b`"
//! is a plain comparison and a directory lying wholly before a resume position
//! is never read.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use cordon_sdk::progress::Walked;
use cordon_sdk::{Error, paths};
use serde::Serialize;

/// The deepest `depth` a listing may ask for.
pub const MAX_DEPTH: u32 = 32;

/// An entry as the tool reports it: the SDK's [`paths::Entry`] and where it
/// sits in the listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// The path, type, size and time.
    #[serde(flatten)]
    pub entry: paths::Entry,
    /// 1 for the listed directory's own entries, 2 for theirs, and so on.
    pub depth: u32,
    /// Why the directory's contents are missing, when it could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One directory being listed: its entries' names, sorted, and the next one.
struct Level {
    dir: PathBuf,
    rel: PathBuf,
    names: Vec<OsString>,
    next: usize,
    depth: u32,
}

/// How far a listing got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Entries emitted.
    pub listed: u64,
    /// Entries that vanished or could not be described, and were skipped.
    pub errors: u64,
}

/// The walk: a stack of open directories. The entries it looks at (not those
/// skipped unread before the resume position) are reported as progress.
pub struct Lister {
    stack: Vec<Level>,
    max_depth: u32,
    hidden: bool,
    after: Option<PathBuf>,
    /// How far the walk got.
    pub counts: Counts,
    walked: Walked,
}

impl Lister {
    /// Lists `dir` down to `max_depth` levels, with or without hidden entries,
    /// starting after `after` (a path relative to `dir`); the host's listing
    /// leaves out what the server's deny rules match.
    pub fn new(dir: &Path, max_depth: u32, hidden: bool, after: Option<PathBuf>) -> Result<Lister, Error> {
        let names = read_names(dir, hidden, true)?;
        let root = Level { dir: dir.to_path_buf(), rel: PathBuf::new(), names, next: 0, depth: 1 };
        let (counts, walked) = (Counts::default(), Walked::default());
        Ok(Lister { stack: vec![root], max_depth, hidden, after, counts, walked })
    }

    /// The entries looked at so far (described, or found to have vanished).
    pub fn walked(&self) -> u64 {
        self.walked.entries
    }

    /// The next entry in path order and its path relative to the listed
    /// directory, or `None` at the end.
    pub fn next_entry(&mut self) -> Option<(PathBuf, Entry)> {
        loop {
            let level = self.stack.last_mut()?;
            let Some(name) = level.names.get(level.next).cloned() else {
                self.stack.pop();
                continue;
            };
            level.next += 1;
            let rel = level.rel.join(&name);
            let (path, depth) = (level.dir.join(&name), level.depth);
            let after = self.after.as_deref();
            let emit = after.is_none_or(|after| rel.as_path() > after);
            let holds_rest = after.is_some_and(|after| after.starts_with(&rel) && after != rel);
            if !emit && !holds_rest && after != Some(rel.as_path()) {
                continue;
            }
            self.walked.step();
            let Ok(described) = paths::Entry::at(&path) else {
                self.counts.errors += 1;
                continue;
            };
            let mut error = None;
            if described.kind == "dir" && depth < self.max_depth {
                match read_names(&path, self.hidden, false) {
                    Ok(names) => {
                        self.stack.push(Level { dir: path.clone(), rel: rel.clone(), names, next: 0, depth: depth + 1 })
                    }
                    Err(e) => error = Some(format!("the directory's entries could not be read: {}", e.message)),
                }
            }
            if !emit {
                continue;
            }
            self.counts.listed += 1;
            let entry = Entry { entry: described, depth, error };
            return Some((rel, entry));
        }
    }
}

/// The names in `dir`, sorted by bytes, without hidden ones unless `hidden`:
/// one directory read through the host's listing (no stat per entry; the
/// server's deny rules leave their entries out).
fn read_names(dir: &Path, hidden: bool, follow: bool) -> Result<Vec<OsString>, Error> {
    let entries = cordon_sdk::scan::read_dir(dir, follow)?;
    Ok(entries.into_iter().filter(|e| hidden || !e.name.starts_with('.')).map(|e| e.name.into()).collect())
}
