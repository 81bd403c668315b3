//! Where a path really is, and whether a call may do what it means to there.
//!
//! A path is judged where it really is, not only as written: the deepest
//! configured root that holds it is opened as a capability, and every symlink on
//! the way is resolved inside that root. Every check on a path a call touches
//! goes through [`Judge::judge`]:
//! - **read**: the deny rules, on the path as written and where it leads;
//! - **change**: the deny rules, and the path must lie in a read-write root
//!   both as written and where it leads, so a link into a read-only root nested
//!   in a read-write one does not make it writable;
//! - **move**: both ends as a change (a symlink at an end is the thing moved, so
//!   it is not followed); neither end may be a root or hold one, however it is
//!   spelled; and with deny rules, no entry under the moved directory may leave
//!   a rule that matches it now, or come under one (see [`moves`](super::moves)).
//!
//! The preopens stay the hard boundary: a path that leads outside every root
//! is refused by the sandbox whatever is judged here.

use std::fmt;
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;

use super::deny::DenyRules;
use super::{Grant, Mode};

/// A configured root, open as a capability so that symlinks are resolved
/// inside it.
#[derive(Debug)]
pub(super) struct Held {
    pub(super) path: PathBuf,
    pub(super) mode: Mode,
    pub(super) dir: Dir,
}

/// Where a path really is: the configured root holding it, and the path
/// relative to it with its symlinks resolved.
#[derive(Debug)]
pub(super) struct Located<'a> {
    pub(super) held: &'a Held,
    pub(super) relative: PathBuf,
}

impl Located<'_> {
    /// The absolute path.
    pub(super) fn absolute(&self) -> PathBuf {
        self.held.path.join(&self.relative)
    }
}

/// What a call means to do with a path.
#[derive(Debug, Clone, Copy)]
pub enum Intent<'a> {
    /// Read, list or describe it.
    Read,
    /// Create, replace or change it.
    Change,
    /// Move or rename it to the absolute path given.
    MoveTo(&'a Path),
}

/// Why a call may not do what it means to with a path. Each kind reads as a
/// sentence that names the path and the rule or root (the tool adds what it
/// left undone).
#[derive(Debug)]
pub enum Refusal {
    /// A deny rule matches the path as written or where it leads.
    Denied { path: String, rule: String },
    /// The path, or where it leads, is under a read-only root.
    ReadOnly { path: String, real: String, root: String },
    /// Where the path leads is outside every root granted to the call.
    Outside { path: String, real: String },
    /// A move would move or replace a root, or a directory holding one.
    Root { path: String, real: String, root: String },
    /// A move would take an entry out from under a deny rule that matches it.
    Uncovers { entry: String, rule: String },
    /// A move would put an entry under a deny rule that does not match it now.
    Covers { entry: String, rule: String },
    /// The directory to move holds more entries than are checked.
    TooMany { path: String, max: usize },
    /// A directory to move could not be looked through.
    Unreadable { path: String, error: std::io::Error },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // "`a` is …", or "`a` leads to `b`, which is …".
        let leads = |real: &String, path: &String| {
            if real == path { String::new() } else { format!(" leads to `{real}`, which") }
        };
        match self {
            Refusal::Denied { path, rule } => write!(
                f,
                "`{path}` is denied by the server's rule `{rule}` (`deny` in its configuration); no tool may open or \
                 change it"
            ),
            Refusal::ReadOnly { path, real, root } => write!(
                f,
                "`{path}`{} is under the read-only root {root} (configured as `{root}:ro`), so it cannot be changed",
                leads(real, path)
            ),
            Refusal::Outside { path, real } => {
                write!(f, "`{path}` leads to `{real}`, outside every root granted to this call")
            }
            Refusal::Root { path, real, root } => {
                let what = if Path::new(root) == Path::new(real) { "is the root" } else { "holds the root" };
                write!(f, "`{path}`{} {what} {root}; a root cannot be moved or replaced", leads(real, path))
            }
            Refusal::Uncovers { entry, rule } => write!(
                f,
                "the move would take `{entry}` out from under the server's deny rule `{rule}`, which matches it now; \
                 move what the rule covers with the rule in mind, or ask the operator"
            ),
            Refusal::Covers { entry, rule } => write!(
                f,
                "the move would put `{entry}` under the server's deny rule `{rule}`, where no tool may change it"
            ),
            Refusal::TooMany { path, max } => write!(
                f,
                "`{path}` holds more than {max} entries to check against the server's deny rules; move its \
                 subdirectories one by one"
            ),
            Refusal::Unreadable { path, error } => {
                write!(f, "`{path}` could not be looked through to check the deny rules: {error}")
            }
        }
    }
}

