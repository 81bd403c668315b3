//! The protocol layer: JSON-RPC framing of messages, the MCP methods typed
//! (`mcp`), the 2026-07-28 request envelope (`modern`), and the results
//! (`results`).

pub mod jsonrpc;
pub mod mcp;
pub mod modern;
pub mod results;
