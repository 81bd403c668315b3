//! Turning a client's path into one inside a granted root.
//!
//! The sandbox (WASI preopens) is what keeps a tool inside its roots: `..`,
//! absolute paths elsewhere and symlinks that leave a root all fail to open. This
//! module runs first so that the common mistakes get a clear answer naming the
//! roots, and so that `root_evil` is never taken for being inside `root`: the
//! check compares whole path components, not string prefixes.

use std::path::{Component, Path, PathBuf};

use crate::scan::{Kind, Stat};
use crate::{Error, ErrorCode};

/// Resolves `input` against `roots` (absolute paths, first one the default).
///
/// A relative path is taken relative to the first root. The result is normalised
/// lexically (`.` dropped, `..` applied) without touching the filesystem and must
/// lie inside one of the roots, and not be denied by the server's deny rules
/// ([`crate::policy::check`]).
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
        crate::policy::check(&normal, input)?;
        Ok(normal)
    } else {
        Err(Error::new(
            ErrorCode::PermissionDenied,
            format!(
                "`{input}` resolves to {}, which is outside every root granted to this call ({}); using it needs a \
                 root that covers it (`--root DIR` or `[[roots]]` in the configuration) and, if the client set \
                 roots, one of the client's",
                normal.display(),
                roots.join(", ")
            ),
        ))
    }
}

/// Resolves an optional path argument: [`resolve`] of `input`, or the first
/// root when it is absent (a directory tool's `path`, by default the first root).
pub fn resolve_or_first_root(roots: &[String], input: Option<&str>) -> Result<PathBuf, Error> {
    resolve(roots, input.unwrap_or("."))
}

/// `text` after `prefix`, if it starts with it: as `str::strip_prefix`, with
/// the bytes compared eight at a time. In a component, `strip_prefix` is
/// wasi-libc's `memcmp`, a byte at a time, and walks ask this of every entry
/// (its path below the walk's root, and below each directory of its ignore
/// files): 3–4 % of a glob's time.
pub fn strip_text_prefix<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let (head, prefix_bytes) = (text.as_bytes().get(..prefix.len())?, prefix.as_bytes());
    let whole = prefix.len() / 8 * 8;
    let word = |w: &[u8]| u64::from_ne_bytes(w.try_into().expect("eight bytes"));
    let same = head.chunks_exact(8).zip(prefix_bytes.chunks_exact(8)).all(|(a, b)| word(a) == word(b))
        && head[whole..] == prefix_bytes[whole..];
    // Equal bytes end where `prefix`, whole characters, ends: a boundary.
    if same { text.get(prefix.len()..) } else { None }
}

/// Finds the root that holds `path` (the longest, when roots nest) and returns
/// its index with `path` relative to it (`.` for the root itself).
pub fn within_root<'a>(roots: &[&str], path: &'a Path) -> Option<(usize, &'a Path)> {
    roots
        .iter()
        .enumerate()
        // Of the roots that hold it, the longest is the deepest (roots are
        // absolute and normalized).
        .filter_map(|(i, root)| path.strip_prefix(root).ok().map(|rel| (i, root.len(), rel)))
        .max_by_key(|&(_, len, _)| len)
        .map(|(i, _, rel)| (i, if rel.as_os_str().is_empty() { Path::new(".") } else { rel }))
}

/// Runs `op` on the preopen that holds `path`, with `path` relative to it,
/// mapping WASI error codes like `Error::io` does. `shown` names the path.
#[cfg(target_arch = "wasm32")]
pub(crate) fn at_preopen<T>(
    path: &Path,
    shown: &str,
    op: impl FnOnce(&wasip2::filesystem::types::Descriptor, &str) -> Result<T, wasip2::filesystem::types::ErrorCode>,
) -> Result<T, Error> {
    crate::preopens::with(|dirs| {
        let roots: Vec<&str> = dirs.iter().map(|(_, root)| root.as_str()).collect();
        let (index, relative) = within_root(&roots, path).ok_or_else(|| {
            Error::new(
                ErrorCode::PermissionDenied,
                format!("`{shown}` is outside every granted root ({})", roots.join(", ")),
            )
        })?;
        let relative =
            relative.to_str().ok_or_else(|| Error::new(ErrorCode::InvalidArgument, "`path` is not UTF-8"))?;
        op(&dirs[index].0, relative).map_err(|code| Error::io(&format!("`{shown}`"), &wasi_io_error(code)))
    })
}

