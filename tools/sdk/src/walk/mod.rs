//! A directory walk with ripgrep's filters, in path order, over
//! [`scan`](crate::scan): one directory read per directory and no stat
//! per entry.
//!
//! Path order is the order of `rg --sort path`: depth first, each directory's
//! entries sorted by name, which is the order of [`Path`]'s `Ord` (component by
//! component). So a position is a path, "the entries after it" is a plain
//! comparison, and a directory wholly before a position is pruned unread.
//!
//! The filters are ripgrep's, applied as the `ignore` crate's walker applies
//! them, with its matchers (`Gitignore`, `Override`, `Types`): the override
//! globs decide first; then the ignore files of the directories above the
//! entry (`.rgignore`-style custom names, `.ignore`, and inside a git
//! repository `.gitignore` and `.git/info/exclude`, each kind from the nearest
//! directory that has a say, git's stopping at the repository's top); then the
//! file type; then hidden names. The ignore files of the directories between
//! the granted root and the walk's start apply too (ripgrep's "parents"); the
//! start itself, named by the caller, is never filtered. Only ignore files the
//! listing shows are read, so a directory without them costs no failed open.
//!
//! An ignore file larger than [`MAX_IGNORE_FILE_BYTES`], or one that cannot be
//! read, is not applied: the walk says so ([`Visit::Unapplied`]) at the ignore
//! file's place in path order (see [`Unapplied::at`]), so that a tool names it
//! in its result, and goes on without its rules.
//!
//! A walk says how far it got at an entry its filters leave out, once
//! [`PASSED_EVERY`] entries were looked at since it last said so
//! ([`Visit::Passed`]), so a tool built on it can return a checkpoint there
//! (see `items::Step`) when the entries it kept gave it nothing to emit,
//! rather than work on unseen.

mod rules;

use std::path::{Path, PathBuf};
use std::rc::Rc;

use ignore::overrides::Override;
use ignore::types::Types;

use crate::Error;
use crate::scan::{self, DirEntry, Kind};
pub use rules::{MAX_IGNORE_FILE_BYTES, Unapplied, Why};
use rules::{Rules, keeps, read_rules};

/// Which entries a walk keeps: ripgrep's filters.
#[derive(Clone)]
pub struct Filters {
    /// Keep hidden entries (names starting with `.`), like `rg --hidden`.
    pub hidden: bool,
    /// Read ignore files (`.ignore`, `.gitignore`, git's exclude file and the
    /// `custom_ignore` names); `false` is `rg --no-ignore`.
    pub ignore_files: bool,
    /// Further ignore file names, with the highest precedence (`.rgignore`).
    pub custom_ignore: Vec<String>,
    /// Apply `.gitignore` and git's exclude file only inside a git repository
    /// (a directory holding `.git`, at or above the entry); `false` is
    /// `rg --no-require-git`.
    pub require_git: bool,
    /// The include/exclude globs (`rg -g`), rooted at the walk's start.
    pub overrides: Override,
    /// The file type filter (`rg -t`).
    pub types: Types,
}

impl Filters {
    /// No filter at all: every entry, hidden and ignored ones too.
    pub fn none() -> Filters {
        Filters {
            hidden: true,
            ignore_files: false,
            custom_ignore: Vec::new(),
            require_git: true,
            overrides: Override::empty(),
            types: Types::empty(),
        }
    }
}

/// An entry the walk kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its absolute path.
    pub path: PathBuf,
    /// What it is (a symlink is reported, never followed).
    pub kind: Kind,
    /// Whether it is the walk's start, a file the caller named (which, as
    /// ripgrep does, is read through a symlink).
    pub named: bool,
}

