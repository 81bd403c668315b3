//! Cordon's `read` tool.
//!
//! The domain logic (paging a file) is plain Rust, unit-tested natively; the
//! SDK resolves paths inside the granted roots and exports the tool as a
//! component when built for `wasm32-wasip2`.

pub mod reader;
pub mod sniff;

use cordon_sdk::file::ReadFile;
use cordon_sdk::scan::Kind;
use cordon_sdk::{
    Budget, Chunk, Error, ErrorCode, Fingerprint, Manifest, Payload, Span, Stream, Summary, paths, progress, schema,
};
use serde::Deserialize;
use serde_json::json;

use reader::{Head, Piece, Position, ReadStream, Selection};
use sniff::Sniffed;

/// The tool's name as clients call it.
pub const NAME: &str = "read";
/// The tool's version, bound into every cursor.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What the tool does, for a model choosing a tool.
pub const DESCRIPTION: &str = "Read a file under the server's roots. In text, each line comes as its number, a tab, then the line \
exactly (as `cat -n`): the number and tab are not in the file, so never put them in `old_string`. \
`start_line`/`end_line` (1-based, inclusive) or `start_byte`/`end_byte` select a range. A long file comes \
in pages; the footer says how to continue. An image comes back as an image, a notebook as its cells, another binary \
file as one sentence.";

/// The JSON Schema of the arguments.
pub fn input_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "path": schema::path_property(schema::IN_A_ROOT),
            "start_line": {
                "type": "integer",
                "minimum": 1,
                "description": "First line (1-based)."
            },
            "end_line": {
                "type": "integer",
                "minimum": 1,
                "description": "Last line (inclusive)."
            },
            "start_byte": {
                "type": "integer",
                "minimum": 0,
                "description": "First byte (0-based); not with lines."
            },
            "end_byte": {
                "type": "integer",
                "minimum": 0,
                "description": "Byte to stop before."
            },
            "line_numbers": {
                "type": "boolean",
                "description": "Number the lines (default true)."
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
            "size": { "type": "integer", "minimum": 0, "description": "The file's size in bytes." },
            "media_type": {
                "type": "string",
                "description": "The file's media type, told by its first bytes (not its name): e.g. image/png, \
    application/pdf, application/zip; text/plain for text, application/octet-stream for other binary files."
            },
            "binary": {
                "type": "boolean",
                "description": "True for a file that does not read as text: a NUL byte, or over an eighth of its \
    first 8 KiB not UTF-8, or a binary format. Its chunks are raw bytes (base64), not runs of text and bytes."
            },
            "line_range": {
                "type": "array",
                "items": { "type": ["integer", "null"], "minimum": 1 },
                "minItems": 2,
                "maxItems": 2,
                "description": "When a range of lines was asked for: its first and last line (null: to the end)."
            },
            "byte_range": {
                "type": "array",
                "items": { "type": "integer", "minimum": 0 },
                "minItems": 2,
                "maxItems": 2,
                "description": "When a byte range was asked for: its start and end (exclusive), clamped to the file."
            }
        },
        "required": ["path", "size"]
    })
}

/// The call's arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file, relative to the first root or absolute inside a root.
    pub path: String,
    /// The first line (1-based).
    pub start_line: Option<u64>,
    /// The last line (1-based, inclusive).
    pub end_line: Option<u64>,
    /// The first byte (0-based).
    pub start_byte: Option<u64>,
    /// The byte to stop before (0-based, exclusive).
    pub end_byte: Option<u64>,
    /// Whether the text form numbers the lines: the host's to honour (it
    /// declares this tool's text as lines of a file); the bytes are the same.
    #[serde(default)]
    pub line_numbers: Option<bool>,
}

impl Args {
    /// The part of the file the arguments ask for: lines or bytes, not both.
    pub fn selection(&self) -> Result<Selection, Error> {
        let by_line = self.start_line.is_some() || self.end_line.is_some();
        let by_byte = self.start_byte.is_some() || self.end_byte.is_some();
        match (by_line, by_byte) {
            (true, true) => Err(Error::new(
                ErrorCode::InvalidArgument,
                "`start_line`/`end_line` cannot be combined with `start_byte`/`end_byte`; give one kind of range",
            )),
            (false, true) => Ok(Selection::Bytes { start: self.start_byte.unwrap_or(0), end: self.end_byte }),
            _ => Ok(Selection::Lines { start: self.start_line.unwrap_or(1), end: self.end_line }),
        }
    }
}

/// One call of the tool: the open file and where it is.
pub struct Read {
    /// The file's absolute path, as shown to clients.
    pub path: String,
    /// The file's size when it was opened.
    pub size: u64,
    /// The byte range asked for, clamped to the file: (start, end exclusive).
    range: Option<(u64, u64)>,
    /// The lines asked for, if any: (first, last inclusive, if given).
    lines: Option<(u64, Option<u64>)>,
    /// What the file's first bytes tell about it.
    pub sniffed: Sniffed,
    /// The chunks still to come.
    pub stream: ReadStream<ReadFile>,
}

