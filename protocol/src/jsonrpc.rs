//! JSON-RPC 2.0: one message in, typed; one message out, serialized.
//!
//! Parsing happens once, here, at the edge: the rest of the server sees a
//! `Message` with a typed id, never raw JSON framing.

use serde::{Serialize, Serializer};
use serde_json::{Map, Number, Value, json};

use crate::body::Body;

/// The JSON-RPC error codes the server answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// -32700: the message is not JSON (or not UTF-8).
    ParseError,
    /// -32600: not a request the server can take (a batch, a message over the
    /// line limit, one an HTTP transport refuses).
    InvalidRequest,
    /// -32601: no such method (in this protocol revision).
    MethodNotFound,
    /// -32602: the method's parameters are wrong (a cursor refused, an
    /// argument the host owns malformed, a tool not offered).
    InvalidParams,
    /// -32603: the server failed (a trap, a limit that stopped a tool).
    InternalError,
    /// -32001: a TCP connection or HTTP request without the right token.
    Unauthorized,
    /// -32003: a request its principal's token lacks the scope for (HTTP 403).
    Forbidden,
    /// -32002: a request other than `initialize` or `ping` before
    /// `initialize` (as in LSP).
    NotInitialized,
    /// -32020: a header disagrees with the request it carries, or is missing
    /// or malformed (2026-07-28).
    HeaderMismatch,
    /// -32022: the request's protocol revision is not served (2026-07-28).
    UnsupportedVersion,
}

impl Code {
    /// The number on the wire.
    pub fn value(self) -> i64 {
        match self {
            Code::ParseError => -32700,
            Code::InvalidRequest => -32600,
            Code::MethodNotFound => -32601,
            Code::InvalidParams => -32602,
            Code::InternalError => -32603,
            Code::Unauthorized => -32001,
            Code::Forbidden => -32003,
            Code::NotInitialized => -32002,
            Code::HeaderMismatch => -32020,
            Code::UnsupportedVersion => -32022,
        }
    }

    /// Whether it is in JSON-RPC's range for implementation-defined server
    /// errors (-32099 to -32000).
    pub fn is_server_error(self) -> bool {
        (-32099..=-32000).contains(&self.value())
    }
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(self.value())
    }
}

/// A request id: a string or a number, never null.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum Id {
    Number(Number),
    String(String),
}

/// A message from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// Expects exactly one response with the same id.
    Request { id: Id, method: String, params: Option<Value> },
    /// Never answered.
    Notification { method: String, params: Option<Value> },
    /// A response to a request the server sent: its result, or its error
    /// object; answered by nothing.
    Response { id: Id, outcome: Result<Value, Value> },
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorObject {
    pub code: Code,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        ErrorObject { code, message: message.into(), data: None }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

/// Why a line could not be turned into a `Message`, and the id to answer, if
/// one could be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    pub id: Option<Id>,
    pub error: ErrorObject,
}

/// Parses one framed message.
pub fn parse(line: &[u8]) -> Result<Message, Box<Rejected>> {
    let reject = |id, code, message: String| Box::new(Rejected { id, error: ErrorObject::new(code, message) });
    let text = std::str::from_utf8(line)
        .map_err(|e| reject(None, Code::ParseError, format!("Parse error: the message is not valid UTF-8 ({e})")))?;
    let value: Value =
        serde_json::from_str(text).map_err(|e| reject(None, Code::ParseError, format!("Parse error: {e}")))?;
    let Value::Object(mut obj) = value else {
        let what = if value.is_array() {
            "batches are not supported; send one message per line"
        } else {
            "a message must be a JSON object"
        };
        return Err(reject(None, Code::InvalidRequest, format!("Invalid Request: {what}")));
    };
    let id = match obj.remove("id") {
        None => None,
        Some(Value::Number(n)) => Some(Id::Number(n)),
        Some(Value::String(s)) => Some(Id::String(s)),
        Some(other) => {
            return Err(reject(
                None,
                Code::InvalidRequest,
                format!("Invalid Request: `id` must be a string or a number, not {other}"),
            ));
        }
    };
    if obj.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Err(reject(id, Code::InvalidRequest, "Invalid Request: `jsonrpc` must be \"2.0\"".into()));
    }
    let params = obj.remove("params");
    if let Some(p) = &params
        && !p.is_object()
        && !p.is_array()
    {
        return Err(reject(id, Code::InvalidRequest, "Invalid Request: `params` must be an object".into()));
    }
    match (obj.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Message::Request { id, method, params }),
        (Some(Value::String(method)), None) => Ok(Message::Notification { method, params }),
        (Some(_), id) => Err(reject(id, Code::InvalidRequest, "Invalid Request: `method` must be a string".into())),
        (None, Some(id)) if obj.contains_key("result") => {
            Ok(Message::Response { id, outcome: Ok(obj.remove("result").unwrap_or_default()) })
        }
        (None, Some(id)) if obj.contains_key("error") => {
            Ok(Message::Response { id, outcome: Err(obj.remove("error").unwrap_or_default()) })
        }
        (None, id) => Err(reject(id, Code::InvalidRequest, "Invalid Request: no `method`".into())),
    }
}

