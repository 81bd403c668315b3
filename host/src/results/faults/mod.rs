//! The one table from fault to wire: what can go wrong in a request before
//! or around a tool call (`Fault`), a call's own failure (`call`), and a
//! transport's refusal before any session reads a request (`refusal`), each
//! typed, and where each becomes a JSON-RPC error object (with, for a
//! refusal, its HTTP status and audit reason). No other module but the
//! JSON-RPC core (`protocol`) makes an error object.

mod call;
pub mod refusal;

use std::fmt;

use serde::Serialize;
use serde_json::{Value, json};

use crate::args::ArgumentError;
use crate::pager::BYTES_PER_TOKEN;
use crate::pager::cursor::CursorError;
use crate::protocol::jsonrpc::{Code, ErrorObject};
pub use call::{Failed, ToolFailure};

/// What went wrong, for programs: the `data.error` of an error object, in
/// Cordon's own words (JSON-RPC's are its `Code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A message over the line limit (or an HTTP body over it).
    PayloadTooLarge,
    /// A cursor that was altered, foreign, expired or given elsewhere.
    InvalidCursor,
    /// A tool that writes, on a server that runs read-only.
    ReadOnly,
    /// The client never answered the server's `roots/list`.
    RootsUnanswered,
    /// A tool stopped by one of the call's limits.
    LimitExceeded,
    /// A tool whose earlier calls are still blocked past their deadlines.
    ToolStuck,
    /// A tool that trapped.
    Trapped,
    /// A tool that broke the contract.
    ContractViolation,
    /// The host could not set a call up.
    Host,
    /// No such tool.
    NotFound,
    /// A tool the principal's access rules do not give it.
    NoAccess,
    /// A tool the principal's token lacks the scope for.
    InsufficientScope,
    /// The audit trail cannot be written and the server fails closed.
    AuditUnavailable,
}

/// An error object with Cordon's kind of failure (`data.error`) beside its
/// fields.
pub trait WithKind {
    /// Sets `data` to `fields` (an object) with `error` naming the kind.
    fn with_kind(self, kind: Kind, fields: Value) -> ErrorObject;
}

impl WithKind for ErrorObject {
    fn with_kind(self, kind: Kind, mut fields: Value) -> ErrorObject {
        if let Value::Object(map) = &mut fields {
            map.insert("error".into(), serde_json::to_value(kind).expect("a kind serializes"));
        }
        self.with_data(fields)
    }
}

/// A request the server refuses, or could not answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// A message longer than `limit` bytes (at least `observed`) was discarded
    /// unread; content that large goes through `upload` in `max_chunk` pieces.
    TooLong { observed: usize, limit: usize, max_chunk: usize },
    /// A response of `size` bytes would be over `limit`: a page of at most
    /// `max_tokens` fits.
    ResponseTooLarge { size: usize, limit: usize, max_tokens: usize },
    /// A request other than `initialize` or `ping` before `initialize`.
    NotInitialized { method: String },
    /// A request whose id another request in progress has.
    DuplicateId,
    /// The thread running a call failed (the log has details).
    CallThread,
    /// An argument the host owns is malformed.
    BadArgument(ArgumentError),
    /// A cursor that was refused.
    Cursor(CursorError),
    /// A tool that writes, on a server that runs read-only.
    ReadOnly { name: String },
    /// A call of a tool that does not exist.
    UnknownTool { name: String },
    /// A call of a tool the principal's access rules do not give it (`by`:
    /// the rules that matched it, empty when none did).
    NoAccess { name: String, by: String },
    /// A call of a tool that needs `scope`, which the principal's token lacks.
    InsufficientScope { name: String, scope: String },
    /// A resource URI that names no file under the roots: another scheme, or
    /// not a file URI at all.
    UnknownResource { uri: String },
    /// A file resource the `read` (or, listing, `glob`) tool refused, as it
    /// refuses a call: not found, denied, outside the roots.
    ResourceRefused { uri: String, failure: ToolFailure },
    /// A prompt that does not exist (every one: the server has none).
    UnknownPrompt { name: String },
    /// A resource method on a server started with `--no-resources`.
    NoResources { method: String },
    /// A skill that does not exist (every one: the server serves none).
    UnknownSkill { uri: String },
    /// The handle store could not be read (`reason`: the system's words).
    HandleStore { reason: String },
    /// The client declared roots but did not answer `roots/list` within
    /// `waited_secs`.
    RootsUnanswered { waited_secs: u64 },
    /// The audit trail cannot be written (`reason`) and the server fails
    /// closed: the call was refused, or its answer withheld.
    AuditUnavailable { reason: String },
}

impl Fault {
    /// The largest `max_tokens` whose page fits a response of `limit` bytes
    /// (JSON escaping can grow a page's text eightfold), at most `most`.
    pub fn tokens_that_fit(limit: usize, most: usize) -> usize {
        (limit / 8 / BYTES_PER_TOKEN as usize).clamp(1, most.max(1))
    }

