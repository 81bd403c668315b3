//! Cordon's `edit` tool: replaces an exact string in a file, atomically.
//!
//! The file is read whole as bytes; `old_string` must occur exactly once
//! (or every occurrence is replaced with `replace_all`), and every byte outside
//! the replaced ranges is kept as it was: line endings, encoding, a missing
//! final newline. The CRLF rule (see [`matching`]) lets a caller that writes
//! `\n` edit a CRLF file without turning its line endings into LF. The edited
//! bytes replace the file through `cordon_sdk::atomic`, so it is never partly
//! written and keeps its permissions. The result is one item with the new hash
//! and a small diff (see [`diff`]), paged by `cordon_sdk::outcome`, whose resume
//! positions carry the result: reopening a call at a cursor never edits again.

pub mod diff;
pub mod matching;

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use cordon_sdk::atomic::{self, Options, Target};
use cordon_sdk::outcome::Done;
use cordon_sdk::{Error, ErrorCode, Manifest, schema};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use matching::MAX_FILE_BYTES;

/// The tool's version, bound into cursors.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What the tool does, for a model choosing a tool.
pub const DESCRIPTION: &str = "Replace an exact string in a file. `old_string` must occur exactly once (add surrounding \
lines to make it unique) unless `replace_all`; it matches byte for byte, without the line-number prefix \
`read` shows. A CRLF file stays CRLF. Answers with the diff.";

/// The call's arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file, relative to the first root or absolute inside a root.
    pub path: String,
    /// The exact text to replace (non-empty).
    pub old_string: String,
    /// The text to put in its place (may be empty).
    pub new_string: String,
    /// Replace every occurrence rather than requiring exactly one.
    #[serde(default)]
    pub replace_all: bool,
    /// Edit only if the file's current SHA-256 is this (hex).
    #[serde(default)]
    pub expected_sha256: Option<String>,
    /// Replace a file that has other hard links (they keep the old content).
    #[serde(default)]
    pub allow_hardlinks: bool,
}

/// The JSON Schema of the arguments.
pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": schema::path_property(schema::IN_A_ROOT),
            "old_string": { "type": "string", "minLength": 1, "description": "The exact text to replace." },
            "new_string": { "type": "string", "description": "Its replacement (may be empty)." },
            "replace_all": { "type": "boolean", "description": "Replace every occurrence." },
            "expected_sha256": { "type": "string", "pattern": "^[0-9a-fA-F]{64}$", "description": "Edit only if the file's SHA-256 is this." },
            "allow_hardlinks": { "type": "boolean", "description": "Edit a file that has other hard links." }
        },
        "required": ["path", "old_string", "new_string"],
        "additionalProperties": false
    })
}

/// The JSON Schema of `info`: what the edit did (the item's fields).
pub fn output_schema() -> Value {
    json!({
        // One item answers a call: clients are shown no paging options.
        "x-cordon-pages": false,
        "type": "object",
        "properties": {
            "path": { "type": "string", "description": "The file's absolute path." },
            "replacements": { "type": "integer", "minimum": 1, "description": "How many occurrences were replaced." },
            "crlf": { "type": "boolean", "description": "Whether the CRLF rule applied (\\n in both strings taken as \\r\\n)." },
            "sha256": { "type": "string", "description": "SHA-256 of the file's content now." },
            "size": { "type": "integer", "minimum": 0, "description": "The file's size now, in bytes." },
            "diff": { "type": "string", "description": "A small unified diff of the changed lines." }
        },
        "required": ["path", "replacements", "crlf", "sha256", "size", "diff"]
    })
}

/// What an edit did: the tool's one output item (and `info`), as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// The file's absolute path.
    pub path: String,
    /// How many occurrences were replaced.
    pub replacements: usize,
    /// Whether the CRLF rule applied (`\n` in both strings taken as `\r\n`).
    pub crlf: bool,
    /// The SHA-256 of the new content, hex.
    pub sha256: String,
    /// The new size in bytes.
    pub size: u64,
    /// A small unified diff of the changed lines.
    pub diff: String,
}

/// Does the edit described by `args` (a JSON text) under `roots`.
pub fn edit(roots: &[String], args: &str) -> Result<Outcome, Error> {
    let args: Args = cordon_sdk::parse_args(args)?;
    let options = Options { allow_hardlinks: args.allow_hardlinks };
    let Target { path, shown, exists } = Target::resolve(roots, &args.path, options)?;
    if !exists {
        return Err(Error::new(
            ErrorCode::NotFound,
            format!("`{shown}` does not exist; create it with the write tool"),
        ));
    }
    let content = read_whole(&path, &shown)?;
    if let Some(expected) = &args.expected_sha256 {
        let current = hex(&Sha256::digest(&content));
        if current != expected.to_ascii_lowercase() {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!(
                    "`{shown}` changed: expected sha256 {expected}, but its current sha256 is {current}; \
                     read it again and retry"
                ),
            ));
        }
    }
    let plan = matching::plan(&content, &args.old_string, &args.new_string, args.replace_all, &shown)?;
    let edited = matching::apply(&content, &plan)?;
    let diff = diff::render(&content, &edited, &plan);
    atomic::replace(&path, options, |out| out.write_all(&edited).map_err(|e| Error::io("the temporary file", &e)))?;
    Ok(Outcome {
        path: shown,
        replacements: plan.starts.len(),
        crlf: plan.crlf,
        sha256: hex(&Sha256::digest(&edited)),
        size: edited.len() as u64,
        diff,
    })
}

/// The whole content of the file at `path`, refused above [`MAX_FILE_BYTES`].
fn read_whole(path: &Path, shown: &str) -> Result<Vec<u8>, Error> {
    let file = File::open(path).map_err(|e| Error::io(&format!("`{shown}`"), &e))?;
    let size = file.metadata().map_err(|e| Error::io(&format!("`{shown}`"), &e))?.len();
    let too_large = || {
        Error::new(
            ErrorCode::TooLarge,
            format!(
                "`{shown}` is larger than {} MiB, the most edit handles; rewrite it with the write tool",
                MAX_FILE_BYTES >> 20
            ),
        )
    };
    if size > MAX_FILE_BYTES as u64 {
        return Err(too_large());
    }
    let mut content = Vec::with_capacity(size as usize);
    file.take(MAX_FILE_BYTES as u64 + 1).read_to_end(&mut content).map_err(|e| Error::io(&format!("`{shown}`"), &e))?;
    if content.len() > MAX_FILE_BYTES {
        return Err(too_large());
    }
    Ok(content)
}

/// Bytes as lowercase hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The tool, as the SDK exports it.
pub struct EditTool;

cordon_sdk::export_tool!(EditTool {
    manifest: Manifest::writer("edit", VERSION, "Edit file", DESCRIPTION, true, false)
        .with_schemas(input_schema(), output_schema()),
    // The edit happens when the call is first opened, never on a resume: the
    // resume positions carry the result.
    open: |roots, args, resume| {
        let totals = |r: &Value| json!({ "replacements": r["replacements"], "bytes": r["size"] });
        Done::open(resume, || edit(roots, args).map(|outcome| json!(outcome)), totals)
    },
});

#[cfg(test)]
mod tests;
