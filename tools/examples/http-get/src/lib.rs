//! `http_get`: an example third-party Cordon tool that fetches a URL.
//!
//! It sends one GET through wasi:http's `outgoing-handler` (which the host
//! allows only to the destinations the tool was granted with `--grant
//! net:…`), follows redirects itself (each one a new request the host checks
//! again), and pages the response body as it arrives: text chunks for a
//! text-like content type, bytes chunks otherwise. `info` tells the final URL,
//! the status (a status that is not 2xx is not an error: its body is paged),
//! the content type and length, and the redirects followed.
//!
//! A resume position is the body bytes delivered so far and the status: a
//! call reopened there sends the request again and skips that many bytes,
//! `stale` if the status is no longer the same or the body got shorter.
//!
//! Build: `cargo build --release --target wasm32-wasip2 -p cordon-example-http-get`;
//! install: `cordon tool add target/wasm32-wasip2/release/cordon_example_http_get.wasm --grant net:https://api.example.com`.
//! The logic is plain Rust, unit-tested natively with a fake transport; only
//! `wasi` (the transport over wasi:http) is specific to `wasm32`.

pub mod args;
pub mod body;
pub mod errors;
pub mod fetch;
pub mod redirect;
#[cfg(target_arch = "wasm32")]
pub mod wasi;

use cordon_sdk::{Access, Context, Error, Manifest, Stream, Tool};

pub use args::Args;
pub use fetch::{Fetch, Position, Response, Transport};

/// The tool's name as clients call it.
pub const NAME: &str = "http_get";
/// The tool's version, bound into every cursor.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// What the tool does, for a model choosing a tool.
pub const DESCRIPTION: &str = "Fetches an http or https URL with GET and returns the response body, in pages for a \
large one: text for text, JSON, XML and JavaScript, bytes otherwise. Follows redirects (`max_redirects`, default 5). \
Optional request `headers`. The metadata gives the final URL, the HTTP status (not 2xx is no error), the content \
type and length, and the redirects followed. Only destinations the tool was granted can be reached.";

/// The tool, as the SDK exports it.
pub struct HttpGet;

impl Tool for HttpGet {
    fn manifest() -> Manifest {
        Manifest { access: Access::None, ..Manifest::reader(NAME, VERSION, "Fetch a URL", DESCRIPTION) }
            .with_schemas(args::input_schema(), args::output_schema())
    }

    fn open(_ctx: &Context, args: &str, resume: Option<&str>) -> Result<Box<dyn Stream>, Error> {
        let args = Args::parse(args)?;
        let resume = resume.map(Position::decode).transpose()?;
        open(&args, resume)
    }
}

/// Opens a call in the component: the request goes through wasi:http.
#[cfg(target_arch = "wasm32")]
fn open(args: &Args, resume: Option<Position>) -> Result<Box<dyn Stream>, Error> {
    Ok(Box::new(Fetch::open(&mut wasi::WasiHttp, args, resume)?))
}

/// Natively there is no wasi:http to send through: the unit tests open
/// [`Fetch`] with a transport of their own.
#[cfg(not(target_arch = "wasm32"))]
fn open(args: &Args, resume: Option<Position>) -> Result<Box<dyn Stream>, Error> {
    let _ = (args, resume);
    Err(Error::new(
        cordon_sdk::ErrorCode::Unsupported,
        "http_get sends requests through wasi:http: it runs only as a wasm32-wasip2 component",
    ))
}

cordon_sdk::export_tool!(HttpGet);

#[cfg(test)]
mod tests;
