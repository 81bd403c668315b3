//! A directory's entries in four system calls: `openat2` of the directory
//! beneath its root, two `getdents64` into one buffer, `close`.
//!
//! cap-std's `open_dir` then `entries` opens a directory three times (an
//! `O_PATH` handle, then `.` to read it, then `.` again for an offset of its
//! own), asks its flags, and reads it into a buffer that starts at 768 bytes:
//! ten system calls for a directory of fifty entries, most of a walk's time
//! in the kernel. The open here is the one cap-std makes itself on Linux
//! (`RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`, `O_NOFOLLOW` unless a symlink
//! at the end is followed), without `O_PATH`. Whatever it refuses (a symlink
//! not followed, a path that leaves the root, a kernel without `openat2`) is
//! opened by cap-std instead, which says why with the error it always gave.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use cap_fs_ext::DirExt;
use cap_std::fs::{Dir, FileType};
use rustix::fs::{AtFlags, FileType as RawType, Mode, OFlags, RawDir, ResolveFlags};
use rustix::io::Errno;

use super::bindings::WitError;
use super::bindings::cordon::tool::scan::EntryKind;

/// The buffer one `getdents64` fills: a directory of a few hundred entries
/// in one call (the next call says the end).
const BUFFER: usize = 32 << 10;

/// Gives `keep` each entry of `rel` (`.` for `dir` itself) beneath `dir`, in
/// the order the directory gives them, but `.`, `..` and names that are not
/// UTF-8; the directory read in four system calls, or by cap-std when the
/// one-call open refuses it. Stops at `keep`'s first error.
pub(super) fn list(
    dir: &Dir,
    rel: &str,
    follow: bool,
    keep: &mut impl FnMut(String, EntryKind) -> Result<(), WitError>,
) -> Result<(), Failed> {
    if let Some(fd) = open(dir, rel, follow) {
        return read(&fd, keep);
    }
    let opened;
    let dir = match rel {
        "." => dir,
        rel => {
            opened = if follow { dir.open_dir(rel) } else { dir.open_dir_nofollow(rel) }.map_err(Failed::Io)?;
            &opened
        }
    };
    for entry in dir.entries().map_err(Failed::Io)? {
        let entry = entry.map_err(Failed::Io)?;
        let Ok(name) = entry.file_name().into_string() else { continue };
        let kind = kind_of(&entry.file_type().map_err(Failed::Io)?);
        keep(name, kind).map_err(Failed::Kept)?;
    }
    Ok(())
}

/// `rel` (`.` for `dir` itself) opened for reading beneath `dir`, or `None`
/// when the one-call open refuses it (see the module's note).
fn open(dir: &Dir, rel: &str, follow: bool) -> Option<OwnedFd> {
    if NO_OPENAT2.load(Ordering::Relaxed) {
        return None;
    }
    let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    match rustix::fs::openat2(dir, rel, flags, Mode::empty(), resolve) {
        Ok(fd) => Some(fd),
        // No `openat2` here (an old kernel, a seccomp filter): not asked again.
        Err(Errno::NOSYS | Errno::PERM) => {
            NO_OPENAT2.store(true, Ordering::Relaxed);
            None
        }
        Err(_) => None,
    }
}

/// Set once `openat2` is found missing: every directory is then opened by cap-std.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Gives `keep` each entry of the open directory `fd` but `.` and `..`, with
/// its kind, in the order the directory gives them; a name that is not
/// UTF-8 is left out, as cap-std's listing left it out. Stops at `keep`'s
/// first error.
fn read(fd: &OwnedFd, keep: &mut impl FnMut(String, EntryKind) -> Result<(), WitError>) -> Result<(), Failed> {
    let mut buffer = vec![MaybeUninit::<u8>::uninit(); BUFFER];
    let mut entries = RawDir::new(fd.as_fd(), &mut buffer);
    while let Some(entry) = entries.next() {
        let entry = match entry {
            // The directory was removed while it was read: its end, as
            // cap-std's listing (rustix's `Dir`) takes it.
            Err(Errno::NOENT) => break,
            entry => entry.map_err(|e| Failed::Io(e.into()))?,
        };
        let bytes = entry.file_name().to_bytes();
        if bytes == b"." || bytes == b".." {
            continue;
        }
        let Ok(name) = std::str::from_utf8(bytes) else { continue };
        let kind = match entry.file_type() {
            // A filesystem that does not say the type in the listing: asked
            // of the entry itself, as cap-std's `file_type` asks it.
            RawType::Unknown => {
                let stat = rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| Failed::Io(e.into()))?;
                raw_kind(RawType::from_raw_mode(stat.st_mode))
            }
            listed => raw_kind(listed),
        };
        keep(name.to_owned(), kind).map_err(Failed::Kept)?;
    }
    Ok(())
}

/// Why `read` stopped.
pub(super) enum Failed {
    /// The directory could not be read.
    Io(io::Error),
    /// `keep` refused an entry.
    Kept(WitError),
}

