//! What a tool implements.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Budget, Chunk, Error, ErrorCode, Fingerprint, Manifest, Summary};

/// What the host granted this call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// The granted roots (absolute paths, the first one the default for
    /// relative paths), as the WASI preopens name them.
    pub roots: Vec<String>,
}

/// A tool: a manifest, and a way to start a call.
///
/// A tool whose call is one stream type opened from the granted roots, the
/// arguments and a resume position needs no hand-written impl: see the
/// `Tool { manifest, open }` form of [`export_tool!`](crate::export_tool).
pub trait Tool {
    /// What the tool is; must not touch the filesystem.
    fn manifest() -> Manifest;

    /// Starts a call with `args` (a JSON object text, already checked against the
    /// input schema by the host), from the beginning or at `resume`.
    fn open(ctx: &Context, args: &str, resume: Option<&str>) -> Result<Box<dyn Stream>, Error>;
}

/// The output of one call.
///
/// A call that pages JSON items with [`Items`](crate::items::Items) implements
/// [`ItemStream`](crate::items::ItemStream) instead, which gives it this trait.
pub trait Stream {
    /// The next chunk within `budget`, `None` at the end. Resuming at a chunk's
    /// `resume` must give exactly the bytes that would have followed it.
    fn next(&mut self, budget: Budget) -> Result<Option<Chunk>, Error>;

    /// What the tool says about the output, a JSON object matching the
    /// manifest's output schema.
    fn info(&self) -> Value;

    /// Cheap totals and suggestions; by default nothing is known.
    fn summary(&self) -> Summary {
        Summary::default()
    }

    /// The fingerprint of the file paged, read afresh; by default none.
    fn fingerprint(&self) -> Result<Option<Fingerprint>, Error> {
        Ok(None)
    }
}

/// Parses a call's arguments (the JSON object text `open` receives) into the
/// tool's `Args`; a mismatch is an invalid-argument error saying what is wrong.
pub fn parse_args<T: DeserializeOwned>(args: &str) -> Result<T, Error> {
    serde_json::from_str(args).map_err(|e| Error::new(ErrorCode::InvalidArgument, format!("invalid arguments: {e}")))
}

/// [`Tool::open`] for a tool whose call is the stream `open` returns, given
/// the granted roots, the arguments and the resume position: the body the
/// `Tool { manifest, open }` form of [`export_tool!`](crate::export_tool)
/// writes.
pub fn open_stream<S: Stream + 'static>(
    ctx: &Context,
    args: &str,
    resume: Option<&str>,
    open: impl FnOnce(&[String], &str, Option<&str>) -> Result<S, Error>,
) -> Result<Box<dyn Stream>, Error> {
    Ok(Box::new(open(&ctx.roots, args, resume)?))
}