    /// The JSON-RPC error object.
    pub fn to_error(&self) -> ErrorObject {
        let message = self.to_string();
        match self {
            Fault::TooLong { observed, limit, max_chunk } => ErrorObject::new(Code::InvalidRequest, message).with_kind(
                Kind::PayloadTooLarge,
                json!({ "limit_bytes": limit, "observed_bytes": observed, "max_chunk_bytes": max_chunk, "use": "upload" }),
            ),
            Fault::ResponseTooLarge { size, limit, max_tokens } => ErrorObject::new(Code::InvalidRequest, message)
                .with_kind(
                    Kind::PayloadTooLarge,
                    json!({ "limit_bytes": limit, "observed_bytes": size, "max_tokens": max_tokens }),
                ),
            Fault::NotInitialized { .. } => ErrorObject::new(Code::NotInitialized, message),
            Fault::DuplicateId => ErrorObject::new(Code::InvalidRequest, message),
            Fault::CallThread => ErrorObject::new(Code::InternalError, message),
            Fault::BadArgument(_) => ErrorObject::new(Code::InvalidParams, message),
            Fault::Cursor(e) => {
                ErrorObject::new(Code::InvalidParams, message).with_kind(Kind::InvalidCursor, json!({ "reason": e.reason() }))
            }
            Fault::ReadOnly { name } => {
                ErrorObject::new(Code::InvalidParams, message).with_kind(Kind::ReadOnly, json!({ "name": name }))
            }
            Fault::RootsUnanswered { .. } => {
                ErrorObject::new(Code::InternalError, message).with_kind(Kind::RootsUnanswered, json!({}))
            }
            Fault::UnknownTool { name } => {
                ErrorObject::new(Code::InvalidParams, message).with_kind(Kind::NotFound, json!({ "tool": name }))
            }
            Fault::NoAccess { name, .. } => {
                ErrorObject::new(Code::InvalidParams, message).with_kind(Kind::NoAccess, json!({ "tool": name }))
            }
            Fault::InsufficientScope { name, scope } => ErrorObject::new(Code::Forbidden, message)
                .with_kind(Kind::InsufficientScope, json!({ "tool": name, "scope": scope })),
            Fault::UnknownResource { uri } => ErrorObject::new(Code::InvalidParams, message).with_data(json!({ "uri": uri })),
            Fault::ResourceRefused { uri, failure } => {
                let code = match failure.code {
                    "io" | "internal" | "trapped" | "contract_violation" | "host" => Code::InternalError,
                    _ => Code::InvalidParams,
                };
                ErrorObject::new(code, message).with_data(json!({ "uri": uri, "code": failure.code }))
            }
            Fault::UnknownPrompt { name } => {
                ErrorObject::new(Code::InvalidParams, message).with_data(json!({ "name": name }))
            }
            Fault::UnknownSkill { uri } => ErrorObject::new(Code::InvalidParams, message).with_data(json!({ "uri": uri })),
            Fault::NoResources { .. } => ErrorObject::new(Code::MethodNotFound, message),
            Fault::HandleStore { .. } => ErrorObject::new(Code::InternalError, message),
            Fault::AuditUnavailable { .. } => {
                ErrorObject::new(Code::InternalError, message).with_kind(Kind::AuditUnavailable, json!({}))
            }
        }
    }
}

