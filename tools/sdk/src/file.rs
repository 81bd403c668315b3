//! A file a tool reads: opened once, read at offsets, and fingerprinted
//! mostly from its own descriptor.
//!
//! A stream's fingerprint (`Stream::fingerprint`) is asked for twice a page,
//! before and after it. Taken wholly by path, it is two lookups of the path on
//! the host (WASI's `stat-at` and `metadata-hash-at`, each an open, a stat and
//! a close); here the size and time come from the open descriptor (an
//! `fstat`) and only the identity from the path, so that a file deleted or
//! replaced under its name is still told from the one the stream reads.

use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::scan::{Kind, Stat};
use crate::{Error, Fingerprint};

/// A regular file opened for reading, with the position `Read` goes on from.
pub struct ReadFile {
    handle: imp::Handle,
    pos: u64,
    path: PathBuf,
    shown: String,
    /// Whether the path's identity is asked through a symlink its last
    /// component may be.
    follow: bool,
}

impl ReadFile {
    /// Opens `path` (absolute, inside a granted root) for reading, following
    /// symlinks as `std::fs::File::open` does. `shown` names it in errors.
    pub fn open(path: &Path, shown: &str) -> Result<ReadFile, Error> {
        let handle = imp::Handle::open(path, shown)?;
        Ok(ReadFile { handle, pos: 0, path: path.to_path_buf(), shown: shown.to_string(), follow: true })
    }

    /// Opens `path` as `open` does, given what the caller saw at the path
    /// just before without following a symlink (`paths::stat(path, false)`).
    /// When that was not a symlink, the fingerprint's identity is asked of the
    /// path without following one, which the host answers with one `statx`
    /// instead of an open, a `statx` and a close; a path replaced by a symlink
    /// since has another identity either way.
    pub fn open_seen(path: &Path, shown: &str, seen: &Stat) -> Result<ReadFile, Error> {
        let mut file = ReadFile::open(path, shown)?;
        file.follow = seen.kind == Kind::Symlink;
        Ok(file)
    }

    /// The fingerprint, read now: the open file's size and modification time,
    /// and the identity of the file its path names (not-found once it is
    /// deleted, another identity once it is replaced).
    pub fn fingerprint(&self) -> Result<Fingerprint, Error> {
        let (size, mtime_ns) = self.handle.size_and_time().map_err(|e| Error::io(&format!("`{}`", self.shown), &e))?;
        let identity = imp::identity(&self.path, &self.shown, self.follow)?;
        Ok(Fingerprint { size, mtime_ns, identity })
    }
}

