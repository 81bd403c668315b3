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

    /// Splits the output after `start` (a boundary, or `None`: the beginning)
    /// into at most `count` contiguous shards of about equal work, returning
    /// the boundaries between them in output order (WIT `shards.split`). By
    /// default none: the call runs as one stream.
    fn split(ctx: &Context, args: &str, start: Option<&str>, count: u32) -> Result<Vec<String>, Error> {
        let _ = (ctx, args, start, count);
        Ok(Vec::new())
    }

    /// The output from `start` up to the boundary `end` (`None`: the end), its
    /// positions and counts the range's own (WIT `shards.open-range`). By
    /// default only the whole rest of the output (`end` of `None`) can be
    /// opened, which is all a tool that never splits is asked.
    fn open_range(ctx: &Context, args: &str, start: Option<&str>, end: Option<&str>) -> Result<Box<dyn Stream>, Error> {
        match end {
            None => Self::open(ctx, args, start),
            Some(_) => Err(Error::new(ErrorCode::Unsupported, "this tool does not split its calls into shards")),
        }
    }
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

/// [`Tool::open_range`] for a tool whose ranges are the stream `open_range`
/// returns, given the granted roots, the arguments and the range: the body the
/// `shards` form of [`export_tool!`](crate::export_tool) writes.
pub fn open_range_stream<S: Stream + 'static>(
    ctx: &Context,
    args: &str,
    range: (Option<&str>, Option<&str>),
    open_range: impl FnOnce(&[String], &str, Option<&str>, Option<&str>) -> Result<S, Error>,
) -> Result<Box<dyn Stream>, Error> {
    Ok(Box::new(open_range(&ctx.roots, args, range.0, range.1)?))
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
