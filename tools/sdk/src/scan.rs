//! What scanning many files needs, cheaply: a directory's entries with their
//! types, and a file's first bytes. In a component through the host's `scan`
//! import (one directory read and no stat per entry; a file's head in one host
//! call; deny rules applied by the host); natively through `std::fs` (for unit
//! tests). An entry's own metadata is `paths::stat`'s (one WASI stat).

use std::path::Path;

use crate::{Error, ErrorCode};

/// The most entries one directory may hold for a walk.
pub const MAX_ENTRIES: u32 = 1 << 20;

/// What an entry is, as the directory read tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed by a walk).
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

#[cfg(not(target_arch = "wasm32"))]
impl Kind {
    /// What a file type is, as the walks name it (natively).
    pub(crate) fn of(t: std::fs::FileType) -> Kind {
        if t.is_file() {
            Kind::File
        } else if t.is_dir() {
            Kind::Dir
        } else if t.is_symlink() {
            Kind::Symlink
        } else {
            Kind::Other
        }
    }
}

/// One entry of a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's name.
    pub name: String,
    /// What it is.
    pub kind: Kind,
}

/// An entry's own (unfollowed) metadata, as the walking tools report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// What it is.
    pub kind: Kind,
    /// The size in bytes (a symlink's own size).
    pub size: u64,
    /// The modification time in nanoseconds since the Unix epoch (0: unknown).
    pub mtime_ns: u64,
}

/// The first bytes of the regular file at `path` (absolute, inside a granted
/// root; a symlink is followed only with `follow`, for a file a client named),
/// at most `max`, and whether they are the whole file: one host call in place
/// of an open, a stream and its reads.
pub fn read_head(path: &Path, follow: bool, max: u32) -> Result<(Vec<u8>, bool), Error> {
    imp::read_head(path, follow, max)
}

/// What [`read_head_seeking`] gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sought {
    /// The first bytes and whether they are the whole file, as
    /// [`read_head`] gives them: a needle is among them, or they are not the
    /// whole file.
    Bytes(Vec<u8>, bool),
    /// The file, read whole, holds none of the needles: its size, and where
    /// its first NUL byte lies, if it has one. Its bytes were not copied.
    NoneFound { size: u32, first_nul: Option<u32> },
}

/// The bounds of [`read_head_seeking`]'s needles (the contract's).
pub use cordon_contract::{MAX_NEEDLE, MAX_NEEDLES};

/// How [`read_head_seeking`] reads a file, and what it looks for: made once
/// for a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seeking {
    /// The most bytes read, as [`read_head`]'s `max` (at most 1 MiB).
    pub max: u32,
    /// Byte strings at least one of which every match of the search holds:
    /// 1 to [`MAX_NEEDLES`], each of 1 to [`MAX_NEEDLE`] bytes.
    pub needles: Vec<Vec<u8>>,
    /// 0, or a file whose first `nul_probe` bytes hold a NUL byte is read no
    /// further: they alone are given, not whole (a search's binary file,
    /// ripgrep's rule).
    pub nul_probe: u32,
    /// Whether a needle is found in any ASCII case (`A` for `a`); other
    /// bytes as they are.
    pub ascii_case_insensitive: bool,
}

/// [`read_head`] for a search that knows its needles (see [`Seeking`]): when
/// the bytes read are the whole file and hold none of them, the host says so
/// in place of the bytes, so a file that cannot match never crosses into the
/// tool. Other needles fail with `InvalidArgument`.
pub fn read_head_seeking(path: &Path, follow: bool, seeking: &Seeking) -> Result<Sought, Error> {
    imp::read_head_seeking(path, follow, seeking)
}

