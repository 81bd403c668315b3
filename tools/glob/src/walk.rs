//! Finding the entries that match: the SDK's gitignore-aware walk
//! ([`cordon_sdk::walk`], with `rg --files`' filters) in path order, with
//! resume positions that skip whole directories already emitted, and the
//! newest-first order built on it.
//!
//! An ignore file the walk did not apply (larger than
//! [`MAX_IGNORE_FILE_BYTES`](cordon_sdk::walk::MAX_IGNORE_FILE_BYTES), or
//! unreadable) is named in the output at its place ([`Next::Unapplied`]),
//! and the walk goes on without its rules.
//!
//! Path order is the order of `rg --files --sort path`: depth first, the
//! entries of each directory sorted by file name. That is the order of
//! [`Path`]'s `Ord`, which compares component by component, so "the entries
//! after `a/b`" is a plain comparison and a directory lying wholly before a
//! resume position can be pruned without being read.

use std::cmp::Reverse;
use std::path::{Path, PathBuf};

use cordon_sdk::items::{self, Pace};
use cordon_sdk::paths::Entry;
use cordon_sdk::progress::Walked;
use cordon_sdk::scan::Kind;
use cordon_sdk::walk::{Filters, Unapplied, Visit, Walk};
use cordon_sdk::{Error, ErrorCode};
use ignore::overrides::{Override, OverrideBuilder};
use ignore::types::Types;

/// The most entries `sort: "mtime"` collects and sorts; past it the call fails
/// with too-large.
pub const MAX_SORTED: usize = 100_000;

/// What to walk and what to keep.
#[derive(Debug, Clone)]
pub struct Options {
    /// The granted root holding `root`: the ignore files from it down apply.
    pub top: PathBuf,
    /// The directory searched; patterns match paths relative to it.
    pub root: PathBuf,
    /// Globs in `rg -g` syntax (gitignore-style; `!` negates).
    pub patterns: Vec<String>,
    /// Include hidden entries (names starting with `.`).
    pub hidden: bool,
    /// Disregard `.gitignore`, `.ignore` and git's exclude files.
    pub no_ignore: bool,
    /// Match directories as well as files.
    pub include_dirs: bool,
    /// Describe each match with its size and time (one stat each); without,
    /// a match is its path and type, as the directory listing gives them.
    pub details: bool,
}

/// The part of the walk a stream covers, as paths relative to the root.
#[derive(Debug, Clone, Default)]
pub struct Bounds {
    /// Start after this entry (a resume position)...
    pub after: Option<PathBuf>,
    /// ...or at this one (a shard's boundary)...
    pub from: Option<PathBuf>,
    /// ...or at this one, the first this many ignore files not applied that
    /// the walk says there already named.
    pub noted: Option<(PathBuf, u32)>,
    /// Stop before this entry (the next shard's boundary).
    pub end: Option<PathBuf>,
}

/// A matching entry and its path relative to the root searched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The path relative to the root: the key of path order (as a path:
    /// by components). The walk names only paths that are text.
    pub rel: String,
    /// What is reported: with `details`, all of it; else its path and type
    /// (size and time 0, not reported).
    pub entry: Entry,
    /// Whether `entry` was described by a stat.
    pub described: bool,
}

/// What a walk gives next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// A matching entry.
    Match(Found),
    /// No match in the last `CHECKPOINT` entries: the walk got past this
    /// path (relative to the root), and a walk resumed after it goes on there.
    Checkpoint(PathBuf),
    /// An ignore file not applied, said at the entry `at` (relative to the
    /// root; empty: the root, for those above it) as the `k`th there in a row.
    Unapplied {
        /// The ignore file and why.
        unapplied: Unapplied,
        /// Where it is said.
        at: PathBuf,
        /// Its rank among those said there.
        k: u32,
    },
}

/// A walk that matches nothing says how far it got after this many entries
/// (a checkpoint): a few milliseconds of work, and at most 10 ms (and an
/// entry) where it runs slower.
const CHECKPOINT: Pace = Pace::every(1024, u64::MAX, items::CHECKPOINT_TIME);

/// How far a walk got, as `info` and `summary` report it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Entries the walk looked at (not counting pruned directories' contents).
    pub visited: u64,
    /// Entries that matched.
    pub matched: u64,
    /// Entries that could not be read (skipped, like `rg` does).
    pub errors: u64,
    /// Ignore files not applied (too large or unreadable), each named.
    pub ignore_files_skipped: u64,
}