/// What a walk gives next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Visit {
    /// An entry the filters keep.
    Entry(Found),
    /// The filters left out this path, and [`PASSED_EVERY`] entries were
    /// looked at since the walk last said so: a walk from just after it goes
    /// on where this one is.
    Passed(PathBuf),
    /// An ignore file the walk did not apply, given just before the entry
    /// it is at ([`Unapplied::at`]), whether or not the filters keep that
    /// entry. A walk from a position at that entry gives it again: a tool
    /// that resumes after it knows to pass over it.
    Unapplied(Unapplied),
    /// A directory the walk kept (given just before as an entry) but could
    /// not read, and why: none of its entries are walked. A walk from a
    /// position at it gives both again.
    Unreadable(PathBuf, Error),
}

/// Entries looked at after which a walk says how far it got.
pub const PASSED_EVERY: u32 = 1024;

/// A directory being walked: its entries and the next one.
struct Frame {
    /// Whether `end` lies in this directory (else all its entries sort before).
    holds_end: bool,
    entries: Vec<DirEntry>,
    next: usize,
    dir: PathBuf,
    rules: Option<Rc<Rules>>,
    /// The directory's ignore files not applied, by the entry they are at,
    /// the last first.
    unapplied: Vec<Unapplied>,
}

impl Frame {
    /// The ignore file not applied at the entry `path`, if one is left;
    /// those at entries before it are dropped.
    fn unapplied_at(&mut self, path: &Path) -> Option<Unapplied> {
        while let Some(next) = self.unapplied.pop() {
            match next.at.as_path().cmp(path) {
                std::cmp::Ordering::Less => continue,
                std::cmp::Ordering::Equal => return Some(next),
                std::cmp::Ordering::Greater => {
                    self.unapplied.push(next);
                    return None;
                }
            }
        }
        None
    }
}

/// The walk: a stack of directories being read.
pub struct Walk {
    filters: Filters,
    stack: Vec<Frame>,
    /// A directory kept and returned, to be read before the next entry.
    descend: Option<PathBuf>,
    /// Entries sorted before this path are skipped unread.
    from: Option<PathBuf>,
    /// The walk ends at the first entry not sorted before this path.
    end: Option<PathBuf>,
    /// The start, when it is a file: returned once.
    file: Option<PathBuf>,
    /// The start and the rules above it, until the first entry is asked for.
    started: Option<(PathBuf, Option<Rc<Rules>>)>,
    /// The ignore files above the start not applied, the last first: given
    /// before the start's entries, when the start is a directory and the
    /// walk starts there (`from` is none or the start itself).
    above: Vec<Unapplied>,
    /// Entries looked at since the walk last said how far it got.
    looked: u32,
}

impl Walk {
    /// Walks `start` (a directory or a file, inside the granted root `top`),
    /// keeping what `filters` keep; the ignore files of the directories from
    /// `top` down to `start`'s parent apply.
    pub fn new(top: &Path, start: &Path, filters: Filters) -> Walk {
        let (mut rules, mut above) = (None, Vec::new());
        if filters.ignore_files && start.starts_with(top) {
            let mut dir = top.to_path_buf();
            let below: Vec<_> = start.strip_prefix(top).map(|r| r.components().collect()).unwrap_or_default();
            for (i, component) in below.iter().enumerate() {
                if let Ok(entries) = scan::read_dir(&dir, false) {
                    let unapplied;
                    (rules, unapplied) = read_rules(&filters, &dir, &entries, rules);
                    above.extend(unapplied.into_iter().map(|u| Unapplied { at: start.to_path_buf(), ..u }));
                }
                if i + 1 < below.len() {
                    dir.push(component);
                }
            }
        }
        Walk {
            filters,
            stack: Vec::new(),
            descend: None,
            from: None,
            end: None,
            file: None,
            started: Some((start.to_path_buf(), rules)),
            above: above.into_iter().rev().collect(),
            looked: 0,
        }
    }

    /// Skips every entry sorted before `from` (a resume position), but the
    /// directories holding it.
    pub fn from(mut self, from: Option<PathBuf>) -> Walk {
        self.from = from;
        self
    }

