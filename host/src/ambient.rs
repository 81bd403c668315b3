//! The one module that resolves paths through the process's ambient authority.
//!
//! Everything else in the host reaches the filesystem through capability
//! handles (`cap_std::fs::Dir`) opened here, or through the guests' WASI
//! preopens. Keeping ambient access in one place makes it auditable.

use std::io;
use std::path::{Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

/// The canonical form of `path` (absolute, symlinks resolved) and whether it is
/// a directory.
pub fn canonical_dir(path: &Path) -> io::Result<(PathBuf, bool)> {
    let canonical = std::fs::canonicalize(path)?;
    let is_dir = std::fs::metadata(&canonical)?.is_dir();
    Ok((canonical, is_dir))
}

/// Creates `path` and its parents if needed and opens it as a capability.
pub fn create_dir_handle(path: &Path) -> io::Result<Dir> {
    Dir::create_ambient_dir_all(path, ambient_authority())?;
    Dir::open_ambient_dir(path, ambient_authority())
}

/// Creates `path` and its missing parents with `mode` (whatever the umask
/// allows; a directory that exists keeps its mode) and opens it.
pub fn create_dir_with_mode(path: &Path, mode: u32) -> io::Result<Dir> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(mode).create(path)?;
    Dir::open_ambient_dir(path, ambient_authority())
}

/// How many entries the directory at `path` holds (`/proc/self/fd`).
pub fn entries_in(path: &Path) -> io::Result<usize> {
    Ok(std::fs::read_dir(path)?.count())
}

/// The whole content of a file named on the command line.
pub fn read_file(path: &Path) -> io::Result<Vec<u8>> {
    std::fs::read(path)
}

/// A file named on the command line, opened for reading.
pub fn open_file(path: &Path) -> io::Result<std::fs::File> {
    std::fs::File::open(path)
}

/// A lock file, opened through a capability, whose exclusive advisory lock
/// (`flock`) a holder takes and gives back (std's locks take a std file).
pub struct LockFile(std::fs::File);

impl LockFile {
    pub fn new(file: cap_std::fs::File) -> LockFile {
        LockFile(file.into_std())
    }

    /// Waits for the exclusive lock; held until the guard drops.
    pub fn exclusive(&self) -> io::Result<Exclusive<'_>> {
        self.0.lock()?;
        Ok(Exclusive(&self.0))
    }
}

/// Holds a `LockFile`'s lock.
pub struct Exclusive<'a>(&'a std::fs::File);

impl Drop for Exclusive<'_> {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// A directory's exclusive advisory lock (`flock`), held until this drops.
pub struct DirLock {
    /// The open directory that holds the lock; never read.
    _held: std::fs::File,
}

impl DirLock {
    /// Takes the lock of directory `name` in `parent` (not through a symlink)
    /// if no one holds it; `None` when someone does. (A `Dir` is opened for
    /// paths only, and such a descriptor cannot be locked.)
    pub fn try_take(parent: &Dir, name: &Path) -> io::Result<Option<DirLock>> {
        use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsMaybeDirExt};
        use cap_std::fs::OpenOptionsExt;
        let mut options = cap_std::fs::OpenOptions::new();
        // Only a directory: a FIFO put in its place would block the open.
        options.read(true).follow(FollowSymlinks::No).maybe_dir(true).custom_flags(libc::O_DIRECTORY);
        let file = parent.open_with(name, &options)?.into_std();
        match file.try_lock() {
            Ok(()) => Ok(Some(DirLock { _held: file })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }
}

/// Opens an existing directory (a configured root) as a capability.
pub fn open_dir(path: &Path) -> io::Result<Dir> {
    Dir::open_ambient_dir(path, ambient_authority())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// What reaches the filesystem by path, through the process's ambient
    /// authority, in Rust source. `Path::is_dir()`, `is_file()` and `metadata()`
    /// read like the same methods of cap-std's metadata and file types, so they
    /// are left out; the `Path` methods below have no cap-std twin.
    const AMBIENT: [&str; 8] = [
        "std::fs",
        "tokio::fs",
        "File::open(",
        "File::create(",
        ".exists()",
        ".symlink_metadata()",
        ".canonicalize()",
        ".read_dir()",
    ];

    /// Each use of ambient filesystem access in `source` (up to its tests, or
    /// none in a file of tests, `#![cfg(test)]`), as
    /// `line: text`. `cap_std::fs` is a capability, not ambient.
    fn ambient_uses(source: &str) -> Vec<String> {
        let mut found = Vec::new();
        for (number, line) in source.lines().enumerate() {
            if ["#[cfg(test)]", "#![cfg(test)]"].iter().any(|tests| line.trim_start().starts_with(tests)) {
                break;
            }
            let code = line.split("//").next().unwrap_or_default();
            let hit = AMBIENT.iter().any(|needle| {
                code.match_indices(needle).any(|(at, _)| {
                    // `cap_std::fs` contains `std::fs`: only a whole path counts.
                    let before = code[..at].chars().next_back();
                    !needle.starts_with("std") || !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                })
            });
            if hit {
                found.push(format!("{}: {}", number + 1, line.trim()));
            }
        }
        found
    }

    fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// Guards the host's one rule of file access: paths are opened through
    /// capability handles, and only this module uses ambient authority.
    #[test]
    fn no_host_module_but_ambient_reaches_the_filesystem_by_path() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        assert!(files.len() > 20, "the host's sources were not found under {}", src.display());
        let mut offenders = Vec::new();
        // A `tests.rs` is a test module (declared `#[cfg(test)] mod tests;`), like the
        // code after `#[cfg(test)]` in a file.
        for file in files.iter().filter(|f| !f.ends_with("ambient.rs") && !f.ends_with("tests.rs")) {
            let source = std::fs::read_to_string(file).unwrap();
            for hit in ambient_uses(&source) {
                offenders.push(format!("{}:{hit}", file.strip_prefix(&src).unwrap().display()));
            }
        }
        assert!(
            offenders.is_empty(),
            "host code outside ambient.rs opens paths with ambient authority; use a cap_std::fs::Dir from \
             ambient.rs instead:\n{}",
            offenders.join("\n")
        );
    }

    #[test]
    fn the_lint_sees_ambient_access_and_not_capabilities() {
        let source = "use std::fs;\nlet d: cap_std::fs::Dir;\nlet x = tokio::fs::read(p);\n// std::fs in a comment\n\
                      if path.exists() {}\n#[cfg(test)]\nstd::fs::write(a, b);\n";
        assert_eq!(
            ambient_uses(source),
            ["1: use std::fs;", "3: let x = tokio::fs::read(p);", "5: if path.exists() {}"]
        );
    }
}
