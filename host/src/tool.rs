//! What a tool is and what it produces: the contract's types.
//!
//! They live in `cordon-contract`, shared with the guest SDK, and are
//! re-exported here so the host names them `crate::tool::X`.
//! `runtime::bindings` converts the WIT types into them at the edge, so nothing
//! past the runtime sees `bindgen!` output. The arguments the host owns in
//! every call (their reserved names, their parsing) are `args`'.

pub use cordon_contract::{
    Access, Budget, Chunk, ErrorCode, Fingerprint, Manifest, Payload, Span, Summary, ToolError, valid_name,
};
