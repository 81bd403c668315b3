//! Roots and grants: which directories a tool sees, and how.
//!
//! Roots come from the configuration, each read-write or read-only. A tool's
//! preopens are the roots as its manifest's access allows: a read tool gets
//! every root read-only; a write tool gets read-write roots read-write and
//! read-only roots read-only; a tool that needs no files gets nothing.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use wasmtime_wasi::FsPerms;

use crate::ambient;
use crate::tool::Access;

/// Whether a root may be changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    ReadOnly,
    ReadWrite,
}

/// A root as configured: `DIR`, `DIR:rw` or `DIR:ro`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootSpec {
    pub path: PathBuf,
    pub mode: Mode,
}

impl FromStr for RootSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (path, mode) = match s.rsplit_once(':') {
            Some((path, "ro")) => (path, Mode::ReadOnly),
            Some((path, "rw")) => (path, Mode::ReadWrite),
            _ => (s, Mode::ReadWrite),
        };
        if path.is_empty() {
            return Err("a root needs a directory: DIR, DIR:rw or DIR:ro".into());
        }
        Ok(RootSpec { path: PathBuf::from(path), mode })
    }
}

/// A configured root, resolved.
#[derive(Debug, Clone)]
pub struct Root {
    /// The canonical absolute path; also the guest path of its preopen.
    pub path: String,
    pub mode: Mode,
}

/// One preopen for one call.
#[derive(Debug, Clone)]
pub struct Grant {
    pub host: PathBuf,
    pub guest: String,
    pub perms: FsPerms,
}

/// Why the roots could not be set up.
#[derive(Debug)]
pub struct PolicyError {
    kind: ErrorKind,
    path: PathBuf,
}

#[derive(Debug)]
enum ErrorKind {
    /// The path could not be resolved (usually: it does not exist).
    Unresolvable(std::io::Error),
    /// The path exists but is not a directory.
    NotADirectory,
    /// The canonical path is not UTF-8, so it cannot name a WASI preopen.
    NotUtf8,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.kind {
            ErrorKind::Unresolvable(e) => write!(f, "root `{path}` cannot be used: {e}"),
            ErrorKind::NotADirectory => write!(f, "root `{path}` is not a directory"),
            ErrorKind::NotUtf8 => write!(f, "root `{path}` is not valid UTF-8 once resolved"),
        }
    }
}

impl std::error::Error for PolicyError {}

/// The configured roots and the grants each kind of tool gets.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    roots: Vec<Root>,
    read: Vec<Grant>,
    write: Vec<Grant>,
}

impl Policy {
    /// Resolves every root (which must exist and be a directory). Repeated roots
    /// are kept once, read-write winning over read-only.
    pub fn new(specs: &[RootSpec]) -> Result<Policy, PolicyError> {
        let mut roots: Vec<Root> = Vec::new();
        for spec in specs {
            let fail = |kind| PolicyError { kind, path: spec.path.clone() };
            let (canonical, is_dir) =
                ambient::canonical_dir(&spec.path).map_err(|e| fail(ErrorKind::Unresolvable(e)))?;
            if !is_dir {
                return Err(fail(ErrorKind::NotADirectory));
            }
            let path = canonical.to_str().ok_or_else(|| fail(ErrorKind::NotUtf8))?.to_string();
            match roots.iter_mut().find(|r| r.path == path) {
                Some(existing) if spec.mode == Mode::ReadWrite => existing.mode = Mode::ReadWrite,
                Some(_) => {}
                None => roots.push(Root { path, mode: spec.mode }),
            }
        }
        let grant = |root: &Root, perms| Grant { host: PathBuf::from(&root.path), guest: root.path.clone(), perms };
        let read = roots.iter().map(|r| grant(r, FsPerms::ReadOnly)).collect();
        let write = roots
            .iter()
            .map(|r| grant(r, if r.mode == Mode::ReadWrite { FsPerms::ReadWrite } else { FsPerms::ReadOnly }))
            .collect();
        Ok(Policy { roots, read, write })
    }

    pub fn roots(&self) -> &[Root] {
        &self.roots
    }

    /// The preopens a tool with this access gets.
    pub fn grants(&self, access: Access) -> &[Grant] {
        match access {
            Access::None => &[],
            Access::Read => &self.read,
            Access::Write => &self.write,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_specs_parse_modes() {
        assert_eq!("/a".parse::<RootSpec>().unwrap().mode, Mode::ReadWrite);
        assert_eq!("/a:ro".parse::<RootSpec>().unwrap(), RootSpec { path: "/a".into(), mode: Mode::ReadOnly });
        assert_eq!("/a:rw".parse::<RootSpec>().unwrap().path, PathBuf::from("/a"));
        assert_eq!("/a:b".parse::<RootSpec>().unwrap().path, PathBuf::from("/a:b"));
        assert!(":ro".parse::<RootSpec>().is_err());
    }

    #[test]
    fn read_tools_get_every_root_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let rw = dir.path().join("rw");
        let ro = dir.path().join("ro");
        std::fs::create_dir_all(&rw).unwrap();
        std::fs::create_dir_all(&ro).unwrap();
        let specs = [RootSpec { path: rw, mode: Mode::ReadWrite }, RootSpec { path: ro, mode: Mode::ReadOnly }];
        let policy = Policy::new(&specs).unwrap();
        assert!(policy.grants(Access::Read).iter().all(|g| g.perms == FsPerms::ReadOnly));
        let write: Vec<_> = policy.grants(Access::Write).iter().map(|g| g.perms).collect();
        assert_eq!(write, [FsPerms::ReadWrite, FsPerms::ReadOnly]);
        assert!(policy.grants(Access::None).is_empty());
    }

    #[test]
    fn missing_and_non_directory_roots_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let err = Policy::new(&[RootSpec { path: file, mode: Mode::ReadOnly }]).unwrap_err();
        assert!(err.to_string().contains("is not a directory"), "{err}");
        let err = Policy::new(&[RootSpec { path: dir.path().join("nope"), mode: Mode::ReadOnly }]).unwrap_err();
        assert!(err.to_string().contains("cannot be used"), "{err}");
    }
}
