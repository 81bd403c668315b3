//! Startup cleanup: the stray temporary files a killed writer left in the roots.
//!
//! The tools that replace files (`write`, `edit`, the commit of a staged upload)
//! write the new content to `.cordon-<name>.<16 hex>.tmp` beside the target and
//! rename it over the target (`tools/sdk/src/atomic.rs`). A server killed
//! mid-write leaves that file behind, the target intact. At start the server
//! walks its read-write roots on a background thread and removes them.
//!
//! What is removed, and why it is safe:
//! - only regular files whose name is exactly the pattern above (the prefix, a
//!   non-empty name, a dot, 16 lowercase hex digits, the suffix): a user file
//!   that merely looks similar (`.cordon-notes.tmp`, other digits) is kept;
//! - only in read-write roots (no tool writes elsewhere), never through a
//!   symlink: symlinks are neither followed nor removed, and a directory that is
//!   swapped for another (or for a symlink) while walked is not entered;
//! - only files last modified before this server started. A temporary file
//!   still being filled by another live server on the same root has a newer
//!   modification time (every write moves it), so it is kept. The rule's one
//!   window: a concurrent writer between its last write and its rename (syncing
//!   a large file) can lose its temporary file; its rename then fails and that
//!   write reports an `io` error, with the target untouched. Nothing a user
//!   wrote is ever lost. A single server (the usual case) has no such window:
//!   its own temporary files are all younger than its start.
//!
//! The walk is bounded by a number of entries; past it the sweep stops (and
//! says so), it skips nothing else: hidden and ignored directories are walked.
//! It holds one directory open at a time, reopening each from its root, so a
//! deep tree does not use up file descriptors.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fmt;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::SystemTime;

use cap_std::fs::{Dir, MetadataExt};

use crate::ambient;
use crate::policy::{Mode, Root};

/// The prefix of every temporary file name (`TEMP_PREFIX` in the guest SDK).
pub const TEMP_PREFIX: &str = ".cordon-";
/// The suffix of every temporary file name (`TEMP_SUFFIX` in the guest SDK).
pub const TEMP_SUFFIX: &str = ".tmp";
/// The hex digits of the random part of a temporary file name.
const TEMP_HEX_DIGITS: usize = 16;
/// The most directory entries one sweep looks at, over all roots.
pub const MAX_ENTRIES: u64 = 1_000_000;

/// Whether `name` is exactly a name `atomic::replace` gives a temporary file:
/// `.cordon-<name>.<16 lowercase hex digits>.tmp` with a non-empty `<name>`.
pub fn is_temp_name(name: &OsStr) -> bool {
    let name = name.as_bytes();
    let Some(rest) = name.strip_prefix(TEMP_PREFIX.as_bytes()).and_then(|r| r.strip_suffix(TEMP_SUFFIX.as_bytes()))
    else {
        return false;
    };
    let Some(dot) = rest.iter().rposition(|&b| b == b'.') else { return false };
    let (target, hex) = (&rest[..dot], &rest[dot + 1..]);
    !target.is_empty()
        && hex.len() == TEMP_HEX_DIGITS
        && hex.iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
}

/// What one sweep did.
#[derive(Debug, Default)]
pub struct Report {
    /// The temporary files removed, as host paths.
    pub removed: Vec<PathBuf>,
    /// Directory entries looked at.
    pub entries: u64,
    /// The read-write roots walked.
    pub roots: usize,
    /// False when the walk stopped at the entry bound.
    pub complete: bool,
    /// What could not be done; the sweep went on past each.
    pub problems: Vec<Problem>,
}

/// Something a sweep could not do.
#[derive(Debug)]
pub enum Problem {
    /// A root could not be opened.
    OpenRoot { root: PathBuf, source: io::Error },
    /// A directory could not be opened, listed or described.
    ReadDir { dir: PathBuf, source: io::Error },
    /// A directory was replaced (by another directory or a symlink) while the
    /// sweep walked: it was not entered.
    Changed { dir: PathBuf },
    /// A temporary file could not be removed.
    Remove { path: PathBuf, source: io::Error },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::OpenRoot { root, source } => write!(f, "could not open root {}: {source}", root.display()),
            Problem::ReadDir { dir, source } => write!(f, "could not read directory {}: {source}", dir.display()),
            Problem::Changed { dir } => write!(f, "directory {} changed while swept; not entered", dir.display()),
            Problem::Remove { path, source } => {
                write!(f, "could not remove temporary file {}: {source}", path.display())
            }
        }
    }
}

