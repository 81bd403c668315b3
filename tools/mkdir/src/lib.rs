//! Cordon's `mkdir` tool: creates a directory, and by default the missing
//! directories above it (like `mkdir -p`).
//!
//! The domain logic (`create`) is plain Rust, unit-tested natively; `cordon_sdk::grant`
//! tells read-only roots apart; `cordon_sdk::outcome` pages the single result item so that
//! resuming never creates anything again.

pub mod create;

use cordon_sdk::{Error, ErrorCode, Manifest, paths, schema};
use serde::Deserialize;
use serde_json::{Value, json};

use cordon_sdk::outcome::Done;

/// The tool's name as clients call it.
pub const NAME: &str = "mkdir";
/// The tool's version, bound into every cursor.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What the tool does, for a model choosing a tool.
pub const DESCRIPTION: &str = "Create a directory, and its missing parents unless `parents` is false. An existing \
directory is fine.";

/// The most created directories a result lists: each is an ancestor of the
/// path, so the count and the first few say which; listing all of a deep path
/// would grow with the square of its depth.
pub const MAX_LISTED: usize = 16;

/// The JSON Schema of the arguments.
pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": schema::path_property(schema::IN_A_ROOT),
            "parents": {
                "type": "boolean",
                "description": "Create missing parents (default true)."
            }
        },
        "required": ["path"],
        "additionalProperties": false
    })
}

/// The JSON Schema of the result: the item the call returns, and its `info`.
pub fn output_schema() -> Value {
    json!({
        // One item answers a call: clients are shown no paging options.
        "x-cordon-pages": false,
        "type": "object",
        "properties": {
            "path": { "type": "string", "description": "The directory's absolute path." },
            "created": {
                "type": "array",
                "items": { "type": "string" },
                "maxItems": MAX_LISTED,
                "description": "The first directories this call created, outermost first (absolute paths); \
                    at most 16 (see `created_count`)."
            },
            "created_count": { "type": "integer", "description": "How many directories this call created." },
            "existed": { "type": "boolean", "description": "True when the directory already existed." }
        },
        "required": ["path", "created", "created_count", "existed"]
    })
}

/// The call's arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The directory, relative to the first root or absolute inside a root.
    pub path: String,
    /// Whether to create missing parents too (default true).
    #[serde(default = "yes")]
    pub parents: bool,
}

fn yes() -> bool {
    true
}

/// Creates the directory `args` names, inside `roots`, and returns the result
/// object: `{"path", "created", "created_count", "existed"}`.
pub fn mkdir(roots: &[String], args: &Args) -> Result<Value, Error> {
    let target = paths::resolve(roots, &args.path)?;
    let shown = target.display().to_string();
    let root = cordon_sdk::grant::root_of(roots, &target).ok_or_else(|| {
        Error::new(
            ErrorCode::PermissionDenied,
            format!("`{shown}` is outside every granted root ({})", roots.join(", ")),
        )
    })?;
    let dirs = create::plan(std::path::Path::new(root), &target, args.parents)?;
    if !dirs.is_empty() {
        cordon_sdk::grant::require_writable(roots, &target, &shown)?;
    }
    let done = create::create(&dirs, &target)?;
    let created: Vec<String> = done.created.iter().take(MAX_LISTED).map(|p| p.display().to_string()).collect();
    Ok(json!({ "path": shown, "created": created, "created_count": done.created.len(), "existed": done.existed }))
}

/// The tool, as the SDK exports it.
pub struct MkdirTool;

cordon_sdk::export_tool!(MkdirTool {
    manifest: Manifest::writer(NAME, VERSION, "Create directory", DESCRIPTION, false, true)
        .with_schemas(input_schema(), output_schema()),
    open: |roots, args, resume| {
        let args: Args = cordon_sdk::parse_args(args)?;
        Done::open(resume, || mkdir(roots, &args), |result| json!({ "created": result["created_count"] }))
    },
});

#[cfg(test)]
mod tests;
