//! Moving or renaming one entry inside the roots with a single `rename`.
//!
//! Everything that can be checked is checked first, so that a refused move
//! changes nothing: the source exists, neither path is a root (or holds one),
//! the destination's directory exists, the destination does not exist unless
//! `overwrite` is given, and an overwritten directory is empty and replaced by
//! a directory. Then one `rename` does the move; it is never emulated by copying
//! and deleting, so a move across filesystems is refused.
//!
//! Race: WASI has no `rename` that refuses to replace (`RENAME_NOREPLACE`), so
//! the destination is checked just before the rename, as the last step; an
//! entry created at the destination by someone else in between (a window of
//! one system call) would be replaced. Callers that need a strict guarantee
//! must keep others out of the destination directory.

use std::fs::{self, Metadata};
use std::io;
use std::path::Path;

use cordon_sdk::{Error, ErrorCode, paths};

use cordon_sdk::grant::{require_writable_root, write_error};

/// What a move did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moved {
    /// What was moved: `file`, `dir`, `symlink` or `other`.
    pub kind: &'static str,
    /// True when an existing destination was replaced.
    pub overwrote: bool,
}

/// Moves `from` to `to` (absolute, resolved inside `roots`), replacing an
/// existing `to` only when `overwrite` is set.
pub fn move_entry(roots: &[String], from: &Path, to: &Path, overwrite: bool) -> Result<Moved, Error> {
    let (src, dst) = (shown(from), shown(to));
    let refuse = |code, message: String| Err(Error::new(code, format!("{message}; nothing was moved")));
    if from == to {
        return refuse(ErrorCode::InvalidArgument, format!("`from` and `to` are the same path `{src}`"));
    }
    for (path, which) in [(from, "`from`"), (to, "`to`")] {
        if let Some(root) = roots.iter().find(|root| Path::new(root).starts_with(path)) {
            let what = if Path::new(root) == path { "is the root" } else { "holds the root" };
            return refuse(
                ErrorCode::PermissionDenied,
                format!("{which} `{}` {what} {root}; a root cannot be moved or replaced", shown(path)),
            );
        }
    }
    if to.starts_with(from) {
        return refuse(
            ErrorCode::InvalidArgument,
            format!("`{dst}` is inside `{src}`: a directory cannot be moved into itself"),
        );
    }
    let source = look(from, &src)?
        .ok_or_else(|| Error::new(ErrorCode::NotFound, format!("`from` `{src}` does not exist; nothing was moved")))?;
    require_writable_root(roots, from, &src)?;
    require_writable_root(roots, to, &dst)?;
    // Where both ends really are: no symlink into a read-only root or onto a
    // root, and nothing taken out from under a deny rule.
    cordon_sdk::policy::judge_move(from, to)
        .map_err(|e| Error::new(e.code, format!("{}; nothing was moved", e.message)))?;
    check_parent(to, &dst)?;
    let overwrote = match look(to, &dst)? {
        None => false,
        Some(target) => {
            check_replace(&source, &target, to, overwrite)?;
            true
        }
    };
    fs::rename(from, to).map_err(|e| rename_error(&src, &dst, &e))?;
    Ok(Moved { kind: paths::kind(&source), overwrote })
}

/// What `meta` describes, for a sentence.
fn noun(meta: &Metadata) -> &'static str {
    match paths::kind(meta) {
        "symlink" => "a symlink",
        "dir" => "a directory",
        "file" => "a file",
        _ => "a special file (FIFO, socket or device)",
    }
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

/// The entry at `path` itself (a symlink is not followed), if there is one.
fn look(path: &Path, shown: &str) -> Result<Option<Metadata>, Error> {
    match fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some(meta)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(write_error(&format!("`{shown}` cannot be looked at"), &e)),
    }
}

/// The directory `to` goes into must exist (it is not created).
fn check_parent(to: &Path, dst: &str) -> Result<(), Error> {
    let Some(parent) = to.parent() else { return Ok(()) };
    match fs::metadata(parent) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(Error::new(
            ErrorCode::InvalidArgument,
            format!("`{dst}` cannot be made: `{}` is not a directory; nothing was moved", parent.display()),
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Error::new(
            ErrorCode::NotFound,
            format!(
                "the directory `{}` for `to` does not exist; create it first (with `mkdir`); nothing was moved",
                parent.display()
            ),
        )),
        Err(e) => Err(write_error(&format!("`{dst}` cannot be made (its directory cannot be looked at)"), &e)),
    }
}