/// The contract's kind of an entry of type `t`.
fn raw_kind(t: RawType) -> EntryKind {
    match t {
        RawType::RegularFile => EntryKind::File,
        RawType::Directory => EntryKind::Directory,
        RawType::Symlink => EntryKind::Symlink,
        _ => EntryKind::Other,
    }
}

/// The contract's kind of an entry cap-std listed.
fn kind_of(file_type: &FileType) -> EntryKind {
    if file_type.is_file() {
        EntryKind::File
    } else if file_type.is_dir() {
        EntryKind::Directory
    } else if file_type.is_symlink() {
        EntryKind::Symlink
    } else {
        EntryKind::Other
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    use cap_std::ambient_authority;

    use super::*;

    /// Every entry `read` gives, or the error it stopped at.
    fn listed(fd: &OwnedFd) -> Vec<(String, EntryKind)> {
        let mut got = Vec::new();
        let mut keep = |name: String, kind: EntryKind| {
            got.push((name, kind));
            Ok(())
        };
        assert!(read(fd, &mut keep).is_ok());
        got.sort_by(|a, b| a.0.cmp(&b.0));
        got
    }

    #[test]
    fn a_directory_is_listed_as_cap_std_lists_it_and_what_it_refuses_is_left_to_cap_std() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        std::fs::create_dir_all(base.join("root/sub")).unwrap();
        std::fs::write(base.join("root/file.txt"), "x").unwrap();
        std::fs::write(base.join("outside.txt"), "x").unwrap();
        std::os::unix::fs::symlink("sub", base.join("root/link")).unwrap();
        std::os::unix::fs::symlink("../", base.join("root/up")).unwrap();
        std::fs::write(base.join("root").join(OsStr::from_bytes(b"not-utf8-\xff")), "x").unwrap();
        let fifo = std::ffi::CString::new(base.join("root/fifo").as_os_str().as_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let root = Dir::open_ambient_dir(base.join("root"), ambient_authority()).unwrap();

        let here = open(&root, ".", false).expect("the root itself");
        let ours = listed(&here);
        let mut theirs: Vec<_> = root
            .entries()
            .unwrap()
            .filter_map(|e| {
                let e = e.unwrap();
                Some((e.file_name().into_string().ok()?, kind_of(&e.file_type().unwrap())))
            })
            .collect();
        theirs.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(ours, theirs, "the same names and kinds, the name that is not UTF-8 left out");
        let kinds: Vec<_> = ours.iter().map(|(n, k)| (n.as_str(), *k)).collect();
        assert_eq!(
            kinds,
            [
                ("fifo", EntryKind::Other),
                ("file.txt", EntryKind::File),
                ("link", EntryKind::Symlink),
                ("sub", EntryKind::Directory),
                ("up", EntryKind::Symlink),
            ]
        );

        assert!(open(&root, "sub", false).is_some());
        assert!(open(&root, "link", false).is_none(), "a symlink not followed: cap-std says why");
        assert!(open(&root, "link", true).is_some(), "followed inside the root");
        assert!(open(&root, "up", true).is_none(), "a symlink out of the root is not opened");
        assert!(open(&root, "..", false).is_none(), "nor a path out of it");
        assert!(open(&root, "file.txt", false).is_none(), "nor a file");
    }

    #[test]
    fn a_directory_larger_than_the_buffer_is_listed_whole() {
        let tmp = tempfile::tempdir().unwrap();
        // About 200 KB of directory entries: six refills of the buffer.
        let names: Vec<String> = (0..3000).map(|i| format!("{i:05}-{}", "n".repeat(40))).collect();
        for name in &names {
            std::fs::write(tmp.path().join(name), "").unwrap();
        }
        let root = Dir::open_ambient_dir(tmp.path(), ambient_authority()).unwrap();
        let got: Vec<String> = listed(&open(&root, ".", false).unwrap()).into_iter().map(|(name, _)| name).collect();
        assert_eq!(got, names, "every entry once, none lost between two reads");
    }

    #[test]
    fn listing_stops_at_the_first_entry_refused() {
        let tmp = tempfile::tempdir().unwrap();
        for name in ["a", "b", "c"] {
            std::fs::write(tmp.path().join(name), "x").unwrap();
        }
        let root = Dir::open_ambient_dir(tmp.path(), ambient_authority()).unwrap();
        let fd = open(&root, ".", false).unwrap();
        let mut seen = 0;
        let mut keep = |_: String, _: EntryKind| {
            seen += 1;
            match seen {
                2 => Err(WitError { code: super::super::bindings::WitErrorCode::TooLarge, message: "full".into() }),
                _ => Ok(()),
            }
        };
        match read(&fd, &mut keep) {
            Err(Failed::Kept(e)) => assert_eq!(e.message, "full"),
            _ => panic!("the refusal is given back"),
        }
        assert_eq!(seen, 2, "nothing after the refusal");
    }
}
