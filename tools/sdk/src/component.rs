//! The WIT exports, generated once here; `export_tool!` wires a `Tool` to them.
//! The one guest place that converts between `wit_bindgen` output and the
//! contract's types.

use std::cell::RefCell;

use crate::{Access, Budget, Context, Error, ErrorCode, Payload, Stream, Tool};

wit_bindgen::generate!({
    path: "../../wit",
    world: "cordon-sharded-tool",
    pub_export_macro: true,
    default_bindings_module: "cordon_sdk::component",
});

use cordon::tool::types as t;
use exports::cordon::tool::tool as wit;

/// The roots the host preopened for this call (asked of the host once per
/// instance, see `preopens`).
pub fn granted_roots() -> Vec<String> {
    crate::preopens::with(|dirs| dirs.iter().map(|(_, path)| path.clone()).collect())
}

/// The manifest in WIT form.
pub fn describe<T: Tool>() -> wit::Manifest {
    let m = T::manifest();
    wit::Manifest {
        name: m.name,
        version: m.version,
        title: m.title,
        description: m.description,
        input_schema: m.input_schema.to_string(),
        output_schema: m.output_schema.to_string(),
        access: match m.access {
            Access::None => t::Access::None,
            Access::Read => t::Access::Read,
            Access::Write => t::Access::Write,
        },
        read_only: m.read_only,
        destructive: m.destructive,
        idempotent: m.idempotent,
    }
}

/// Opens a call of `T` with the granted roots.
pub fn open<T: Tool>(args: String, resume: Option<String>) -> Result<wit::ChunkStream, wit::Error> {
    let ctx = Context { roots: granted_roots() };
    let stream = T::open(&ctx, &args, resume.as_deref()).map_err(to_wit)?;
    Ok(wit::ChunkStream::new(StreamAdapter(RefCell::new(stream))))
}

/// Splits a call of `T` into shards: the boundaries between them.
pub fn split<T: Tool>(args: String, start: Option<String>, count: u32) -> Result<Vec<String>, wit::Error> {
    let ctx = Context { roots: granted_roots() };
    let cuts = T::split(&ctx, &args, start.as_deref(), count).map_err(to_wit)?;
    // Splitting only speeds a call up: boundaries too long to carry (very
    // deep paths) leave it one shard.
    let bytes: usize = cuts.iter().map(String::len).sum();
    Ok(if bytes > MAX_SPLIT_BYTES { Vec::new() } else { cuts })
}

/// The most bytes of boundaries `split` returns; more leave the call unsplit.
const MAX_SPLIT_BYTES: usize = 16 << 10;

/// Opens one shard of a call of `T`: the output from `start` up to `end`.
pub fn open_range<T: Tool>(
    args: String,
    start: Option<String>,
    end: Option<String>,
) -> Result<wit::ChunkStream, wit::Error> {
    let ctx = Context { roots: granted_roots() };
    let stream = T::open_range(&ctx, &args, start.as_deref(), end.as_deref()).map_err(to_wit)?;
    Ok(wit::ChunkStream::new(StreamAdapter(RefCell::new(stream))))
}

/// A tool's stream behind the WIT resource.
pub struct StreamAdapter(RefCell<Box<dyn Stream>>);

impl wit::GuestChunkStream for StreamAdapter {
    fn next(&self, limit: wit::Budget) -> Result<Option<wit::Chunk>, wit::Error> {
        let budget = Budget { bytes: limit.bytes.max(4), items: limit.items.max(1) };
        let Some(chunk) = self.0.borrow_mut().next(budget).map_err(to_wit)? else { return Ok(None) };
        Ok(Some(wit::Chunk {
            payload: match chunk.payload {
                Payload::Text(text) => t::Payload::Text(text),
                Payload::Bytes(bytes) => t::Payload::Bytes(bytes),
                Payload::Item(item) => t::Payload::Item(item),
            },
            span: chunk.span.map(|s| t::Span {
                start_byte: s.start_byte,
                end_byte: s.end_byte,
                lines: s.lines.map(|(start, end)| t::LineRange { start, end }),
            }),
            continued: chunk.continued,
            resume: chunk.resume,
        }))
    }

    fn info(&self) -> String {
        self.0.borrow().info().to_string()
    }

    fn summary(&self) -> wit::Summary {
        let s = self.0.borrow().summary();
        wit::Summary { totals: s.totals.to_string(), exact: s.exact, suggestions: s.suggestions }
    }

    fn fingerprint(&self) -> Result<Option<wit::Fingerprint>, wit::Error> {
        let f = self.0.borrow().fingerprint().map_err(to_wit)?;
        Ok(f.map(|f| wit::Fingerprint { size: f.size, mtime_ns: f.mtime_ns, identity: f.identity }))
    }
}

/// A WIT error as the SDK's. By position: the generated enum is `#[repr(u8)]`
/// with the codes in WIT declaration order, the order of `ErrorCode::ALL`
/// (which the contract's tests check against `wit/tool.wit`).
pub fn from_wit(err: t::Error) -> Error {
    Error::new(ErrorCode::ALL[err.code as usize], err.message)
}

/// The SDK's error in WIT form, its message bounded. A table, not a position:
/// the generated enum can be built from a number only through its `unsafe`
/// `_lift`, and this match is checked exhaustive by the compiler.
fn to_wit(err: Error) -> wit::Error {
    let code = match err.code {
        ErrorCode::InvalidArgument => t::ErrorCode::InvalidArgument,
        ErrorCode::NotFound => t::ErrorCode::NotFound,
        ErrorCode::PermissionDenied => t::ErrorCode::PermissionDenied,
        ErrorCode::Conflict => t::ErrorCode::Conflict,
        ErrorCode::TooLarge => t::ErrorCode::TooLarge,
        ErrorCode::Stale => t::ErrorCode::Stale,
        ErrorCode::Io => t::ErrorCode::Io,
        ErrorCode::Unsupported => t::ErrorCode::Unsupported,
        ErrorCode::Internal => t::ErrorCode::Internal,
    };
    wit::Error { code, message: err.bounded_message() }
}