impl From<Fault> for ErrorObject {
    fn from(fault: Fault) -> ErrorObject {
        fault.to_error()
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::TooLong { observed, limit, max_chunk } => write!(
                f,
                "message of at least {observed} bytes exceeds the limit of {limit} bytes per message; it was discarded. \
                 To write more, stage the content with the `upload` tool in chunks of at most {max_chunk} bytes, then \
                 call `write` with its `upload_id`"
            ),
            Fault::ResponseTooLarge { size, limit, max_tokens } => write!(
                f,
                "the response would be {size} bytes, over the limit of {limit} bytes per message; ask for a smaller \
                 page, e.g. `max_tokens` of at most {max_tokens}"
            ),
            Fault::NotInitialized { method } => {
                write!(f, "Server not initialized: send `initialize` before `{method}`")
            }
            Fault::DuplicateId => {
                f.write_str("Invalid Request: this id is already used by a request in progress; ids must be unique")
            }
            Fault::CallThread => f.write_str("the call failed inside the server; the log has details"),
            Fault::BadArgument(e) => write!(f, "{e}"),
            Fault::Cursor(e) => write!(f, "Invalid cursor: {e}"),
            Fault::ReadOnly { name } => {
                write!(f, "Tool `{name}` is not offered: this server runs read-only (`--read-only`), so nothing writes")
            }
            Fault::UnknownTool { name } => {
                write!(f, "Unknown tool: `{name}`; tools/list shows the tools this server has")
            }
            Fault::NoAccess { name, by } if by.is_empty() => write!(
                f,
                "Tool `{name}` is not offered to you: no access rule of this server names you (by subject, \
                 group, client or token), so you may call nothing; ask its operator for an `[[access]]` rule"
            ),
            Fault::NoAccess { name, by } => write!(
                f,
                "Tool `{name}` is not offered to you: the access rules that name you ({by}) do not list it; \
                 tools/list shows the tools you may call"
            ),
            Fault::InsufficientScope { name, scope } => {
                write!(f, "Tool `{name}` needs the scope `{scope}`, which your access token does not carry")
            }
            Fault::UnknownResource { uri } => write!(
                f,
                "Resource not found: `{uri}`; this server's resources are the files under its roots, as \
                 file:///absolute/path URIs"
            ),
            Fault::ResourceRefused { uri, failure } if failure.code == "not_found" => {
                write!(f, "Resource not found: `{uri}` ({})", failure.message)
            }
            Fault::ResourceRefused { uri, failure } => {
                write!(f, "Resource `{uri}` cannot be read ({}): {}", failure.code, failure.message)
            }
            Fault::UnknownPrompt { name } => {
                write!(f, "Prompt not found: `{name}`; this server offers tools, not prompts")
            }
            Fault::NoResources { method } => {
                write!(f, "Method not found: {method} (this server offers no resources: it runs with --no-resources)")
            }
            Fault::UnknownSkill { uri } => write!(
                f,
                "Skill not found: `{uri}`; this server serves no skills (it declares the Skills extension for \
                 its directory reads, resources/directory/read)"
            ),
            Fault::HandleStore { reason } => write!(
                f,
                "the handle store could not be read ({reason}); try again, or continue with the signed cursor in \
                 `_meta[\"cordon/page\"].cursor`"
            ),
            Fault::AuditUnavailable { reason } => write!(
                f,
                "the call is refused: {reason}, and this server records every call before answering it \
                 (audit-on-failure = closed); an operator must make the audit log writable"
            ),
            Fault::RootsUnanswered { waited_secs } => write!(
                f,
                "the client declared the `roots` capability but did not answer `roots/list` within {waited_secs} s; \
                 calls are refused until it does, so that none runs outside the roots it allows"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_fault_has_its_code_kind_and_sentence() {
        let too_long = Fault::TooLong { observed: 9, limit: 8, max_chunk: 4 }.to_error();
        assert_eq!(
            (too_long.code, &too_long.data.as_ref().unwrap()["error"]),
            (Code::InvalidRequest, &json!("payload_too_large"))
        );
        assert!(too_long.message.contains("chunks of at most 4 bytes"), "{}", too_long.message);
        let cursor = Fault::Cursor(CursorError::Expired).to_error();
        assert_eq!((cursor.code, &cursor.data.unwrap()["error"]), (Code::InvalidParams, &json!("invalid_cursor")));
        let bad = Fault::BadArgument(ArgumentError::Staged).to_error();
        assert_eq!((bad.code, bad.data), (Code::InvalidParams, None));
        assert_eq!(Fault::NotInitialized { method: "tools/list".into() }.to_error().code, Code::NotInitialized);
        assert_eq!(Fault::RootsUnanswered { waited_secs: 5 }.to_error().code, Code::InternalError);
        let resource = Fault::UnknownResource { uri: "file:///a".into() }.to_error();
        assert_eq!((resource.code, resource.data), (Code::InvalidParams, Some(json!({ "uri": "file:///a" }))));
        let prompt = Fault::UnknownPrompt { name: "p".into() }.to_error();
        assert_eq!((prompt.code, prompt.data), (Code::InvalidParams, Some(json!({ "name": "p" }))));
        assert_eq!(
            (Fault::tokens_that_fit(4 << 20, 25_000), Fault::tokens_that_fit(64 << 10, 25_000)),
            (25_000, 2_048)
        );
    }

    #[test]
    fn kinds_go_on_the_wire_as_snake_case_names_beside_the_fields() {
        let e =
            ErrorObject::new(Code::InvalidParams, "bad").with_kind(Kind::InvalidCursor, json!({ "reason": "expired" }));
        let wire = serde_json::to_value(&e).unwrap();
        assert_eq!(
            wire,
            json!({ "code": -32602, "message": "bad", "data": { "error": "invalid_cursor", "reason": "expired" } })
        );
        let kinds = [
            (Kind::PayloadTooLarge, "payload_too_large"),
            (Kind::RootsUnanswered, "roots_unanswered"),
            (Kind::NotFound, "not_found"),
        ];
        for (kind, name) in kinds {
            assert_eq!(serde_json::to_value(kind).unwrap(), json!(name));
        }
    }
}
