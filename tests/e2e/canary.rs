//! A snapshot of everything a fixture holds outside the served root, to show
//! that no call read through to it or changed it.

use std::path::{Path, PathBuf};

use crate::support::Fixture;

/// One entry of an [`Outside`] snapshot: kind, bytes (or link target), mtime.
type Seen = (&'static str, Vec<u8>, i64, i64);

/// What a fixture holds outside the served root: every entry's kind, bytes
/// (or link target) and mtime, to check that nothing there changed.
pub struct Outside {
    base: PathBuf,
    root: PathBuf,
    entries: std::collections::BTreeMap<PathBuf, Seen>,
}

impl Outside {
    /// Everything in the fixture but its `root/`.
    pub fn snapshot(fx: &Fixture) -> Outside {
        Outside::around(fx, &fx.root())
    }

    /// Everything in the fixture but the served `root`.
    pub fn around(fx: &Fixture, root: &Path) -> Outside {
        let base = fx.dir.path().canonicalize().unwrap();
        let mut entries = std::collections::BTreeMap::new();
        scan_outside(&base, root, &mut entries);
        Outside { base, root: root.to_path_buf(), entries }
    }

    /// Panics if an entry appeared, vanished or changed (bytes or mtime).
    pub fn assert_unchanged(&self) {
        let mut now = std::collections::BTreeMap::new();
        scan_outside(&self.base, &self.root, &mut now);
        let added: Vec<_> = now.keys().filter(|k| !self.entries.contains_key(*k)).collect();
        assert!(added.is_empty(), "entries appeared outside the root: {added:?}");
        for (path, then) in &self.entries {
            assert_eq!(now.get(path), Some(then), "{} changed outside the root", path.display());
        }
    }
}

fn scan_outside(dir: &Path, skip: &Path, out: &mut std::collections::BTreeMap<PathBuf, Seen>) {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(dir).unwrap();
    out.insert(dir.to_path_buf(), ("dir", Vec::new(), meta.mtime(), meta.mtime_nsec()));
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let (kind, bytes) = if path == skip {
            continue;
        } else if meta.is_dir() {
            scan_outside(&path, skip, out);
            continue;
        } else if meta.file_type().is_symlink() {
            ("symlink", std::fs::read_link(&path).unwrap().into_os_string().into_encoded_bytes())
        } else {
            ("file", std::fs::read(&path).unwrap())
        };
        out.insert(path, (kind, bytes, meta.mtime(), meta.mtime_nsec()));
    }
}
