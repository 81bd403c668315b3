//! Describing one path: its type, size, time, what WASI tells of its
//! permissions, whether it is a symlink, and optionally its line count.

use std::io::Read;
use std::path::Path;

use cordon_sdk::{Error, paths};
use serde::Serialize;

/// What the tool reports about a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Description {
    /// The absolute path.
    pub path: String,
    /// `file`, `dir` or `other`, of what the path leads to (symlinks followed).
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The size in bytes (of the target, for a symlink).
    pub size: u64,
    /// The modification time in nanoseconds since the Unix epoch.
    pub mtime_ns: u64,
    /// What is known of the permissions.
    pub permissions: Permissions,
    /// Whether the path itself is a symlink.
    pub is_symlink: bool,
    /// The number of lines, when asked for and the path is a regular file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<u64>,
}

/// The permissions a platform exposes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Permissions {
    /// Whether the file has no write permission at all; `None` (JSON `null`)
    /// where the platform does not tell, as under WASI, which exposes no mode
    /// bits or read-only attribute.
    pub readonly: Option<bool>,
}

/// Describes `path`, shown in errors as `shown`; counts lines when `count_lines`
/// and the path leads to a regular file.
pub fn describe(path: &Path, shown: &str, count_lines: bool) -> Result<Description, Error> {
    let what = format!("`{shown}`");
    let link = std::fs::symlink_metadata(path).map_err(|e| Error::io(&what, &e))?;
    let meta = std::fs::metadata(path).map_err(|e| Error::io(&what, &e))?;
    let kind = paths::kind(&meta);
    let lines = if count_lines && meta.is_file() {
        let file = std::fs::File::open(path).map_err(|e| Error::io(&what, &e))?;
        Some(count(file).map_err(|e| Error::io(&what, &e))?)
    } else {
        None
    };
    Ok(Description {
        path: shown.to_string(),
        kind,
        size: meta.len(),
        mtime_ns: paths::mtime_ns(&meta),
        permissions: Permissions { readonly: readonly(&meta) },
        is_symlink: link.file_type().is_symlink(),
        lines,
    })
}

/// Whether the file is read-only: unknown under WASI (std reports `false`
/// for every file there, which would be a guess, not an answer).
fn readonly(meta: &std::fs::Metadata) -> Option<bool> {
    if cfg!(target_os = "wasi") { None } else { Some(meta.permissions().readonly()) }
}

/// The lines in `reader`: its `\n` bytes, plus one for a last line without a
/// final newline. A CRLF ends one line; a lone `\r` ends none; empty input has 0.
pub fn count(mut reader: impl Read) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 64 * 1024];
    let (mut lines, mut last) = (0u64, b'\n');
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        last = buf[n - 1];
    }
    Ok(lines + u64::from(last != b'\n'))
}
