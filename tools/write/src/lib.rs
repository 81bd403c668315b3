//! Cordon's `write` tool: creates, overwrites or appends to a file atomically.
//!
//! The new content goes to a temporary file beside the target, which is synced,
//! given the target's permissions and renamed over it (see `cordon_sdk::atomic`),
//! so a reader or a crash sees the old file or the new one, never a mix. An
//! `expected_sha256` precondition guards against overwriting a file that changed
//! since the caller read it. Content comes inline, or from a staged upload that
//! the host verified and mounted read-only at the path it passes as `staged`.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;

use cordon_sdk::atomic::{self, Options, Target};
use cordon_sdk::outcome::Done;
use cordon_sdk::{Error, ErrorCode, Manifest, schema};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The tool's version, bound into cursors.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// How the content is combined with what is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The file must not exist yet.
    Create,
    /// Replace the file, or create it.
    Overwrite,
    /// Add to the end of the file (which must exist), atomically.
    Append,
}

/// The call's arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    pub path: String,
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default = "utf8")]
    pub encoding: String,
    #[serde(default = "overwrite")]
    pub mode: Mode,
    #[serde(default)]
    pub expected_sha256: Option<String>,
    #[serde(default)]
    pub allow_hardlinks: bool,
    /// Set by the host for a staged upload: where the verified bytes are mounted.
    #[serde(default)]
    pub staged: Option<String>,
}

fn utf8() -> String {
    "utf8".into()
}

fn overwrite() -> Mode {
    Mode::Overwrite
}

/// The JSON Schema of the arguments.
pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": schema::path_property(schema::IN_A_ROOT),
            "content": { "type": "string", "description": "The content." },
            "encoding": { "enum": ["utf8", "base64"], "description": "Default utf8." },
            "mode": { "enum": ["create", "overwrite", "append"], "description": "Default overwrite; create: must not exist." },
            "expected_sha256": { "type": "string", "pattern": "^[0-9a-fA-F]{64}$", "description": "Write only if the file's SHA-256 is this." },
            "allow_hardlinks": { "type": "boolean", "description": "Replace a file that has other hard links." },
            "staged": { "type": "string", "description": "Set by the server for staged uploads; never by clients." }
        },
        "required": ["path"],
        "additionalProperties": false
    })
}

/// The JSON Schema of `info`: what the write did.
pub fn output_schema() -> Value {
    json!({
        // One item answers a call: clients are shown no paging options.
        "x-cordon-pages": false,
        "type": "object",
        "properties": {
            "path": { "type": "string" },
            "mode": { "enum": ["create", "overwrite", "append"] },
            "created": { "type": "boolean", "description": "The file did not exist before." },
            "bytes_written": { "type": "integer", "description": "Bytes of new content." },
            "size": { "type": "integer", "description": "The file's size now." },
            "sha256": { "type": "string", "description": "SHA-256 of the file's content now." }
        },
        "required": ["path", "mode", "created", "bytes_written", "size", "sha256"]
    })
}

/// What a write did: the tool's one output item (and `info`), as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    pub path: String,
    pub mode: Mode,
    pub created: bool,
    pub bytes_written: u64,
    pub size: u64,
    pub sha256: String,
}

