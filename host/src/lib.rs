//! Cordon: an MCP file server whose tools are sandboxed WebAssembly components.
//!
//! The data path: `transport` (byte streams) → `framing` (bounded lines) →
//! `session` (the session core: requests parsed once into `protocol`'s typed
//! vocabulary; `protocol` is the `cordon-protocol` crate, re-exported) → `server` (one tool call: its `registry` entry, a component
//! or a host tool; `args` splits the host's arguments from the tool's once;
//! `policy`'s grants; one `runtime::CallContext`) → `pager` (pulling a tool's
//! chunks into pages) → `runtime` (wasmtime: engine, instance pool, cache,
//! per-call store) → the tool component. The server answers with a typed
//! `results::Answer` or a `results::Fault`; `results` renders them for the
//! wire: its `faults` is the one table from fault to wire (a request's
//! fault, a call's failure, a transport's refusal), its `model` all the text
//! a model reads (the pager renders items through `pager::printer`). `limits` is the one table of limits (flags, configuration
//! keys, defaults, validation); `installed` keeps the third-party tools added
//! with `cordon tool add`, pinned by digest and, with `installed::signature`,
//! by a trusted key's signature; `audit` is the chained audit trail the
//! server records each call and refusal in; `metrics` what an operator
//! scrapes, `telemetry` the log lines and OpenTelemetry traces; `auth` turns the credential an
//! HTTP or TCP request carries (an OAuth access token, a static token) into
//! its principal at the edge, and `policy::access` gives the principal its
//! rights (`server::Caller` carries both through a call); `staging` and `uploads` hold content staged for
//! writes; `cli` is the front door and `config` its file; `cleanup` sweeps
//! stray temporary files at start; `ambient` is the only module that opens
//! paths with ambient authority. Each imports only modules below it:
//! `protocol`, `tool`, `framing` and `ambient` import none, `args` only `tool`
//! (`tests/e2e/house/` checks).

pub mod ambient;
pub mod args;
pub mod audit;
pub mod auth;
pub mod cleanup;
pub mod cli;
pub mod clients;
pub mod config;
pub mod follow;
pub mod framing;
pub mod installed;
pub mod limits;
pub mod metrics;
pub mod notices;
pub mod pager;
pub mod policy;
pub mod private;
pub use cordon_protocol as protocol;
pub mod registry;
pub mod results;
pub mod runtime;
pub mod server;
pub mod sha256;
pub mod session;
pub mod staging;
pub mod telemetry;
pub mod tool;
pub mod transport;
pub mod uploads;