/// Builds the override matcher of `patterns` rooted at `root`, as `rg -g` does.
pub fn overrides(root: &Path, patterns: &[String]) -> Result<Override, Error> {
    if patterns.is_empty() {
        return Err(Error::new(ErrorCode::InvalidArgument, "`pattern` is empty; give at least one glob"));
    }
    let mut builder = OverrideBuilder::new(root);
    for pattern in patterns {
        if pattern.is_empty() || pattern == "!" {
            return Err(Error::new(ErrorCode::InvalidArgument, "`pattern` holds an empty glob"));
        }
        builder.add(pattern).map_err(|e| {
            Error::new(ErrorCode::InvalidArgument, format!("`pattern` `{pattern}` is not a valid glob: {e}"))
        })?;
    }
    builder.build().map_err(|e| Error::new(ErrorCode::InvalidArgument, format!("`pattern` is not valid: {e}")))
}

/// The walk in path order, yielding matching entries after an optional
/// position, and reporting the entries visited as progress.
pub struct Walker {
    walk: Walk,
    /// The root searched as text, without a trailing `/` (empty for `/`): the
    /// walk's paths are UTF-8 (names that are not are never listed) and start
    /// with it and a `/`.
    root: String,
    overrides: Override,
    include_dirs: bool,
    details: bool,
    /// A shard's boundary: entries sorted before it are not the shard's.
    from: Option<PathBuf>,
    after: Option<PathBuf>,
    noted: Option<(PathBuf, u32)>,
    /// Where the last ignore file not applied was said, and how many were
    /// said there in a row.
    said: Option<(PathBuf, u32)>,
    /// How far the walk got.
    pub counts: Counts,
    /// The entries visited, reported as progress.
    walked: Walked,
    /// The entries visited since the last match or checkpoint.
    pace: Pace,
}

impl Walker {
    /// Starts walking `options.root` within `bounds`.
    pub fn new(options: &Options, bounds: Bounds) -> Result<Walker, Error> {
        let overrides = overrides(&options.root, &options.patterns)?;
        let filters = Filters {
            hidden: options.hidden,
            ignore_files: !options.no_ignore,
            custom_ignore: Vec::new(),
            require_git: true,
            overrides: overrides.clone(),
            types: Types::empty(),
        };
        let root = &options.root;
        let noted = bounds.noted.as_ref().map(|(rel, _)| rel);
        let start = bounds.from.as_ref().or(bounds.after.as_ref()).or(noted).map(|rel| root.join(rel));
        let walk = Walk::new(&options.top, root, filters).from(start).until(bounds.end.map(|rel| root.join(rel)));
        Ok(Walker {
            walk,
            root: options.root.to_string_lossy().trim_end_matches('/').to_string(),
            overrides,
            include_dirs: options.include_dirs,
            details: options.details,
            from: bounds.from.or(bounds.noted.as_ref().map(|(rel, _)| rel.clone())),
            after: bounds.after,
            noted: bounds.noted,
            said: None,
            counts: Counts::default(),
            walked: Walked::default(),
            pace: CHECKPOINT,
        })
    }

    /// The next matching entry after the position, in path order, or an
    /// ignore file not applied.
    pub fn next_match(&mut self) -> Result<Option<Next>, Error> {
        loop {
            match self.next_step()? {
                Some(Next::Checkpoint(_)) => {}
                other => return Ok(other),
            }
        }
    }

    /// `Next::Unapplied` for `unapplied`, unless the position is past it.
    fn unapplied(&mut self, unapplied: Unapplied) -> Option<Next> {
        let at = self.relative(&unapplied.at)?.to_path_buf();
        let k = match &self.said {
            Some((last, k)) if *last == at => k + 1,
            _ => 1,
        };
        self.said = Some((at.clone(), k));
        let done = match (&self.noted, &self.after, &self.from) {
            (Some((rel, done)), _, _) if *rel == at => k <= *done,
            (_, Some(after), _) => at <= *after,
            (_, _, Some(from)) => at < *from,
            _ => false,
        };
        if done {
            return None;
        }
        self.counts.ignore_files_skipped += 1;
        self.pace.reset();
        Some(Next::Unapplied { unapplied, at, k })
    }

