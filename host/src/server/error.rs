//! Why a server cannot start: one variant a reason, each with its sentence.

use std::path::PathBuf;

use crate::audit::AuditError;
use crate::installed::InstallError;
use crate::installed::oci::OciError;
use crate::installed::signature::SignatureError;
use crate::pager::cursor::KeyError;
use crate::pager::handles::HandleError;
use crate::policy::{AccessError, PolicyError};
use crate::private::TooLoose;
use crate::registry::LoadError;
use crate::runtime::{LimitError, RuntimeError};

/// Why a server (or a runtime alone) cannot start, or its installed tools
/// not be reloaded.
#[derive(Debug)]
pub enum StartError {
    /// The limits cannot be used.
    Limits(LimitError),
    /// The roots or deny rules cannot be used.
    Policy(PolicyError),
    /// An access rule cannot be used.
    Access(AccessError),
    /// A directory the server keeps state in cannot be opened or created.
    Dir { what: &'static str, path: PathBuf, source: std::io::Error },
    /// A mode in the state directory lets other users in and cannot be tightened.
    Private(TooLoose),
    /// The cursor key given cannot be used.
    CursorKey(KeyError),
    /// The state directory's cursor key cannot be read or created.
    CursorKeyFile(std::io::Error),
    /// The wasm runtime cannot be built.
    Runtime(RuntimeError),
    /// A tool cannot be loaded.
    Tools(LoadError),
    /// The tools directory or its lockfile cannot be used.
    Installed(InstallError),
    /// An installed tool has a built-in tool's name.
    BuiltinName(String),
    /// The handle store (`--handle-store`) cannot be reached.
    HandleStore(HandleError),
    /// The audit log cannot be opened, and the server fails closed.
    Audit(AuditError),
    /// A trusted key cannot be used.
    Keys(SignatureError),
    /// An installed tool has no valid signature from a trusted key, and
    /// signatures are required.
    Unsigned { tool: String, why: SignatureError },
    /// A tool added from a registry no longer matches its pin (its lockfile
    /// entry, or the tag it was added by).
    Registry { tool: String, why: OciError },
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Limits(e) => e.fmt(f),
            StartError::Policy(e) => e.fmt(f),
            StartError::Access(e) => e.fmt(f),
            StartError::Dir { what, path, source } => write!(f, "{what} {}: {source}", path.display()),
            StartError::Private(e) => write!(f, "the state directory is not private: {e}"),
            StartError::CursorKey(e) => write!(f, "the cursor key is unusable: {e}"),
            StartError::CursorKeyFile(e) => write!(f, "load the cursor key: {e}"),
            StartError::Runtime(e) => e.fmt(f),
            StartError::Keys(e) => e.fmt(f),
            StartError::Unsigned { tool, why } => write!(f, "the installed tool `{tool}` is refused: {why}"),
            StartError::Registry { tool, why } => write!(f, "the installed tool `{tool}` is refused: {why}"),
            StartError::Audit(e) => write!(
                f,
                "{e}; no call may run unrecorded (audit-on-failure = closed): fix the path, or give \
                 --audit-log FILE, --audit-on-failure open or --no-audit"
            ),
            StartError::Tools(e) => e.fmt(f),
            StartError::Installed(e) => e.fmt(f),
            StartError::HandleStore(e) => write!(f, "the handle store (--handle-store) cannot be used: {e}"),
            StartError::BuiltinName(name) => {
                write!(f, "the installed tool `{name}` has the name of a built-in tool; remove it")
            }
        }
    }
}

impl std::error::Error for StartError {}
