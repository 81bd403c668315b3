//! The official MCP conformance suite, run against `cordon serve --http` in both eras.
