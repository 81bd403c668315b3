//! The WIT exports: the only place that sees `wit-bindgen` output.

use std::cell::RefCell;

use crate::error::{Error, ErrorCode};
use crate::reader::Piece;

wit_bindgen::generate!({
    path: "../../wit",
    world: "cordon-tool",
});

use cordon::tool::types as t;
use exports::cordon::tool::tool::{self as wit, Guest, GuestChunkStream};

struct Component;

impl Guest for Component {
    type ChunkStream = Stream;

    fn describe() -> wit::Manifest {
        wit::Manifest {
            name: crate::NAME.into(),
            version: crate::VERSION.into(),
            title: "Read file".into(),
            description: crate::DESCRIPTION.into(),
            input_schema: crate::input_schema().to_string(),
            output_schema: crate::output_schema().to_string(),
            access: t::Access::Read,
            read_only: true,
            destructive: false,
            idempotent: true,
        }
    }

    fn open(args: String, resume: Option<String>) -> Result<wit::ChunkStream, wit::Error> {
        let roots: Vec<String> =
            wasip2::filesystem::preopens::get_directories().into_iter().map(|(_, path)| path).collect();
        let read = crate::Read::open(&roots, &args, resume.as_deref()).map_err(to_wit)?;
        Ok(wit::ChunkStream::new(Stream(RefCell::new(read))))
    }
}

struct Stream(RefCell<crate::Read>);

impl GuestChunkStream for Stream {
    fn next(&self, limit: wit::Budget) -> Result<Option<wit::Chunk>, wit::Error> {
        let mut read = self.0.borrow_mut();
        let Some(chunk) = read.stream.next(limit.bytes as usize, limit.items as usize).map_err(to_wit)? else {
            return Ok(None);
        };
        let payload = match chunk.piece {
            Piece::Text(text) => t::Payload::Text(text),
            Piece::Bytes(bytes) => t::Payload::Bytes(bytes),
        };
        let lines = chunk.start.line.zip(chunk.end_line).map(|(start, end)| t::LineRange { start, end });
        Ok(Some(wit::Chunk {
            payload,
            span: Some(t::Span { start_byte: chunk.start.byte, end_byte: chunk.next.byte, lines }),
            continued: chunk.continued,
            resume: chunk.next.encode(),
        }))
    }

    fn info(&self) -> String {
        self.0.borrow().info().to_string()
    }

    fn summary(&self) -> wit::Summary {
        let summary = self.0.borrow().summary();
        wit::Summary { totals: summary.totals.to_string(), exact: summary.exact, suggestions: summary.suggestions }
    }

    fn fingerprint(&self) -> Result<Option<wit::Fingerprint>, wit::Error> {
        let f = self.0.borrow().fingerprint().map_err(to_wit)?;
        Ok(Some(wit::Fingerprint { size: f.size, mtime_ns: f.mtime_ns, identity: f.identity }))
    }
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
    wit::Error { code, message: err.message }
}

export!(Component);
