//! Real MCP clients in both eras: the Python SDK, the Inspector CLI and rmcp, over stdio and HTTP.
