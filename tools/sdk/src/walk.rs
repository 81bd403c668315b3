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
//! A walk says how far it got at an entry its filters leave out, once
//! [`PASSED_EVERY`] entries were looked at since it last said so
//! ([`Visit::Passed`]), so a tool built on it can return a checkpoint there
//! (see `items::Step`) when the entries it kept gave it nothing to emit,
//! rather than work on unseen.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::overrides::Override;
use ignore::types::Types;

use crate::Error;
use crate::scan::{self, DirEntry, Kind};

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
}

/// Entries looked at after which a walk says how far it got.
pub const PASSED_EVERY: u32 = 1024;

/// The ignore rules one directory adds, and those of the directories above.
struct Rules {
    custom: Option<Gitignore>,
    ignore: Option<Gitignore>,
    git: Option<Gitignore>,
    exclude: Option<Gitignore>,
    /// The directory holds `.git`: a repository's top.
    has_git: bool,
    /// This directory or one above holds `.git`.
    in_git: bool,
    parent: Option<Rc<Rules>>,
}

impl Rules {
    /// The verdict of the ignore files on `path`, as the `ignore` crate gives it.
    fn matched(self: &Rc<Rules>, path: &Path, is_dir: bool, require_git: bool) -> Match<()> {
        let any_git = !require_git || self.in_git;
        let (mut custom, mut ignore, mut git, mut exclude) = (Match::None, Match::None, Match::None, Match::None);
        let mut saw_git = false;
        let mut level = Some(self);
        let verdict = |m: &Option<Gitignore>| m.as_ref().map_or(Match::None, |m| m.matched(path, is_dir).map(|_| ()));
        while let Some(rules) = level {
            if custom.is_none() {
                custom = verdict(&rules.custom);
            }
            if ignore.is_none() {
                ignore = verdict(&rules.ignore);
            }
            if any_git && !saw_git {
                if git.is_none() {
                    git = verdict(&rules.git);
                }
                if exclude.is_none() {
                    exclude = verdict(&rules.exclude);
                }
            }
            saw_git = saw_git || rules.has_git;
            level = rules.parent.as_ref();
        }
        custom.or(ignore).or(git).or(exclude)
    }
}

/// A directory being walked: its entries and the next one.
struct Frame {
    /// Whether `end` lies in this directory (else all its entries sort before).
    holds_end: bool,
    entries: Vec<DirEntry>,
    next: usize,
    dir: PathBuf,
    rules: Option<Rc<Rules>>,
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
    /// Entries looked at since the walk last said how far it got.
    looked: u32,
}

