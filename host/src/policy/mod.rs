//! Roots, grants and deny rules: which directories a tool sees, and how.
//!
//! Roots come from the configuration, each read-write or read-only (all
//! read-only when the server runs `--read-only`). A tool's preopens are the
//! configured roots, narrowed to the client's roots when it gave some (never
//! widened), as its manifest's access allows: a read tool gets them read-only;
//! a write tool gets read-write roots read-write and read-only roots read-only;
//! a tool that needs no files gets nothing. Deny rules ([`deny`]) take paths
//! back out of every root, for every tool. Every path a call touches is judged
//! where it really is ([`Judge`]): a symlink does not take a change into a
//! read-only root, nor a read past a deny rule, and a move neither moves a root
//! nor takes what a rule covers out from under it.

pub mod access;
pub mod deny;
mod env;
mod judge;
mod moves;
pub mod net;
mod spec;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::ambient;
use crate::tool::Access;

pub use access::{AccessError, AccessRules, AccessSpec, Rights};
pub use deny::{DenyRules, RuleError};
pub use env::{EnvName, Environment, ToolGrant};
pub use judge::{Intent, Judge, Refusal};
pub use moves::MAX_ENTRIES as MAX_MOVE_ENTRIES;
pub use net::{NetGrant, NetGrants};
pub use spec::{DirSpec, SpecError, deserialize_grants};

/// Whether a root may be changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    ReadOnly,
    ReadWrite,
}

impl Mode {
    /// `ro` or `rw`, as grants and roots spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::ReadOnly => "ro",
            Mode::ReadWrite => "rw",
        }
    }
}

/// A configured root, resolved.
#[derive(Debug, Clone)]
pub struct Root {
    /// The canonical absolute path; also the guest path of its preopen.
    pub path: String,
    pub mode: Mode,
}

/// One preopen for one call: the directory, the path the guest sees it at,
/// and whether the call may change what is under it (the runtime turns the
/// mode into WASI's permissions).
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    pub host: PathBuf,
    pub guest: String,
    pub mode: Mode,
}

/// What narrows the configured roots for one call; `None` narrows nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Within<'a> {
    /// The client's roots (canonical), when it gave some.
    pub client: Option<&'a [PathBuf]>,
    /// The principal's roots (canonical, with modes), when access rules apply.
    pub principal: Option<&'a [DirSpec]>,
    /// An installed tool's grants (canonical, with modes).
    pub tool: Option<&'a [DirSpec]>,
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
    /// A deny rule cannot be used.
    Rule(RuleError),
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.kind {
            ErrorKind::Unresolvable(e) => write!(f, "root `{path}` cannot be used: {e}"),
            ErrorKind::NotADirectory => write!(f, "root `{path}` is not a directory"),
            ErrorKind::NotUtf8 => write!(f, "root `{path}` is not valid UTF-8 once resolved"),
            ErrorKind::Rule(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for PolicyError {}

/// Why an installed tool's grant grants nothing here.
#[derive(Debug)]
pub struct GrantError {
    grant: DirSpec,
    why: GrantWhy,
}

#[derive(Debug)]
enum GrantWhy {
    /// The directory could not be resolved (usually: it no longer exists).
    Unresolvable(std::io::Error),
    /// The path is not a directory.
    NotADirectory,
    /// The directory is outside every configured root.
    OutsideRoots,
}

impl fmt::Display for GrantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let grant = &self.grant;
        match &self.why {
            GrantWhy::Unresolvable(e) => write!(f, "grant `{grant}` cannot be used: {e}"),
            GrantWhy::NotADirectory => write!(f, "grant `{grant}` is not a directory"),
            GrantWhy::OutsideRoots => {
                write!(f, "grant `{grant}` lies outside every configured root, so it grants nothing")
            }
        }
    }
}

impl std::error::Error for GrantError {}

/// The configured roots, the deny rules, and the grants each tool gets.
#[derive(Debug, Clone)]
pub struct Policy {
    roots: Vec<Root>,
    judge: Arc<Judge>,
    read_only: bool,
}

