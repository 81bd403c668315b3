//! What the host granted a write call: which roots may be changed, and errors
//! that say so.
//!
//! A write tool gets read-write roots preopened read-write and read-only roots
//! (`--root DIR:ro`) read-only. WASI refuses a change under a read-only root
//! with a permission error, just as it refuses a symlink that leads outside the
//! roots; asking the preopen for its flags first tells the two apart, so the
//! caller learns which it was, and nothing is attempted under a read-only root.

use std::io;
use std::path::Path;

use crate::paths::within_root;
use crate::{Error, ErrorCode};

/// The root (of `roots`) that holds `path`: the deepest, when roots nest.
pub fn root_of<'a>(roots: &'a [String], path: &Path) -> Option<&'a str> {
    let names: Vec<&str> = roots.iter().map(String::as_str).collect();
    within_root(&names, path).map(|(index, _)| roots[index].as_str())
}

/// Fails with permission-denied, naming the root or the rule, unless this call
/// may change `path`: the root holding it as written was granted read-write,
/// and the host finds it may be changed where it really is
/// ([`crate::policy::judge_change`]: no deny rule, no symlink into a read-only
/// root). `shown` names the path in the message.
pub fn require_writable(roots: &[String], path: &Path, shown: &str) -> Result<(), Error> {
    require_writable_root(roots, path, shown)?;
    crate::policy::judge_change(path).map_err(|e| Error::new(e.code, format!("{}; nothing was changed", e.message)))
}

/// Fails with permission-denied, naming the root, when the root holding `path`
/// as written was granted read-only; the first, local half of
/// [`require_writable`], for a tool that asks the host about the rest itself
/// (a move: [`crate::policy::judge_move`]).
pub fn require_writable_root(roots: &[String], path: &Path, shown: &str) -> Result<(), Error> {
    let Some(root) = root_of(roots, path) else {
        return Err(Error::new(
            ErrorCode::PermissionDenied,
            format!("`{shown}` is outside every granted root ({})", roots.join(", ")),
        ));
    };
    if writable(root) {
        Ok(())
    } else {
        Err(Error::new(
            ErrorCode::PermissionDenied,
            format!(
                "`{shown}` cannot be changed: its root {root} is read-only (configured as `{root}:ro`); nothing was changed"
            ),
        ))
    }
}

/// Maps a filesystem error from changing `what` (a phrase such as "`/r/a`
/// cannot be created") to an error: a permission error says it was denied or
/// that a symlink on the way leads outside the roots; others as
/// [`Error::io`] maps them.
pub fn write_error(what: &str, err: &io::Error) -> Error {
    match err.kind() {
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => Error::new(
            ErrorCode::PermissionDenied,
            format!("{what}: access was denied, or a symlink on the way leads outside the granted roots"),
        ),
        io::ErrorKind::NotFound => {
            Error::new(ErrorCode::NotFound, format!("{what}: a directory on the way does not exist"))
        }
        _ => Error::new(ErrorCode::Io, format!("{what}: {err}")),
    }
}

/// Whether the preopen for `root` lets this call change what is under it.
#[cfg(target_arch = "wasm32")]
fn writable(root: &str) -> bool {
    use wasip2::filesystem::types::DescriptorFlags;
    crate::preopens::with(|dirs| {
        dirs.iter().find(|(_, path)| path == root).is_none_or(|(dir, _)| {
            // Unknown flags: let the filesystem decide (it refuses with a permission error).
            dir.get_flags().map_or(true, |flags| flags.contains(DescriptorFlags::MUTATE_DIRECTORY))
        })
    })
}

/// Natively there are no preopens: the filesystem decides.
#[cfg(not(target_arch = "wasm32"))]
fn writable(_root: &str) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deepest_root_holds_a_path() {
        let roots = vec!["/srv".to_string(), "/srv/inner".to_string()];
        assert_eq!(root_of(&roots, Path::new("/srv/inner/a")), Some("/srv/inner"));
        assert_eq!(root_of(&roots, Path::new("/srv/a")), Some("/srv"));
        assert_eq!(root_of(&roots, Path::new("/srv_evil/a")), None);
        let err = require_writable(&roots, Path::new("/etc/x"), "/etc/x").unwrap_err();
        assert_eq!(err.code, ErrorCode::PermissionDenied);
        assert!(require_writable(&roots, Path::new("/srv/a"), "/srv/a").is_ok());
    }

    #[test]
    fn permission_errors_say_why_and_others_keep_their_code() {
        let denied = write_error("`/r/a` cannot be created", &io::Error::from(io::ErrorKind::PermissionDenied));
        assert_eq!(denied.code, ErrorCode::PermissionDenied);
        assert!(denied.message.contains("access was denied"), "{}", denied.message);
        let missing = write_error("`/r/a` cannot be created", &io::Error::from(io::ErrorKind::NotFound));
        assert_eq!(missing.code, ErrorCode::NotFound);
        let other = write_error("`/r/a` cannot be created", &io::Error::other("disk on fire"));
        assert_eq!((other.code, other.message.contains("disk on fire")), (ErrorCode::Io, true));
    }
}
