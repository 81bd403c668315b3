//! The host's parsing edge, compiled on its own for fuzzing.
//!
//! These are the host's own source files (`host/src/...`), included by path
//! and unchanged: the bounded line codec and the cursor codec with the types
//! it uses (a sharded call's counts among them); the JSON-RPC and MCP parsing
//! is the host's own crate, `cordon-protocol`. Depending on the whole `cordon`
//! crate instead would build wasmtime, Cranelift and every wasm guest (through
//! `host/build.rs`) with coverage instrumentation: 8 minutes on the 2-core
//! machine, against well under one for these files. The module tree mirrors
//! the host's, so their `crate::` and `super::` paths resolve as they do there;
//! a file that starts using another host module fails this build loudly.

#[path = "../../host/src/framing.rs"]
pub mod framing;

#[path = "../../host/src/tool.rs"]
pub mod tool;

/// The JSON-RPC and MCP parsing: the host's own crate, `cordon-protocol`.
pub use cordon_protocol as protocol;

#[path = "../../host/src/pager"]
pub mod pager {
    pub mod cursor;
    pub mod totals;
}
