//! The `upload` tool (served by the host itself) and the attaching of a
//! verified upload to a tool call that takes `upload_id`.
//!
//! A tool takes uploads when its input schema has a `staged` property (a
//! string): clients are shown `upload_id`, `size` and `sha256` instead (see
//! `args`), and on a call the host checks the upload, mounts its directory
//! read-only at `/.cordon-upload` and passes `staged: "/.cordon-upload/data"`.

use std::path::PathBuf;

use crate::policy::Mode;
use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::args::UploadRef;
use crate::policy::Grant;
use crate::tool::{Access, ErrorCode, Manifest, ToolError};
use crate::uploads::{STAGED_GUEST_DIR, Uploads};

/// The host tool's name.
pub const UPLOAD_TOOL: &str = "upload";

/// The `upload` tool's manifest: a registry entry like any tool's, served by
/// the host (it writes, so a read-only server does not offer it).
pub fn upload_manifest() -> Manifest {
    Manifest {
        name: UPLOAD_TOOL.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        title: "Stage an upload".into(),
        description: "Stage content too large for one call, for `write` (or another tool taking `upload_id`). \
            action=start returns an upload_id and the largest chunk; action=chunk with upload_id, index (0, 1, …) and \
            data (utf8 text, or base64 with encoding=base64) appends one chunk and acknowledges the bytes so far and \
            their sha256; then call `write` with upload_id, size and sha256 to commit, or action=abort. Idle uploads expire."
            .into(),
        input_schema: json!({
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
        }),
        output_schema: json!({
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
        }),
        access: Access::Write,
        read_only: false,
        destructive: false,
        idempotent: false,
    }
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

/// An upload attached to a call.
pub struct Attached {
    pub id: String,
    pub grant: Grant,
}

/// Checks the upload a call names and sets the tool's `staged` argument to
/// where the call sees it; an upload that does not check out is the tool
/// error the call answers.
pub fn attach(uploads: &Uploads, upload: &UploadRef, args: &mut Map<String, Value>) -> Result<Attached, ToolError> {
    let dir: PathBuf = uploads.verified(&upload.id, upload.size, &upload.sha256)?;
    args.insert("staged".into(), Value::String(format!("{STAGED_GUEST_DIR}/data")));
    let grant = Grant { host: dir, guest: STAGED_GUEST_DIR.into(), mode: Mode::ReadOnly };
    Ok(Attached { id: upload.id.clone(), grant })
}