impl Policy {
    /// Resolves every root (which must exist and be a directory) and compiles
    /// the deny rules. Repeated roots are kept once, read-write winning over
    /// read-only; with `read_only`, every root is read-only.
    pub fn new(specs: &[DirSpec], deny: &[String], read_only: bool) -> Result<Policy, PolicyError> {
        let mut roots: Vec<Root> = Vec::new();
        for spec in specs {
            let fail = |kind| PolicyError { kind, path: spec.path.clone() };
            let (canonical, is_dir) =
                ambient::canonical_dir(&spec.path).map_err(|e| fail(ErrorKind::Unresolvable(e)))?;
            if !is_dir {
                return Err(fail(ErrorKind::NotADirectory));
            }
            let path = canonical.to_str().ok_or_else(|| fail(ErrorKind::NotUtf8))?.to_string();
            let mode = if read_only { Mode::ReadOnly } else { spec.mode };
            match roots.iter_mut().find(|r| r.path == path) {
                Some(existing) if mode == Mode::ReadWrite => existing.mode = Mode::ReadWrite,
                Some(_) => {}
                None => roots.push(Root { path, mode }),
            }
        }
        let rules = DenyRules::new(deny).map_err(|e| PolicyError { kind: ErrorKind::Rule(e), path: PathBuf::new() })?;
        let mut held = Vec::new();
        for root in &roots {
            let dir = ambient::open_dir(Path::new(&root.path))
                .map_err(|e| PolicyError { kind: ErrorKind::Unresolvable(e), path: PathBuf::from(&root.path) })?;
            held.push(judge::Held { path: PathBuf::from(&root.path), mode: root.mode, dir });
        }
        Ok(Policy { roots, judge: Arc::new(Judge { rules, roots: Arc::new(held) }), read_only })
    }

    pub fn roots(&self) -> &[Root] {
        &self.roots
    }

    /// The deny rules and the roots, with what judging a path needs.
    pub fn judge(&self) -> &Arc<Judge> {
        &self.judge
    }

    /// Whether the server runs `--read-only` (no write tools).
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// The preopens a tool with this access gets: every configured root, or,
    /// when the client gave roots (`client`, canonical paths), only the parts
    /// of configured roots that a client root covers.
    pub fn grants(&self, access: Access, client: Option<&[PathBuf]>) -> Vec<Grant> {
        self.narrowed(access, Within { client, ..Within::default() })
    }

    /// The preopens of one call: the configured roots, narrowed to what
    /// `within` allows (the client's roots, the principal's, an installed
    /// tool's grants), never widened, each as writable as the root, every
    /// narrowing and the tool's access all allow.
    pub fn narrowed(&self, access: Access, within: Within<'_>) -> Vec<Grant> {
        if access == Access::None {
            return Vec::new();
        }
        let mut grants: Vec<Grant> = Vec::new();
        for root in &self.roots {
            let mut scopes = vec![(PathBuf::from(&root.path), root.mode)];
            if let Some(client) = within.client {
                scopes = narrow(&scopes, client.iter().map(|c| (c.as_path(), Mode::ReadWrite)));
            }
            if let Some(principal) = within.principal {
                scopes = narrow(&scopes, principal.iter().map(|g| (g.path.as_path(), g.mode)));
            }
            if let Some(tool) = within.tool {
                scopes = narrow(&scopes, tool.iter().map(|g| (g.path.as_path(), g.mode)));
            }
            for (scope, mode) in scopes {
                let Some(guest) = scope.to_str() else { continue };
                let mode = match (access, mode) {
                    (Access::Write, Mode::ReadWrite) => Mode::ReadWrite,
                    _ => Mode::ReadOnly,
                };
                match grants.iter_mut().find(|g| g.guest == guest) {
                    Some(existing) if mode == Mode::ReadWrite => existing.mode = mode,
                    Some(_) => {}
                    None => grants.push(Grant { host: scope.clone(), guest: guest.to_string(), mode }),
                }
            }
        }
        grants
    }

    /// An installed tool's grant as it applies here: its directory resolved
    /// (it must still exist), or why it grants nothing.
    pub fn resolve_grant(&self, grant: &DirSpec) -> Result<DirSpec, GrantError> {
        let fail = |why| GrantError { grant: grant.clone(), why };
        let (canonical, is_dir) = ambient::canonical_dir(&grant.path).map_err(|e| fail(GrantWhy::Unresolvable(e)))?;
        if !is_dir {
            return Err(fail(GrantWhy::NotADirectory));
        }
        if !self.roots.iter().any(|r| canonical.starts_with(&r.path) || Path::new(&r.path).starts_with(&canonical)) {
            return Err(fail(GrantWhy::OutsideRoots));
        }
        Ok(DirSpec { mode: grant.mode, path: canonical })
    }
}

