//! A write call's result as one JSON item, paged by the SDK's item pager, with
//! resume positions that carry the result itself.
//!
//! A write tool makes its change once, when a call opens without a resume
//! position. The host may reopen a call at a resume position (a parked stream
//! was evicted, or the next page asks for a smaller budget than the chunk
//! waiting for it); doing the change again then would be wrong (a second
//! `mkdir` reports `existed`, a second `move` fails or moves something else). So
//! every source position holds the result: `r<json>` before the item (the change
//! is done, the item not yet emitted) and `d<json>` after it (done). Resuming
//! reads the result back from the position and never touches the filesystem.
//! The pager's positions are then `m<offset>:r<json>` inside the item and
//! `bd<json>` after it.

use crate::items::{ItemSource, ItemStream, Items, Start};
use crate::{Error, ErrorCode, Summary};
use serde_json::Value;

/// The one item of a finished write call.
pub struct Outcome {
    /// The result, as reported by the item and by `info`.
    result: Value,
    /// Whether the item is still to be emitted.
    pending: bool,
}

impl ItemSource for Outcome {
    fn next_item(&mut self) -> Result<Option<(String, String)>, Error> {
        if !self.pending {
            return Ok(None);
        }
        self.pending = false;
        let json = self.result.to_string();
        let after = format!("d{json}");
        Ok(Some((json, after)))
    }
}

/// A write call's stream: the result item, paged.
pub struct Done {
    items: Items<Outcome>,
    /// Cheap totals for `summary`, derived from the result.
    totals: Value,
}

impl Done {
    /// Opens the stream. Without `resume`, runs `perform` (the change) and pages
    /// its result; with one, reads the result back from the position and does
    /// not run `perform`. `totals` derives the summary's totals from the result.
    pub fn open(
        resume: Option<&str>,
        perform: impl FnOnce() -> Result<Value, Error>,
        totals: impl FnOnce(&Value) -> Value,
    ) -> Result<Done, Error> {
        let fresh;
        let start = match resume {
            None => {
                fresh = format!("br{}", perform()?);
                Start::decode(Some(&fresh))?
            }
            Some(resume) => Start::decode(Some(resume))?,
        };
        let malformed = || {
            Error::new(
                ErrorCode::InvalidArgument,
                "malformed resume position: a write call's positions carry its result; the change is never repeated",
            )
        };
        let position = start.source.ok_or_else(malformed)?;
        let (pending, json) = match position.split_at_checked(1) {
            Some(("r", json)) => (true, json),
            Some(("d", json)) => (false, json),
            _ => return Err(malformed()),
        };
        let result: Value = serde_json::from_str(json).map_err(|_| malformed())?;
        if !result.is_object() {
            return Err(malformed());
        }
        let totals = totals(&result);
        let items = Items::new(Outcome { result, pending }, start)?;
        Ok(Done { items, totals })
    }

    /// The result object.
    pub fn result(&self) -> &Value {
        &self.items.source().result
    }
}

impl ItemStream for Done {
    crate::item_pager!(items: Outcome);

    fn info(&self) -> Value {
        self.result().clone()
    }

    fn summary(&self) -> Summary {
        Summary { totals: self.totals.clone(), exact: true, suggestions: Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Budget, Chunk};
    use serde_json::json;

    fn drain(done: &mut Done, bytes: u32) -> Vec<Chunk> {
        std::iter::from_fn(|| crate::Stream::next(done, Budget { bytes, items: 1 }).unwrap()).collect()
    }

    fn text(chunks: &[Chunk]) -> String {
        chunks.iter().map(|c| std::str::from_utf8(c.payload.as_bytes()).unwrap()).collect()
    }

    fn counts(v: &Value) -> Value {
        json!({ "n": v["n"] })
    }

    #[test]
    fn the_change_runs_once_and_resuming_anywhere_gives_the_rest_without_it() {
        let result = json!({"path": "/r/é/ü", "n": 3});
        let mut runs = 0;
        let mut done = Done::open(
            None,
            || {
                runs += 1;
                Ok(result.clone())
            },
            counts,
        )
        .unwrap();
        assert_eq!(runs, 1);
        assert_eq!(done.info(), result);
        assert_eq!(done.summary().totals, json!({"n": 3}));
        let whole = result.to_string();
        for bytes in [4, 5, 7, 1000] {
            let mut again = Done::open(None, || Ok(result.clone()), counts).unwrap();
            let chunks = drain(&mut again, bytes);
            assert_eq!(text(&chunks), whole);
            for (i, chunk) in chunks.iter().enumerate() {
                let mut resumed = Done::open(Some(&chunk.resume), || panic!("the change ran again"), counts).unwrap();
                assert_eq!(resumed.info(), result);
                assert_eq!(text(&drain(&mut resumed, 6)), text(&chunks[i + 1..]), "at {}", chunk.resume);
            }
        }
        assert!(drain(&mut done, 1000).last().unwrap().resume.starts_with("bd{"));
    }

    #[test]
    fn a_failed_change_is_the_error() {
        let err = Done::open(None, || Err(Error::new(ErrorCode::Conflict, "no")), counts).err().unwrap();
        assert_eq!(err.code, ErrorCode::Conflict);
    }

    #[test]
    fn positions_without_a_result_are_refused_and_never_run_the_change() {
        for bad in ["b", "bx", "br", "br[1]", "m3:", "m3:q{}", "bd", "nonsense"] {
            let err = Done::open(Some(bad), || panic!("the change ran on a resume"), counts).err().unwrap();
            assert_eq!(err.code, ErrorCode::InvalidArgument, "{bad}");
        }
        let err = Done::open(Some("m99:r{}"), || panic!("ran"), counts).err().unwrap();
        assert_eq!(err.code, ErrorCode::Stale);
    }
}
