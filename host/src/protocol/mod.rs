//! The protocol layer: JSON-RPC framing of messages, and the MCP methods.

pub mod jsonrpc;
pub mod mcp;
