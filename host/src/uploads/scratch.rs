//! The uploads directory of a server without a state directory: its own,
//! in the system's temporary directory (`TMPDIR`, else `/tmp`), removed when
//! the server stops.
//!
//! It is named `cordon-uploads-<pid>-<16 hex digits>`, created owner-only, and
//! its server holds an exclusive `flock` on it for its whole life. A server
//! that stops in order (the end of its input, its listener closed) removes it;
//! one that is killed (`kill -9`, a crash, a signal) leaves it behind, and the
//! next server without a state directory to start removes it, on a background
//! thread. A directory is removed only when all of these hold:
//! - its name is this pattern, or `cordon-uploads-<pid>` as builds before this
//!   one named it (they never removed theirs);
//! - it is a directory (a symlink is neither followed nor removed) owned by
//!   this user;
//! - no process has the PID in its name (`kill(pid, 0)` fails with `ESRCH`);
//! - no one holds its lock. A live server in another PID namespace sharing
//!   the temporary directory holds it, so its uploads are kept.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, MetadataExt};

use crate::ambient::{self, DirLock};

/// The start of every such directory's name.
const PREFIX: &str = "cordon-uploads-";
/// The hex digits after the PID.
const HEX_DIGITS: usize = 16;

/// A server's own uploads directory, locked while it lives and removed when
/// it is closed or dropped.
pub struct Scratch {
    path: PathBuf,
    /// Held for the server's life: a sweep leaves the directory alone.
    _lock: DirLock,
}

impl Scratch {
    /// Creates this process's directory in `temp` (owner-only), takes its
    /// lock, and opens it.
    pub fn create(temp: &Path) -> io::Result<(Scratch, Dir)> {
        let temp_dir = ambient::open_dir(temp)?;
        let (name, dir) = loop {
            let name = format!("{PREFIX}{}-{:016x}", std::process::id(), getrandom::u64().map_err(io::Error::other)?);
            match crate::private::create_new_dir(&temp_dir, &name) {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                created => break (name, created?),
            }
        };
        let lock = DirLock::try_take(&temp_dir, name.as_ref())?
            .ok_or_else(|| io::Error::new(io::ErrorKind::WouldBlock, "another process locked it as it was made"))?;
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

/// The PID a directory name `cordon-uploads-<pid>[-<16 hex>]` names, if it is
/// one.
fn owner(name: &OsStr) -> Option<i32> {
    let rest = name.as_bytes().strip_prefix(PREFIX.as_bytes())?;
    let (pid, random) = match rest.iter().position(|&b| b == b'-') {
        Some(dash) => (&rest[..dash], Some(&rest[dash + 1..])),
        None => (rest, None),
    };
    let hex = |r: &[u8]| r.len() == HEX_DIGITS && r.iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b));
    if pid.is_empty() || !pid.iter().all(u8::is_ascii_digit) || !random.is_none_or(hex) {
        return None;
    }
    std::str::from_utf8(pid).ok()?.parse::<i32>().ok().filter(|&pid| pid > 0)
}

/// Whether no process has this PID.
fn gone(pid: i32) -> bool {
    // SAFETY: signal 0 sends nothing; `pid` is positive, so it names one
    // process, not a group.
    let sent = unsafe { libc::kill(pid, 0) };
    sent == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Removes from `temp` the uploads directories of servers that are gone (see
/// the module's rules), and returns their paths.
pub fn sweep(temp: &Path) -> io::Result<Vec<PathBuf>> {
    let dir = ambient::open_dir(temp)?;
    // SAFETY: `geteuid` has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let mut removed = Vec::new();
    for entry in dir.entries()? {
        let name = entry?.file_name();
        let Some(pid) = owner(&name) else { continue };
        if pid as u32 == std::process::id() || !gone(pid) {
            continue;
        }
        let Ok(meta) = dir.symlink_metadata(&name) else { continue };
        if !meta.is_dir() || meta.uid() != me {
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

/// Runs `sweep` on a background thread, logging what it removed.
pub fn spawn_sweep(temp: PathBuf) {
    let spawned = std::thread::Builder::new().name("cordon-uploads-sweep".into()).spawn(move || match sweep(&temp) {
        Ok(removed) => {
            for path in removed {
                tracing::info!(path = %path.display(), "removed the uploads directory of a server that is gone");
            }
        }
        Err(e) => tracing::warn!(dir = %temp.display(), "could not look for stopped servers' uploads: {e}"),
    });
    if let Err(e) = spawned {
        tracing::warn!("could not start the sweep of stopped servers' uploads: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_names_such_directories_have_name_an_owner() {
        let owner = |name: &str| owner(OsStr::new(name));
        assert_eq!(owner("cordon-uploads-4242-0123456789abcdef"), Some(4242));
        assert_eq!(owner("cordon-uploads-4242"), Some(4242), "the name of builds before");
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
            "my-cordon-uploads-4242",
        ] {
            assert_eq!(owner(other), None, "{other}");
        }
    }

    #[test]
    fn a_directory_is_removed_when_closed_and_sweeps_keep_what_a_live_server_holds() {
        let temp = tempfile::tempdir().unwrap();
        let (scratch, dir) = Scratch::create(temp.path()).unwrap();
        let name = scratch.path().file_name().unwrap().to_owned();
        assert_eq!(owner(&name), Some(std::process::id() as i32));
        let mode = std::os::unix::fs::MetadataExt::mode(&std::fs::symlink_metadata(scratch.path()).unwrap()) & 0o777;
        assert_eq!(mode, 0o700);
        crate::private::create_dir(&dir, "0123456789abcdef").unwrap().write("data", "staged").unwrap();
        assert!(sweep(temp.path()).unwrap().is_empty(), "its own directory is never swept");
        scratch.remove();
        assert!(!temp.path().join(&name).exists());
        scratch.remove();
        drop(scratch);
    }
}