impl Walk {
    /// Walks `start` (a directory or a file, inside the granted root `top`),
    /// keeping what `filters` keep; the ignore files of the directories from
    /// `top` down to `start`'s parent apply.
    pub fn new(top: &Path, start: &Path, filters: Filters) -> Walk {
        let mut rules = None;
        if filters.ignore_files && start.starts_with(top) {
            let mut dir = top.to_path_buf();
            let below: Vec<_> = start.strip_prefix(top).map(|r| r.components().collect()).unwrap_or_default();
            for (i, component) in below.iter().enumerate() {
                if let Ok(entries) = scan::read_dir(&dir, false) {
                    rules = read_rules(&filters, &dir, &entries, rules);
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
    /// could not be read (the walk goes on past it).
    pub fn next_entry(&mut self) -> Option<Result<Found, Error>> {
        loop {
            match self.next_visit()? {
                Ok(Visit::Entry(found)) => return Some(Ok(found)),
                Ok(Visit::Passed(_)) => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }

    /// The next entry kept, or an entry left out once [`PASSED_EVERY`]
    /// entries were looked at ([`Visit::Passed`]); or the error of a
    /// directory that could not be read (the walk goes on past it).
    pub fn next_visit(&mut self) -> Option<Result<Visit, Error>> {
        if let Some((start, rules)) = self.started.take() {
            match scan::read_dir(&start, true) {
                Ok(entries) => self.push(start, entries, rules),
                Err(e) if e.code == crate::ErrorCode::Io || e.code == crate::ErrorCode::NotFound => {
                    // Not a directory: the start is a file, searched as named.
                    self.file = Some(start);
                }
                Err(e) => return Some(Err(e)),
            }
        }
        if let Some(file) = self.file.take() {
            return Some(Ok(Visit::Entry(Found { path: file, kind: Kind::File, named: true })));
        }
        if let Some(dir) = self.descend.take() {
            let rules = self.stack.last().and_then(|f| f.rules.clone());
            match scan::read_dir(&dir, false) {
                Ok(entries) => self.push(dir, entries, rules),
                Err(e) => return Some(Err(e)),
            }
        }
        loop {
            let frame = self.stack.last_mut()?;
            let Some(entry) = frame.entries.get(frame.next) else {
                self.stack.pop();
                continue;
            };
            frame.next += 1;
            let path = frame.dir.join(&entry.name);
            let kind = entry.kind;
            // Entries come in path order: once one is past `from`, all are.
            if let Some(from) = &self.from {
                if path < *from {
                    if !(kind == Kind::Dir && from.starts_with(&path)) {
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
        let rules = read_rules(&self.filters, &dir, &entries, rules);
        let holds_end = self.end.as_ref().is_some_and(|end| end.starts_with(&dir));
        self.stack.push(Frame { holds_end, entries, next: 0, dir, rules });
    }
}

/// Whether the filters keep the entry `path` named `name`, as the `ignore`
/// crate's `Ignore::matched` decides.
fn keeps(f: &Filters, rules: Option<&Rc<Rules>>, path: &Path, name: &str, kind: Kind) -> bool {
    let is_dir = kind == Kind::Dir;
    if !f.overrides.is_empty() {
        match f.overrides.matched(path, is_dir) {
            Match::Ignore(_) => return false,
            Match::Whitelist(_) => return true,
            Match::None => {}
        }
    }
    let mut whitelisted = false;
    if let Some(rules) = rules {
        match rules.matched(path, is_dir, f.require_git) {
            Match::Ignore(_) => return false,
            Match::Whitelist(_) => whitelisted = true,
            Match::None => {}
        }
    }
    if !f.types.is_empty() {
        match f.types.matched(path, is_dir) {
            Match::Ignore(_) => return false,
            Match::Whitelist(_) => whitelisted = true,
            Match::None => {}
        }
    }
    whitelisted || f.hidden || !name.starts_with('.')
}

/// The rules `dir` adds below `parent`, from the ignore files its `entries`
/// show; `parent` itself when it adds none.
fn read_rules(filters: &Filters, dir: &Path, entries: &[DirEntry], parent: Option<Rc<Rules>>) -> Option<Rc<Rules>> {
    if !filters.ignore_files {
        return parent;
    }
    let has = |name: &str| entries.binary_search_by(|e| e.name.as_str().cmp(name)).ok().map(|i| entries[i].kind);
    let is_file = |name: &str| has(name) == Some(Kind::File);
    let has_git = has(".git").is_some();
    let custom: Vec<&String> = filters.custom_ignore.iter().filter(|n| is_file(n)).collect();
    let (ignore, git) = (is_file(".ignore"), is_file(".gitignore"));
    let exclude = has(".git") == Some(Kind::Dir);
    if custom.is_empty() && !ignore && !git && !has_git {
        return parent;
    }
    let build = |names: &[&str]| {
        let mut builder = GitignoreBuilder::new(dir);
        for name in names {
            let _ = builder.add(dir.join(name));
        }
        builder.build().ok().filter(|m| !m.is_empty())
    };
    let custom_names: Vec<&str> = custom.iter().map(|s| s.as_str()).collect();
    let in_git = has_git || parent.as_ref().is_some_and(|p| p.in_git);
    Some(Rc::new(Rules {
        custom: (!custom_names.is_empty()).then(|| build(&custom_names)).flatten(),
        ignore: ignore.then(|| build(&[".ignore"])).flatten(),
        git: git.then(|| build(&[".gitignore"])).flatten(),
        exclude: exclude.then(|| build(&[".git/info/exclude"])).flatten(),
        has_git,
        in_git,
        parent,
    }))
}

/// The most directories [`boundaries`] reads.
const SPLIT_READS: usize = 4096;

/// Where to cut the walk of `start` after `from` into `count` shards of about
/// equal size: up to `count - 1` paths in path order, each after `from`, at
/// which the next shard begins (the first shard runs from `from`). The walk's
/// entries are expanded level by level into about `8 × count` units (files and
/// directories, hidden ones left out unless `hidden`), which are cut into runs
/// of equal length. Cheap: a few directory reads, not a scan; the cuts need not
/// be entries the filters keep, only places in path order.
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
    let mut cuts: Vec<PathBuf> = (1..count as usize)
        .map(|i| i * n / count as usize)
        .filter(|&i| i > 0 && i < n)
        .map(|i| units[i].0.clone())
        .collect();
    cuts.dedup();
    cuts
}

#[cfg(test)]
mod tests {
    use super::*;
    use ignore::WalkBuilder;
    use ignore::overrides::OverrideBuilder;
    use ignore::types::TypesBuilder;

    /// A tree with every kind of ignore file, nested repositories, hidden
    /// entries and negations, removed when dropped.
    struct Fixture(PathBuf);

    impl Fixture {
        fn new(name: &str) -> Fixture {
            let dir = std::env::temp_dir().join(format!("cordon-sdk-walk-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let files = [
                (".gitignore", "*.log\n/build\n!keep.log\ndeep/**/gen\n"),
                (".ignore", "secret*\n"),
                (".rgignore", "!secret-ok\n"),
                ("a.rs", ""),
                ("a.log", ""),
                ("keep.log", ""),
                ("build/out.o", ""),
                ("src/build/x.rs", ""),
                ("src/.hidden.rs", ""),
                ("src/main.rs", ""),
                ("src/secret.rs", ""),
                ("src/secret-ok", ""),
                ("deep/a/gen/g.rs", ""),
                ("deep/a/b.py", ""),
                (".config/c.toml", ""),
                ("sub/.git/info/exclude", "excluded.rs\n"),
                ("sub/.git/HEAD", ""),
                ("sub/.gitignore", "!a.log\nlocal/\n"),
                ("sub/a.log", ""),
                ("sub/excluded.rs", ""),
                ("sub/local/l.rs", ""),
                ("sub/ok.rs", ""),
                ("z/.gitignore", "*\n!*.md\n"),
                ("z/readme.md", ""),
                ("z/code.rs", ""),
            ];
            for (rel, text) in files {
                let path = dir.join(rel);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            }
            Fixture(dir.canonicalize().unwrap())
        }
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// What the `ignore` crate's own walker keeps with the same filters.
    fn reference(top: &Path, start: &Path, f: &Filters) -> Vec<PathBuf> {
        let mut b = WalkBuilder::new(start);
        b.hidden(!f.hidden)
            .parents(true)
            .ignore(f.ignore_files)
            .git_ignore(f.ignore_files)
            .git_exclude(f.ignore_files)
            .git_global(false)
            .require_git(f.require_git)
            .overrides(f.overrides.clone())
            .types(f.types.clone())
            .sort_by_file_name(|a, b| a.cmp(b));
        for name in &f.custom_ignore {
            b.add_custom_ignore_filename(name);
        }
        let _ = top;
        b.build().filter_map(Result::ok).filter(|e| e.depth() > 0).map(|e| e.into_path()).collect()
    }

    fn ours(top: &Path, start: &Path, f: &Filters) -> Vec<PathBuf> {
        let mut walk = Walk::new(top, start, f.clone());
        std::iter::from_fn(|| walk.next_entry()).map(|r| r.unwrap().path).collect()
    }

    #[test]
    fn keeps_what_the_ignore_crate_keeps_in_the_same_order() {
        let fx = Fixture::new("same");
        let root = &fx.0;
        let mut types = TypesBuilder::new();
        types.add_defaults();
        types.select("rust");
        let rust = types.build().unwrap();
        let mut overrides = OverrideBuilder::new(root);
        overrides.add("*.rs").unwrap();
        overrides.add("!src/secret.rs").unwrap();
        let globs = overrides.build().unwrap();
        let base = Filters {
            hidden: false,
            ignore_files: true,
            custom_ignore: vec![".rgignore".into()],
            require_git: false,
            overrides: Override::empty(),
            types: Types::empty(),
        };
        let variants = [
            base.clone(),
            Filters { require_git: true, ..base.clone() },
            Filters { hidden: true, ..base.clone() },
            Filters { ignore_files: false, ..base.clone() },
            Filters { types: rust, ..base.clone() },
            Filters { overrides: globs, ..base.clone() },
        ];
        for (i, f) in variants.iter().enumerate() {
            assert_eq!(ours(root, root, f), reference(root, root, f), "variant {i}");
            let sub = root.join("sub");
            assert_eq!(ours(root, &sub, f), reference(root, &sub, f), "variant {i}, from sub/");
        }
    }

    #[test]
    fn positions_skip_what_sorts_before_and_end_before_the_boundary() {
        let fx = Fixture::new("bounds");
        let root = &fx.0;
        let all = ours(root, root, &Filters::none());
        let (from, end) = (root.join("deep/a"), root.join("src/main.rs"));
        let mut walk = Walk::new(root, root, Filters::none()).from(Some(from.clone())).until(Some(end.clone()));
        let got: Vec<_> = std::iter::from_fn(|| walk.next_entry()).map(|r| r.unwrap().path).collect();
        let want: Vec<_> = all.iter().filter(|p| **p >= from && **p < end || from.starts_with(p)).cloned().collect();
        assert_eq!(got, want);
    }

    #[test]
    fn boundaries_cut_after_the_start_in_path_order() {
        let fx = Fixture::new("cuts");
        let root = &fx.0;
        let cuts = boundaries(root, None, 4, false);
        assert_eq!(cuts.len(), 3, "{cuts:?}");
        assert!(cuts.windows(2).all(|w| w[0] < w[1]), "{cuts:?}");
        let from = root.join("deep/a/gen/g.rs");
        let after = boundaries(root, Some(&from), 3, false);
        assert!(!after.is_empty() && after.iter().all(|p| *p > from), "{after:?}");
        assert!(boundaries(root, None, 1, false).is_empty());
    }
}
