//! The WIT exports: `open` tries the connection, the stream returns its
//! outcome as one item.

use std::cell::Cell;

use exports::cordon::tool::tool::{self as wit, Guest, GuestChunkStream};

wit_bindgen::generate!({
    path: "../../../wit",
    world: "cordon-tool",
});

use cordon::tool::types as t;

/// The component's exports.
struct Component;

impl Guest for Component {
    type ChunkStream = Stream;

    fn describe() -> wit::Manifest {
        wit::Manifest {
            name: crate::NAME.into(),
            version: crate::VERSION.into(),
            title: crate::TITLE.into(),
            description: crate::DESCRIPTION.into(),
            input_schema: crate::input_schema().to_string(),
            output_schema: crate::output_schema().to_string(),
            access: t::Access::None,
            read_only: true,
            destructive: false,
            idempotent: true,
        }
    }

    fn open(_args: String, resume: Option<String>) -> Result<wit::ChunkStream, wit::Error> {
        let at = crate::position(resume.as_deref())
            .map_err(|message| wit::Error { code: t::ErrorCode::InvalidArgument, message })?;
        let outcome = crate::attempt();
        Ok(wit::ChunkStream::new(Stream { item: outcome.to_string(), outcome, at: Cell::new(at) }))
    }
}

/// The outcome, returned as one item (in pieces if the budget is small).
struct Stream {
    outcome: serde_json::Value,
    /// The item's text.
    item: String,
    /// The byte of the item the next chunk starts at.
    at: Cell<usize>,
}

impl GuestChunkStream for Stream {
    fn next(&self, limit: wit::Budget) -> Result<Option<wit::Chunk>, wit::Error> {
        if self.at.get() >= self.item.len() {
            return Ok(None);
        }
        let (text, end) = crate::piece(&self.item, self.at.get(), limit.bytes as usize);
        self.at.set(end);
        let payload = t::Payload::Item(text.to_string());
        let continued = end < self.item.len();
        Ok(Some(wit::Chunk { payload, span: None, continued, resume: end.to_string() }))
    }

    fn info(&self) -> String {
        self.outcome.to_string()
    }

    fn summary(&self) -> wit::Summary {
        wit::Summary { totals: serde_json::json!({ "items": 1 }).to_string(), exact: true, suggestions: Vec::new() }
    }

    fn fingerprint(&self) -> Result<Option<wit::Fingerprint>, wit::Error> {
        Ok(None)
    }
}

export!(Component);
