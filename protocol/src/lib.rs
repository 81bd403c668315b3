//! The protocol layer, vocabulary only: JSON-RPC messages and codes
//! (`jsonrpc`), a result as it goes out (`body`), the MCP methods typed (`mcp`) and the 2026-07-28 request
//! envelope (`modern`). A crate of its own at the bottom of the host's
//! layers (the host re-exports it as `cordon::protocol`), so it cannot
//! import anything above it; what the server answers is rendered above it,
//! in the host's `results`.

pub mod body;
pub mod jsonrpc;
pub mod mcp;
pub mod modern;
