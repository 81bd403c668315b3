//! The server's deny rules: paths no tool may open or list, even inside the
//! granted roots (e.g. `.git/**`, `*.pem`). The host owns the rules and
//! answers every check, so they read the same for every tool.
//!
//! [`check`] is for a path a client named (symlinks resolved by the host);
//! [`Denied`] is for the entries of a walk (never followed), and costs
//! nothing when the server has no rules.

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
