//! The contract's types in plain Rust (see `wit/tool.wit` for their meaning).

use serde_json::Value;

/// The filesystem access a tool needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No files: no preopens.
    None,
    /// Reads only: every root preopened read-only.
    Read,
    /// Creates or changes files: read-write roots preopened read-write.
    Write,
}

/// What a tool is.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// Lowercase letters, digits, `_` and `-`.
    pub name: String,
    /// Semver; bound into cursors.
    pub version: String,
    pub title: String,
    /// Written for a model choosing a tool.
    pub description: String,
    /// JSON Schema of the arguments (type object).
    pub input_schema: Value,
    /// JSON Schema of the `info` object (type object).
    pub output_schema: Value,
    pub access: Access,
    /// MCP `readOnlyHint`.
    pub read_only: bool,
    /// MCP `destructiveHint`.
    pub destructive: bool,
    /// MCP `idempotentHint`.
    pub idempotent: bool,
}

impl Manifest {
    /// A tool that only reads: read access; read-only, not destructive,
    /// idempotent. Schemas default to any object until [`Manifest::with_schemas`].
    pub fn reader(name: &str, version: &str, title: &str, description: &str) -> Manifest {
        Manifest::new(name, version, title, description, Access::Read, (true, false, true))
    }

    /// A tool that changes files: write access, not read-only; whether it is
    /// `destructive` (may overwrite or delete) and `idempotent` as given.
    pub fn writer(
        name: &str,
        version: &str,
        title: &str,
        description: &str,
        destructive: bool,
        idempotent: bool,
    ) -> Manifest {
        Manifest::new(name, version, title, description, Access::Write, (false, destructive, idempotent))
    }

    /// Sets the input schema and the output (`info`) schema.
    pub fn with_schemas(mut self, input_schema: Value, output_schema: Value) -> Manifest {
        self.input_schema = input_schema;
        self.output_schema = output_schema;
        self
    }

    fn new(
        name: &str,
        version: &str,
        title: &str,
        description: &str,
        access: Access,
        hints: (bool, bool, bool),
    ) -> Manifest {
        let any_object = serde_json::json!({ "type": "object" });
        Manifest {
            name: name.into(),
            version: version.into(),
            title: title.into(),
            description: description.into(),
            input_schema: any_object.clone(),
            output_schema: any_object,
            access,
            read_only: hints.0,
            destructive: hints.1,
            idempotent: hints.2,
        }
    }
}

/// A chunk's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// UTF-8 text.
    Text(String),
    /// Bytes that are not UTF-8.
    Bytes(Vec<u8>),
    /// One item (or a piece of one) as JSON text.
    Item(String),
}

impl Payload {
    /// The payload's bytes, as counted against a budget.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Payload::Text(s) | Payload::Item(s) => s.as_bytes(),
            Payload::Bytes(b) => b,
        }
    }
}

/// Where a chunk lies in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start_byte: u64,
    /// Exclusive.
    pub end_byte: u64,
    /// 1-based, inclusive, when known.
    pub lines: Option<(u64, u64)>,
}

/// One piece of output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub payload: Payload,
    pub span: Option<Span>,
    /// The payload stops inside an item (or line) that the next chunk continues.
    pub continued: bool,
    /// The exact position after this chunk.
    pub resume: String,
}

/// How much one chunk may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Payload bytes (the host never asks for fewer than 4).
    pub bytes: u32,
    /// Items (line ends, for text); at least 1.
    pub items: u32,
}

/// The identity of a file, read afresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    pub size: u64,
    pub mtime_ns: u64,
    pub identity: u64,
}

/// What a tool can say about its whole output early.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Counts, a JSON object.
    pub totals: Value,
    /// Whether `totals` are final (else lower bounds).
    pub exact: bool,
    /// Ways to narrow the request.
    pub suggestions: Vec<String>,
}

impl Default for Summary {
    fn default() -> Self {
        Summary { totals: Value::Object(Default::default()), exact: false, suggestions: Vec::new() }
    }
}
