//! The WIT exports, generated once here; `export_tool!` wires a `Tool` to them.

use std::cell::RefCell;

use crate::error::{Error, ErrorCode};
use crate::tool::{Context, Stream, Tool};
use crate::types::{Access, Budget, Payload};

wit_bindgen::generate!({
    path: "../../wit",
    world: "cordon-file-tool",
    pub_export_macro: true,
    default_bindings_module: "cordon_sdk::component",
});

use cordon::tool::types as t;
use exports::cordon::tool::tool as wit;

/// The roots the host preopened for this call.
pub fn granted_roots() -> Vec<String> {
    wasip2::filesystem::preopens::get_directories().into_iter().map(|(_, path)| path).collect()
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

/// A WIT error as the SDK's.
pub fn from_wit(err: t::Error) -> Error {
    let code = match err.code {
        t::ErrorCode::InvalidArgument => ErrorCode::InvalidArgument,
        t::ErrorCode::NotFound => ErrorCode::NotFound,
        t::ErrorCode::PermissionDenied => ErrorCode::PermissionDenied,
        t::ErrorCode::Conflict => ErrorCode::Conflict,
        t::ErrorCode::TooLarge => ErrorCode::TooLarge,
        t::ErrorCode::Stale => ErrorCode::Stale,
        t::ErrorCode::Io => ErrorCode::Io,
        t::ErrorCode::Unsupported => ErrorCode::Unsupported,
        t::ErrorCode::Internal => ErrorCode::Internal,
    };
    Error::new(code, err.message)
}

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
