//! A failed call, mapped once into what the answer, the audit record and
//! the log all read: a failure the model reads about (`isError`: a code, a
//! sentence, the limit hit), or one that is the server's and not the call's,
//! answered with a JSON-RPC error that says what kind of failure it was.

use serde_json::{Value, json};

use super::{Kind, WithKind};
use crate::protocol::jsonrpc::{Code, ErrorObject};
use crate::runtime::CallFailure;

/// A failed call: one the model reads about (`isError`), or one that is the
/// server's and not the call's, answered with a JSON-RPC error.
#[derive(Debug, Clone)]
pub enum Failed {
    Tool(ToolFailure),
    Server(ErrorObject),
}

impl From<CallFailure> for Failed {
    fn from(failure: CallFailure) -> Failed {
        match tool_failure(failure) {
            Ok(failure) => Failed::Tool(failure),
            Err(error) => Failed::Server(error),
        }
    }
}

/// A failed call the model reads about: a code (the tool's, or `timeout`,
/// `cancelled`, `busy`), a sentence, and the limit it hit, if one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFailure {
    pub code: &'static str,
    pub message: String,
    pub limit: Option<&'static str>,
}

impl std::fmt::Display for ToolFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// A failed call as the model reads it, or, for failures that are the
/// server's and not the call's, a JSON-RPC error: an internal error says what
/// kind of failure it was in `data.error`, and a limit's name and value.
fn tool_failure(failure: CallFailure) -> Result<ToolFailure, ErrorObject> {
    let limit = failure.limit_name();
    let internal = |kind: Kind, data: Value, message: String| {
        Err(ErrorObject::new(Code::InternalError, message).with_kind(kind, data))
    };
    let (code, message) = match failure {
        CallFailure::Tool(e) => (e.code.as_str(), e.message),
        timeout @ (CallFailure::Timeout { .. } | CallFailure::HostTimeout { .. }) => ("timeout", timeout.to_string()),
        CallFailure::Cancelled => ("cancelled", CallFailure::Cancelled.to_string()),
        busy @ CallFailure::Busy { .. } => ("busy", busy.to_string()),
        CallFailure::Limit { ref tool, limit: hit } => {
            let data = json!({ "tool": tool, "limit": hit.name(), "max": hit.max() });
            return internal(Kind::LimitExceeded, data, failure.to_string());
        }
        CallFailure::Stuck { ref tool, calls } => {
            return internal(Kind::ToolStuck, json!({ "tool": tool, "calls": calls }), failure.to_string());
        }
        CallFailure::Trapped { ref tool } => {
            return internal(Kind::Trapped, json!({ "tool": tool }), failure.to_string());
        }
        CallFailure::Contract { ref tool, .. } => {
            return internal(Kind::ContractViolation, json!({ "tool": tool }), failure.to_string());
        }
        CallFailure::Host(ref fault) => return internal(Kind::Host, json!({}), fault.to_string()),
    };
    Ok(ToolFailure { code, message, limit })
}
