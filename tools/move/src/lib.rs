//! Cordon's `move` tool: moves or renames a file, directory or symlink inside
//! the granted roots with one `rename`.
//!
//! The domain logic (`rename`) is plain Rust, unit-tested natively; `cordon_sdk::grant`
//! tells read-only roots apart; `cordon_sdk::outcome` pages the single result item so that
//! resuming never moves anything again.

pub mod rename;

use cordon_sdk::{Error, Manifest, paths, schema};
use serde::Deserialize;
use serde_json::{Value, json};

use cordon_sdk::outcome::Done;

/// The tool's name as clients call it.
pub const NAME: &str = "move";
/// The tool's version, bound into every cursor.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What the tool does, for a model choosing a tool.
pub const DESCRIPTION: &str = "Move or rename a file, directory or symlink. `to` is the full new path; its directory must \
exist. An existing `to` is a conflict unless `overwrite`.";

/// The JSON Schema of the arguments.
pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "from": schema::path_property(schema::IN_A_ROOT),
            "to": schema::path_property("The full new path."),
            "overwrite": {
                "type": "boolean",
                "description": "Replace an existing `to` (not a non-empty directory)."
            }
        },
        "required": ["from", "to"],
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
            "from": { "type": "string", "description": "The old absolute path." },
            "to": { "type": "string", "description": "The new absolute path." },
            "type": { "enum": ["file", "dir", "symlink", "other"], "description": "What was moved." },
            "overwrote": { "type": "boolean", "description": "True when an existing `to` was replaced." }
        },
        "required": ["from", "to", "type", "overwrote"]
    })
}

/// The call's arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What to move.
    pub from: String,
    /// The new path.
    pub to: String,
    /// Whether an existing `to` may be replaced (default false).
    #[serde(default)]
    pub overwrite: bool,
}

/// Resolves one path argument, naming it in errors.
fn resolve(roots: &[String], which: &str, input: &str) -> Result<std::path::PathBuf, Error> {
    paths::resolve(roots, input).map_err(|e| Error::new(e.code, format!("`{which}`: {}", e.message)))
}

/// Moves what `args` names, inside `roots`, and returns the result object:
/// `{"from", "to", "type", "overwrote"}`.
pub fn move_path(roots: &[String], args: &Args) -> Result<Value, Error> {
    let from = resolve(roots, "from", &args.from)?;
    let to = resolve(roots, "to", &args.to)?;
    let moved = rename::move_entry(roots, &from, &to, args.overwrite)?;
    Ok(json!({
        "from": from.display().to_string(),
        "to": to.display().to_string(),
        "type": moved.kind,
        "overwrote": moved.overwrote,
    }))
}

/// The tool, as the SDK exports it.
pub struct MoveTool;

cordon_sdk::export_tool!(MoveTool {
    manifest: Manifest::writer(NAME, VERSION, "Move or rename", DESCRIPTION, true, false)
        .with_schemas(input_schema(), output_schema()),
    open: |roots, args, resume| {
        let args: Args = cordon_sdk::parse_args(args)?;
        Done::open(resume, || move_path(roots, &args), |result| json!({ "moved": 1, "overwrote": result["overwrote"] }))
    },
});

#[cfg(test)]
mod tests;
