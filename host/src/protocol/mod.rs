//! The protocol layer, vocabulary only: JSON-RPC messages and codes
//! (`jsonrpc`), the MCP methods typed (`mcp`) and the 2026-07-28 request
//! envelope (`modern`). It imports nothing else of the host's; what the
//! server answers is rendered above it, in `results`.

pub mod jsonrpc;
pub mod mcp;
pub mod modern;
