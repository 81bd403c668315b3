//! The files to search, in ripgrep's `--sort path` order.
//!
//! A directory is walked with `ignore::WalkBuilder` (single-threaded), each
//! directory's entries sorted by name, which is the order of `Path`'s `Ord`
//! (component by component). A subdirectory of a root is walked *from the
//! root*, pruned to the subdirectory, so that the ignore files of the
//! directories above it (and a `.git` at the root) apply as they do for
//! ripgrep, which reads them as "parents" (the sandbox cannot read parents
//! above the search path itself). When the subdirectory is itself excluded
//! (ignored, hidden, or excluded by a glob), it is walked on its own, as
//! ripgrep searches an explicitly named directory.
//!
//! A resume position prunes every file and directory sorted before it, so
//! reopening a search costs the directories on the way to it, not the tree.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cordon_sdk::policy::Denied;
use ignore::overrides::Override;
use ignore::types::Types;
use ignore::{Walk, WalkBuilder};

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
    /// The server's deny rules, when it has any: matching entries are skipped.
    pub denied: Option<Denied>,
}

/// The files to search, one at a time.
pub struct Walker {
    spec: WalkSpec,
    target: PathBuf,
    resume: Option<PathBuf>,
    state: State,
}

enum State {
    /// A single file named by the arguments, until taken.
    File(Option<PathBuf>),
    /// Walking from the root holding the target; `seen` says whether the
    /// target directory passed the filters.
    Rooted {
        walk: Box<Walk>,
        seen: Arc<AtomicBool>,
    },
    /// Walking from the target itself.
    Direct(Box<Walk>),
    Done,
}

impl Walker {
    /// Walks `target` (a file, or a directory inside `root`), starting at the
    /// first path not sorted before `resume`.
    pub fn new(root: &Path, target: &Path, is_dir: bool, spec: WalkSpec, resume: Option<PathBuf>) -> Walker {
        let mut walker = Walker { spec, target: target.to_path_buf(), resume, state: State::Done };
        walker.state = if !is_dir {
            State::File(Some(target.to_path_buf()))
        } else if root != target && target.starts_with(root) {
            let seen = Arc::new(AtomicBool::new(false));
            State::Rooted { walk: Box::new(walker.build(root, Some(seen.clone()))), seen }
        } else {
            State::Direct(Box::new(walker.build(target, None)))
        };
        walker
    }

    /// The next regular file, or an error about one entry (the walk goes on).
    pub fn next_file(&mut self) -> Option<Result<PathBuf, ignore::Error>> {
        loop {
            let next = match &mut self.state {
                State::Done => return None,
                State::File(file) => {
                    let file = file.take();
                    if file.is_none() {
                        self.state = State::Done;
                    }
                    return file.map(Ok);
                }
                State::Rooted { walk, .. } | State::Direct(walk) => walk.next(),
            };
            match next {
                Some(Ok(entry)) => {
                    if entry.file_type().is_some_and(|t| t.is_file()) {
                        return Some(Ok(entry.into_path()));
                    }
                }
                Some(Err(err)) => return Some(Err(err)),
                None => {
                    self.state = match &self.state {
                        State::Rooted { seen, .. } if !seen.load(Ordering::Relaxed) => {
                            State::Direct(Box::new(self.build(&self.target, None)))
                        }
                        _ => State::Done,
                    };
                }
            }
        }
    }

    /// A walk from `start`, sorted, filtered as ripgrep filters, pruned to the
    /// target (when `seen` is given, which it records passing) and to what is
    /// not sorted before the resume position.
    fn build(&self, start: &Path, seen: Option<Arc<AtomicBool>>) -> Walk {
        let spec = &self.spec;
        let mut builder = WalkBuilder::new(start);
        builder
            .follow_links(false)
            .hidden(!spec.hidden)
            .parents(false)
            .ignore(!spec.no_ignore)
            .git_ignore(!spec.no_ignore)
            .git_exclude(!spec.no_ignore)
            .git_global(false)
            .require_git(false)
            .overrides(spec.overrides.clone())
            .types(spec.types.clone())
            .sort_by_file_name(|a, b| a.cmp(b));
        if !spec.no_ignore {
            builder.add_custom_ignore_filename(".rgignore");
        }
        let target = self.target.clone();
        let resume = self.resume.clone();
        let denied = spec.denied;
        if seen.is_some() || resume.is_some() || denied.is_some() {
            builder.filter_entry(move |entry| {
                let path = entry.path();
                if denied.as_ref().is_some_and(|denied| denied.denies(path)) {
                    return false;
                }
                if let Some(seen) = &seen {
                    if path == target {
                        // A symlink is not descended into: walk it on its own.
                        if entry.file_type().is_some_and(|t| t.is_dir()) {
                            seen.store(true, Ordering::Relaxed);
                        }
                    } else if !path.starts_with(&target) && !target.starts_with(path) {
                        return false;
                    }
                }
                resume.as_deref().is_none_or(|resume| path >= resume || resume.starts_with(path))
            });
        }
        builder.build()
    }
}
