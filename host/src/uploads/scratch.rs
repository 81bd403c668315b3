//! The uploads directory of a server without a state directory: its own,
//! in the system's temporary directory (`TMPDIR`, else `/tmp`), removed when
//! the server stops.
//!
//! It is named `cordon-uploads-<pid>-<16 hex digits>`, created owner-only
//! under a name no sweep looks at (a leading dot), locked (an exclusive
//! `flock`, held for the server's life) and only then renamed into place. A
//! server that stops in order (the end of its input, SIGTERM or SIGINT)
//! removes it; one that is killed (`kill -9`, a crash) leaves it behind, and
//! the next server without a state directory removes it as it starts. A
//! directory is removed only when all of these hold:
//! - its name is this pattern, or `cordon-uploads-<pid>` as builds before this
//!   one named it (they never removed theirs), and then only when nothing in
//!   it was touched for the uploads' time to live: such a server took no lock;
//! - it is a directory (a symlink is neither followed nor removed) owned by
//!   this user;
//! - no process has the PID in its name (`kill(pid, 0)` fails with `ESRCH`);
//! - no one holds its lock. A live server in another PID namespace sharing
//!   the temporary directory holds it, so its uploads are kept. Where the
//!   filesystem has no `flock`, no directory is removed by a sweep.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cap_fs_ext::DirExt;
use cap_std::fs::{Dir, Metadata, MetadataExt};

use crate::ambient::{self, DirLock};

/// The start of every such directory's name.
const PREFIX: &str = "cordon-uploads-";
/// The hex digits after the PID.
const HEX_DIGITS: usize = 16;

/// A server's own uploads directory, locked while it lives and removed when
/// it is closed or dropped.
pub struct Scratch {
    path: PathBuf,
    /// Held for the server's life, so that a sweep leaves the directory
    /// alone; none where the filesystem cannot lock.
    _lock: Option<DirLock>,
}

impl Scratch {
    /// Creates this process's directory in `temp` (owner-only), takes its
    /// lock, and opens it.
    pub fn create(temp: &Path) -> io::Result<(Scratch, Dir)> {
        let temp_dir = ambient::open_dir(temp)?;
        let (name, staged, dir) = loop {
            let name = format!("{PREFIX}{}-{:016x}", std::process::id(), getrandom::u64().map_err(io::Error::other)?);
            let staged = format!(".{name}");
            match crate::private::create_new_dir(&temp_dir, &staged) {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                created => break (name, staged, created?),
            }
        };
        let lock = match DirLock::try_take(&temp_dir, staged.as_ref()) {
            Ok(lock) => lock,
            Err(e) => {
                tracing::warn!("the uploads directory cannot be locked ({e}): a server that is gone leaves its own");
                None
            }
        };
        if let Err(e) = temp_dir.rename(&staged, &temp_dir, &name) {
            let _ = temp_dir.remove_dir(&staged);
            return Err(e);
        }
        Ok((Scratch { path: temp.join(name), _lock: lock }, dir))
    }

    /// The directory's host path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the directory and everything in it (once; later calls find
    /// nothing to remove).
    pub fn remove(&self) {
        let Some((parent, name)) = self.path.parent().zip(self.path.file_name()) else { return };
        let removed = ambient::open_dir(parent).and_then(|dir| dir.remove_dir_all(name));
        match removed {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                tracing::warn!(path = %self.path.display(), "could not remove the uploads directory: {e}");
            }
            _ => {}
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Who a directory name says made it.
#[derive(Debug, PartialEq, Eq)]
struct Owner {
    pid: i32,
    /// Named as builds before this one named theirs, which took no lock.
    legacy: bool,
}

/// Who a directory name `cordon-uploads-<pid>[-<16 hex>]` names, if it is
/// one.
fn owner(name: &OsStr) -> Option<Owner> {
    let rest = name.as_bytes().strip_prefix(PREFIX.as_bytes())?;
    let (pid, random) = match rest.iter().position(|&b| b == b'-') {
        Some(dash) => (&rest[..dash], Some(&rest[dash + 1..])),
        None => (rest, None),
    };
    let hex = |r: &[u8]| r.len() == HEX_DIGITS && r.iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b));
    if pid.is_empty() || !pid.iter().all(u8::is_ascii_digit) || !random.is_none_or(hex) {
        return None;
    }
    let pid = std::str::from_utf8(pid).ok()?.parse::<i32>().ok().filter(|&pid| pid > 0)?;
    Some(Owner { pid, legacy: random.is_none() })
}

