//! Creating a directory and, like `mkdir -p`, the missing directories above it.
//!
//! The directories from the root down are probed first (following symlinks,
//! as `mkdir -p` does); the first one missing and everything below it are then
//! created in order, outermost first. Nothing is created when the probe finds
//! a problem (a file in the way, a symlink leading outside the roots, missing
//! parents without `parents`), and when the target is already a directory
//! the call succeeds without changing anything.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use cordon_sdk::{Error, ErrorCode};

use cordon_sdk::grant::write_error;

/// What a call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    /// The directories created, outermost first.
    pub created: Vec<PathBuf>,
    /// True when the target was already a directory (created by nobody here).
    pub existed: bool,
}

/// The directories to create for `target` under `root` (which holds it),
/// outermost first: empty when `target` is already a directory.
///
/// Fails with `conflict` when something on the way (or the target) exists and
/// is not a directory, `not-found` when `parents` is false and the parent is
/// missing, `permission-denied` when a symlink on the way leads outside the
/// roots (WASI refuses to follow it).
pub fn plan(root: &Path, target: &Path, parents: bool) -> Result<Vec<PathBuf>, Error> {
    let relative = target.strip_prefix(root).map_err(|_| {
        Error::new(ErrorCode::Internal, format!("`{}` is not under its root {}", target.display(), root.display()))
    })?;
    let mut missing = Vec::new();
    let mut at = root.to_path_buf();
    for part in relative.components() {
        at.push(part);
        if !missing.is_empty() {
            missing.push(at.clone());
            continue;
        }
        match fs::metadata(&at) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(not_a_directory(&at, target)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => missing.push(at.clone()),
            Err(e) => return Err(probe_error(&at, &e)),
        }
    }
    if !parents && missing.len() > 1 {
        let parent = target.parent().unwrap_or(root);
        return Err(Error::new(
            ErrorCode::NotFound,
            format!(
                "the parent directory `{}` does not exist; pass `parents: true` to create it too, or create it first",
                parent.display()
            ),
        ));
    }
    Ok(missing)
}

/// Creates `dirs` in order (as `plan` gave them for `target`). A directory
/// that appears in between (made by someone else) is taken as it is and not
/// reported as created.
pub fn create(dirs: &[PathBuf], target: &Path) -> Result<Created, Error> {
    let mut created = Vec::new();
    for dir in dirs {
        match fs::create_dir(dir) {
            Ok(()) => created.push(dir.clone()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => match fs::metadata(dir) {
                Ok(meta) if meta.is_dir() => {}
                _ => return Err(after(not_a_directory(dir, target), &created)),
            },
            Err(e) => {
                let what = format!("`{}` cannot be created", dir.display());
                return Err(after(write_error(&what, &e), &created));
            }
        }
    }
    let existed = created.is_empty();
    Ok(Created { created, existed })
}

/// `something` exists and is not a directory: the target itself or a
/// directory on its way.
fn not_a_directory(something: &Path, target: &Path) -> Error {
    let kind = match fs::symlink_metadata(something) {
        Ok(meta) if meta.file_type().is_symlink() => "a symlink that leads nowhere or not to a directory",
        Ok(meta) if meta.is_file() => "a file",
        _ => "not a directory",
    };
    let message = if something == target {
        format!("`{}` already exists and is {kind}; choose another path or move it away first", target.display())
    } else {
        format!(
            "`{}` cannot be created: `{}` on the way is {kind}, not a directory",
            target.display(),
            something.display()
        )
    };
    Error::new(ErrorCode::Conflict, message)
}

/// A failure to look at `path` while probing.
fn probe_error(path: &Path, err: &io::Error) -> Error {
    write_error(&format!("`{}` cannot be looked at", path.display()), err)
}

/// Says which directories were created before `err`, if any.
fn after(err: Error, created: &[PathBuf]) -> Error {
    if created.is_empty() {
        return Error::new(err.code, format!("{}; nothing was created", err.message));
    }
    let list: Vec<String> = created.iter().map(|p| format!("`{}`", p.display())).collect();
    Error::new(err.code, format!("{} (after creating {})", err.message, list.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::Scratch;

    #[test]
    fn plans_list_the_missing_directories_outermost_first() {
        let dir = Scratch::new("plan");
        let root = dir.path();
        fs::create_dir_all(root.join("a/b")).unwrap();
        assert_eq!(plan(root, &root.join("a/b"), true).unwrap(), Vec::<PathBuf>::new());
        assert_eq!(plan(root, root, true).unwrap(), Vec::<PathBuf>::new());
        assert_eq!(plan(root, &root.join("a/b/c/d"), true).unwrap(), [root.join("a/b/c"), root.join("a/b/c/d")]);
        assert_eq!(plan(root, &root.join("a/b/c"), false).unwrap(), [root.join("a/b/c")]);
        let err = plan(root, &root.join("a/x/y"), false).unwrap_err();
        assert_eq!(err.code, ErrorCode::NotFound);
        assert!(err.message.contains("parents: true"), "{}", err.message);
    }

    #[test]
    fn files_in_the_way_are_conflicts() {
        let dir = Scratch::new("conflict");
        let root = dir.path();
        fs::write(root.join("f"), "x").unwrap();
        let err = plan(root, &root.join("f"), true).unwrap_err();
        assert_eq!(err.code, ErrorCode::Conflict);
        assert!(err.message.contains("already exists and is a file"), "{}", err.message);
        let err = plan(root, &root.join("f/sub"), true).unwrap_err();
        assert_eq!(err.code, ErrorCode::Conflict);
        assert!(err.message.contains("on the way is a file"), "{}", err.message);
    }

    #[test]
    fn creating_reports_what_it_made_and_races_are_tolerated() {
        let dir = Scratch::new("create");
        let root = dir.path();
        let target = root.join("x/y");
        let dirs = plan(root, &target, true).unwrap();
        // Someone else makes `x` between the probe and the creation.
        fs::create_dir(root.join("x")).unwrap();
        assert_eq!(create(&dirs, &target).unwrap(), Created { created: vec![target.clone()], existed: false });
        assert!(target.is_dir());
        assert_eq!(
            create(&plan(root, &target, true).unwrap(), &target).unwrap(),
            Created { created: vec![], existed: true }
        );
    }

    #[test]
    fn a_file_appearing_in_between_is_a_conflict_naming_what_was_made() {
        let dir = Scratch::new("race");
        let root = dir.path();
        let target = root.join("p/q");
        let dirs = plan(root, &target, true).unwrap();
        fs::create_dir(root.join("p")).unwrap();
        fs::write(&target, "x").unwrap();
        let err = create(&dirs, &target).unwrap_err();
        assert_eq!(err.code, ErrorCode::Conflict);
        assert!(err.message.contains("nothing was created"), "{}", err.message);
    }

    #[cfg(unix)]
    #[test]
    fn dangling_symlinks_in_the_way_are_conflicts() {
        let dir = Scratch::new("dangling");
        let root = dir.path();
        std::os::unix::fs::symlink(root.join("nowhere"), root.join("link")).unwrap();
        let target = root.join("link");
        let err = create(&plan(root, &target, true).unwrap(), &target).unwrap_err();
        assert_eq!(err.code, ErrorCode::Conflict);
        assert!(err.message.contains("symlink"), "{}", err.message);
        assert!(!root.join("nowhere").exists());
    }
}