/// Starts sweeping the read-write `roots` on a background thread (see the
/// module docs) and logs what it did; `started` is the server's start time.
/// Without a read-write root there is nothing to sweep and no thread.
pub fn spawn(roots: &[Root], started: SystemTime) -> Option<JoinHandle<Report>> {
    if !roots.iter().any(|r| r.mode == Mode::ReadWrite) {
        return None;
    }
    let roots = roots.to_vec();
    let spawned = std::thread::Builder::new().name("cordon-cleanup".into()).spawn(move || {
        lowest_priority();
        let report = sweep(&roots, started, MAX_ENTRIES);
        log(&report);
        report
    });
    match spawned {
        Ok(handle) => Some(handle),
        Err(e) => {
            tracing::warn!("could not start the sweep for stray temporary files: {e}");
            None
        }
    }
}

/// Puts the calling thread at the lowest priority (nice 19), so that the
/// sweep, which walks every read-write root at start, gives way to the calls:
/// on 2 cores it took a tenth of the CPU samples of `cordon call glob` over a
/// read-write tree of 120,000 files. Best effort: a sweep that cannot lower
/// itself runs as before.
fn lowest_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls on this thread's own id, no memory passed.
    // On Linux, `setpriority` of a thread id sets that thread's nice value only.
    unsafe {
        let _ = libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19);
    }
}

fn log(report: &Report) {
    for path in &report.removed {
        tracing::debug!(path = %path.display(), "removed a stray temporary file");
    }
    for problem in &report.problems {
        match problem {
            Problem::Remove { .. } => tracing::warn!("{problem}"),
            _ => tracing::debug!("{problem}"),
        }
    }
    if !report.complete {
        tracing::warn!(entries = report.entries, "the sweep for stray temporary files stopped at its entry bound");
    }
    tracing::info!(
        entries = report.entries,
        roots = report.roots,
        problems = report.problems.len(),
        "removed {} stray temporary files",
        report.removed.len()
    );
}

/// Removes the temporary files older than `started` in the read-write roots,
/// looking at `max_entries` directory entries at most.
pub fn sweep(roots: &[Root], started: SystemTime, max_entries: u64) -> Report {
    let mut report = Report { complete: true, ..Report::default() };
    let writable: Vec<&Path> = roots.iter().filter(|r| r.mode == Mode::ReadWrite).map(|r| Path::new(&r.path)).collect();
    // A root inside another is walked as part of it (paths are canonical).
    let outermost = writable.iter().filter(|r| !writable.iter().any(|o| o != *r && r.starts_with(o)));
    let mut seen = HashSet::new();
    for root in outermost {
        if !seen.insert(*root) {
            continue;
        }
        report.roots += 1;
        let dir = match ambient::open_dir(root) {
            Ok(dir) => dir,
            Err(source) => {
                report.problems.push(Problem::OpenRoot { root: root.to_path_buf(), source });
                continue;
            }
        };
        if !walk(root, &dir, started, max_entries, &mut report) {
            report.complete = false;
            break;
        }
    }
    report
}

/// A directory still to walk: its path under the root and its identity when
/// it was listed, checked again once it is open.
struct Pending {
    rel: PathBuf,
    dev: u64,
    ino: u64,
}

/// Walks one root depth-first; false when the entry bound was reached.
fn walk(root: &Path, root_dir: &Dir, started: SystemTime, max_entries: u64, report: &mut Report) -> bool {
    let mut stack = vec![None::<Pending>];
    while let Some(pending) = stack.pop() {
        let (dir, rel) = match pending {
            None => match root_dir.try_clone() {
                Ok(dir) => (dir, PathBuf::new()),
                Err(source) => {
                    report.problems.push(Problem::ReadDir { dir: root.to_path_buf(), source });
                    continue;
                }
            },
            Some(p) => match open_same(root_dir, &p) {
                Ok(Some(dir)) => (dir, p.rel),
                Ok(None) => {
                    report.problems.push(Problem::Changed { dir: root.join(&p.rel) });
                    continue;
                }
                Err(source) => {
                    report.problems.push(Problem::ReadDir { dir: root.join(&p.rel), source });
                    continue;
                }
            },
        };
        let entries = match dir.entries() {
            Ok(entries) => entries,
            Err(source) => {
                report.problems.push(Problem::ReadDir { dir: root.join(&rel), source });
                continue;
            }
        };
        for entry in entries {
            if report.entries >= max_entries {
                return false;
            }
            report.entries += 1;
            let entry = match entry {
                Ok(entry) => entry,
                Err(source) => {
                    report.problems.push(Problem::ReadDir { dir: root.join(&rel), source });
                    break;
                }
            };
            let name = entry.file_name();
            // The entry's own type: a symlink is a symlink, never its target.
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                if let Ok(meta) = dir.symlink_metadata(&name)
                    && meta.is_dir()
                {
                    stack.push(Some(Pending { rel: rel.join(&name), dev: meta.dev(), ino: meta.ino() }));
                }
            } else if kind.is_file() && is_temp_name(&name) {
                remove_if_stale(&dir, &name, &root.join(&rel).join(&name), started, report);
            }
        }
    }
    true
}

