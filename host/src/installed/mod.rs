//! Third-party tools installed with `cordon tool add`: a tools directory
//! holding each component (`<name>.wasm`) and the lockfile ([`lock`]) that pins
//! its SHA-256 and lists its grants.
//!
//! The directory is reached only through a capability handle. Changes (add,
//! remove) hold an exclusive `flock` on the lockfile's own lock, write the
//! component and the lockfile through temporary files renamed into place, and
//! leave the directory consistent at every step: a server that reads it in
//! between sees the old set or the new one. A server reads a component's bytes
//! once, checks them against the pinned digest, and compiles those same bytes,
//! so a file swapped after the check is never run.

pub mod lock;
pub mod oci;
pub mod signature;

use std::fmt;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;
use sha2::{Digest, Sha256};

use crate::ambient;
pub use lock::{Entry, LOCK_FILE, Lock};

/// The file whose `flock` serializes changes to the directory.
const CHANGE_LOCK: &str = ".cordon-tools.flock";

/// The tools directory.
pub struct ToolsDir {
    path: PathBuf,
    dir: Dir,
}

/// An installed tool whose component matched its pinned digest.
pub struct Verified {
    pub entry: Entry,
    /// The component's bytes, as checked.
    pub bytes: Vec<u8>,
}

/// Why the tools directory cannot be used as asked.
#[derive(Debug)]
pub struct InstallError {
    kind: ErrorKind,
}

#[derive(Debug)]
enum ErrorKind {
    /// The filesystem refused an operation.
    Io { what: String, source: io::Error },
    /// The lockfile is not one this host can read.
    BadLock { path: PathBuf, reason: lock::LockError },
    /// A component's content differs from the digest the lockfile pins.
    Tampered { name: String, file: PathBuf, pinned: String, found: String },
    /// A component the lockfile lists is not in the directory.
    Missing { name: String, file: PathBuf },
    /// No installed tool has this name.
    NotInstalled { name: String, dir: PathBuf },
}

impl fmt::Display for InstallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Io { what, source } => write!(f, "{what}: {source}"),
            ErrorKind::BadLock { path, reason } => {
                write!(f, "the lockfile {} cannot be used: {reason}", path.display())
            }
            ErrorKind::Tampered { name, file, pinned, found } => write!(
                f,
                "tool `{name}` is refused: its component {} has SHA-256 {found}, but the lockfile pins {pinned}; it \
                 changed after `cordon tool add`. Add the component you trust again (`cordon tool add PATH.wasm \
                 --grant ...`) or remove the tool (`cordon tool remove {name}`)",
                file.display()
            ),
            ErrorKind::Missing { name, file } => write!(
                f,
                "tool `{name}` is refused: its component {} is missing; add it again or `cordon tool remove {name}`",
                file.display()
            ),
            ErrorKind::NotInstalled { name, dir } => {
                write!(f, "no tool named `{name}` is installed in {} (`cordon tool list` shows them)", dir.display())
            }
        }
    }
}

impl std::error::Error for InstallError {}

fn io_error(what: impl Into<String>) -> impl FnOnce(io::Error) -> InstallError {
    let what = what.into();
    move |source| InstallError { kind: ErrorKind::Io { what, source } }
}