/// Whether the existing `target` at `to` may be replaced by `source`.
fn check_replace(source: &Metadata, target: &Metadata, to: &Path, overwrite: bool) -> Result<(), Error> {
    let dst = shown(to);
    let invalid =
        |message: String| Err(Error::new(ErrorCode::InvalidArgument, format!("{message}; nothing was moved")));
    if !overwrite {
        let advice = if target.is_dir() {
            format!(
                "; a move never goes into an existing directory: name the full new path (e.g. `{dst}/NAME`), \
                 or pass `overwrite: true` to replace it if it is empty"
            )
        } else {
            "; pass `overwrite: true` to replace it".to_string()
        };
        return Err(Error::new(
            ErrorCode::Conflict,
            format!("`to` `{dst}` already exists and is {}{advice}; nothing was moved", noun(target)),
        ));
    }
    match (source.is_dir(), target.is_dir()) {
        (false, true) => invalid(format!("`{dst}` is a directory; it cannot be replaced by {}", noun(source))),
        (true, false) => invalid(format!("`{dst}` is {}; it cannot be replaced by a directory", noun(target))),
        (true, true) if !is_empty_dir(to)? => {
            invalid(format!("`{dst}` is a directory that is not empty; overwriting a non-empty directory is refused"))
        }
        _ => Ok(()),
    }
}

fn is_empty_dir(path: &Path) -> Result<bool, Error> {
    let mut entries =
        fs::read_dir(path).map_err(|e| write_error(&format!("`{}` cannot be listed", path.display()), &e))?;
    Ok(entries.next().is_none())
}

/// Maps a failed `rename` (the checks before it passed, so the filesystem
/// refused or something changed in between).
fn rename_error(src: &str, dst: &str, err: &io::Error) -> Error {
    let what = format!("`{src}` cannot be moved to `{dst}`");
    let (code, why) = match err.kind() {
        io::ErrorKind::CrossesDevices => (
            ErrorCode::Unsupported,
            "they are on different filesystems, and moves across filesystems are not done (no copy and delete)"
                .to_string(),
        ),
        io::ErrorKind::NotFound => {
            (ErrorCode::NotFound, "`from`, or the directory of `to`, no longer exists (it changed meanwhile)".into())
        }
        io::ErrorKind::DirectoryNotEmpty => {
            (ErrorCode::InvalidArgument, "`to` is a directory that is not empty (it changed meanwhile)".into())
        }
        io::ErrorKind::AlreadyExists => (ErrorCode::Conflict, "`to` exists (it changed meanwhile)".into()),
        io::ErrorKind::IsADirectory | io::ErrorKind::NotADirectory => {
            (ErrorCode::InvalidArgument, "a directory and a non-directory cannot replace each other".into())
        }
        io::ErrorKind::InvalidInput => {
            (ErrorCode::InvalidArgument, "a directory cannot be moved into itself (perhaps through a symlink)".into())
        }
        _ => return write_error(&what, err),
    };
    Error::new(code, format!("{what}: {why}; nothing was moved"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::Scratch;

    #[test]
    fn failures_of_the_rename_itself_are_explained() {
        let cross = rename_error("/a/x", "/b/x", &io::Error::from(io::ErrorKind::CrossesDevices));
        assert_eq!(cross.code, ErrorCode::Unsupported);
        assert!(cross.message.contains("different filesystems"), "{}", cross.message);
        let gone = rename_error("/a/x", "/b/x", &io::Error::from(io::ErrorKind::NotFound));
        assert_eq!(gone.code, ErrorCode::NotFound);
        let full = rename_error("/a/x", "/b/x", &io::Error::from(io::ErrorKind::DirectoryNotEmpty));
        assert_eq!(full.code, ErrorCode::InvalidArgument);
        let denied = rename_error("/a/x", "/b/x", &io::Error::from(io::ErrorKind::PermissionDenied));
        assert_eq!(denied.code, ErrorCode::PermissionDenied);
    }

    #[test]
    fn files_and_directories_do_not_replace_each_other() {
        let dir = Scratch::new("kinds");
        let root = dir.path();
        fs::write(root.join("f"), "f").unwrap();
        fs::create_dir(root.join("d")).unwrap();
        fs::create_dir(root.join("e")).unwrap();
        let roots = dir.roots();
        for (from, to) in [("f", "d"), ("d", "f")] {
            let err = move_entry(&roots, &root.join(from), &root.join(to), true).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidArgument, "{from} over {to}");
        }
        let moved = move_entry(&roots, &root.join("d"), &root.join("e"), true).unwrap();
        assert_eq!(moved, Moved { kind: "dir", overwrote: true });
        assert!(!root.join("d").exists() && root.join("e").is_dir());
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_move_as_themselves() {
        let dir = Scratch::new("links");
        let root = dir.path();
        std::os::unix::fs::symlink("/nowhere/at/all", root.join("link")).unwrap();
        let moved = move_entry(&dir.roots(), &root.join("link"), &root.join("renamed"), false).unwrap();
        assert_eq!(moved, Moved { kind: "symlink", overwrote: false });
        assert_eq!(fs::read_link(root.join("renamed")).unwrap(), Path::new("/nowhere/at/all"));
    }
}
