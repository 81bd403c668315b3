//! The files to search, in ripgrep's `--sort path` order: the SDK's walk
//! ([`cordon_sdk::walk`]) with ripgrep's default filters and the arguments'
//! globs and file type. The ignore files of the directories between the root
//! and the searched directory apply, as ripgrep reads them as "parents"; the
//! searched directory itself, named by the caller, is searched even when a
//! filter would skip it, as ripgrep searches an explicitly named directory.
//! `.gitignore` applies without a `.git` (`rg --no-require-git`): the sandbox
//! cannot see a repository above the root.
//!
//! A resume position skips every file and directory sorted before it, so
//! reopening a search costs the directories on the way to it, not the tree;
//! a range's end stops the walk.

use std::path::{Path, PathBuf};

use cordon_sdk::Error;
use cordon_sdk::scan::Kind;
use cordon_sdk::walk::{Filters, Unapplied, Visit, Walk};
use ignore::overrides::Override;
use ignore::types::Types;

/// How to walk: the filters from the arguments.
#[derive(Clone)]
pub struct WalkSpec {
    /// Include hidden files and directories.
    pub hidden: bool,
    /// Do not read `.gitignore`, `.ignore`, `.rgignore` and `.git/info/exclude`.
    pub no_ignore: bool,
    /// The include/exclude globs.
    pub overrides: Override,
    /// The file type filter.
    pub types: Types,
}

impl WalkSpec {
    /// ripgrep's filters for these arguments.
    fn filters(&self) -> Filters {
        Filters {
            hidden: self.hidden,
            ignore_files: !self.no_ignore,
            custom_ignore: vec![".rgignore".to_string()],
            require_git: false,
            overrides: self.overrides.clone(),
            types: self.types.clone(),
        }
    }
}

/// The part of the files to search that a stream covers.
#[derive(Debug, Clone, Default)]
pub struct Bounds {
    /// Skip what sorts before this path.
    pub from: Option<PathBuf>,
    /// Stop at the first path not sorted before this one.
    pub end: Option<PathBuf>,
}

/// What the walk gives next.
pub enum Next {
    /// A regular file, and whether it is the file the arguments named (read
    /// through a symlink).
    File(PathBuf, bool),
    /// The walk got past this path, which it left out (`Visit::Passed`): a
    /// search that found nothing since can checkpoint there.
    Passed(PathBuf),
    /// An ignore file not applied (too large or unreadable), at its place.
    Unapplied(Unapplied),
    /// A directory that could not be read, and why.
    Unreadable(PathBuf, Error),
}

/// The files to search, one at a time.
pub struct Walker {
    walk: Walk,
}

impl Walker {
    /// Walks `target` (a file, or a directory inside `root`) within `bounds`.
    pub fn new(root: &Path, target: &Path, spec: &WalkSpec, bounds: Bounds) -> Walker {
        Walker { walk: Walk::new(root, target, spec.filters()).from(bounds.from).until(bounds.end) }
    }

    /// The next regular file, or how far the walk got, or an ignore file not
    /// applied; or the error of a directory that could not be read (the walk
    /// goes on).
    pub fn next_file(&mut self) -> Option<Result<Next, Error>> {
        loop {
            match self.walk.next_visit()? {
                Ok(Visit::Entry(found)) if found.kind == Kind::File => {
                    return Some(Ok(Next::File(found.path, found.named)));
                }
                Ok(Visit::Entry(_)) => continue,
                Ok(Visit::Passed(path)) => return Some(Ok(Next::Passed(path))),
                Ok(Visit::Unapplied(unapplied)) => return Some(Ok(Next::Unapplied(unapplied))),
                Ok(Visit::Unreadable(path, e)) => return Some(Ok(Next::Unreadable(path, e))),
                Err(e) => return Some(Err(e)),
            }
        }
    }
}