    /// Ends the walk before the first entry not sorted before `end` (the end of
    /// a range).
    pub fn until(mut self, end: Option<PathBuf>) -> Walk {
        self.end = end;
        self
    }

    /// The next entry kept, in path order, or the error of a directory that
    /// could not be read (the walk goes on past it); ignore files not
    /// applied are passed over.
    pub fn next_entry(&mut self) -> Option<Result<Found, Error>> {
        loop {
            match self.next_visit()? {
                Ok(Visit::Entry(found)) => return Some(Ok(found)),
                Ok(Visit::Passed(_) | Visit::Unapplied(_)) => {}
                Ok(Visit::Unreadable(_, e)) | Err(e) => return Some(Err(e)),
            }
        }
    }

    /// The next entry kept, or an entry left out once [`PASSED_EVERY`]
    /// entries were looked at ([`Visit::Passed`]), or an ignore file not
    /// applied ([`Visit::Unapplied`]), or a directory that could not be read
    /// ([`Visit::Unreadable`]; the walk goes on past it); or the error of a
    /// start that could not be read.
    pub fn next_visit(&mut self) -> Option<Result<Visit, Error>> {
        if let Some((start, rules)) = self.started.take() {
            // The ignore files above are said once, where the walk starts.
            if self.from.as_ref().is_some_and(|from| *from != start) {
                self.above.clear();
            }
            match scan::read_dir(&start, true) {
                Ok(entries) => self.push(start, entries, rules),
                Err(e) if e.code == crate::ErrorCode::Io || e.code == crate::ErrorCode::NotFound => {
                    // Not a directory: the start is a file, searched as named
                    // (no ignore file applies to it).
                    self.file = Some(start);
                    self.above.clear();
                }
                Err(e) => return Some(Err(e)),
            }
        }
        if let Some(unapplied) = self.above.pop() {
            return Some(Ok(Visit::Unapplied(unapplied)));
        }
        if let Some(file) = self.file.take() {
            return Some(Ok(Visit::Entry(Found { path: file, kind: Kind::File, named: true })));
        }
        if let Some(dir) = self.descend.take() {
            let rules = self.stack.last().and_then(|f| f.rules.clone());
            match scan::read_dir(&dir, false) {
                Ok(entries) => self.push(dir, entries, rules),
                Err(e) => return Some(Ok(Visit::Unreadable(dir, e))),
            }
        }
        loop {
            let frame = self.stack.last_mut()?;
            let Some(entry) = frame.entries.get(frame.next) else {
                self.stack.pop();
                continue;
            };
            let path = frame.dir.join(&entry.name);
            let kind = entry.kind;
            // Entries come in path order: once one is past `from`, all are.
            if let Some(from) = &self.from {
                if path < *from {
                    // What is said at an entry before `from` was said before.
                    let _ = frame.unapplied_at(&path);
                    if !(kind == Kind::Dir && from.starts_with(&path)) {
                        frame.next += 1;
                        continue;
                    }
                } else {
                    self.from = None;
                }
            }
            // Only a directory holding `end` has entries past it.
            if frame.holds_end && self.end.as_deref().is_some_and(|end| path.as_path() >= end) {
                self.stack.clear();
                return None;
            }
            if self.from.is_none()
                && let Some(unapplied) = frame.unapplied_at(&path)
            {
                return Some(Ok(Visit::Unapplied(unapplied)));
            }
            let entry = &frame.entries[frame.next];
            frame.next += 1;
            self.looked += 1;
            if !keeps(&self.filters, frame.rules.as_ref(), &path, &entry.name, kind) {
                if self.looked >= PASSED_EVERY {
                    self.looked = 0;
                    return Some(Ok(Visit::Passed(path)));
                }
                continue;
            }
            if kind == Kind::Dir {
                self.descend = Some(path.clone());
            }
            return Some(Ok(Visit::Entry(Found { path, kind, named: false })));
        }
    }