/// A WASI filesystem error code as the `io::Error` `Error::io` maps.
#[cfg(target_arch = "wasm32")]
pub(crate) fn wasi_io_error(code: wasip2::filesystem::types::ErrorCode) -> std::io::Error {
    use std::io::ErrorKind;
    use wasip2::filesystem::types::ErrorCode as Code;
    let kind = match code {
        Code::NoEntry => ErrorKind::NotFound,
        Code::Access | Code::NotPermitted | Code::ReadOnly => ErrorKind::PermissionDenied,
        Code::IsDirectory => ErrorKind::IsADirectory,
        _ => ErrorKind::Other,
    };
    std::io::Error::new(kind, code.message())
}

/// What identifies the file at `path` itself, whatever its size and time: a
/// hash of WASI's `metadata-hash-at`, asked of the preopen that holds `path`.
/// `shown` names the path in errors.
#[cfg(target_arch = "wasm32")]
pub fn identity(path: &Path, _meta: &std::fs::Metadata, shown: &str) -> Result<u64, Error> {
    identity_at(path, shown, true)
}

/// What identifies the file at `path` itself, asked of the preopen that
/// holds it (one host call, no metadata needed); a last component that is a
/// symlink is followed only with `follow` (without, the host looks the path
/// up with one `statx` instead of an open, a `statx` and a close).
#[cfg(target_arch = "wasm32")]
pub(crate) fn identity_at(path: &Path, shown: &str, follow: bool) -> Result<u64, Error> {
    use wasip2::filesystem::types::PathFlags;
    let flags = if follow { PathFlags::SYMLINK_FOLLOW } else { PathFlags::empty() };
    let hash = at_preopen(path, shown, |dir, rel| dir.metadata_hash_at(flags, rel))?;
    Ok(hash.lower ^ hash.upper.rotate_left(1))
}

/// The metadata of the entry at `path` (absolute, inside a granted root), a
/// symlink its last component is followed only with `follow`: one WASI
/// `stat-at`, without the second call (`metadata-hash-at`, for an inode
/// number) that `std::fs::symlink_metadata` and `std::fs::metadata` make
/// through wasi-libc. Errors name `path` as `Error::io` words them.
#[cfg(target_arch = "wasm32")]
pub fn stat(path: &Path, follow: bool) -> Result<Stat, Error> {
    use wasip2::filesystem::types::{DescriptorType, PathFlags};
    let flags = if follow { PathFlags::SYMLINK_FOLLOW } else { PathFlags::empty() };
    let st = at_preopen(path, &path.display().to_string(), |dir, rel| dir.stat_at(flags, rel))?;
    let kind = match st.type_ {
        DescriptorType::RegularFile => Kind::File,
        DescriptorType::Directory => Kind::Dir,
        DescriptorType::SymbolicLink => Kind::Symlink,
        _ => Kind::Other,
    };
    Ok(Stat { kind, size: st.size, mtime_ns: wasi_mtime_ns(&st) })
}

/// A WASI stat's modification time in nanoseconds since the Unix epoch, as
/// [`mtime_ns`] gives it natively (0: unknown; saturated past `u64`).
#[cfg(target_arch = "wasm32")]
pub(crate) fn wasi_mtime_ns(st: &wasip2::filesystem::types::DescriptorStat) -> u64 {
    st.data_modification_timestamp
        .map_or(0, |t| t.seconds.saturating_mul(1_000_000_000).saturating_add(u64::from(t.nanoseconds)))
}

/// The metadata of the entry at `path`, a symlink its last component is
/// followed only with `follow`.
#[cfg(not(target_arch = "wasm32"))]
pub fn stat(path: &Path, follow: bool) -> Result<Stat, Error> {
    let meta = if follow { std::fs::metadata(path) } else { std::fs::symlink_metadata(path) };
    let meta = meta.map_err(|e| Error::io(&format!("`{}`", path.display()), &e))?;
    Ok(Stat { kind: Kind::of(meta.file_type()), size: meta.len(), mtime_ns: mtime_ns(&meta) })
}

/// How many hard links the file at `path` has (the path itself not followed if
/// it is a symlink).
#[cfg(target_arch = "wasm32")]
pub fn link_count(path: &Path, shown: &str) -> Result<u64, Error> {
    use wasip2::filesystem::types::PathFlags;
    Ok(at_preopen(path, shown, |dir, rel| dir.stat_at(PathFlags::empty(), rel))?.link_count)
}

/// How many hard links the file at `path` has.
#[cfg(not(target_arch = "wasm32"))]
pub fn link_count(path: &Path, shown: &str) -> Result<u64, Error> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| Error::io(&format!("`{shown}`"), &e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Ok(meta.nlink())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Ok(1)
    }
}

/// What identifies the file at `path` itself, whatever its size and time: its
/// device and inode numbers combined.
#[cfg(all(unix, not(target_arch = "wasm32")))]
pub fn identity(_path: &Path, meta: &std::fs::Metadata, _shown: &str) -> Result<u64, Error> {
    use std::os::unix::fs::MetadataExt;
    Ok(meta.ino() ^ meta.dev().rotate_left(32))
}

