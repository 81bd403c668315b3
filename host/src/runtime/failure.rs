//! Why a call did not produce its output. Tool errors (the WIT `error`) and
//! traps are kept apart: a tool error is the tool's answer and goes to the
//! client as it is; a trap means the guest is broken or was stopped, its store
//! is dropped, and the client learns only what kind of failure it was.

use std::fmt;

use super::signal::Interrupted;
use crate::tool::ToolError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallFailure {
    /// The tool refused the call with a WIT error.
    Tool(ToolError),
    /// The call ran past its wall-time limit and was interrupted.
    Timeout,
    /// The request was cancelled and the guest interrupted; nothing is answered.
    Cancelled,
    /// The guest trapped (a bug, or memory it could not get); details are logged.
    Trapped { tool: String },
    /// The tool broke a rule of the contract (e.g. a chunk over its budget).
    Contract(String),
    /// The host could not set the call up.
    Host(String),
}

impl CallFailure {
    /// Classifies an error from calling into the guest, logging its details.
    pub fn trap(tool: &str, err: wasmtime::Error) -> CallFailure {
        match err.downcast_ref::<Interrupted>() {
            Some(Interrupted::Timeout) => {
                tracing::warn!(tool, "call interrupted at its deadline");
                return CallFailure::Timeout;
            }
            Some(Interrupted::Cancelled) => {
                tracing::info!(tool, "call interrupted: cancelled");
                return CallFailure::Cancelled;
            }
            None => {}
        }
        tracing::warn!(tool, "guest trapped: {err:?}");
        CallFailure::Trapped { tool: tool.to_string() }
    }
}

impl fmt::Display for CallFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallFailure::Tool(e) => write!(f, "{e}"),
            CallFailure::Timeout => f.write_str("the call ran past its time limit and was stopped"),
            CallFailure::Cancelled => f.write_str("the call was cancelled"),
            CallFailure::Trapped { tool } => {
                write!(f, "tool `{tool}` failed inside its sandbox; the server log has details")
            }
            CallFailure::Contract(what) => write!(f, "{what}"),
            CallFailure::Host(what) => write!(f, "{what}"),
        }
    }
}
