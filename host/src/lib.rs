//! Cordon: an MCP file server whose tools are sandboxed WebAssembly components.
//!
//! The data path, one module each: `transport` (byte streams) → `framing`
//! (bounded lines) → `protocol` (typed JSON-RPC/MCP) → `session` (the session
//! core) → `server` (a tool call) → `pager` (pulling a tool's chunks into a result) → `policy` (what a
//! tool may see) → `runtime` (wasmtime: engine, cache, per-call store) → the
//! tool component. `registry` knows which tools exist and `installed` the
//! third-party ones added with `cordon tool add`; `cli` is the front door
//! and `config` its file; `cleanup` sweeps stray temporary files at start;
//! `ambient` is the only module that opens paths with ambient authority.

pub mod ambient;
pub mod cleanup;
pub mod cli;
pub mod config;
pub mod follow;
pub mod framing;
pub mod installed;
pub mod pager;
pub mod policy;
pub mod protocol;
pub mod registry;
pub mod runtime;
pub mod server;
pub mod session;
pub mod staging;
pub mod tool;
pub mod transport;
pub mod uploads;
