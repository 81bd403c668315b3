//! The server's deny rules: paths no tool may open or list, even inside the
//! granted roots (e.g. `.git/**`, `*.pem`). The host owns the rules and
//! answers every check, so they read the same for every tool.
//!
//! [`check`] is for a path a client named (symlinks resolved by the host);
//! [`Denied`] is for the entries of a walk (never followed), and costs
//! nothing when the server has no rules; [`judge_change`] and [`judge_move`]
//! are for every path a change touches, judged by the host where it really is
//! (a symlink into a read-only root, a move that would take a path out from
//! under a deny rule or move a root), asked whether or not there are rules.

use std::path::Path;
use std::sync::OnceLock;

use crate::{Error, ErrorCode};

/// Whether the server has deny rules, asked of the host once per instance.
fn active() -> bool {
    static ACTIVE: OnceLock<bool> = OnceLock::new();
    *ACTIVE.get_or_init(|| {
        #[cfg(target_arch = "wasm32")]
        return !crate::component::cordon::tool::policy::rules().is_empty();
        #[cfg(not(target_arch = "wasm32"))]
        false
    })
}

/// The rule that denies `path`, asked of the host.
fn rule(path: &Path, follow: bool) -> Option<String> {
    if !active() {
        return None;
    }
    // A path that is not UTF-8 cannot name anything under a WASI preopen.
    let text = path.to_str()?;
    #[cfg(target_arch = "wasm32")]
    return crate::component::cordon::tool::policy::check(text, follow);
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = (text, follow);
        None
    }
}

/// Fails with permission-denied, naming the rule, when the server denies
/// `path` (absolute, inside a granted root), its symlinks resolved. `shown`
/// names it in the message.
pub fn check(path: &Path, shown: &str) -> Result<(), Error> {
    match rule(path, true) {
        None => Ok(()),
        Some(rule) => Err(Error::new(
            ErrorCode::PermissionDenied,
            format!(
                "`{shown}` is denied by the server's rule `{rule}` (`deny` in its configuration); no tool may open it"
            ),
        )),
    }
}

/// Fails, with the host's sentence, unless this call may create, replace or
/// change `path` (absolute, inside a granted root) where it really is: not
/// denied, and in a read-write root both as written and where its symlinks
/// lead.
pub fn judge_change(path: &Path) -> Result<(), Error> {
    judge(path, Judged::Change)
}

/// Fails, with the host's sentence, unless this call may move `from` to `to`
/// (absolute, inside granted roots): both ends as [`judge_change`] (a symlink
/// at an end is moved, not followed), neither a root nor holding one however
/// spelled, and no entry under `from` leaving a deny rule or coming under one.
pub fn judge_move(from: &Path, to: &Path) -> Result<(), Error> {
    judge(from, Judged::MoveTo(to))
}

/// What [`judge`] asks of the host.
enum Judged<'a> {
    Change,
    MoveTo(&'a Path),
}

/// Asks the host to judge `intent` on `path`.
fn judge(path: &Path, intent: Judged<'_>) -> Result<(), Error> {
    let utf8 = |p: &Path| {
        p.to_str().map(str::to_string).ok_or_else(|| Error::new(ErrorCode::InvalidArgument, "a path is not UTF-8"))
    };
    let path = utf8(path)?;
    #[cfg(target_arch = "wasm32")]
    {
        use crate::component::cordon::tool::policy::{self as host, Intent};
        let intent = match intent {
            Judged::Change => Intent::Change,
            Judged::MoveTo(to) => Intent::MoveTo(utf8(to)?),
        };
        host::judge(&path, &intent).map_err(crate::component::from_wit)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        // Natively there is no host: the filesystem decides.
        if let Judged::MoveTo(to) = intent {
            utf8(to)?;
        }
        let _ = path;
        Ok(())
    }
}

/// Leaves denied entries out of a walk.
#[derive(Debug, Clone, Copy)]
pub struct Denied;

impl Denied {
    /// A matcher for a walk, or `None` when the server denies nothing (so a
    /// walk pays nothing).
    pub fn for_walk() -> Option<Denied> {
        active().then_some(Denied)
    }

    /// Whether the entry at `path` (absolute; not followed) is denied.
    pub fn denies(&self, path: &Path) -> bool {
        rule(path, false).is_some()
    }
}
