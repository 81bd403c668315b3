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

/// The whole content of a file named on the command line.
pub fn read_file(path: &Path) -> io::Result<Vec<u8>> {
    std::fs::read(path)
}

/// Opens an existing directory (a configured root) as a capability.
pub fn open_dir(path: &Path) -> io::Result<Dir> {
    Dir::open_ambient_dir(path, ambient_authority())
}
