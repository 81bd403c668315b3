//! What the server keeps is private to its user: directories 0700, files 0600.
//!
//! The state directory holds the cursor key, continuation handles (signed
//! cursors, whose bodies carry the calls' arguments), staged uploads (file
//! content on its way to a `write`), compiled tools and the default audit
//! log. Each is created with an explicit mode (`file_options`, `create_dir`),
//! so the umask cannot loosen it, and at start `tighten` walks the state
//! directory and takes the group and other bits off anything that has them
//! (a directory made by an older version, or by hand): one warning names
//! what it changed; what cannot be changed stops the start. The audit log,
//! which may live elsewhere (`--audit-log`), gets the same treatment for its
//! own files (`tighten_files`).

use std::fmt;
use std::path::{Path, PathBuf};

use cap_fs_ext::DirExt;
use cap_std::fs::{Dir, DirBuilder, DirBuilderExt, OpenOptions, OpenOptionsExt, Permissions, PermissionsExt};

/// The mode of every directory the server creates.
pub const DIR_MODE: u32 = 0o700;
/// The mode of every file the server creates.
pub const FILE_MODE: u32 = 0o600;
/// The bits no state may have: group and other.
const LOOSE: u32 = 0o077;
/// How deep `tighten` goes (the state directory is shallow).
const MAX_DEPTH: usize = 8;

/// Options that create a file `FILE_MODE`, whatever the umask; the caller
/// adds read, write, create and the rest.
pub fn file_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.mode(FILE_MODE);
    options
}

/// Creates the directory at `path` (and its missing parents) `DIR_MODE`, and
/// opens it; one that exists keeps its mode (see `tighten`).
pub fn create_dir_at(path: &Path) -> std::io::Result<Dir> {
    crate::ambient::create_dir_with_mode(path, DIR_MODE)
}

/// Creates `name` (and its missing parents) in `dir`, `DIR_MODE`, and opens it.
pub fn create_dir(dir: &Dir, name: impl AsRef<Path>) -> std::io::Result<Dir> {
    let mut builder = DirBuilder::new();
    builder.recursive(true).mode(DIR_MODE);
    dir.create_dir_with(name.as_ref(), &builder)?;
    dir.open_dir(name)
}

/// Creates `name` in `dir`, `DIR_MODE`, failing if it exists, and opens it
/// without following a symlink.
pub fn create_new_dir(dir: &Dir, name: impl AsRef<Path>) -> std::io::Result<Dir> {
    let mut builder = DirBuilder::new();
    builder.mode(DIR_MODE);
    dir.create_dir_with(name.as_ref(), &builder)?;
    dir.open_dir_nofollow(name)
}

/// A mode that was tightened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tightened {
    /// The path, relative to the directory walked (`.` for itself).
    pub path: PathBuf,
    pub was: u32,
    pub now: u32,
}

impl fmt::Display for Tightened {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {:04o}→{:04o}", self.path.display(), self.was, self.now)
    }
}

/// A mode that is too loose and could not be tightened.
#[derive(Debug)]
pub struct TooLoose {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl fmt::Display for TooLoose {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} can be read or written by other users and its mode cannot be tightened ({}); make it \
             owner-only (chmod go-rwx)",
            self.path.display(),
            self.source
        )
    }
}

impl std::error::Error for TooLoose {}

/// Takes the group and other bits off `dir` itself and everything in it,
/// directories and regular files, at any depth (symbolic links and special
/// files are left as they are; nothing is followed). `shown` is the walked
/// directory's path, for errors.
pub fn tighten(dir: &Dir, shown: &Path) -> Result<Vec<Tightened>, TooLoose> {
    let mut done = Vec::new();
    let own = dir.dir_metadata().map_err(|source| TooLoose { path: shown.to_path_buf(), source })?;
    let mode = own.permissions().mode() & 0o7777;
    if mode & LOOSE != 0 {
        dir.set_permissions(".", Permissions::from_mode(mode & !LOOSE))
            .map_err(|source| TooLoose { path: shown.to_path_buf(), source })?;
        done.push(Tightened { path: ".".into(), was: mode, now: mode & !LOOSE });
    }
    walk(dir, Path::new(""), shown, &mut done, 0)?;
    Ok(done)
}