/// What identifies the file at `path` itself: unknown (0) on this platform.
#[cfg(not(any(unix, target_arch = "wasm32")))]
pub fn identity(_path: &Path, _meta: &std::fs::Metadata, _shown: &str) -> Result<u64, Error> {
    Ok(0)
}

/// The entry type metadata describes, as tools report it: `file`, `dir`,
/// `symlink` (for unfollowed metadata) or `other`.
pub fn kind(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_symlink() {
        "symlink"
    } else if t.is_dir() {
        "dir"
    } else if t.is_file() {
        "file"
    } else {
        "other"
    }
}

pub use crate::scan::mtime_ns;

/// A filesystem entry as the walking tools (`list`, `glob`) report it: the
/// JSON object `{path, type, size, mtime_ns}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Entry {
    /// The absolute path.
    pub path: String,
    /// `file`, `dir`, `symlink` or `other` ([`kind`]), of the entry itself:
    /// symlinks are not followed.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The size in bytes (a symlink's own size).
    pub size: u64,
    /// The modification time in nanoseconds since the Unix epoch ([`mtime_ns`]).
    pub mtime_ns: u64,
}

impl Entry {
    /// The entry at `path`, described by one stat of its own (unfollowed)
    /// metadata ([`stat`]).
    pub fn at(path: &Path) -> Result<Entry, Error> {
        let stat = stat(path, false)?;
        let kind = match stat.kind {
            Kind::File => "file",
            Kind::Dir => "dir",
            Kind::Symlink => "symlink",
            Kind::Other => "other",
        };
        Ok(Entry { path: path.to_string_lossy().into_owned(), kind, size: stat.size, mtime_ns: stat.mtime_ns })
    }

    /// The entry at `path`, described by its own (unfollowed) metadata.
    pub fn new(path: &Path, meta: &std::fs::Metadata) -> Entry {
        Entry {
            path: path.to_string_lossy().into_owned(),
            kind: kind(meta),
            size: meta.len(),
            mtime_ns: mtime_ns(meta),
        }
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
    fn an_absent_path_argument_is_the_first_root() {
        assert_eq!(resolve_or_first_root(&roots(), None).unwrap(), Path::new("/srv/root"));
        assert_eq!(resolve_or_first_root(&roots(), Some("/data/other/x")).unwrap(), Path::new("/data/other/x"));
        assert_eq!(resolve_or_first_root(&roots(), Some("")).unwrap_err().code, ErrorCode::InvalidArgument);
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
    fn a_text_prefix_is_stripped_as_str_strip_prefix_does() {
        let texts =
            ["", "a", "/srv/root", "/srv/root/", "/srv/root/a/b.rs", "/srv/rooted/x", "/srv/ro", "/srv/röot/ä", "ä"];
        for text in texts {
            for prefix in texts.iter().chain(&["/srv/root/a/b.r", "/srv/root/a/b.rs/", "/srv/röot", "/srv/r\u{f6}"]) {
                assert_eq!(strip_text_prefix(text, prefix), text.strip_prefix(prefix), "{text:?} {prefix:?}");
            }
        }
        // Every length, and a difference at every place, about the words' edges.
        let long = "/a/very/long/root/of/a/walk/0123456789abcdef";
        for len in 0..=long.len() {
            let prefix = &long[..len];
            assert_eq!(strip_text_prefix(long, prefix), Some(&long[len..]));
            for at in 0..len {
                let mut bytes = prefix.as_bytes().to_vec();
                bytes[at] ^= 0x01;
                let changed = String::from_utf8(bytes).unwrap();
                assert_eq!(strip_text_prefix(long, &changed), None, "{changed:?}");
            }
        }
    }

    #[test]
    fn within_root_picks_the_deepest_root_and_gives_the_rest() {
        let roots = ["/srv", "/srv/root", "/data"];
        assert_eq!(within_root(&roots, Path::new("/srv/root/a/b")), Some((1, Path::new("a/b"))));
        assert_eq!(within_root(&roots, Path::new("/srv/other")), Some((0, Path::new("other"))));
        assert_eq!(within_root(&roots, Path::new("/data")), Some((2, Path::new("."))));
        assert_eq!(within_root(&roots, Path::new("/srv_evil/x")), None);
        assert_eq!(within_root(&roots, Path::new("/etc")), None);
    }

    #[test]
    fn no_roots_is_a_permission_error() {
        assert_eq!(resolve(&[], "a").unwrap_err().code, ErrorCode::PermissionDenied);
    }
}
