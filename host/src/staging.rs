//! The `upload` tool (served by the host itself) and the attaching of a
//! verified upload to a tool call that takes `upload_id`.
//!
//! A tool takes uploads when its input schema has a `staged` property (a
//! string): the host hides `staged` from clients, offers `upload_id`, `size`
//! and `sha256` instead, and on a call checks the upload, mounts its directory
//! read-only at `/.cordon-upload` and passes `staged: "/.cordon-upload/data"`.

use std::path::PathBuf;

use base64::Engine as _;
use serde_json::{Map, Value, json};
use wasmtime_wasi::FsPerms;

use crate::policy::Grant;
use crate::tool::{ArgumentError, ErrorCode, Manifest, ToolError};
use crate::uploads::{STAGED_GUEST_DIR, Uploads};

/// The host tool's name.
pub const UPLOAD_TOOL: &str = "upload";

/// The `upload` tool as `tools/list` shows it.
pub fn upload_tool(version_structured: bool) -> Value {
    let mut tool = json!({
        "name": UPLOAD_TOOL,
        "description": "Stage content too large for one call, for `write` (or another tool taking `upload_id`). \
            action=start returns an upload_id and the largest chunk; action=chunk with upload_id, index (0, 1, …) and \
            data (utf8 text, or base64 with encoding=base64) appends one chunk and acknowledges the bytes so far and \
            their sha256; then call `write` with upload_id, size and sha256 to commit, or action=abort. Idle uploads expire.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "action": { "enum": ["start", "chunk", "abort"] },
                "upload_id": { "type": "string" },
                "index": { "type": "integer", "minimum": 0 },
                "data": { "type": "string" },
                "encoding": { "enum": ["utf8", "base64"] }
            },
            "required": ["action"],
            "additionalProperties": false
        },
        "annotations": { "readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false }
    });
    if version_structured {
        tool["title"] = "Stage an upload".into();
        tool["outputSchema"] = json!({
            "type": "object",
            "properties": {
                "upload_id": { "type": "string" },
                "index": { "type": "integer" },
                "bytes": { "type": "integer" },
                "sha256": { "type": "string" },
                "max_chunk_bytes": { "type": "integer" },
                "aborted": { "type": "boolean" }
            },
            "required": ["upload_id"]
        });
    }
    tool
}

/// Runs the `upload` tool.
pub fn call_upload(uploads: &Uploads, args: &Value) -> Result<Value, ToolError> {
    let bad = |what: &str| ToolError::new(ErrorCode::InvalidArgument, what.to_string());
    let known = ["action", "upload_id", "index", "data", "encoding"];
    if let Some(unknown) = args.as_object().and_then(|a| a.keys().find(|k| !known.contains(&k.as_str()))) {
        return Err(bad(&format!("unknown argument `{unknown}`; `upload` takes {}", known.join(", "))));
    }
    let id = || args["upload_id"].as_str().ok_or_else(|| bad("`upload_id` is required for this action"));
    match args["action"].as_str() {
        Some("start") => uploads.start(),
        Some("chunk") => {
            let index = args["index"].as_u64().ok_or_else(|| bad("`index` (0, 1, …) is required for a chunk"))?;
            let data = args["data"].as_str().ok_or_else(|| bad("`data` is required for a chunk"))?;
            let bytes = match args["encoding"].as_str().unwrap_or("utf8") {
                "base64" => base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .map_err(|e| bad(&format!("`data` is not valid base64: {e}")))?,
                _ => data.as_bytes().to_vec(),
            };
            uploads.chunk(id()?, index, &bytes)
        }
        Some("abort") => uploads.abort(id()?),
        _ => Err(bad("`action` must be start, chunk or abort")),
    }
}

/// Whether a tool takes staged uploads.
pub fn takes_uploads(m: &Manifest) -> bool {
    m.input_schema["properties"].get("staged").is_some()
}

/// The tool's input schema as clients see it: `staged` replaced by the
/// upload arguments.
pub fn advertise(schema: &mut Value) {
    let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else { return };
    if props.remove("staged").is_none() {
        return;
    }
    props.insert("upload_id".into(), json!({ "type": "string", "description": "Commit a staged upload (see the `upload` tool) instead of giving content." }));
    props.insert(
        "size".into(),
        json!({ "type": "integer", "minimum": 0, "description": "With upload_id: the upload's total bytes, checked." }),
    );
    props.insert(
        "sha256".into(),
        json!({ "type": "string", "description": "With upload_id: the upload's SHA-256, checked." }),
    );
}

/// An upload attached to a call.
pub struct Attached {
    pub id: String,
    pub grant: Grant,
}

/// Takes the upload arguments out of `args`, checks the upload and sets
/// `staged`. Bad arguments are the outer error; an upload that does not check
/// out is the tool error the caller returns.
pub fn attach(
    uploads: &Uploads,
    manifest: &Manifest,
    args: &mut Map<String, Value>,
) -> Result<Result<Option<Attached>, ToolError>, ArgumentError> {
    if args.contains_key("staged") {
        return Err(ArgumentError::Staged);
    }
    let Some(id) = args.remove("upload_id") else {
        for name in ["size", "sha256"] {
            if args.contains_key(name) && takes_uploads(manifest) {
                return Err(ArgumentError::WithoutUpload(name));
            }
        }
        return Ok(Ok(None));
    };
    if !takes_uploads(manifest) {
        return Err(ArgumentError::NoUploads { tool: manifest.name.clone() });
    }
    let id = id.as_str().ok_or(ArgumentError::NotA { name: "upload_id", expected: "a string" })?.to_string();
    let size = args.remove("size").and_then(|v| v.as_u64());
    let sha256 = args.remove("sha256").and_then(|v| v.as_str().map(str::to_owned));
    let (Some(size), Some(sha256)) = (size, sha256) else {
        return Err(ArgumentError::Unchecked);
    };
    let dir: PathBuf = match uploads.verified(&id, size, &sha256) {
        Ok(dir) => dir,
        Err(e) => return Ok(Err(e)),
    };
    args.insert("staged".into(), Value::String(format!("{STAGED_GUEST_DIR}/data")));
    let grant = Grant { host: dir, guest: STAGED_GUEST_DIR.into(), perms: FsPerms::ReadOnly };
    Ok(Ok(Some(Attached { id, grant })))
}