/// The id of a request from the first bytes of a message too long to parse:
/// the top-level `"id"` member, when it is a string or a number and whole in
/// `head`. Keys inside nested objects are not mistaken for it.
pub fn salvage_id(head: &[u8]) -> Option<Id> {
    let skip_ws = |mut j: usize| {
        while head.get(j).is_some_and(u8::is_ascii_whitespace) {
            j += 1;
        }
        j
    };
    let (mut i, mut depth, mut expect_key) = (0, 0usize, false);
    while i < head.len() {
        match head[i] {
            b'"' => {
                let end = string_end(head, i)?;
                if depth == 1 && expect_key {
                    let colon = skip_ws(end + 1);
                    if head.get(colon) != Some(&b':') {
                        return None;
                    }
                    let value = skip_ws(colon + 1);
                    if &head[i + 1..end] == b"id" {
                        return id_value(&head[value..]);
                    }
                    expect_key = false;
                    i = value;
                    continue;
                }
                i = end + 1;
                continue;
            }
            b'{' => {
                depth += 1;
                expect_key = depth == 1;
            }
            b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            b',' => expect_key = depth == 1,
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index of the quote closing the string that opens at `start`.
fn string_end(text: &[u8], start: usize) -> Option<usize> {
    let mut j = start + 1;
    while j < text.len() {
        match text[j] {
            b'\\' => j += 2,
            b'"' => return Some(j),
            _ => j += 1,
        }
    }
    None
}

/// A string or number id at the start of `text`, if it is whole there.
fn id_value(text: &[u8]) -> Option<Id> {
    match text.first()? {
        b'"' => {
            let end = string_end(text, 0)?;
            serde_json::from_slice(&text[..=end]).ok().map(Id::String)
        }
        b'-' | b'0'..=b'9' => {
            let len = text.iter().position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))?;
            serde_json::from_slice(&text[..len]).ok().map(Id::Number)
        }
        _ => None,
    }
}

/// A notification from the server, serialized as one line.
pub fn notification(method: &str, params: Value) -> String {
    json!({ "jsonrpc": "2.0", "method": method, "params": params }).to_string()
}

/// A request from the server, serialized as one line (without the newline).
pub fn request(id: &Id, method: &str, params: Value) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string()
}