/// The entries of the directory `dir` (absolute, inside a granted root),
/// sorted by name (bytewise), without the entries the server denies. Names
/// that are not UTF-8 are left out (WASI cannot name them). A `dir` that is a
/// symlink is followed (inside its root) only with `follow`.
pub fn read_dir(dir: &Path, follow: bool) -> Result<Vec<DirEntry>, Error> {
    imp::read_dir(dir, follow)
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use super::*;
    use crate::component::cordon::tool::scan::{self, EntryKind};

    /// A path as WIT passes it: UTF-8, or not found (WASI cannot name it).
    fn text_of(path: &Path) -> Result<&str, Error> {
        let text = path.to_str();
        text.ok_or_else(|| Error::new(ErrorCode::NotFound, format!("`{}` is not UTF-8", path.display())))
    }

    pub fn read_head(path: &Path, follow: bool, max: u32) -> Result<(Vec<u8>, bool), Error> {
        let text = text_of(path)?;
        scan::read_head(text, follow, max).map_err(crate::component::from_wit)
    }

    pub fn read_head_seeking(path: &Path, follow: bool, seeking: &Seeking) -> Result<Sought, Error> {
        let text = text_of(path)?;
        let wit = scan::Seeking {
            max: seeking.max,
            needles: seeking.needles.clone(),
            nul_probe: seeking.nul_probe,
            ascii_case_insensitive: seeking.ascii_case_insensitive,
        };
        match scan::read_head_seeking(text, follow, &wit).map_err(crate::component::from_wit)? {
            scan::SoughtHead::Bytes((bytes, whole)) => Ok(Sought::Bytes(bytes, whole)),
            scan::SoughtHead::NoneFound(none) => Ok(Sought::NoneFound { size: none.size, first_nul: none.first_nul }),
        }
    }

    pub fn read_dir(dir: &Path, follow: bool) -> Result<Vec<DirEntry>, Error> {
        let path = text_of(dir)?;
        let entries = scan::read_dir(path, follow, MAX_ENTRIES).map_err(crate::component::from_wit)?;
        Ok(entries
            .into_iter()
            .map(|e| DirEntry {
                name: e.name,
                kind: match e.kind {
                    EntryKind::File => Kind::File,
                    EntryKind::Directory => Kind::Dir,
                    EntryKind::Symlink => Kind::Symlink,
                    EntryKind::Other => Kind::Other,
                },
            })
            .collect())
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::*;

    /// Refuses `path` when it is a symlink and `follow` is off, as the host does.
    fn not_a_link(path: &Path, follow: bool, shown: &str) -> Result<(), Error> {
        match !follow && std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            true => Err(Error::new(ErrorCode::Io, format!("{shown} is a symlink, not followed"))),
            false => Ok(()),
        }
    }

    pub fn read_head(path: &Path, follow: bool, max: u32) -> Result<(Vec<u8>, bool), Error> {
        use std::io::Read;
        let shown = format!("`{}`", path.display());
        not_a_link(path, follow, &shown)?;
        let file = std::fs::File::open(path).map_err(|e| Error::io(&shown, &e))?;
        let mut bytes = Vec::new();
        file.take(u64::from(max) + 1).read_to_end(&mut bytes).map_err(|e| Error::io(&shown, &e))?;
        let whole = bytes.len() <= max as usize;
        bytes.truncate(max as usize);
        Ok((bytes, whole))
    }

    /// As the host answers: the needles checked before the file is read.
    pub fn read_head_seeking(path: &Path, follow: bool, seeking: &Seeking) -> Result<Sought, Error> {
        let Seeking { max, needles, nul_probe, ascii_case_insensitive } = seeking;
        cordon_contract::check_needles(needles).map_err(|message| Error::new(ErrorCode::InvalidArgument, message))?;
        let (mut bytes, mut whole) = read_head(path, follow, (*max).min(1 << 20))?;
        let probe = *nul_probe as usize;
        if probe > 0 && bytes.len() > probe && memchr::memchr(0, &bytes[..probe]).is_some() {
            bytes.truncate(probe);
            whole = false;
        }
        let found = match ascii_case_insensitive {
            true => {
                let hay = bytes.to_ascii_lowercase();
                needles.iter().any(|n| memchr::memmem::find(&hay, &n.to_ascii_lowercase()).is_some())
            }
            false => needles.iter().any(|n| memchr::memmem::find(&bytes, n).is_some()),
        };
        if !whole || found {
            return Ok(Sought::Bytes(bytes, whole));
        }
        let first_nul = memchr::memchr(0, &bytes).map(|at| at as u32);
        Ok(Sought::NoneFound { size: bytes.len() as u32, first_nul })
    }

    pub fn read_dir(dir: &Path, follow: bool) -> Result<Vec<DirEntry>, Error> {
        let shown = format!("`{}`", dir.display());
        not_a_link(dir, follow, &shown)?;
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| Error::io(&shown, &e))? {
            let entry = entry.map_err(|e| Error::io(&shown, &e))?;
            let Ok(name) = entry.file_name().into_string() else { continue };
            let kind = Kind::of(entry.file_type().map_err(|e| Error::io(&shown, &e))?);
            if entries.len() == MAX_ENTRIES as usize {
                return Err(Error::new(ErrorCode::TooLarge, format!("{shown} holds more than {MAX_ENTRIES} entries")));
            }
            entries.push(DirEntry { name, kind });
        }
        entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }
}

/// The modification time in nanoseconds since the Unix epoch, 0 if unknown.
pub fn mtime_ns(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
