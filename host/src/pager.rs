//! Pulls a call's chunk stream into one result, within the server's result limit.
//!
//! The chunk stream is pulled a budget at a time; text and items are gathered in
//! order, raw bytes kept apart so they can be returned losslessly. A stream that
//! goes past `max_bytes` fails closed with `too_large` rather than returning a
//! cut-off result.

use serde_json::Value;

use crate::runtime::{CallFailure, LiveCall};
use crate::tool::{ErrorCode, Payload, Span, ToolError};

/// The most payload bytes asked of a tool at once.
pub const CHUNK_BUDGET: u32 = 64 * 1024;

/// A run of output of one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// Text, and items rendered as JSON lines.
    Text(String),
    /// Bytes that are not UTF-8.
    Bytes(Vec<u8>),
}

/// A call's whole output.
#[derive(Debug, Clone)]
pub struct Output {
    pub blocks: Vec<Block>,
    /// From the first chunk's start to the last chunk's end, if chunks had spans.
    pub span: Option<Span>,
    /// The tool's `info` object.
    pub info: Value,
    /// Payload bytes in all.
    pub bytes: usize,
}

/// Pulls every chunk of `call`; fails with `too_large` past `max_bytes`.
pub fn collect(call: &mut LiveCall, max_bytes: usize) -> Result<Output, CallFailure> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut span: Option<Span> = None;
    let mut bytes = 0usize;
    while let Some(chunk) = call.next(CHUNK_BUDGET)? {
        bytes += chunk.payload.len();
        if bytes > max_bytes {
            return Err(CallFailure::Tool(ToolError::new(
                ErrorCode::TooLarge,
                format!(
                    "the result is larger than this server's limit of {max_bytes} bytes per call; \
                     ask for less (for `read`, a range with start_line and end_line)"
                ),
            )));
        }
        if let Some(s) = chunk.span {
            span = Some(match span {
                None => s,
                Some(first) => Span { start_line: first.start_line, start_byte: first.start_byte, ..s },
            });
        }
        match (chunk.payload, blocks.last_mut()) {
            (Payload::Text(text), Some(Block::Text(last))) => last.push_str(&text),
            (Payload::Text(text), _) => blocks.push(Block::Text(text)),
            (Payload::Item(item), Some(Block::Text(last))) => {
                last.push_str(&item);
                last.push('\n');
            }
            (Payload::Item(item), _) => blocks.push(Block::Text(item + "\n")),
            (Payload::Bytes(raw), Some(Block::Bytes(last))) => last.extend_from_slice(&raw),
            (Payload::Bytes(raw), _) => blocks.push(Block::Bytes(raw)),
        }
    }
    let info = call.info()?;
    Ok(Output { blocks, span, info, bytes })
}