/// A success response, serialized as one line (without the newline).
pub fn success(id: &Id, result: impl Into<Body>) -> String {
    match result.into() {
        Body::Tree(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }).to_string(),
        Body::Written(written) => {
            let id = serde_json::to_string(id).expect("ids serialize");
            // Sized once: a page is hundreds of KB, which `format!` would grow into.
            let (head, text) = (r#"{"jsonrpc":"2.0","id":"#, written.as_str());
            let mut line = String::with_capacity(head.len() + id.len() + text.len() + 12);
            line.push_str(head);
            line.push_str(&id);
            line.push_str(r#","result":"#);
            line.push_str(text);
            line.push('}');
            line
        }
    }
}

/// An error response; `id` is null when the request's id could not be read.
pub fn failure(id: Option<&Id>, error: &ErrorObject) -> String {
    let mut msg = Map::new();
    msg.insert("jsonrpc".into(), "2.0".into());
    msg.insert("id".into(), id.map_or(Value::Null, |id| serde_json::to_value(id).expect("ids serialize")));
    msg.insert("error".into(), serde_json::to_value(error).expect("errors serialize"));
    Value::Object(msg).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_notifications_and_responses_are_told_apart() {
        let req = parse(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap();
        assert_eq!(req, Message::Request { id: Id::Number(7.into()), method: "ping".into(), params: None });
        let req = parse(br#"{"jsonrpc":"2.0","id":"a","method":"x","params":{}}"#).unwrap();
        assert!(matches!(req, Message::Request { id: Id::String(ref s), .. } if s == "a"));
        let note = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(note, Message::Notification { .. }));
        let resp = parse(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).unwrap();
        assert!(matches!(resp, Message::Response { .. }));
    }

    #[test]
    fn malformed_json_is_a_parse_error() {
        assert_eq!(parse(b"{not json").unwrap_err().error.code, Code::ParseError);
        assert_eq!(parse(b"\xff\xfe").unwrap_err().error.code, Code::ParseError);
    }

    #[test]
    fn wrong_shapes_are_invalid_requests_keeping_the_id_when_readable() {
        assert_eq!(parse(b"[1,2]").unwrap_err().error.code, Code::InvalidRequest);
        assert_eq!(parse(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#).unwrap_err().error.code, Code::InvalidRequest);
        let r = parse(br#"{"jsonrpc":"1.0","id":3,"method":"x"}"#).unwrap_err();
        assert_eq!((r.error.code, r.id), (Code::InvalidRequest, Some(Id::Number(3.into()))));
        assert_eq!(parse(br#"{"jsonrpc":"2.0","id":3,"method":5}"#).unwrap_err().error.code, Code::InvalidRequest);
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":3,"method":"x","params":1}"#).unwrap_err().error.code,
            Code::InvalidRequest
        );
    }

    #[test]
    fn the_id_of_an_over_long_message_is_salvaged_from_its_head() {
        let num = |n: u64| Some(Id::Number(n.into()));
        assert_eq!(salvage_id(br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"#), num(42));
        assert_eq!(
            salvage_id(br#"{"method":"x","params":{"id":1,"a":"}\""},"id" : "r-7","#),
            Some(Id::String("r-7".into()))
        );
        // Nested ids are not the request's; a cut-off id is not guessed.
        assert_eq!(salvage_id(br#"{"jsonrpc":"2.0","method":"tools/call","params":{"id":3,"content":"xxxx"#), None);
        assert_eq!(salvage_id(br#"{"jsonrpc":"2.0","id":12"#), None);
        assert_eq!(salvage_id(br#"{"id":"abc"#), None);
        assert_eq!(salvage_id(br#"{"id":null,"method":"x"}"#), None);
        assert_eq!(salvage_id(br#"[{"id":1}]"#), None);
        assert_eq!(salvage_id(b"garbage"), None);
    }

    #[test]
    fn responses_echo_the_id_type() {
        assert_eq!(success(&Id::String("x".into()), json!({})), r#"{"jsonrpc":"2.0","id":"x","result":{}}"#);
        let e = ErrorObject::new(Code::ParseError, "bad");
        assert_eq!(failure(None, &e), r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}"#);
    }

    #[test]
    fn codes_go_on_the_wire_as_numbers() {
        let e = ErrorObject::new(Code::InvalidParams, "bad").with_data(json!({ "reason": "expired" }));
        let wire = serde_json::to_value(&e).unwrap();
        assert_eq!(wire, json!({ "code": -32602, "message": "bad", "data": { "reason": "expired" } }));
        assert!(Code::HeaderMismatch.is_server_error() && !Code::InvalidParams.is_server_error());
    }

    #[test]
    fn a_written_result_goes_out_as_its_tree_would() {
        let tree = json!({ "content": [{ "type": "text", "text": "a \"b\"" }], "isError": false });
        let written = Body::Written(crate::body::Written::new(tree.to_string(), None));
        for id in [Id::Number(3.into()), Id::String("x\"y".into())] {
            assert_eq!(success(&id, written.clone()), success(&id, tree.clone()));
        }
    }
}