/// Does the write described by `args` (a JSON text) under `roots`.
pub fn write(roots: &[String], args: &str) -> Result<Outcome, Error> {
    let args: Args = cordon_sdk::parse_args(args)?;
    let options = Options { allow_hardlinks: args.allow_hardlinks };
    let Target { path, shown, exists } = Target::resolve(roots, &args.path, options)?;
    match (args.mode, exists) {
        (Mode::Create, true) => {
            return Err(Error::new(ErrorCode::Conflict, format!("`{shown}` already exists (mode create)")));
        }
        (Mode::Append, false) => {
            return Err(Error::new(ErrorCode::NotFound, format!("`{shown}` does not exist (mode append)")));
        }
        _ => {}
    }
    if let Some(expected) = &args.expected_sha256 {
        let current = if exists { Some(sha256_file(&path, &shown)?) } else { None };
        if current.as_deref() != Some(expected.to_ascii_lowercase().as_str()) {
            let now =
                current.map_or_else(|| "the file does not exist".to_string(), |h| format!("its current sha256 is {h}"));
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("`{shown}` changed: expected sha256 {expected}, but {now}; read it again and retry"),
            ));
        }
    }
    let source = Source::from_args(&args)?;
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let mut written = 0u64;
    atomic::replace(&path, options, |out| {
        let mut sink = HashingWriter { out, hasher: &mut hasher, bytes: &mut size };
        if args.mode == Mode::Append {
            let mut old = File::open(&path).map_err(|e| Error::io(&format!("`{shown}`"), &e))?;
            io::copy(&mut old, &mut sink).map_err(|e| Error::io(&format!("copying `{shown}`"), &e))?;
        }
        let before = *sink.bytes;
        source.copy_to(&mut sink)?;
        written = *sink.bytes - before;
        Ok(())
    })?;
    let sha256 = hex(&hasher.finalize());
    Ok(Outcome { path: shown, mode: args.mode, created: !exists, bytes_written: written, size, sha256 })
}

/// Where the new bytes come from.
enum Source {
    Inline(Vec<u8>),
    Staged(String),
}

impl Source {
    fn from_args(args: &Args) -> Result<Source, Error> {
        match (&args.content, &args.staged) {
            (Some(_), Some(_)) => Err(Error::new(ErrorCode::InvalidArgument, "give `content` or an upload, not both")),
            (None, None) => Err(Error::new(
                ErrorCode::InvalidArgument,
                "no content: give `content`, or commit a staged upload with `upload_id`",
            )),
            (None, Some(staged)) => Ok(Source::Staged(staged.clone())),
            (Some(content), None) => match args.encoding.as_str() {
                "utf8" => Ok(Source::Inline(content.clone().into_bytes())),
                "base64" => decode_base64(content).map(Source::Inline),
                other => Err(Error::new(ErrorCode::InvalidArgument, format!("unknown encoding `{other}`"))),
            },
        }
    }

    fn copy_to(&self, out: &mut impl Write) -> Result<(), Error> {
        match self {
            Source::Inline(bytes) => out.write_all(bytes).map_err(|e| Error::io("the temporary file", &e)),
            Source::Staged(path) => {
                let mut staged = File::open(path).map_err(|e| Error::io("the staged upload", &e))?;
                io::copy(&mut staged, out).map(|_| ()).map_err(|e| Error::io("copying the staged upload", &e))
            }
        }
    }
}

/// Writes through, hashing and counting.
struct HashingWriter<'a> {
    out: &'a mut File,
    hasher: &'a mut Sha256,
    bytes: &'a mut u64,
}

impl Write for HashingWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.hasher.update(&buf[..n]);
        *self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The SHA-256 of a file's content, hex.
pub fn sha256_file(path: &Path, shown: &str) -> Result<String, Error> {
    let mut file = File::open(path).map_err(|e| Error::io(&format!("`{shown}`"), &e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = file.read(&mut buf).map_err(|e| Error::io(&format!("`{shown}`"), &e))?;
        if n == 0 {
            return Ok(hex(&hasher.finalize()));
        }
        hasher.update(&buf[..n]);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode_base64(text: &str) -> Result<Vec<u8>, Error> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| Error::new(ErrorCode::InvalidArgument, format!("`content` is not valid base64: {e}")))
}

/// The tool, as the SDK exports it.
pub struct WriteTool;

cordon_sdk::export_tool!(WriteTool {
    manifest: Manifest::writer(
        "write",
        VERSION,
        "Write file",
        "Create, overwrite or append to a file, atomically. For large content, stage it with `upload` and \
            pass `upload_id`, `size` and `sha256` instead of `content`.",
        true,
        false,
    )
    .with_schemas(input_schema(), output_schema()),
    // The write happens when the call is first opened, never on a resume.
    open: |roots, args, resume| {
        Done::open(resume, || write(roots, args).map(|outcome| json!(outcome)), |r| json!({ "bytes": r["size"] }))
    },
});

#[cfg(test)]
mod tests;