    /// Reads `dir`'s ignore files (below `rules`) and walks its entries next.
    fn push(&mut self, dir: PathBuf, entries: Vec<DirEntry>, rules: Option<Rc<Rules>>) {
        let (rules, mut unapplied) = read_rules(&self.filters, &dir, &entries, rules);
        unapplied.reverse();
        let holds_end = self.end.as_ref().is_some_and(|end| end.starts_with(&dir));
        self.stack.push(Frame { holds_end, entries, next: 0, dir, rules, unapplied });
    }
}

/// The most directories [`boundaries`] reads.
const SPLIT_READS: usize = 4096;

/// Where to cut the walk of `start` after `from` into `count` shards: up to
/// `count - 1` paths in path order, each after `from`, at which the next
/// shard begins (the first shard runs from `from`). The walk's entries are
/// expanded level by level into about `8 × count` units (files and
/// directories, hidden ones left out unless `hidden`), which are cut into
/// runs that shrink from the first to the last (see `shrinking_cuts`).
/// Cheap: a few directory reads, not a scan; the cuts need not be entries
/// the filters keep, only places in path order.
pub fn boundaries(start: &Path, from: Option<&Path>, count: u32, hidden: bool) -> Vec<PathBuf> {
    if count < 2 {
        return Vec::new();
    }
    let want = count as usize * 8;
    let read = |dir: &Path, units: &mut Vec<(PathBuf, Kind)>| {
        let Ok(entries) = scan::read_dir(dir, dir == start) else { return };
        for entry in entries {
            if hidden || !entry.name.starts_with('.') {
                units.push((dir.join(&entry.name), entry.kind));
            }
        }
    };
    let mut units = Vec::new();
    read(start, &mut units);
    let mut reads = 1;
    loop {
        // Units at or before `from` are dropped; directories holding it are
        // opened (their later entries are units); others are expanded while
        // there are too few.
        let holding = |p: &Path, k: Kind| k == Kind::Dir && from.is_some_and(|f| f.starts_with(p) && f != p);
        let before = |p: &Path| from.is_some_and(|f| p <= f);
        let expand_all = units.len() < want;
        let mut next = Vec::with_capacity(units.len());
        let mut expanded = false;
        for (path, kind) in std::mem::take(&mut units) {
            if holding(&path, kind) || (expand_all && kind == Kind::Dir && reads < SPLIT_READS) {
                read(&path, &mut next);
                reads += 1;
                expanded = true;
            } else if !before(&path) {
                next.push((path, kind));
            }
        }
        units = next;
        let holds_from = units.iter().any(|(p, k)| holding(p, *k));
        if !holds_from && (units.len() >= want || !expanded || reads >= SPLIT_READS) {
            break;
        }
    }
    units.retain(|(p, _)| from.is_none_or(|f| p.as_path() > f));
    let n = units.len();
    let mut cuts: Vec<PathBuf> =
        shrinking_cuts(n, count as usize).into_iter().filter(|&i| i > 0 && i < n).map(|i| units[i].0.clone()).collect();
    cuts.dedup();
    cuts
}

/// Where to cut `n` units into `count` runs that shrink one step each:
/// the `i`-th run (from 0) holds about `count - i` parts of
/// `count × (count + 1) / 2`. Shards run ahead in order and the last one
/// running is the one nothing can help with, so the last runs are the short
/// ones: with eight shards the last holds a thirty-sixth of the units, not an
/// eighth.
fn shrinking_cuts(n: usize, count: usize) -> Vec<usize> {
    // In 64 bits: a guest's `usize` is 32, and `before * n` passes that at
    // a few hundred thousand units.
    let (n, count) = (n as u64, count as u64);
    let parts = count * (count + 1) / 2;
    let mut before = 0;
    (0..count.saturating_sub(1))
        .map(|i| {
            before += count - i;
            usize::try_from(before * n / parts).unwrap_or(usize::MAX)
        })
        .collect()
}

#[cfg(test)]
mod tests;