impl Read {
    /// Resolves the path against `roots`, checks it is a regular file and opens it
    /// at the resume position or the start of the requested range.
    pub fn open(roots: &[String], args: &str, resume: Option<&str>) -> Result<Read, Error> {
        let args: Args = cordon_sdk::parse_args(args)?;
        let selection = args.selection()?;
        let resolved = paths::resolve(roots, &args.path)?;
        let shown = resolved.display().to_string();
        // Looked at without following a symlink first: one WASI `stat-at`, one
        // `statx` on the host (following is an open, a `statx` and a close;
        // `std::fs::symlink_metadata` made a second call for an inode number).
        let seen = paths::stat(&resolved, false)?;
        let meta = if seen.kind == Kind::Symlink { paths::stat(&resolved, true)? } else { seen };
        match meta.kind {
            Kind::File => {}
            Kind::Dir => {
                return Err(Error::new(ErrorCode::InvalidArgument, format!("`{shown}` is a directory, not a file")));
            }
            Kind::Symlink | Kind::Other => {
                return Err(Error::new(
                    ErrorCode::Unsupported,
                    format!("`{shown}` is not a regular file (a FIFO, socket or device); it cannot be read"),
                ));
            }
        }
        let mut file = ReadFile::open_seen(&resolved, &shown, &seen)?;
        let size = meta.size;
        let head = Head::read(&mut file, size, sniff::HEAD_BYTES).map_err(|e| Error::io(&format!("`{shown}`"), &e))?;
        let whole = (head.bytes.len() as u64) >= size;
        let sniffed = sniff::notebook(&args.path, sniff::sniff(&head.bytes, whole), &head.bytes);
        let resume = resume.map(Position::decode).transpose()?;
        let stream = ReadStream::open(file, size, selection, resume)?.with_head(head)?.raw(!sniffed.text);
        let range = match selection {
            Selection::Bytes { start, end } => Some((start, end.unwrap_or(size).min(size).max(start))),
            Selection::Lines { .. } => None,
        };
        let lines = match selection {
            Selection::Lines { start, end } if args.start_line.is_some() || args.end_line.is_some() => {
                Some((start, end))
            }
            _ => None,
        };
        Ok(Read { path: shown, size, range, lines, sniffed, stream })
    }

    /// The progress after a chunk ending at byte `end`: `end` of the file's
    /// size (the range's end for a byte range), and a message saying so.
    pub fn progress(&self, end: u64) -> (u64, u64, String) {
        let total = self.range.map_or(self.size, |(_, range_end)| range_end).max(end);
        (end, total, format!("{} of {} read", progress::format_bytes(end), progress::format_bytes(total)))
    }
}

impl Stream for Read {
    fn next(&mut self, budget: Budget) -> Result<Option<Chunk>, Error> {
        let Some(chunk) = self.stream.next(budget.bytes as usize, budget.items as usize)? else { return Ok(None) };
        let (done, total, message) = self.progress(chunk.next.byte);
        progress::report(done, Some(total), Some(&message));
        Ok(Some(Chunk {
            payload: match chunk.piece {
                Piece::Text(text) => Payload::Text(text),
                Piece::Bytes(bytes) => Payload::Bytes(bytes),
            },
            span: Some(Span {
                start_byte: chunk.start.byte,
                end_byte: chunk.next.byte,
                lines: chunk.start.line.zip(chunk.end_line),
            }),
            continued: chunk.continued,
            resume: chunk.next.encode(),
        }))
    }

    /// The `info` object: matches `output_schema`.
    fn info(&self) -> serde_json::Value {
        let mut info = json!({
            "path": self.path,
            "size": self.size,
            "media_type": self.sniffed.media_type,
            "binary": !self.sniffed.text,
        });
        if let Some((start, end)) = self.range {
            info["byte_range"] = json!([start, end]);
        }
        if let Some((start, end)) = self.lines {
            info["line_range"] = json!([start, end]);
        }
        info
    }

    /// The totals known without reading: the file's size, and for a byte range
    /// its length and end offset.
    fn summary(&self) -> Summary {
        let mut totals = json!({ "bytes": self.size });
        if let Some((start, end)) = self.range {
            totals["range_bytes"] = (end - start).into();
            totals["range_end"] = end.into();
        }
        Summary {
            totals,
            exact: true,
            suggestions: vec![
                "Read a range of lines with start_line and end_line (1-based, inclusive).".into(),
                "Read a byte range with start_byte (inclusive) and end_byte (exclusive).".into(),
            ],
        }
    }

    /// The file's fingerprint, read afresh: its size and time from the open
    /// file, its identity by path (a file deleted since gives not-found, one
    /// replaced by another gives a different identity).
    fn fingerprint(&self) -> Result<Option<Fingerprint>, Error> {
        self.stream.source().fingerprint().map(Some)
    }
}

/// The tool, as the SDK exports it.
pub struct ReadTool;

cordon_sdk::export_tool!(ReadTool {
    manifest: Manifest::reader(NAME, VERSION, "Read file", DESCRIPTION).with_schemas(input_schema(), output_schema()),
    open: Read::open,
});

#[cfg(test)]
mod tests;