/// Opens a listed directory again from its root, if it is still the same one:
/// a component swapped for a symlink or another directory leads elsewhere.
fn open_same(root_dir: &Dir, pending: &Pending) -> io::Result<Option<Dir>> {
    let dir = root_dir.open_dir(&pending.rel)?;
    let meta = dir.dir_metadata()?;
    Ok((meta.dev() == pending.dev && meta.ino() == pending.ino).then_some(dir))
}

fn remove_if_stale(dir: &Dir, name: &OsStr, shown: &Path, started: SystemTime, report: &mut Report) {
    let Ok(meta) = dir.symlink_metadata(name) else { return };
    let stale = meta.is_file() && meta.modified().is_ok_and(|t| t.into_std() < started);
    if !stale {
        return;
    }
    match dir.remove_file(name) {
        Ok(()) => report.removed.push(shown.to_path_buf()),
        // Renamed into place or removed meanwhile: nothing stray is left.
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(source) => report.problems.push(Problem::Remove { path: shown.to_path_buf(), source }),
    }
}

#[cfg(test)]
mod tests {
    use std::fs::{self, File};
    use std::time::Duration;

    use super::*;

    const HEX: &str = "0123456789abcdef";

    fn temp_name(target: &str) -> String {
        format!("{TEMP_PREFIX}{target}.{HEX}{TEMP_SUFFIX}")
    }

    /// Creates `path` with its modification time `age` before (or after) now.
    fn file_aged(path: &Path, age: Duration, older: bool) {
        fs::write(path, b"partial").unwrap();
        let now = SystemTime::now();
        let mtime = if older { now - age } else { now + age };
        File::options().write(true).open(path).unwrap().set_modified(mtime).unwrap();
    }

    fn old(path: &Path) {
        file_aged(path, Duration::from_secs(3600), true);
    }

    fn rw(path: &Path) -> Root {
        Root { path: path.canonicalize().unwrap().to_str().unwrap().into(), mode: Mode::ReadWrite }
    }

    #[test]
    fn only_exact_temporary_names_match() {
        for good in [temp_name("a.txt"), temp_name("x"), temp_name(".hidden"), temp_name("a.b.c"), temp_name("ü")] {
            assert!(is_temp_name(OsStr::new(&good)), "{good}");
        }
        let bad = [
            ".cordon-.0123456789abcdef.tmp".to_string(), // no target name
            ".cordon-a.0123456789ABCDEF.tmp".into(),     // upper case
            ".cordon-a.0123456789abcde.tmp".into(),      // 15 digits
            ".cordon-a.0123456789abcdef0.tmp".into(),    // 17 digits
            ".cordon-a.0123456789abcdeg.tmp".into(),     // not hex
            ".cordon-notes.tmp".into(),                  // no random part
            ".cordon-a.0123456789abcdef.tmp.bak".into(), // something after
            "cordon-a.0123456789abcdef.tmp".into(),      // no leading dot
            "x.cordon-a.0123456789abcdef.tmp".into(),    // something before
            ".cordon-a0123456789abcdef.tmp".into(),      // no dot before the digits
            ".Cordon-a.0123456789abcdef.tmp".into(),     // other case
            ".cordon-a.0123456789abcdef.TMP".into(),     // other case
            ".cordon-0123456789abcdef.tmp".into(),       // the digits alone
            "".into(),
        ];
        for name in bad {
            assert!(!is_temp_name(OsStr::new(&name)), "{name:?} must not match");
        }
    }

    #[test]
    fn the_pattern_is_the_one_the_guest_sdk_writes() {
        let sdk = include_str!("../../tools/sdk/src/atomic.rs");
        assert!(sdk.contains(&format!("pub const TEMP_PREFIX: &str = \"{TEMP_PREFIX}\";")));
        assert!(sdk.contains(&format!("pub const TEMP_SUFFIX: &str = \"{TEMP_SUFFIX}\";")));
        assert!(sdk.contains("format!(\"{TEMP_PREFIX}{name}.{:016x}{TEMP_SUFFIX}\""), "the name format changed");
    }

