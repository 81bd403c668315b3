//! The contract's types in plain Rust, shared by the host and the SDK; each
//! side converts its bindgen output to these in one place.
//!
//! `wit/tool.wit` is the contract; this crate is its vocabulary without any
//! bindings, so the host (`wasmtime::component::bindgen!`, converted in
//! `host/src/runtime/bindings.rs`) and every tool (`wit_bindgen::generate!`,
//! converted in `tools/sdk/src/component.rs`) speak the same types. Nothing
//! here touches the filesystem or the component model: it builds natively and
//! for `wasm32-wasip2`.

mod error;
mod manifest;
mod needles;
mod output;

pub use error::{ErrorCode, MAX_MESSAGE_BYTES, ToolError};
pub use manifest::{Access, Manifest, valid_name};
pub use needles::{MAX_NEEDLE, MAX_NEEDLES, check_needles};
pub use output::{Budget, Chunk, Fingerprint, Payload, Span, Summary};

/// The environment variable in which the host tells a tool instance how many
/// bytes of linear memory it may use (its share of the call's `--memory-mib`:
/// a shard of a call run as several holds a part of it), as a decimal number.
/// A tool that holds data of a size its input decides (a search's line
/// buffer) bounds it by this, and reports what does not fit rather than fail
/// the call at the limit.
pub const MEMORY_ENV: &str = "CORDON_MEMORY_BYTES";
