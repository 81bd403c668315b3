//! What a call came to, as the audit trail records it, in the wire's own
//! words: the page delivered, the tool's error code, the limit hit, or the
//! kind of the JSON-RPC error that refused it.

use serde_json::{Value, json};

use super::{Answer, Failed, Fault};

/// The outcome of a call: `{"result": "page", "page", "bytes", "items",
/// "last"}`, `{"result": "host"}`, `{"tool_error": CODE, "limit"?}` or
/// `{"error": KIND}`.
pub fn outcome(answer: &Result<Answer, Fault>) -> Value {
    match answer {
        Ok(Answer::Page(page)) => json!({
            "result": "page", "page": page.index + 1, "bytes": page.bytes, "items": page.items,
            "last": page.next_cursor.is_none(),
        }),
        Ok(Answer::Host(_)) => json!({ "result": "host" }),
        Ok(Answer::Failed(Failed::Tool(failure))) => {
            let mut out = json!({ "tool_error": failure.code });
            if let Some(limit) = failure.limit {
                out["limit"] = limit.into();
            }
            out
        }
        Ok(Answer::Failed(Failed::Server(error))) => refusal(error),
        Err(fault) => refusal(&fault.to_error()),
    }
}

/// `{"error": KIND}` for a JSON-RPC error (its `data.error`, else its code).
fn refusal(error: &crate::protocol::jsonrpc::ErrorObject) -> Value {
    let kind = error.data.as_ref().and_then(|d| d.get("error")).cloned();
    let mut out = json!({ "error": kind.unwrap_or_else(|| json!(error.code)) });
    if let Some(limit) = error.data.as_ref().and_then(|d| d.get("limit")) {
        out["limit"] = limit.clone();
    }
    out
}

/// The short reason a fault refused a request, for a `refused` record.
pub fn reason(fault: &Fault) -> String {
    match refusal(&fault.to_error())["error"].clone() {
        Value::String(kind) => kind,
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{CallFailure, Limit};
    use crate::tool::{ErrorCode, ToolError};

    #[test]
    fn each_outcome_is_named_with_the_wires_code() {
        let tool = Ok(Answer::Failed(CallFailure::Tool(ToolError::new(ErrorCode::NotFound, "no")).into()));
        assert_eq!(outcome(&tool), json!({ "tool_error": "not_found" }));
        let slow = Ok(Answer::Failed(CallFailure::Timeout { wall_time: std::time::Duration::from_secs(1) }.into()));
        assert_eq!(outcome(&slow), json!({ "tool_error": "timeout", "limit": "wall_time" }));
        let hoard = Ok(Answer::Failed(CallFailure::Limit { tool: "t".into(), limit: Limit::Memory(1) }.into()));
        assert_eq!(outcome(&hoard), json!({ "error": "limit_exceeded", "limit": "memory_mib" }));
        let unknown = Err(Fault::UnknownTool { name: "nope".into() });
        assert_eq!(outcome(&unknown), json!({ "error": "not_found" }));
        assert_eq!(reason(&Fault::ReadOnly { name: "write".into() }), "read_only");
    }
}
