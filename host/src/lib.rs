//! Cordon: an MCP file server whose tools are sandboxed WebAssembly components.
//!
//! The data path: `transport` (byte streams) → `framing` (bounded lines) →
//! `session` (the session core: requests parsed once into `protocol`'s typed
//! vocabulary) → `server` (a tool call: the tool, `policy`'s grants, one
//! `runtime::CallContext`) → `pager` (pulling a tool's chunks into pages) →
//! `runtime` (wasmtime: engine, instance pool, cache, per-call store) → the
//! tool component; `results` renders what comes back for the wire, and its
//! `faults` is the one place a request's fault becomes a JSON-RPC error. `registry`
//! knows which tools exist and `installed` the third-party ones added with
//! `cordon tool add`; `staging` and `uploads` hold content staged for writes;
//! `cli` is the front door and `config` its file; `cleanup` sweeps stray
//! temporary files at start; `ambient` is the only module that opens paths
//! with ambient authority. Each imports only modules below it: `protocol`,
//! `tool`, `framing` and `ambient` import none (`tests/e2e/house.rs` checks).

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
pub mod results;
pub mod runtime;
pub mod server;
pub mod session;
pub mod staging;
pub mod tool;
pub mod transport;
pub mod uploads;
