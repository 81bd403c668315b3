//! MCP methods: typed requests in, result objects out.
//!
//! Protocol revisions: 2025-11-25 (current) and the older ones a client may ask
//! for. Revisions before 2025-06-18 know neither `outputSchema` nor
//! `structuredContent` nor tool titles; those are left out for them.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::jsonrpc::{ErrorObject, INVALID_PARAMS, METHOD_NOT_FOUND};
use crate::pager::{Block, Output};
use crate::registry::Tool;
use crate::runtime::CallFailure;
use crate::tool::{ErrorCode, Manifest};

/// The revisions this server speaks, newest first.
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// A negotiated protocol revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(&'static str);

impl Version {
    pub const LATEST: Version = Version(SUPPORTED_VERSIONS[0]);

    /// The client's revision when supported, else the latest (the client then
    /// decides whether it can go on, as the specification says).
    pub fn negotiate(requested: &str) -> Version {
        SUPPORTED_VERSIONS.iter().find(|v| **v == requested).map_or(Version::LATEST, |v| Version(v))
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// Whether the revision has `structuredContent`, `outputSchema` and titles.
    pub fn structured(self) -> bool {
        self.0 >= "2025-06-18"
    }
}

/// A request the server understands, with its parameters checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Initialize { protocol_version: String, client: String },
    Ping,
    ListTools,
    CallTool { name: String, arguments: Value },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParams {
    protocol_version: String,
    #[serde(default)]
    client_info: Option<ClientInfo>,
}

#[derive(Deserialize)]
struct ClientInfo {
    name: String,
    #[serde(default)]
    version: String,
}

#[derive(Deserialize)]
struct CallToolParams {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

impl Request {
    /// Types a request; an unknown method is -32601, bad params -32602.
    pub fn parse(method: &str, params: Option<Value>) -> Result<Request, ErrorObject> {
        let params = params.unwrap_or_else(|| json!({}));
        let bad = |e: serde_json::Error| ErrorObject::new(INVALID_PARAMS, format!("Invalid params for {method}: {e}"));
        match method {
            "initialize" => {
                let p: InitializeParams = serde_json::from_value(params).map_err(bad)?;
                let client =
                    p.client_info.map_or_else(|| "unknown client".into(), |c| format!("{} {}", c.name, c.version));
                Ok(Request::Initialize { protocol_version: p.protocol_version, client })
            }
            "ping" => Ok(Request::Ping),
            "tools/list" => Ok(Request::ListTools),
            "tools/call" => {
                let p: CallToolParams = serde_json::from_value(params).map_err(bad)?;
                let arguments = match p.arguments {
                    None | Some(Value::Null) => json!({}),
                    Some(args @ Value::Object(_)) => args,
                    Some(_) => {
                        return Err(ErrorObject::new(
                            INVALID_PARAMS,
                            "Invalid params for tools/call: `arguments` must be an object",
                        ));
                    }
                };
                Ok(Request::CallTool { name: p.name, arguments })
            }
            other => Err(ErrorObject::new(METHOD_NOT_FOUND, format!("Method not found: {other}"))),
        }
    }
}

/// The `initialize` result.
pub fn initialize_result(version: Version) -> Value {
    json!({
        "protocolVersion": version.as_str(),
        "capabilities": { "tools": { "listChanged": false } },
        "serverInfo": { "name": "cordon", "title": "Cordon", "version": env!("CARGO_PKG_VERSION") },
        "instructions": "File tools sandboxed in WebAssembly. Paths are relative to the first root or absolute inside a root."
    })
}

/// The `tools/list` result.
pub fn list_tools_result<'a>(tools: impl Iterator<Item = &'a Tool>, version: Version) -> Value {
    let tools: Vec<Value> = tools.map(|t| describe_tool(&t.manifest, version)).collect();
    json!({ "tools": tools })
}

fn describe_tool(m: &Manifest, version: Version) -> Value {
    let mut tool = Map::new();
    tool.insert("name".into(), m.name.clone().into());
    tool.insert("description".into(), m.description.clone().into());
    tool.insert("inputSchema".into(), m.input_schema.clone());
    let mut annotations = json!({
        "readOnlyHint": m.read_only,
        "destructiveHint": m.destructive,
        "idempotentHint": m.idempotent,
        "openWorldHint": false,
    });
    if version.structured() {
        tool.insert("title".into(), m.title.clone().into());
        tool.insert("outputSchema".into(), output_schema(m));
        annotations["title"] = m.title.clone().into();
    }
    tool.insert("annotations".into(), annotations);
    Value::Object(tool)
}

/// The fields the host adds to a tool's `info` when its chunks carry spans.
fn span_properties() -> Value {
    json!({
        "start_line": { "type": "integer", "minimum": 1, "description": "First line returned (1-based)." },
        "end_line": { "type": "integer", "minimum": 1, "description": "Last line returned (1-based, inclusive)." },
        "start_byte": { "type": "integer", "minimum": 0, "description": "Byte offset of the first byte returned." },
        "end_byte": { "type": "integer", "minimum": 0, "description": "Byte offset just after the last byte returned." }
    })
}

/// The tool's output schema with the host's span fields added.
pub fn output_schema(m: &Manifest) -> Value {
    let mut schema = m.output_schema.clone();
    let props = schema.as_object_mut().expect("checked at load").entry("properties").or_insert_with(|| json!({}));
    if let (Some(props), Value::Object(extra)) = (props.as_object_mut(), span_properties()) {
        for (key, value) in extra {
            props.entry(key).or_insert(value);
        }
    }
    schema
}

/// A successful `tools/call` result: the payload as content, the tool's `info`
/// and the span as structured content.
pub fn call_result(output: Output, version: Version) -> Value {
    let content: Vec<Value> = if output.blocks.is_empty() {
        vec![json!({ "type": "text", "text": "" })]
    } else {
        output.blocks.into_iter().map(content_block).collect()
    };
    let mut result = json!({ "content": content, "isError": false });
    if version.structured() {
        let mut structured = output.info;
        if let (Some(obj), Some(span)) = (structured.as_object_mut(), output.span) {
            obj.insert("start_line".into(), span.start_line.into());
            obj.insert("end_line".into(), span.end_line.into());
            obj.insert("start_byte".into(), span.start_byte.into());
            obj.insert("end_byte".into(), span.end_byte.into());
        }
        result["structuredContent"] = structured;
    }
    result
}

fn content_block(block: Block) -> Value {
    match block {
        Block::Text(text) => json!({ "type": "text", "text": text }),
        Block::Bytes(raw) => json!({
            "type": "resource",
            "resource": {
                "uri": "cordon:raw-bytes",
                "mimeType": "application/octet-stream",
                "blob": base64_encode(&raw),
            }
        }),
    }
}

/// A failed call, as a result the model can read (`isError`), or, for failures
/// that are the server's and not the call's, a JSON-RPC error.
pub fn call_failure(failure: CallFailure, version: Version) -> Result<Value, ErrorObject> {
    let (code, message) = match failure {
        CallFailure::Tool(e) => (e.code.as_str(), e.message),
        CallFailure::Timeout => ("timeout", CallFailure::Timeout.to_string()),
        other @ (CallFailure::Trapped { .. } | CallFailure::Contract(_) | CallFailure::Host(_)) => {
            return Err(ErrorObject::new(super::jsonrpc::INTERNAL_ERROR, other.to_string()));
        }
    };
    let mut result = json!({
        "content": [{ "type": "text", "text": format!("{code}: {message}") }],
        "isError": true,
    });
    if version.structured() {
        result["structuredContent"] = json!({ "error": { "code": code, "message": message } });
    }
    Ok(result)
}

/// The error for a tools/call naming a tool that does not exist.
pub fn unknown_tool(name: &str) -> ErrorObject {
    ErrorObject::new(INVALID_PARAMS, format!("Unknown tool: `{name}`; tools/list shows the tools this server has"))
        .with_data(json!({ "error": ErrorCode::NotFound.as_str(), "tool": name }))
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_negotiate_to_the_clients_or_the_latest() {
        assert_eq!(Version::negotiate("2025-03-26").as_str(), "2025-03-26");
        assert_eq!(Version::negotiate("1999-01-01"), Version::LATEST);
        assert!(Version::negotiate("2025-06-18").structured());
        assert!(!Version::negotiate("2024-11-05").structured());
    }

    #[test]
    fn requests_are_typed_or_refused() {
        assert_eq!(Request::parse("ping", None), Ok(Request::Ping));
        assert_eq!(Request::parse("nope", None).unwrap_err().code, METHOD_NOT_FOUND);
        assert_eq!(Request::parse("initialize", Some(json!({}))).unwrap_err().code, INVALID_PARAMS);
        let call = Request::parse("tools/call", Some(json!({"name": "read"}))).unwrap();
        assert_eq!(call, Request::CallTool { name: "read".into(), arguments: json!({}) });
        let bad = Request::parse("tools/call", Some(json!({"name": "read", "arguments": [1]})));
        assert_eq!(bad.unwrap_err().code, INVALID_PARAMS);
    }
}
