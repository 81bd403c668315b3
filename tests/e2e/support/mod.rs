//! Shared fixtures of the end-to-end suite, one module a concern; every name is
//! re-exported here, so tests use `crate::support::NAME`.
//!
//! - [`env`]: the `cordon` binary, the workspace, the shared state directory,
//!   and the interop clients' Python and Node.
//! - [`fixture`]: a directory with a granted root and a canary outside it.
//! - [`server`]: the `Server` client, over stdio, TCP or HTTP.
//! - [`input`]: the stateless-era stdio and the HTTP inputs a `Server` writes to.
//! - [`process`]: servers listening on sockets, bounded client runs, peak memory.
//! - [`http`]: plain HTTP/1.1 requests to `/mcp` (and to any path of a loopback server).
//! - [`issuer`]: a real OAuth 2.1 authorization server (`tests/auth/issuer.mjs`)
//!   and its admin API, used as `crate::support::issuer::{Issuer, now}`.
//! - [`pages`]: a result's page, payload and cursor, and whole results paged through.
//! - [`rng`]: a small deterministic PRNG.
//! - [`web`]: a loopback HTTP server for tools with network grants, counting
//!   its connections.

mod env;
mod fixture;
mod http;
mod input;
pub mod issuer;
mod pages;
mod process;
mod rng;
mod server;
mod web;

pub use env::{cordon_bin, debian_program, node_dir, node_path, python_with_mcp, shared_state_dir, workspace};
pub use fixture::{CANARY, Fixture};
pub use http::{HttpResponse, http_post, http_request};
pub use pages::{json_form, next_cursor, page_meta, payload, read_all, read_all_reopened, text};
pub use process::{HttpServer, Listening, peak_rss_kib, poll, run_bounded, spawn_listening};
pub use rng::Rng;
pub use server::{REPLY_TIMEOUT, Server, TOKEN, initialize_params};
pub use web::{HELLO, WebServer};

// Public names no test spells out today (the types of `Listening`'s fields, the
// check `read_all` makes of each page, a request to any path), kept at
// `crate::support::NAME` too.
#[allow(unused_imports)]
pub use {
    http::request,
    pages::check_structured_payload,
    process::{Reaped, ServerLog},
};
