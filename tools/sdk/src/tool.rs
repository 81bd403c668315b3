//! What a tool implements.

use serde_json::Value;

use crate::error::Error;
use crate::types::{Budget, Chunk, Fingerprint, Manifest, Summary};

/// What the host granted this call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// The granted roots (absolute paths, the first one the default for
    /// relative paths), as the WASI preopens name them.
    pub roots: Vec<String>,
}

/// A tool: a manifest, and a way to start a call.
pub trait Tool {
    /// What the tool is; must not touch the filesystem.
    fn manifest() -> Manifest;

    /// Starts a call with `args` (a JSON object text, already checked against the
    /// input schema by the host), from the beginning or at `resume`.
    fn open(ctx: &Context, args: &str, resume: Option<&str>) -> Result<Box<dyn Stream>, Error>;
}

/// The output of one call.
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