/// Whether no process has this PID.
fn gone(pid: i32) -> bool {
    // SAFETY: signal 0 sends nothing; `pid` is positive, so it names one
    // process, not a group.
    let sent = unsafe { libc::kill(pid, 0) };
    sent == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Removes from `temp` the uploads directories of servers that are gone (see
/// the module's rules; `ttl` is the uploads' time to live), and returns their
/// paths.
pub fn sweep(temp: &Path, ttl: Duration) -> io::Result<Vec<PathBuf>> {
    let dir = ambient::open_dir(temp)?;
    // SAFETY: `geteuid` has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let mut removed = Vec::new();
    for entry in dir.entries()? {
        let name = entry?.file_name();
        let Some(owner) = owner(&name) else { continue };
        if owner.pid as u32 == std::process::id() || !gone(owner.pid) {
            continue;
        }
        let Ok(meta) = dir.symlink_metadata(&name) else { continue };
        if !meta.is_dir() || meta.uid() != me {
            continue;
        }
        if owner.legacy && !idle(&dir, &name, ttl) {
            continue;
        }
        let Ok(Some(_lock)) = DirLock::try_take(&dir, name.as_ref()) else { continue };
        match dir.remove_dir_all(&name) {
            Ok(()) => removed.push(temp.join(&name)),
            Err(e) => {
                tracing::warn!(path = %temp.join(&name).display(), "could not remove a stopped server's uploads: {e}")
            }
        }
    }
    Ok(removed)
}

/// Whether nothing in directory `name` (itself, its uploads and their data)
/// was modified within `ttl`.
fn idle(dir: &Dir, name: &OsStr, ttl: Duration) -> bool {
    let old = |meta: io::Result<Metadata>| {
        meta.and_then(|m| m.modified()).is_ok_and(|at| at.into_std().elapsed().is_ok_and(|age| age > ttl))
    };
    let Ok(uploads) = dir.open_dir_nofollow(name) else { return false };
    let Ok(entries) = uploads.entries() else { return false };
    old(dir.symlink_metadata(name))
        && entries.flatten().all(|upload| {
            let id = upload.file_name();
            let data = match uploads.symlink_metadata(Path::new(&id).join("data")) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => true,
                meta => old(meta),
            };
            data && old(uploads.symlink_metadata(&id))
        })
}

/// Sweeps `temp` (see `sweep`), logging what it removed.
pub fn sweep_logged(temp: &Path, ttl: Duration) {
    match sweep(temp, ttl) {
        Ok(removed) => {
            for path in removed {
                tracing::info!(path = %path.display(), "removed the uploads directory of a server that is gone");
            }
        }
        Err(e) => tracing::warn!(dir = %temp.display(), "could not look for stopped servers' uploads: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;

    const TTL: Duration = Duration::from_secs(3600);

    #[test]
    fn only_the_names_such_directories_have_name_an_owner() {
        let owner = |name: &str| owner(OsStr::new(name));
        assert_eq!(owner("cordon-uploads-4242-0123456789abcdef"), Some(Owner { pid: 4242, legacy: false }));
        assert_eq!(owner("cordon-uploads-4242"), Some(Owner { pid: 4242, legacy: true }), "as builds before");
        for other in [
            "cordon-uploads-",
            "cordon-uploads-0",
            "cordon-uploads--1",
            "cordon-uploads-+7",
            "cordon-uploads-12a",
            "cordon-uploads-4242-0123456789ABCDEF",
            "cordon-uploads-4242-0123456789abcde",
            "cordon-uploads-4242-",
            "cordon-uploads-99999999999",
            "cordon-uploads-notes",
            ".cordon-uploads-4242-0123456789abcdef",
        ] {
            assert_eq!(owner(other), None, "{other}");
        }
    }

    #[test]
    fn a_directory_is_removed_when_closed_and_a_sweep_never_takes_a_live_servers() {
        let temp = tempfile::tempdir().unwrap();
        let (scratch, dir) = Scratch::create(temp.path()).unwrap();
        let name = scratch.path().file_name().unwrap().to_owned();
        assert_eq!(owner(&name), Some(Owner { pid: std::process::id() as i32, legacy: false }));
        let names: Vec<_> = std::fs::read_dir(temp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, std::slice::from_ref(&name), "no staging name is left");
        let mode = std::os::unix::fs::MetadataExt::mode(&std::fs::symlink_metadata(scratch.path()).unwrap()) & 0o777;
        assert_eq!(mode, 0o700);
        crate::private::create_dir(&dir, "0123456789abcdef").unwrap().write("data", "staged").unwrap();
        assert!(sweep(temp.path(), TTL).unwrap().is_empty(), "its own directory is never swept");
        scratch.remove();
        assert!(!temp.path().join(&name).exists());
        scratch.remove();
        drop(scratch);
    }

    #[test]
    fn a_temporary_directory_that_is_not_there_is_an_error_naming_it() {
        let temp = tempfile::tempdir().unwrap();
        let missing = temp.path().join("gone");
        let err = Scratch::create(&missing).err().expect("no directory to make it in");
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(sweep(&missing, TTL).is_err());
        assert!(!missing.exists(), "nothing is made in its place");
    }

    /// The PID of a process that has ended.
    fn ended_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    fn set_modified(path: &Path, ago: Duration) {
        let file = std::fs::File::open(path).unwrap();
        file.set_modified(SystemTime::now() - ago).unwrap();
    }

    #[test]
    fn a_gone_servers_directory_is_swept_unless_locked_and_a_legacy_one_only_when_idle() {
        let temp = tempfile::tempdir().unwrap();
        let pid = ended_pid();
        let (held, free) = (format!("{PREFIX}{pid}-{:016x}", 1), format!("{PREFIX}{pid}-{:016x}", 2));
        let legacy = format!("{PREFIX}{pid}");
        for name in [&held, &free, &legacy] {
            std::fs::create_dir_all(temp.path().join(name).join("0123456789abcdef")).unwrap();
            std::fs::write(temp.path().join(name).join("0123456789abcdef/data"), "staged").unwrap();
        }
        let lock = std::fs::File::open(temp.path().join(&held)).unwrap();
        lock.lock().unwrap();
        assert_eq!(sweep(temp.path(), TTL).unwrap(), [temp.path().join(&free)]);
        assert!(temp.path().join(&held).exists() && temp.path().join(&legacy).exists());
        // A legacy directory whose data is still fresh is kept; once all of it is old, swept.
        set_modified(&temp.path().join(&legacy), 2 * TTL);
        set_modified(&temp.path().join(&legacy).join("0123456789abcdef"), 2 * TTL);
        assert!(sweep(temp.path(), TTL).unwrap().is_empty());
        set_modified(&temp.path().join(&legacy).join("0123456789abcdef/data"), 2 * TTL);
        assert_eq!(sweep(temp.path(), TTL).unwrap(), [temp.path().join(&legacy)]);
        drop(lock);
        assert_eq!(sweep(temp.path(), TTL).unwrap(), [temp.path().join(&held)]);
    }
}