fn walk(dir: &Dir, at: &Path, shown: &Path, done: &mut Vec<Tightened>, depth: usize) -> Result<(), TooLoose> {
    let failed = |rel: &Path| {
        let path = shown.join(rel);
        move |source| TooLoose { path, source }
    };
    let entries = dir.entries().map_err(failed(at))?;
    for entry in entries {
        let Ok(entry) = entry else { continue }; // gone meanwhile
        let name = PathBuf::from(entry.file_name());
        let rel = at.join(&name);
        let Ok(meta) = entry.metadata() else { continue }; // gone meanwhile
        let kind = meta.file_type();
        if !(kind.is_dir() || kind.is_file()) {
            continue;
        }
        let mode = meta.permissions().mode() & 0o7777;
        if mode & LOOSE != 0 {
            // Another server may remove what it owns meanwhile (a swept handle, an upload).
            match dir.set_permissions(&name, Permissions::from_mode(mode & !LOOSE)) {
                Ok(()) => done.push(Tightened { path: rel.clone(), was: mode, now: mode & !LOOSE }),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(failed(&rel)(e)),
            }
        }
        if kind.is_dir() && depth < MAX_DEPTH {
            let inner = match dir.open_dir_nofollow(&name) {
                Ok(inner) => inner,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(failed(&rel)(e)),
            };
            walk(&inner, &rel, shown, done, depth + 1)?;
        }
    }
    Ok(())
}

/// Takes the group and other bits off the regular files `names` in `dir`
/// that exist.
pub fn tighten_files<'a>(
    dir: &Dir,
    names: impl IntoIterator<Item = &'a str>,
    shown: &Path,
) -> Result<Vec<Tightened>, TooLoose> {
    let mut done = Vec::new();
    for name in names {
        let meta = match dir.symlink_metadata(name) {
            Ok(meta) if meta.is_file() => meta,
            _ => continue,
        };
        let mode = meta.permissions().mode() & 0o7777;
        if mode & LOOSE != 0 {
            let failed = |source| TooLoose { path: shown.join(name), source };
            dir.set_permissions(name, Permissions::from_mode(mode & !LOOSE)).map_err(failed)?;
            done.push(Tightened { path: name.into(), was: mode, now: mode & !LOOSE });
        }
    }
    Ok(done)
}

/// Says once what was tightened in `shown`, naming the first few.
pub fn report(shown: &Path, done: &[Tightened]) {
    if done.is_empty() {
        return;
    }
    let mut named = done.iter().take(6).map(Tightened::to_string).collect::<Vec<_>>().join(", ");
    if done.len() > 6 {
        named.push_str(&format!(" and {} more", done.len() - 6));
    }
    tracing::warn!(
        "{}: other users could read or write {} of its entries; now owner-only: {named}",
        shown.display(),
        done.len()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
    }

    fn chmod(path: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn loose_modes_are_tightened_at_any_depth_and_named() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("state");
        std::fs::create_dir_all(root.join("handles/deep")).unwrap();
        std::fs::write(root.join("handles/deep/a"), "x").unwrap();
        std::fs::write(root.join("cursor.key"), "x").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("link")).unwrap();
        chmod(&root, 0o755);
        chmod(&root.join("handles"), 0o777);
        chmod(&root.join("handles/deep"), 0o750);
        chmod(&root.join("handles/deep/a"), 0o644);
        chmod(&root.join("cursor.key"), 0o600);
        let dir = Dir::open_ambient_dir(&root, cap_std::ambient_authority()).unwrap();
        let mut named: Vec<String> = tighten(&dir, &root).unwrap().iter().map(Tightened::to_string).collect();
        named.sort();
        assert_eq!(named, [". 0755→0700", "handles 0777→0700", "handles/deep 0750→0700", "handles/deep/a 0644→0600"]);
        for (path, want) in [("", 0o700), ("handles", 0o700), ("handles/deep", 0o700), ("handles/deep/a", 0o600)] {
            assert_eq!(mode(&root.join(path)), want, "{path}");
        }
        assert_eq!(mode(&root.join("cursor.key")), 0o600);
        assert_eq!(mode(Path::new("/etc/passwd")) & 0o004, 0o004, "a link is not followed");
        assert!(tighten(&dir, &root).unwrap().is_empty(), "nothing left to do");
    }

    #[test]
    fn files_and_directories_are_created_owner_only_whatever_the_umask() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        // The umask is the process's: a mode given at creation only loses bits
        // to it, so 0700 and 0600 stay so under 000 as under 022.
        let inner = create_dir(&dir, "a/b").unwrap();
        drop(inner.open_with("f", file_options().write(true).create(true)).unwrap());
        assert_eq!(mode(&tmp.path().join("a")) & LOOSE, 0);
        assert_eq!(mode(&tmp.path().join("a/b")) & LOOSE, 0);
        assert_eq!(mode(&tmp.path().join("a/b/f")) & LOOSE, 0);
    }
}