    /// The next matching entry after the position, in path order, or after
    /// `CHECKPOINT` entries without one, a checkpoint.
    pub fn next_step(&mut self) -> Result<Option<Next>, Error> {
        while let Some(result) = self.walk.next_visit() {
            let found = match result {
                Ok(Visit::Entry(found)) => found,
                // The filters left out many entries: past the start (the walk
                // passes the directories holding it), a checkpoint.
                Ok(Visit::Passed(path)) => match self.relative(&path) {
                    Some(rel)
                        if self.from.as_deref().is_none_or(|from| rel >= from)
                            && self.after.as_deref().is_none_or(|after| rel > after) =>
                    {
                        self.pace.reset();
                        return Ok(Some(Next::Checkpoint(rel.to_path_buf())));
                    }
                    _ => continue,
                },
                Ok(Visit::Unapplied(unapplied)) => match self.unapplied(unapplied) {
                    Some(said) => return Ok(Some(said)),
                    None => continue,
                },
                // A directory that cannot be read is counted (its entry was given).
                Ok(Visit::Unreadable(..)) | Err(_) => {
                    self.counts.errors += 1;
                    continue;
                }
            };
            // The path as text, checked once: the match's position and its
            // item take it so.
            let Some((text, rel_text)) = found.path.to_str().and_then(|t| Some((t, self.relative_text(t)?))) else {
                continue;
            };
            let rel = Path::new(rel_text);
            // A shard from a boundary: the walk gives the directories holding
            // it, which the shard before emitted.
            if let Some(from) = &self.from {
                if rel < from.as_path() {
                    continue;
                }
                self.from = None;
            }
            self.counts.visited += 1;
            self.walked.step();
            // Entries come in path order: once one is past `after`, all are.
            if let Some(after) = &self.after {
                if rel <= after.as_path() {
                    continue;
                }
                self.after = None;
            }
            let wanted = match found.kind {
                Kind::File => true,
                Kind::Dir => self.include_dirs && dir_matches(&self.overrides, rel),
                _ => false,
            };
            if !wanted {
                self.pace.add(1, 0);
                if self.pace.due() {
                    return Ok(Some(Next::Checkpoint(rel.to_path_buf())));
                }
                continue;
            }
            let entry = match self.details {
                true => match Entry::at(&found.path) {
                    Ok(entry) => entry,
                    Err(_) => {
                        self.counts.errors += 1;
                        continue;
                    }
                },
                false => {
                    let kind = if found.kind == Kind::Dir { "dir" } else { "file" };
                    Entry { path: text.to_owned(), kind, size: 0, mtime_ns: 0 }
                }
            };
            self.counts.matched += 1;
            self.pace.reset();
            return Ok(Some(Next::Match(Found { rel: rel_text.to_owned(), entry, described: self.details })));
        }
        Ok(None)
    }
}

impl Walker {
    /// `path` relative to the root searched (empty for the root itself).
    fn relative<'p>(&self, path: &'p Path) -> Option<&'p Path> {
        self.relative_text(path.to_str()?).map(Path::new)
    }

    /// The text `path` relative to the root searched.
    fn relative_text<'p>(&self, path: &'p str) -> Option<&'p str> {
        let rest = cordon_sdk::paths::strip_text_prefix(path, &self.root)?;
        if rest.is_empty() { Some(rest) } else { rest.strip_prefix('/') }
    }
}

/// Whether a directory the walk entered is one the patterns select: it matches
/// a glob, or there are only negated globs and it matches none of them.
fn dir_matches(overrides: &Override, rel: &Path) -> bool {
    let m = overrides.matched(rel, true);
    m.is_whitelist() || (m.is_none() && overrides.num_whitelists() == 0)
}

/// The sort key of newest-first order: newer first, then path order.
pub type MtimeKey = (Reverse<u64>, PathBuf);

/// The key of `found` in newest-first order.
pub fn mtime_key(found: &Found) -> MtimeKey {
    (Reverse(found.entry.mtime_ns), PathBuf::from(&found.rel))
}

/// Encodes a newest-first position: `<mtime_ns>:<relative path>`.
pub fn encode_mtime_key(found: &Found) -> String {
    format!("{}:{}", found.entry.mtime_ns, found.rel)
}

/// Decodes a position written by [`encode_mtime_key`].
pub fn decode_mtime_key(position: &str) -> Result<MtimeKey, Error> {
    let bad = || Error::new(ErrorCode::InvalidArgument, format!("malformed resume position `{position}`"));
    let (mtime, rel) = position.split_once(':').ok_or_else(bad)?;
    let mtime: u64 = mtime.parse().map_err(|_| bad())?;
    Ok((Reverse(mtime), PathBuf::from(rel)))
}

/// Every matching entry, newest first (ties in path order), and where to
/// start in them; and the ignore files not applied, in walk order. Fails
/// with too-large past `limit` matches ([`MAX_SORTED`] for the tool).
pub fn collect_newest_first(
    walker: &mut Walker,
    after: Option<&MtimeKey>,
    limit: usize,
) -> Result<(Vec<Found>, usize, Vec<Unapplied>), Error> {
    let (mut all, mut unapplied) = (Vec::new(), Vec::new());
    while let Some(next) = walker.next_match()? {
        let found = match next {
            Next::Match(found) => found,
            Next::Unapplied { unapplied: u, .. } => {
                unapplied.push(u);
                continue;
            }
            Next::Checkpoint(_) => continue,
        };
        if all.len() == limit {
            return Err(Error::new(
                ErrorCode::TooLarge,
                format!(
                    "more than {limit} entries match, too many to sort by mtime; narrow `path` or `pattern`, \
                     or use sort: \"path\", which streams any number"
                ),
            ));
        }
        all.push(found);
    }
    all.sort_by_cached_key(mtime_key);
    let start = after.map_or(0, |after| all.partition_point(|f| &mtime_key(f) <= after));
    Ok((all, start, unapplied))
}