/// The SHA-256 of `bytes`, hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl ToolsDir {
    /// Opens the tools directory at `path`, creating it owner-only if needed.
    pub fn create(path: &Path) -> Result<ToolsDir, InstallError> {
        let dir = crate::private::create_dir_at(path)
            .map_err(io_error(format!("open the tools directory {}", path.display())))?;
        Ok(ToolsDir { path: path.to_path_buf(), dir })
    }

    /// Opens the tools directory at `path` if it exists: a server that never
    /// had a tool installed has none.
    pub fn open(path: &Path) -> Result<Option<ToolsDir>, InstallError> {
        match ambient::open_dir(path) {
            Ok(dir) => Ok(Some(ToolsDir { path: path.to_path_buf(), dir })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(format!("open the tools directory {}", path.display()))(e)),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The lockfile's path, for messages.
    pub fn lock_path(&self) -> PathBuf {
        self.path.join(LOCK_FILE)
    }

    /// The lockfile's text, `None` when there is none yet.
    pub fn lock_text(&self) -> Result<Option<String>, InstallError> {
        match self.dir.read_to_string(LOCK_FILE) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(format!("read {}", self.lock_path().display()))(e)),
        }
    }

    /// The lockfile, empty when there is none yet.
    pub fn lock(&self) -> Result<Lock, InstallError> {
        self.parse(self.lock_text()?)
    }

    /// Parses a lockfile's text (`None`: no lockfile, no tools).
    pub fn parse(&self, text: Option<String>) -> Result<Lock, InstallError> {
        let Some(text) = text else { return Ok(Lock { format: 1, tools: Vec::new() }) };
        Lock::parse(&text)
            .map_err(|reason| InstallError { kind: ErrorKind::BadLock { path: self.lock_path(), reason } })
    }

    /// Reads one installed tool's component and checks it against its pin.
    pub fn verify(&self, entry: &Entry) -> Result<Verified, InstallError> {
        let file = self.path.join(&entry.file);
        let mut bytes = Vec::new();
        match self.dir.open(&entry.file) {
            Ok(mut f) => f.read_to_end(&mut bytes).map_err(io_error(format!("read {}", file.display())))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(InstallError { kind: ErrorKind::Missing { name: entry.name.clone(), file } });
            }
            Err(e) => return Err(io_error(format!("open {}", file.display()))(e)),
        };
        let found = sha256_hex(&bytes);
        if !found.eq_ignore_ascii_case(&entry.sha256) {
            let (name, pinned) = (entry.name.clone(), entry.sha256.clone());
            return Err(InstallError { kind: ErrorKind::Tampered { name, file, pinned, found } });
        }
        Ok(Verified { entry: entry.clone(), bytes })
    }

    /// Every installed tool, each checked against its pin; the first that
    /// fails refuses the whole set.
    pub fn verified(&self, lock: &Lock) -> Result<Vec<Verified>, InstallError> {
        lock.tools.iter().map(|entry| self.verify(entry)).collect()
    }

    /// Installs `bytes` as the tool `entry` names, replacing a tool of the same
    /// name; returns the entry it replaced.
    pub fn install(&self, entry: Entry, bytes: &[u8]) -> Result<Option<Entry>, InstallError> {
        let _held = self.hold()?;
        let mut lock = self.lock()?;
        self.write_atomically(&entry.file, bytes)?;
        let replaced = lock.tools.iter().position(|e| e.name == entry.name).map(|i| lock.tools.remove(i));
        lock.tools.push(entry);
        self.write_atomically(LOCK_FILE, lock.render().as_bytes())?;
        Ok(replaced)
    }

    /// Removes the tool `name`: first from the lockfile, then its component.
    pub fn uninstall(&self, name: &str) -> Result<Entry, InstallError> {
        let _held = self.hold()?;
        let mut lock = self.lock()?;
        let Some(index) = lock.tools.iter().position(|e| e.name == name) else {
            return Err(InstallError { kind: ErrorKind::NotInstalled { name: name.into(), dir: self.path.clone() } });
        };
        let entry = lock.tools.remove(index);
        self.write_atomically(LOCK_FILE, lock.render().as_bytes())?;
        match self.dir.remove_file(&entry.file) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(format!("remove {}", self.path.join(&entry.file).display()))(e)),
        }
        Ok(entry)
    }

    /// An error for a tool that is not installed.
    pub fn not_installed(&self, name: &str) -> InstallError {
        InstallError { kind: ErrorKind::NotInstalled { name: name.into(), dir: self.path.clone() } }
    }

    /// Takes the directory's change lock until the returned file is dropped.
    fn hold(&self) -> Result<cap_std::fs::File, InstallError> {
        let file = self
            .dir
            .open_with(CHANGE_LOCK, crate::private::file_options().create(true).truncate(false).write(true))
            .map_err(io_error(format!("open {}", self.path.join(CHANGE_LOCK).display())))?;
        // SAFETY: flock on a descriptor this function owns; released when it closes.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io_error("lock the tools directory")(io::Error::last_os_error()));
        }
        Ok(file)
    }

    /// Writes `name` whole: a temporary file, synced, renamed into place.
    fn write_atomically(&self, name: &str, bytes: &[u8]) -> Result<(), InstallError> {
        let temp = format!(".{name}.{}.tmp", std::process::id());
        let shown = self.path.join(name);
        let written = (|| {
            let mut file =
                self.dir.open_with(&temp, crate::private::file_options().create(true).truncate(true).write(true))?;
            file.write_all(bytes)?;
            file.sync_all()?;
            self.dir.rename(&temp, &self.dir, name)
        })();
        if written.is_err() {
            let _ = self.dir.remove_file(&temp);
        }
        written.map_err(io_error(format!("write {}", shown.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, bytes: &[u8]) -> Entry {
        Entry {
            name: name.into(),
            version: "1.0.0".into(),
            file: lock::file_name(name),
            sha256: sha256_hex(bytes),
            world: "cordon-tool".into(),
            grants: Vec::new(),
            env: Vec::new(),
            net: Vec::new(),
            stub_sockets: false,
            oci: None,
            signature: None,
        }
    }

    #[test]
    fn install_verify_replace_and_uninstall() {
        let tmp = tempfile::tempdir().unwrap();
        let tools = ToolsDir::create(&tmp.path().join("tools")).unwrap();
        assert!(tools.lock().unwrap().tools.is_empty(), "no lockfile: no tools");
        assert_eq!(tools.install(entry("a", b"one"), b"one").unwrap(), None);
        let lock = tools.lock().unwrap();
        assert_eq!(tools.verified(&lock).unwrap()[0].bytes, b"one");
        let replaced = tools.install(entry("a", b"two"), b"two").unwrap().unwrap();
        assert_eq!(replaced.sha256, sha256_hex(b"one"));
        assert_eq!(tools.lock().unwrap().tools.len(), 1);
        assert_eq!(tools.uninstall("a").unwrap().name, "a");
        assert!(!tmp.path().join("tools/a.wasm").exists(), "the component is removed too");
        assert!(tools.uninstall("a").unwrap_err().to_string().contains("no tool named `a`"));
        let leftovers: Vec<_> = std::fs::read_dir(tmp.path().join("tools"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn a_changed_or_missing_component_is_refused_with_both_digests() {
        let tmp = tempfile::tempdir().unwrap();
        let tools = ToolsDir::create(tmp.path()).unwrap();
        tools.install(entry("t", b"trusted"), b"trusted").unwrap();
        std::fs::write(tmp.path().join("t.wasm"), b"evil").unwrap();
        let err = tools.verified(&tools.lock().unwrap()).err().unwrap().to_string();
        assert!(err.contains(&sha256_hex(b"evil")) && err.contains(&sha256_hex(b"trusted")), "{err}");
        assert!(err.contains("cordon tool remove t"), "{err}");
        std::fs::remove_file(tmp.path().join("t.wasm")).unwrap();
        let err = tools.verified(&tools.lock().unwrap()).err().unwrap().to_string();
        assert!(err.contains("is missing"), "{err}");
    }

    #[test]
    fn a_malformed_lockfile_is_refused_with_its_path() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(LOCK_FILE), "{not json").unwrap();
        let tools = ToolsDir::open(tmp.path()).unwrap().unwrap();
        let err = tools.lock().unwrap_err().to_string();
        assert!(err.contains(LOCK_FILE) && err.contains("cannot be used"), "{err}");
        assert!(ToolsDir::open(&tmp.path().join("absent")).unwrap().is_none());
    }
}
