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
mod output;

pub use error::{ErrorCode, MAX_MESSAGE_BYTES, ToolError};
pub use manifest::{Access, Manifest, valid_name};
pub use output::{Budget, Chunk, Fingerprint, Payload, Span, Summary};