    #[test]
    fn old_temporary_files_are_removed_at_any_depth_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("a/b/.hidden/c")).unwrap();
        let stray = [root.join(temp_name("top.txt")), root.join("a/b/.hidden/c").join(temp_name("deep.bin"))];
        stray.iter().for_each(|p| old(p));
        let kept = [root.join("user.txt"), root.join("a/.cordon-notes.tmp"), root.join("a/b").join("x.tmp")];
        kept.iter().for_each(|p| old(p));
        // A directory with the name is not a file; it stays, and is walked.
        fs::create_dir(root.join(temp_name("dir"))).unwrap();
        old(&root.join(temp_name("dir")).join(temp_name("inside")));

        let report = sweep(&[rw(root)], SystemTime::now(), MAX_ENTRIES);
        assert!(report.complete && report.problems.is_empty(), "{report:?}");
        assert_eq!(report.removed.len(), 3, "{report:?}");
        assert!(stray.iter().all(|p| !p.exists()));
        assert!(kept.iter().all(|p| p.exists()));
        assert!(root.join(temp_name("dir")).is_dir());
        assert_eq!(report.entries, 11);
    }

    #[test]
    fn files_younger_than_the_start_and_read_only_roots_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (live, ro) = (dir.path().join("live"), dir.path().join("ro"));
        fs::create_dir_all(&live).unwrap();
        fs::create_dir_all(&ro).unwrap();
        let young = live.join(temp_name("being-written"));
        file_aged(&young, Duration::from_secs(60), false);
        let in_ro = ro.join(temp_name("f"));
        old(&in_ro);
        let ro_root = Root { mode: Mode::ReadOnly, ..rw(&ro) };

        let report = sweep(&[rw(&live), ro_root], SystemTime::now(), MAX_ENTRIES);
        assert!(report.removed.is_empty(), "{report:?}");
        assert!(young.exists() && in_ro.exists());
        assert_eq!(report.roots, 1);
    }

    #[test]
    fn symlinks_are_neither_followed_nor_removed() {
        let dir = tempfile::tempdir().unwrap();
        let (root, outside) = (dir.path().join("root"), dir.path().join("outside"));
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&outside).unwrap();
        let outside_temp = outside.join(temp_name("secret"));
        old(&outside_temp);
        std::os::unix::fs::symlink(&outside, root.join("link-to-outside")).unwrap();
        let link_named_like_temp = root.join(temp_name("link"));
        std::os::unix::fs::symlink(&outside_temp, &link_named_like_temp).unwrap();

        let report = sweep(&[rw(&root)], SystemTime::now() + Duration::from_secs(7200), MAX_ENTRIES);
        assert!(report.removed.is_empty(), "{report:?}");
        assert!(outside_temp.exists(), "nothing outside the root is touched");
        assert!(link_named_like_temp.symlink_metadata().is_ok(), "a symlink is not a temporary file");
    }

    #[test]
    fn the_walk_stops_at_its_entry_bound_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..10 {
            old(&dir.path().join(format!("f{i}")));
        }
        let report = sweep(&[rw(dir.path())], SystemTime::now(), 4);
        assert!(!report.complete);
        assert_eq!(report.entries, 4);
        let report = sweep(&[rw(dir.path())], SystemTime::now(), 10);
        assert!(report.complete, "exactly the bound is a complete walk");
    }

    #[test]
    fn a_root_inside_another_is_walked_once_and_missing_roots_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("inner");
        fs::create_dir_all(&inner).unwrap();
        old(&inner.join(temp_name("f")));
        let elsewhere = tempfile::tempdir().unwrap();
        let gone = Root { path: elsewhere.path().join("gone").to_str().unwrap().into(), mode: Mode::ReadWrite };
        let roots = [rw(&inner), rw(dir.path()), rw(dir.path()), gone];
        let report = sweep(&roots, SystemTime::now(), MAX_ENTRIES);
        assert_eq!(report.removed.len(), 1, "{report:?}");
        assert_eq!(report.roots, 2);
        assert!(matches!(report.problems.as_slice(), [Problem::OpenRoot { .. }]), "{report:?}");
        assert!(report.problems[0].to_string().contains("could not open root"));
    }

    #[test]
    fn the_background_sweep_returns_its_report_and_runs_only_for_read_write_roots() {
        let dir = tempfile::tempdir().unwrap();
        old(&dir.path().join(temp_name("f")));
        let report = spawn(&[rw(dir.path())], SystemTime::now()).unwrap().join().unwrap();
        assert_eq!(report.removed.len(), 1);
        let read_only = Root { mode: Mode::ReadOnly, ..rw(dir.path()) };
        assert!(spawn(&[read_only], SystemTime::now()).is_none(), "no read-write root, no sweep");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_sweep_runs_at_the_lowest_priority_and_leaves_other_threads_as_they_were() {
        // SAFETY: reads this thread's own nice value.
        let nice = || unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) };
        let before = nice();
        let lowered = std::thread::spawn(move || {
            lowest_priority();
            nice()
        });
        assert_eq!(lowered.join().unwrap(), 19);
        assert_eq!(nice(), before, "only the sweep's own thread");
    }
}
