//! Moves and the deny rules: a rule with a `/` inside (`config/master.key`,
//! `conf/secrets/*.yaml`) is anchored at the root, so renaming a directory above
//! what it matches would take that out from under it, and moving a directory
//! could put its entries under a rule that no tool may then change. A move is
//! judged on every entry under the moved directory, where it is now and where it
//! would be: any entry whose rule would change refuses the move.
//!
//! The entries are listed without following symlinks (a link moves as itself;
//! where it leads is judged when it is opened), at most [`MAX_ENTRIES`] of them.

use std::path::{Path, PathBuf};

use cap_fs_ext::DirExt;

use super::judge::{Judge, Located, Refusal, shown};

/// The most entries under a moved directory that are checked; a larger
/// directory is refused.
pub const MAX_ENTRIES: usize = 100_000;

impl Judge {
    /// Refuses moving `from` to `to` (both located, not followed) when an entry
    /// under `from` would leave a deny rule or come under one. Nothing is looked
    /// at when `from` is not a directory: its own path was judged already.
    pub(super) fn refuse_uncovering(&self, from: &Located<'_>, to: &Located<'_>) -> Result<(), Refusal> {
        self.refuse_uncovering_within(from, to, MAX_ENTRIES)
    }

    /// [`Judge::refuse_uncovering`], looking at no more than `max` entries.
    pub(super) fn refuse_uncovering_within(
        &self,
        from: &Located<'_>,
        to: &Located<'_>,
        max: usize,
    ) -> Result<(), Refusal> {
        let unreadable = |path: &Path, error| Refusal::Unreadable { path: shown(path), error };
        let dir = &from.held.dir;
        let is_dir = match dir.symlink_metadata(dot(&from.relative)) {
            Ok(meta) => meta.is_dir(),
            // Nothing to move: the move itself will say so.
            Err(_) => return Ok(()),
        };
        if !is_dir {
            return Ok(());
        }
        let mut pending: Vec<PathBuf> = vec![PathBuf::new()];
        let mut seen = 0usize;
        while let Some(below) = pending.pop() {
            let here = from.relative.join(&below);
            let opened = dir.open_dir_nofollow(dot(&here)).map_err(|e| unreadable(&from.held.path.join(&here), e))?;
            for entry in opened.entries().map_err(|e| unreadable(&from.held.path.join(&here), e))? {
                let entry = entry.map_err(|e| unreadable(&from.held.path.join(&here), e))?;
                seen += 1;
                if seen > max {
                    return Err(Refusal::TooMany { path: shown(&from.absolute()), max });
                }
                let child = below.join(entry.file_name());
                let (old, new) = (from.relative.join(&child), to.relative.join(&child));
                match (self.rules.denied(&old), self.rules.denied(&new)) {
                    (Some(rule), None) => {
                        return Err(Refusal::Uncovers { entry: shown(&from.held.path.join(&old)), rule: rule.into() });
                    }
                    (None, Some(rule)) => {
                        return Err(Refusal::Covers { entry: shown(&to.held.path.join(&new)), rule: rule.into() });
                    }
                    _ => {}
                }
                let kind = entry.file_type().map_err(|e| unreadable(&from.held.path.join(&old), e))?;
                if kind.is_dir() {
                    pending.push(child);
                }
            }
        }
        Ok(())
    }
}

/// `.` for the root itself, which cap-std names so.
fn dot(relative: &Path) -> &Path {
    if relative.as_os_str().is_empty() { Path::new(".") } else { relative }
}
