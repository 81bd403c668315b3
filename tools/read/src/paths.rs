//! Turning a client's path into one inside a granted root.
//!
//! The sandbox (WASI preopens) is what keeps a tool inside its roots: `..`,
//! absolute paths elsewhere and symlinks that leave a root all fail to open. This
//! module runs first so that the common mistakes get a clear answer naming the
//! roots, and so that `root_evil` is never taken for being inside `root`: the
//! check compares whole path components, not string prefixes.

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, ErrorCode};

/// Resolves `input` against `roots` (absolute paths, first one the default).
///
/// A relative path is taken relative to the first root. The result is normalised
/// lexically (`.` dropped, `..` applied) without touching the filesystem and must
/// lie inside one of the roots.
pub fn resolve(roots: &[String], input: &str) -> Result<PathBuf, Error> {
    if input.is_empty() {
        return Err(Error::new(ErrorCode::InvalidArgument, "`path` is empty"));
    }
    if input.contains('\0') {
        return Err(Error::new(ErrorCode::InvalidArgument, "`path` contains a NUL byte"));
    }
    let Some(first) = roots.first() else {
        return Err(Error::new(
            ErrorCode::PermissionDenied,
            "this tool was granted no roots; configure one with `--root DIR`",
        ));
    };
    let joined = if Path::new(input).is_absolute() { PathBuf::from(input) } else { Path::new(first).join(input) };
    let normal = normalize(&joined);
    if roots.iter().any(|root| normal.starts_with(root)) {
        Ok(normal)
    } else {
        Err(Error::new(
            ErrorCode::PermissionDenied,
            format!(
                "`{input}` resolves to {}, which is outside every granted root ({})",
                normal.display(),
                roots.join(", ")
            ),
        ))
    }
}

/// Applies `.` and `..` lexically; `..` at the top stays at the top.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for part in path.components() {
        match part {
            Component::Normal(name) => out.push(name),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots() -> Vec<String> {
        vec!["/srv/root".into(), "/data/other".into()]
    }

    #[test]
    fn relative_paths_resolve_against_the_first_root() {
        assert_eq!(resolve(&roots(), "a/b.txt").unwrap(), Path::new("/srv/root/a/b.txt"));
        assert_eq!(resolve(&roots(), "./a/../b.txt").unwrap(), Path::new("/srv/root/b.txt"));
    }

    #[test]
    fn absolute_paths_inside_any_root_are_kept() {
        assert_eq!(resolve(&roots(), "/data/other/x").unwrap(), Path::new("/data/other/x"));
        assert_eq!(resolve(&roots(), "/srv/root").unwrap(), Path::new("/srv/root"));
    }

    #[test]
    fn dot_dot_out_of_a_root_is_denied() {
        let err = resolve(&roots(), "../x").unwrap_err();
        assert_eq!(err.code, ErrorCode::PermissionDenied);
        assert!(err.message.contains("/srv/x"), "{}", err.message);
        let err = resolve(&roots(), "/srv/root/../../etc/passwd").unwrap_err();
        assert_eq!(err.code, ErrorCode::PermissionDenied);
    }

    #[test]
    fn sibling_with_root_as_string_prefix_is_denied() {
        let err = resolve(&roots(), "/srv/root_evil/secret").unwrap_err();
        assert_eq!(err.code, ErrorCode::PermissionDenied);
    }

    #[test]
    fn absolute_path_outside_is_denied() {
        assert_eq!(resolve(&roots(), "/etc/passwd").unwrap_err().code, ErrorCode::PermissionDenied);
    }

    #[test]
    fn empty_and_nul_paths_are_invalid() {
        assert_eq!(resolve(&roots(), "").unwrap_err().code, ErrorCode::InvalidArgument);
        assert_eq!(resolve(&roots(), "a\0b").unwrap_err().code, ErrorCode::InvalidArgument);
    }

    #[test]
    fn no_roots_is_a_permission_error() {
        assert_eq!(resolve(&[], "a").unwrap_err().code, ErrorCode::PermissionDenied);
    }
}