impl std::error::Error for Refusal {}

/// The deny rules and the configured roots, open as capabilities: what every
/// check of a path goes through.
#[derive(Debug)]
pub struct Judge {
    pub(super) rules: DenyRules,
    /// Every configured root, with its mode and handle (shared by the
    /// judges of principals with deny rules of their own).
    pub(super) roots: std::sync::Arc<Vec<Held>>,
}

impl Judge {
    /// No rules and no roots: nothing is denied, nothing is located.
    pub fn none() -> Judge {
        Judge { rules: DenyRules::none(), roots: std::sync::Arc::new(Vec::new()) }
    }

    /// This judge with `more` deny rules added to its own (a principal's).
    pub fn with_more(&self, more: &[String]) -> Result<Judge, super::RuleError> {
        if more.is_empty() {
            return Ok(Judge { rules: self.rules.clone(), roots: std::sync::Arc::clone(&self.roots) });
        }
        let all: Vec<String> = self.rules().iter().chain(more).cloned().collect();
        Ok(Judge { rules: DenyRules::new(&all)?, roots: std::sync::Arc::clone(&self.roots) })
    }

    /// The rules as configured.
    pub fn rules(&self) -> &[String] {
        self.rules.rules()
    }

    /// Whether there are deny rules at all (with none, nothing is denied).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The deepest configured root holding `path` (absolute), and `path`
    /// relative to it.
    fn holding<'a>(&'a self, path: &'a Path) -> Option<(&'a Held, &'a Path)> {
        let held = self.roots.iter().filter(|h| path.starts_with(&h.path)).max_by_key(|h| h.path.as_os_str().len())?;
        Some((held, path.strip_prefix(&held.path).ok()?))
    }

    /// Where `path` (absolute; it need not exist) really is: its deepest
    /// existing ancestor with symlinks resolved inside the deepest configured
    /// root holding it, the rest appended (what does not exist cannot be a
    /// link). With `follow`, a symlink at its end is resolved too; without, the
    /// end is the entry itself. `None` outside every configured root.
    pub(super) fn locate<'a>(&'a self, path: &'a Path, follow: bool) -> Option<Located<'a>> {
        let (held, relative) = self.holding(path)?;
        let (mut existing, mut rest) = match relative.file_name() {
            Some(name) if !follow => (relative.parent()?, PathBuf::from(name)),
            _ => (relative, PathBuf::new()),
        };
        loop {
            let target = if existing.as_os_str().is_empty() { Path::new(".") } else { existing };
            if let Ok(real) = held.dir.canonicalize(target) {
                // cap-std names the root itself `.`.
                let real = if real == Path::new(".") { rest } else { real.join(&rest) };
                return Some(Located { held, relative: real });
            }
            let name = existing.file_name()?;
            rest = Path::new(name).join(&rest);
            existing = existing.parent()?;
        }
    }

    /// Where `path` (absolute; it need not exist) really is, relative to the
    /// deepest configured root holding it, symlinks resolved ([`Judge::locate`]
    /// with `follow`). `None` outside every configured root.
    pub fn real_relative(&self, path: &Path) -> Option<PathBuf> {
        self.locate(path, true).map(|located| located.relative)
    }

    /// The rule that denies `relative` (a path relative to a configured root,
    /// as `real_relative` gives), if any.
    pub fn denied_relative(&self, relative: &Path) -> Option<&str> {
        self.rules.denied(relative)
    }

    /// The rule that denies `path` (an absolute path; it need not exist), if
    /// any: the path as written, relative to the deepest configured root that
    /// holds it, and with `follow`, also where it really is (`real_relative`),
    /// so a symlink to a denied file or directory is denied too. A path outside
    /// every configured root is not denied here: the sandbox refuses it.
    pub fn check(&self, path: &Path, follow: bool) -> Option<&str> {
        if self.rules.is_empty() {
            return None;
        }
        let (_, relative) = self.holding(path)?;
        if let Some(rule) = self.rules.denied(relative) {
            return Some(rule);
        }
        if !follow {
            return None;
        }
        self.rules.denied(&self.real_relative(path)?)
    }

    /// Whether a call granted `grants` may do `intent` with `path` (absolute,
    /// normalized; it need not exist), judged where it really is. The one check
    /// every tool's paths go through (see the module doc).
    pub fn judge(&self, grants: &[Grant], path: &Path, intent: Intent<'_>) -> Result<(), Refusal> {
        self.refuse_denied(path)?;
        match intent {
            Intent::Read => Ok(()),
            Intent::Change => {
                self.refuse_read_only(grants, path, path)?;
                for follow in [false, true] {
                    if let Some(real) = self.locate(path, follow) {
                        self.refuse_read_only(grants, path, &real.absolute())?;
                    }
                }
                Ok(())
            }
            Intent::MoveTo(to) => {
                self.refuse_denied(to)?;
                let ends = [(path, self.locate(path, false)), (to, self.locate(to, false))];
                for (written, real) in &ends {
                    let real = real.as_ref().map_or_else(|| written.to_path_buf(), Located::absolute);
                    self.refuse_read_only(grants, written, written)?;
                    self.refuse_read_only(grants, written, &real)?;
                    self.refuse_root(grants, written, written)?;
                    self.refuse_root(grants, written, &real)?;
                }
                match ends {
                    [(_, Some(from)), (_, Some(to))] if !self.rules.is_empty() => self.refuse_uncovering(&from, &to),
                    _ => Ok(()),
                }
            }
        }
    }

    /// Refuses `path` when a deny rule matches it as written or where it leads.
    fn refuse_denied(&self, path: &Path) -> Result<(), Refusal> {
        match self.check(path, true) {
            None => Ok(()),
            Some(rule) => Err(Refusal::Denied { path: shown(path), rule: rule.to_string() }),
        }
    }

    /// Refuses a change at `real` (where `written` leads) unless the deepest
    /// grant holding it, and the deepest configured root, are read-write.
    fn refuse_read_only(&self, grants: &[Grant], written: &Path, real: &Path) -> Result<(), Refusal> {
        let refused = |root: &Path| Refusal::ReadOnly { path: shown(written), real: shown(real), root: shown(root) };
        let grant = grants
            .iter()
            .filter(|g| real.starts_with(&g.host))
            .max_by_key(|g| g.host.as_os_str().len())
            .ok_or_else(|| Refusal::Outside { path: shown(written), real: shown(real) })?;
        if grant.mode != Mode::ReadWrite {
            return Err(refused(&grant.host));
        }
        match self.holding(real) {
            Some((held, _)) if held.mode == Mode::ReadOnly => Err(refused(&held.path)),
            _ => Ok(()),
        }
    }

    /// Refuses a move of `real` (where `written` leads) when it is a
    /// configured root or a granted directory, or holds one.
    fn refuse_root(&self, grants: &[Grant], written: &Path, real: &Path) -> Result<(), Refusal> {
        let roots = self.roots.iter().map(|h| h.path.as_path()).chain(grants.iter().map(|g| g.host.as_path()));
        for root in roots {
            if root.starts_with(real) {
                return Err(Refusal::Root { path: shown(written), real: shown(real), root: shown(root) });
            }
        }
        Ok(())
    }
}

/// A path as a sentence names it.
pub(super) fn shown(path: &Path) -> String {
    path.display().to_string()
}