/// The parts of `scopes` that a directory of `by` covers: a directory inside a
/// scope narrows it, one above keeps it, one elsewhere gives nothing; the
/// result is writable only when both sides are.
fn narrow<'a>(scopes: &[(PathBuf, Mode)], by: impl Iterator<Item = (&'a Path, Mode)> + Clone) -> Vec<(PathBuf, Mode)> {
    let mut narrowed = Vec::new();
    for (scope, mode) in scopes {
        for (dir, dir_mode) in by.clone() {
            let both =
                if (*mode, dir_mode) == (Mode::ReadWrite, Mode::ReadWrite) { Mode::ReadWrite } else { Mode::ReadOnly };
            if dir.starts_with(scope) {
                narrowed.push((dir.to_path_buf(), both));
            } else if scope.starts_with(dir) {
                narrowed.push((scope.clone(), both));
            }
        }
    }
    narrowed
}

#[cfg(test)]
mod judge_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_specs_parse_modes() {
        assert_eq!("/a".parse::<DirSpec>().unwrap().mode, Mode::ReadWrite);
        assert_eq!("/a:ro".parse::<DirSpec>().unwrap(), DirSpec { path: "/a".into(), mode: Mode::ReadOnly });
        assert_eq!("/a:rw".parse::<DirSpec>().unwrap().path, PathBuf::from("/a"));
        assert_eq!("/a:b".parse::<DirSpec>().unwrap().path, PathBuf::from("/a:b"));
        assert!(":ro".parse::<DirSpec>().is_err());
    }

    #[test]
    fn read_tools_get_every_root_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let rw = dir.path().join("rw");
        let ro = dir.path().join("ro");
        std::fs::create_dir_all(&rw).unwrap();
        std::fs::create_dir_all(&ro).unwrap();
        let specs = [DirSpec { path: rw, mode: Mode::ReadWrite }, DirSpec { path: ro, mode: Mode::ReadOnly }];
        let policy = Policy::new(&specs, &[], false).unwrap();
        assert!(policy.grants(Access::Read, None).iter().all(|g| g.mode == Mode::ReadOnly));
        let write: Vec<_> = policy.grants(Access::Write, None).iter().map(|g| g.mode).collect();
        assert_eq!(write, [Mode::ReadWrite, Mode::ReadOnly]);
        assert!(policy.grants(Access::None, None).is_empty());
        let read_only = Policy::new(&specs, &[], true).unwrap();
        assert!(read_only.grants(Access::Write, None).iter().all(|g| g.mode == Mode::ReadOnly));
    }

    #[test]
    fn missing_and_non_directory_roots_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let err = Policy::new(&[DirSpec { path: file, mode: Mode::ReadOnly }], &[], false).unwrap_err();
        assert!(err.to_string().contains("is not a directory"), "{err}");
        let err =
            Policy::new(&[DirSpec { path: dir.path().join("nope"), mode: Mode::ReadOnly }], &[], false).unwrap_err();
        assert!(err.to_string().contains("cannot be used"), "{err}");
    }

    #[test]
    fn client_roots_narrow_the_configured_roots_and_never_widen_them() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (root, sub, other) = (base.join("root"), base.join("root/sub"), base.join("other"));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        let policy = Policy::new(&[DirSpec { path: root.clone(), mode: Mode::ReadWrite }], &[], false).unwrap();
        let hosts = |client: &PathBuf| -> Vec<PathBuf> {
            policy.grants(Access::Write, Some(std::slice::from_ref(client))).into_iter().map(|g| g.host).collect()
        };
        assert_eq!(hosts(&sub), std::slice::from_ref(&sub), "a client root inside narrows to it");
        assert_eq!(hosts(&base), [root], "a client root above keeps the configured one");
        assert!(hosts(&other).is_empty(), "a client root elsewhere grants nothing");
        assert!(policy.grants(Access::Write, Some(&[])).is_empty(), "no client roots: nothing");
        assert_eq!(policy.grants(Access::Write, Some(std::slice::from_ref(&sub)))[0].mode, Mode::ReadWrite);
    }

    #[test]
    fn deny_rules_are_checked_as_written_and_through_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "x").unwrap();
        std::fs::write(root.join("app.env"), "x").unwrap();
        std::os::unix::fs::symlink(".git", root.join("innocent")).unwrap();
        std::os::unix::fs::symlink("app.env", root.join("notes.txt")).unwrap();
        let rules = [".git/**".to_string(), "*.env".to_string()];
        let policy = Policy::new(&[DirSpec { path: root.clone(), mode: Mode::ReadWrite }], &rules, false).unwrap();
        let deny = policy.judge();
        assert_eq!(deny.check(&root.join(".git/config"), false), Some(".git/**"));
        assert_eq!(deny.check(&root.join("sub/new.env"), true), Some("*.env"), "need not exist");
        assert_eq!(deny.check(&root.join("innocent/config"), false), None, "a walk does not follow");
        assert_eq!(deny.check(&root.join("innocent/config"), true), Some(".git/**"));
        assert_eq!(deny.check(&root.join("innocent/new-file"), true), Some(".git/**"));
        assert_eq!(deny.check(&root.join("notes.txt"), true), Some("*.env"));
        assert_eq!(deny.check(&root.join("src/main.rs"), true), None);
        assert_eq!(deny.check(Path::new("/elsewhere/.git/config"), true), None, "outside: the sandbox's business");
        let err = Policy::new(&[], &["a[".to_string()], false).unwrap_err();
        assert!(err.to_string().contains("deny rule `a[`"), "{err}");
    }

    #[test]
    fn an_installed_tool_sees_only_its_grants_within_the_roots_and_never_more_writable() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (rw, ro) = (base.join("rw"), base.join("ro"));
        std::fs::create_dir_all(rw.join("data")).unwrap();
        std::fs::create_dir_all(&ro).unwrap();
        let specs =
            [DirSpec { path: rw.clone(), mode: Mode::ReadWrite }, DirSpec { path: ro.clone(), mode: Mode::ReadOnly }];
        let policy = Policy::new(&specs, &[], false).unwrap();
        let grant = |mode, path: &Path| DirSpec { mode, path: path.to_path_buf() };
        let seen = |access, tool: &[DirSpec], client: Option<&[PathBuf]>| -> Vec<(PathBuf, Mode)> {
            policy
                .narrowed(access, Within { client, tool: Some(tool), ..Within::default() })
                .into_iter()
                .map(|g| (g.host, g.mode))
                .collect()
        };
        assert!(seen(Access::Write, &[], None).is_empty(), "no grants: nothing");
        let data = rw.join("data");
        assert_eq!(seen(Access::Write, &[grant(Mode::ReadWrite, &data)], None), [(data.clone(), Mode::ReadWrite)]);
        assert_eq!(seen(Access::Read, &[grant(Mode::ReadWrite, &data)], None), [(data.clone(), Mode::ReadOnly)]);
        assert_eq!(seen(Access::Write, &[grant(Mode::ReadOnly, &data)], None), [(data.clone(), Mode::ReadOnly)]);
        assert_eq!(
            seen(Access::Write, &[grant(Mode::ReadWrite, &ro)], None),
            [(ro.clone(), Mode::ReadOnly)],
            "a read-only root stays read-only"
        );
        assert_eq!(
            seen(Access::Read, &[grant(Mode::ReadOnly, &base)], None).len(),
            2,
            "a grant above the roots gives the roots"
        );
        assert!(
            seen(Access::Read, &[grant(Mode::ReadOnly, Path::new("/usr"))], None).is_empty(),
            "outside the roots: nothing"
        );
        let client = [ro.clone()];
        assert!(
            seen(Access::Read, &[grant(Mode::ReadOnly, &data)], Some(&client)).is_empty(),
            "the client's roots narrow too"
        );
        assert!(
            policy
                .resolve_grant(&grant(Mode::ReadOnly, Path::new("/usr")))
                .unwrap_err()
                .to_string()
                .contains("outside every configured root")
        );
        assert_eq!(policy.resolve_grant(&grant(Mode::ReadOnly, &data.join("."))).unwrap().path, data);
        assert!(
            policy
                .resolve_grant(&grant(Mode::ReadOnly, &base.join("nope")))
                .unwrap_err()
                .to_string()
                .contains("cannot be used")
        );
    }
}
