//! Cordon's `read` tool.
//!
//! The domain logic (resolving a path inside the roots, paging a file) is plain
//! Rust, unit-tested natively; `component` wires it to the WIT exports when built
//! for `wasm32-wasip2`.

pub mod error;
pub mod paths;
pub mod reader;

#[cfg(target_arch = "wasm32")]
mod component;

use std::fs::File;
use std::time::UNIX_EPOCH;

use serde::Deserialize;
use serde_json::json;

use error::{Error, ErrorCode};
use reader::{Position, ReadStream};

/// The tool's name and version as bound into manifests and cursors.
pub const NAME: &str = "read";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub const DESCRIPTION: &str = "Read a text file under one of the server's roots. `path` is relative to \
the first root or absolute inside any root. Optional `start_line`/`end_line` (1-based, inclusive) \
select a range of lines. Returns the bytes exactly as they are in the file.";

/// The JSON Schema of the arguments.
pub fn input_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "File to read: relative to the first root, or absolute inside a root."
            },
            "start_line": {
                "type": "integer",
                "minimum": 1,
                "description": "First line to return (1-based). Default: 1."
            },
            "end_line": {
                "type": "integer",
                "minimum": 1,
                "description": "Last line to return (1-based, inclusive). Default: the end of the file."
            }
        },
        "required": ["path"],
        "additionalProperties": false
    })
}

/// The JSON Schema of `info`: what the tool says about the file it read.
pub fn output_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "path": { "type": "string", "description": "The file's absolute path." },
            "size": { "type": "integer", "minimum": 0, "description": "The file's size in bytes." }
        },
        "required": ["path", "size"]
    })
}

/// The call's arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    pub path: String,
    pub start_line: Option<u64>,
    pub end_line: Option<u64>,
}

impl Args {
    pub fn parse(json: &str) -> Result<Args, Error> {
        serde_json::from_str(json)
            .map_err(|e| Error::new(ErrorCode::InvalidArgument, format!("invalid arguments: {e}")))
    }
}

/// What identifies the file's state: size, modification time, inode (0 when the
/// platform does not say).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    pub size: u64,
    pub mtime_ns: u64,
    pub inode: u64,
}

/// One call of the tool: the open file and where it is.
pub struct Read {
    pub path: String,
    pub fingerprint: Fingerprint,
    pub stream: ReadStream<File>,
}

impl Read {
    /// Resolves the path against `roots`, checks it is a regular file and opens it
    /// at the resume position or the requested first line.
    pub fn open(roots: &[String], args: &str, resume: Option<&str>) -> Result<Read, Error> {
        let args = Args::parse(args)?;
        let path = paths::resolve(roots, &args.path)?;
        let shown = path.display().to_string();
        let meta = std::fs::metadata(&path).map_err(|e| Error::io(&format!("`{shown}`"), &e))?;
        if meta.is_dir() {
            return Err(Error::new(ErrorCode::InvalidArgument, format!("`{shown}` is a directory, not a file")));
        }
        if !meta.is_file() {
            return Err(Error::new(
                ErrorCode::Unsupported,
                format!("`{shown}` is not a regular file (a FIFO, socket or device); it cannot be read"),
            ));
        }
        let file = File::open(&path).map_err(|e| Error::io(&format!("`{shown}`"), &e))?;
        let mtime_ns =
            meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos() as u64);
        let fingerprint = Fingerprint { size: meta.len(), mtime_ns, inode: 0 };
        let resume = resume.map(Position::decode).transpose()?;
        let stream = ReadStream::open(file, meta.len(), args.start_line.unwrap_or(1), args.end_line, resume)?;
        Ok(Read { path: shown, fingerprint, stream })
    }

    /// The `info` object: matches `output_schema`.
    pub fn info(&self) -> serde_json::Value {
        json!({ "path": self.path, "size": self.fingerprint.size })
    }
}

#[cfg(test)]
mod tests;
