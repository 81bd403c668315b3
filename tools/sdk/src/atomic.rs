//! Replacing a file so that readers see the old bytes or the new, never a mix,
//! and a crash leaves at worst a stray temporary file, never a partial target.
//!
//! The new content goes to a temporary file in the target's directory, which is
//! synced, given the target's permissions, renamed over the target, and then the
//! directory is synced. Temporary files are named `.cordon-<name>.<hex>.tmp`.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::{Error, ErrorCode};
use crate::{grant, host, paths};

/// The prefix of every temporary file this module creates.
pub const TEMP_PREFIX: &str = ".cordon-";
/// The suffix of every temporary file this module creates.
pub const TEMP_SUFFIX: &str = ".tmp";

/// What a replace may do.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Replace a file that has other hard links (they keep the old content).
    pub allow_hardlinks: bool,
}

/// What the target was before it was replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replaced {
    /// Whether a file was there (and kept its permissions).
    pub existed: bool,
}

/// The file a write tool is asked to replace, checked before anything is
/// read or written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The absolute path, resolved inside the roots.
    pub path: PathBuf,
    /// The path as messages show it.
    pub shown: String,
    /// Whether a file is there now.
    pub exists: bool,
}

impl Target {
    /// Resolves the client's `input` inside `roots` ([`paths::resolve`]),
    /// requires its root to be read-write ([`grant::require_writable`]) and
    /// checks that it can be replaced ([`check_target`]), in that order.
    pub fn resolve(roots: &[String], input: &str, options: Options) -> Result<Target, Error> {
        let path = paths::resolve(roots, input)?;
        let shown = path.display().to_string();
        grant::require_writable(roots, &path, &shown)?;
        let exists = check_target(&path, options)?;
        Ok(Target { path, shown, exists })
    }
}

/// Checks that `path` can be replaced: not a directory or symlink, and not a
/// file with other hard links unless allowed. Returns whether it exists.
pub fn check_target(path: &Path, options: Options) -> Result<bool, Error> {
    let shown = path.display().to_string();
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io(&format!("`{shown}`"), &e)),
    };
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path).map(|t| t.display().to_string()).unwrap_or_default();
        return Err(Error::new(
            ErrorCode::InvalidArgument,
            format!("`{shown}` is a symlink (to `{target}`); write to the file it points to instead"),
        ));
    }
    if !meta.is_file() {
        return Err(Error::new(ErrorCode::InvalidArgument, format!("`{shown}` is not a regular file")));
    }
    let links = paths::link_count(path, &shown)?;
    if links > 1 && !options.allow_hardlinks {
        return Err(Error::new(
            ErrorCode::PermissionDenied,
            format!(
                "`{shown}` has {links} hard links; replacing it would leave the other names with the old content \
                 (pass allow_hardlinks: true to do it anyway)"
            ),
        ));
    }
    Ok(true)
}

/// Replaces `path` with what `fill` writes, atomically (see the module docs).
pub fn replace(
    path: &Path,
    options: Options,
    fill: impl FnOnce(&mut File) -> Result<(), Error>,
) -> Result<Replaced, Error> {
    let existed = check_target(path, options)?;
    let shown = path.display().to_string();
    let (dir, name) = match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => (dir, name.to_string_lossy()),
        _ => return Err(Error::new(ErrorCode::InvalidArgument, format!("`{shown}` names no file"))),
    };
    let temp: PathBuf = dir.join(format!("{TEMP_PREFIX}{name}.{:016x}{TEMP_SUFFIX}", host::random_u64()));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| Error::io(&format!("a temporary file next to `{shown}`"), &e))?;
        fill(&mut file)?;
        file.sync_all().map_err(|e| Error::io("the temporary file", &e))?;
        drop(file);
        if existed {
            host::copy_permissions(path, &temp)?;
        }
        std::fs::rename(&temp, path).map_err(|e| Error::io(&format!("`{shown}`"), &e))?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result.map(|()| Replaced { existed })
}

/// Syncs a directory so a rename in it is durable.
pub fn sync_dir(dir: &Path) -> Result<(), Error> {
    let handle = File::open(dir).map_err(|e| Error::io(&format!("`{}`", dir.display()), &e))?;
    handle.sync_all().map_err(|e| Error::io(&format!("syncing `{}`", dir.display()), &e))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn a_file_is_replaced_whole_and_no_temporary_file_remains() {
        let dir = tempfile_dir();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "old").unwrap();
        let done = replace(&path, Options::default(), |f| f.write_all(b"new").map_err(|e| Error::io("w", &e))).unwrap();
        assert!(done.existed);
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_fill_leaves_the_target_and_no_temporary_file() {
        let dir = tempfile_dir();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "old").unwrap();
        let err = replace(&path, Options::default(), |_| Err(Error::new(ErrorCode::Io, "disk full"))).unwrap_err();
        assert_eq!(err.code, ErrorCode::Io);
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn permissions_are_kept_and_hard_links_refused_unless_allowed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile_dir();
        let path = dir.path().join("script.sh");
        std::fs::write(&path, "#!/bin/sh").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
        replace(&path, Options::default(), |f| f.write_all(b"#!/bin/sh\necho").map_err(|e| Error::io("w", &e)))
            .unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o750);
        std::fs::hard_link(&path, dir.path().join("other")).unwrap();
        let err = replace(&path, Options::default(), |_| Ok(())).unwrap_err();
        assert_eq!(err.code, ErrorCode::PermissionDenied);
        replace(&path, Options { allow_hardlinks: true }, |_| Ok(())).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_and_directories_are_not_replaced() {
        let dir = tempfile_dir();
        std::os::unix::fs::symlink("elsewhere", dir.path().join("link")).unwrap();
        assert_eq!(
            replace(&dir.path().join("link"), Options::default(), |_| Ok(())).unwrap_err().code,
            ErrorCode::InvalidArgument
        );
        assert_eq!(replace(dir.path(), Options::default(), |_| Ok(())).unwrap_err().code, ErrorCode::InvalidArgument);
    }

    /// A temporary directory, removed with what it holds when dropped (also
    /// when a test fails).
    fn tempfile_dir() -> tempfile::TempDir {
        tempfile::Builder::new().prefix("cordon-sdk-atomic-").tempdir().unwrap()
    }
}