impl Read for ReadFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.handle.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for ReadFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let from = |base: u64, by: i64| {
            base.checked_add_signed(by)
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a seek before the file's start"))
        };
        self.pos = match to {
            SeekFrom::Start(at) => at,
            SeekFrom::Current(by) => from(self.pos, by)?,
            SeekFrom::End(by) => from(self.handle.size_and_time()?.0, by)?,
        };
        Ok(self.pos)
    }
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use std::io;
    use std::path::Path;

    use wasip2::filesystem::types::{Descriptor, DescriptorFlags, OpenFlags, PathFlags};

    use crate::Error;
    use crate::paths::{at_preopen, wasi_io_error};

    pub struct Handle(Descriptor);

    impl Handle {
        pub fn open(path: &Path, shown: &str) -> Result<Handle, Error> {
            let open = |dir: &Descriptor, rel: &str| {
                dir.open_at(PathFlags::SYMLINK_FOLLOW, rel, OpenFlags::empty(), DescriptorFlags::READ)
            };
            at_preopen(path, shown, open).map(Handle)
        }

        pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
            let (bytes, _end) = self.0.read(buf.len() as u64, offset).map_err(wasi_io_error)?;
            let n = bytes.len().min(buf.len());
            buf[..n].copy_from_slice(&bytes[..n]);
            Ok(n)
        }

        /// The size, and the modification time as `paths::mtime_ns` gives it.
        pub fn size_and_time(&self) -> io::Result<(u64, u64)> {
            let stat = self.0.stat().map_err(wasi_io_error)?;
            Ok((stat.size, crate::paths::wasi_mtime_ns(&stat)))
        }
    }

    pub fn identity(path: &Path, shown: &str, follow: bool) -> Result<u64, Error> {
        crate::paths::identity_at(path, shown, follow)
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use std::fs::File;
    use std::io;
    use std::path::Path;

    use crate::{Error, paths};

    pub struct Handle(File);

    impl Handle {
        pub fn open(path: &Path, shown: &str) -> Result<Handle, Error> {
            File::open(path).map(Handle).map_err(|e| Error::io(&format!("`{shown}`"), &e))
        }

        #[cfg(unix)]
        pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
            std::os::unix::fs::FileExt::read_at(&self.0, buf, offset)
        }

        #[cfg(not(unix))]
        pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
            use std::io::{Read, Seek, SeekFrom};
            let mut file = &self.0;
            file.seek(SeekFrom::Start(offset))?;
            file.read(buf)
        }

        pub fn size_and_time(&self) -> io::Result<(u64, u64)> {
            let meta = self.0.metadata()?;
            Ok((meta.len(), paths::mtime_ns(&meta)))
        }
    }

    pub fn identity(path: &Path, shown: &str, follow: bool) -> Result<u64, Error> {
        let meta = if follow { std::fs::metadata(path) } else { std::fs::symlink_metadata(path) };
        let meta = meta.map_err(|e| Error::io(&format!("`{shown}`"), &e))?;
        paths::identity(path, &meta, shown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_from_its_position_and_fingerprints_the_open_file_and_its_name() {
        let dir = std::env::temp_dir().join(format!("cordon-sdk-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.txt");
        std::fs::write(&path, "hello, file").unwrap();
        let mut file = ReadFile::open(&path, "f.txt").unwrap();
        let mut text = String::new();
        file.seek(SeekFrom::Start(7)).unwrap();
        file.read_to_string(&mut text).unwrap();
        assert_eq!(text, "file");
        assert_eq!(file.seek(SeekFrom::End(-4)).unwrap(), 7);
        assert_eq!(file.seek(SeekFrom::Current(-7)).unwrap(), 0);
        assert!(file.seek(SeekFrom::Current(-1)).is_err(), "before the start");
        let before = file.fingerprint().unwrap();
        assert_eq!(before.size, 11);
        std::fs::write(&path, "hello, file, grown").unwrap();
        let grown = file.fingerprint().unwrap();
        assert_eq!((grown.size, grown.identity), (18, before.identity), "written in place");
        // Replaced under its name, then deleted: the path tells.
        let other = dir.join("g.txt");
        std::fs::write(&other, "another file").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_ne!(file.fingerprint().unwrap().identity, before.identity);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(file.fingerprint().unwrap_err().code, crate::ErrorCode::NotFound);
        let missing = ReadFile::open(&dir.join("none"), "none").err().unwrap();
        assert_eq!(missing.code, crate::ErrorCode::NotFound, "{missing:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_path_seen_as_a_file_or_as_a_link_is_fingerprinted_as_seen() {
        let dir = tempfile::Builder::new().prefix("cordon-sdk-seen-").tempdir().unwrap();
        let (path, target, link) = (dir.path().join("f.txt"), dir.path().join("t.txt"), dir.path().join("l.txt"));
        std::fs::write(&path, "a file").unwrap();
        std::fs::write(&target, "a target").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let seen = |p: &Path| crate::paths::stat(p, false).unwrap();
        // Seen as a file: the same identity as when opened by `open`.
        let file = ReadFile::open_seen(&path, "f.txt", &seen(&path)).unwrap();
        let followed = ReadFile::open(&path, "f.txt").unwrap();
        let before = file.fingerprint().unwrap();
        assert_eq!(before.identity, followed.fingerprint().unwrap().identity);
        // Then replaced by a link to another file: another identity.
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        assert_ne!(file.fingerprint().unwrap().identity, before.identity);
        // Seen as a link: the identity is its target's, as `open` gives it.
        let through = ReadFile::open_seen(&link, "l.txt", &seen(&link)).unwrap();
        let by_open = ReadFile::open(&link, "l.txt").unwrap();
        assert_eq!(through.fingerprint().unwrap().identity, by_open.fingerprint().unwrap().identity);
        assert_eq!(through.fingerprint().unwrap().size, 8);
    }
}
