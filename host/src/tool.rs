//! What a tool is and what it produces, in the host's own types.
//!
//! `runtime::bindings` converts the WIT types into these at the edge, so nothing
//! past the runtime sees `bindgen!` output.

use std::fmt;

use serde_json::Value;

/// The filesystem access a tool asks for in its manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    None,
    Read,
    Write,
}

/// A tool's manifest, checked: valid name, schemas that are JSON objects.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub name: String,
    pub version: String,
    pub title: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Value,
    pub access: Access,
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
}

/// The argument names the host owns in every tool's input: paging and uploads.
pub const RESERVED_ARGS: [&str; 4] = ["cursor", "max_tokens", "page_size", "upload_id"];

impl Manifest {
    /// The first name the host owns that the tool's own input schema declares.
    pub fn reserved_argument(&self) -> Option<&'static str> {
        let props = self.input_schema.get("properties")?.as_object()?;
        RESERVED_ARGS.into_iter().find(|name| props.contains_key(*name))
    }
}

/// An argument the host owns (paging, uploads) that is malformed; the call is
/// refused before any tool runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgumentError {
    /// `name` is not what it must be (`expected`).
    NotA { name: &'static str, expected: &'static str },
    /// `staged` is given, but only the server sets it.
    Staged,
    /// `name` (`size` or `sha256`) is given without `upload_id`.
    WithoutUpload(&'static str),
    /// An `upload_id` for a tool that takes none.
    NoUploads { tool: String },
    /// An `upload_id` without the `size` and `sha256` that check it.
    Unchecked,
}

impl fmt::Display for ArgumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgumentError::NotA { name, expected } => write!(f, "`{name}` must be {expected}"),
            ArgumentError::Staged => f.write_str("`staged` is set by the server; pass `upload_id` instead"),
            ArgumentError::WithoutUpload(name) => write!(f, "`{name}` goes with `upload_id`"),
            ArgumentError::NoUploads { tool } => write!(f, "tool `{tool}` does not take uploads"),
            ArgumentError::Unchecked => {
                f.write_str("`upload_id` needs `size` (bytes) and `sha256` to check the upload")
            }
        }
    }
}

/// The WIT `error-code`, one to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Conflict,
    TooLarge,
    Stale,
    Io,
    Unsupported,
    Internal,
}

impl ErrorCode {
    /// The code as clients see it in `structuredContent.error.code`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "invalid_argument",
            ErrorCode::NotFound => "not_found",
            ErrorCode::PermissionDenied => "permission_denied",
            ErrorCode::Conflict => "conflict",
            ErrorCode::TooLarge => "too_large",
            ErrorCode::Stale => "stale",
            ErrorCode::Io => "io",
            ErrorCode::Unsupported => "unsupported",
            ErrorCode::Internal => "internal",
        }
    }
}

/// A failed call as the tool (or the host on its behalf) reports it to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    pub code: ErrorCode,
    pub message: String,
}

impl ToolError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ToolError { code, message: message.into() }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

/// The data of one chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    Text(String),
    Bytes(Vec<u8>),
    Item(String),
}

impl Payload {
    /// The payload's bytes, as they count against a budget and into hashes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Payload::Text(s) | Payload::Item(s) => s.as_bytes(),
            Payload::Bytes(b) => b,
        }
    }

    /// The payload's size in bytes, the unit of a budget.
    pub fn len(&self) -> usize {
        self.as_bytes().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where a chunk lies in a file: byte offsets (end exclusive) and, when known,
/// 1-based lines (inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start_byte: u64,
    pub end_byte: u64,
    pub lines: Option<(u64, u64)>,
}

/// One piece of a tool's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub payload: Payload,
    pub span: Option<Span>,
    /// The payload stops inside an item (or line) that the next chunk continues.
    pub continued: bool,
    pub resume: String,
}

impl Chunk {
    /// How many items the chunk holds against a budget: one for an item (or a
    /// piece of one), the line ends for text.
    pub fn budget_items(&self) -> u32 {
        match &self.payload {
            Payload::Item(_) => 1,
            other => other.as_bytes().iter().filter(|&&b| b == b'\n').count() as u32,
        }
    }
}

/// How much one chunk may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub bytes: u32,
    pub items: u32,
}

/// The identity of the file a stream pages, read afresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Fingerprint {
    #[serde(rename = "s")]
    pub size: u64,
    #[serde(rename = "m")]
    pub mtime_ns: u64,
    #[serde(rename = "i")]
    pub identity: u64,
}

/// What a tool says about its whole output before it is all produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Counts, as a JSON object.
    pub totals: Value,
    /// Whether the totals are final (else lower bounds).
    pub exact: bool,
    pub suggestions: Vec<String>,
}
