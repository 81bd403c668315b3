//! What the pager pulls from: one tool stream (`LiveCall`), or a call paged as
//! shards (`Sharded`). Both give chunks in order within a budget, say what
//! the whole output holds so far, wait parked between pages, and can go back
//! to the last position the pager delivered.
//!
//! Which calls shard: a tool that changes nothing (read-only, not asking for
//! write access) and exports `shards`, when the server runs more than one
//! shard per call (`shards`), on a first page, or on a resume whose cursor
//! names a shard (however many shards the server runs now).

use std::sync::Arc;

use super::ahead::OpenRange;
use super::cursor::Shard;
use super::shards::{Plan, Sharded};
use super::totals::Base;
use crate::policy::Grant;
use crate::registry::Tool;
use crate::runtime::{CallContext, CallFailure, LiveCall, Opening, Range, Runtime, SplitAt};
use crate::tool::{Access, Budget, Chunk, Fingerprint, Summary};

/// How many shards `split` is asked for per shard run at once: more, smaller
/// shards balance uneven ones.
const SPLIT_PER_RUNNING: u32 = 4;

/// A stream the pager pulls from.
// The one stream, the common case, is kept inline; the sharded one is boxed.
#[allow(clippy::large_enum_variant)]
pub enum Stream {
    One(LiveCall),
    Sharded(Box<Sharded>),
}

/// Opens the ranges of one call, from any thread.
pub struct Opener {
    pub runtime: Arc<Runtime>,
    pub tool: Arc<Tool>,
    /// The call's arguments (canonical JSON).
    pub args: String,
    /// Shards run at once.
    pub running: usize,
}

impl OpenRange for Opener {
    fn open(
        &self,
        ctx: &CallContext,
        start: Option<&str>,
        end: Option<&str>,
        ahead: bool,
    ) -> Result<LiveCall, CallFailure> {
        let target = self.tool.target(&self.runtime)?;
        let range = Range { args: &self.args, start, end, running: self.running, ahead };
        self.runtime.open_range(target, ctx, range)
    }
}

impl Opener {
    /// Whether this call may be paged as shards.
    fn may_shard(&self) -> Result<bool, CallFailure> {
        let manifest = &self.tool.manifest;
        let changes_nothing = manifest.read_only && manifest.access != Access::Write;
        Ok(changes_nothing && self.running > 1 && self.tool.target(&self.runtime)?.shards.is_some())
    }

    /// How many shards to ask `split` for: `SPLIT_PER_RUNNING` per shard run.
    fn split_count(&self) -> u32 {
        u32::try_from(self.running).unwrap_or(u32::MAX).saturating_mul(SPLIT_PER_RUNNING)
    }

    /// Splitting only speeds a call up: a `split` that fails (its boundaries
    /// over a limit, a trap, the tool's refusal, which `open` would repeat)
    /// leaves the rest in one piece; only the request's cancellation or
    /// deadline fails the call here.
    fn split_failed(&self, failure: CallFailure) -> Result<(), CallFailure> {
        match failure {
            CallFailure::Cancelled | CallFailure::Timeout { .. } | CallFailure::HostTimeout { .. } => Err(failure),
            failure => {
                tracing::debug!(tool = %self.tool.manifest.name, "split failed, one shard: {failure:?}");
                Ok(())
            }
        }
    }

    /// The call as one stream, from `resume` (`None`: the beginning).
    fn open_one(&self, ctx: &CallContext, resume: Option<&str>) -> Result<LiveCall, CallFailure> {
        self.runtime.open(self.tool.target(&self.runtime)?, ctx, &self.args, resume)
    }

    /// The boundaries after `start` (none when splitting failed).
    fn split(&self, ctx: &CallContext, start: Option<&str>) -> Result<Vec<String>, CallFailure> {
        let at = SplitAt { after: start, count: self.split_count() };
        match self.runtime.split(self.tool.target(&self.runtime)?, ctx, &self.args, at) {
            Ok(boundaries) => Ok(boundaries),
            Err(failure) => self.split_failed(failure).map(|()| Vec::new()),
        }
    }
}

impl Stream {
    /// The first page's stream: shards when the tool splits this call, else
    /// the tool's one stream.
    pub fn open(opener: Opener, ctx: &CallContext) -> Result<Stream, CallFailure> {
        if opener.may_shard()? {
            // The instance asked to split serves the call when it is not split.
            let target = opener.tool.target(&opener.runtime)?;
            match opener.runtime.split_or_open(target, ctx, &opener.args, opener.split_count()) {
                Ok(Opening::Shards(boundaries)) => return Ok(sharded(opener, ctx, None, boundaries, Base::default())),
                Ok(Opening::One(call)) => return Ok(Stream::One(call)),
                Err(failure) => opener.split_failed(failure)?,
            }
        }
        Ok(Stream::One(opener.open_one(ctx, None)?))
    }

    /// The stream of a cursor whose parked stream is gone, at `resume`: for
    /// a sharded call, the rest of its `shard`, then the shards `split` finds
    /// after it.
    pub fn reopen(
        opener: Opener,
        ctx: &CallContext,
        resume: &str,
        shard: Option<&Shard>,
    ) -> Result<Stream, CallFailure> {
        let Some(shard) = shard else { return Ok(Stream::One(opener.open_one(ctx, Some(resume))?)) };
        let mut boundaries = Vec::new();
        if let Some(end) = &shard.end {
            boundaries.push(end.clone());
            boundaries.extend(opener.split(ctx, Some(end))?);
        }
        Ok(sharded(opener, ctx, Some(resume.to_string()), boundaries, shard.base.clone()))
    }
}

/// A sharded stream from `first` over the shards between `boundaries`.
fn sharded(
    mut opener: Opener,
    ctx: &CallContext,
    first: Option<String>,
    boundaries: Vec<String>,
    base: Base,
) -> Stream {
    let wall_time = opener.runtime.wall_time();
    // Fewer shards than may run: each gets a larger share of the memory.
    let running = opener.running.clamp(1, boundaries.len() + 1);
    opener.running = running;
    let mut starts = vec![first];
    starts.extend(boundaries.iter().cloned().map(Some));
    let mut ends: Vec<Option<String>> = boundaries.into_iter().map(Some).collect();
    ends.push(None);
    let plan = Plan { open: Arc::new(opener), running, wall_time, grants: ctx.grants.clone(), starts, ends, base };
    Stream::Sharded(Box::new(Sharded::new(plan)))
}

impl Stream {
    /// Readies the stream for a page of the request `ctx` at `budget`.
    pub fn arm(&mut self, ctx: &CallContext, budget: Budget) {
        match self {
            Stream::One(call) => call.arm(ctx),
            Stream::Sharded(sharded) => sharded.arm(ctx, budget),
        }
    }

    /// Lets go of the request while the stream waits for its next page.
    pub fn disarm(&mut self) {
        match self {
            Stream::One(call) => call.disarm(),
            Stream::Sharded(sharded) => sharded.disarm(),
        }
    }

    /// What the stream holds: its instances' linear memory and the chunks its
    /// shards pulled ahead.
    pub fn memory_bytes(&self) -> usize {
        match self {
            Stream::One(call) => call.memory_bytes(),
            Stream::Sharded(sharded) => sharded.memory_bytes(),
        }
    }

    /// The preopens the stream was opened with.
    pub fn grants(&self) -> &[Grant] {
        match self {
            Stream::One(call) => call.grants(),
            Stream::Sharded(sharded) => sharded.grants(),
        }
    }

    pub fn next(&mut self, budget: Budget) -> Result<Option<Chunk>, CallFailure> {
        match self {
            Stream::One(call) => call.next(budget),
            Stream::Sharded(sharded) => sharded.next(budget),
        }
    }

    pub fn info(&mut self) -> Result<serde_json::Value, CallFailure> {
        match self {
            Stream::One(call) => call.info(),
            Stream::Sharded(sharded) => sharded.info(),
        }
    }

    pub fn summary(&mut self) -> Result<Summary, CallFailure> {
        match self {
            Stream::One(call) => call.summary(),
            Stream::Sharded(sharded) => sharded.summary(),
        }
    }

    /// The fingerprint of the one file the stream pages; none for a sharded
    /// call (it pages many files).
    pub fn fingerprint(&mut self) -> Result<Option<Fingerprint>, CallFailure> {
        match self {
            Stream::One(call) => call.fingerprint(),
            Stream::Sharded(_) => Ok(None),
        }
    }

    /// What a cursor keeps of `position` (a position this stream gave): the
    /// tool's position, and for a sharded call the shard it is in.
    pub fn locate(&self, position: &str) -> (String, Option<Shard>) {
        match self {
            Stream::One(_) => (position.to_string(), None),
            Stream::Sharded(sharded) => {
                let (resume, shard) = sharded.locate(position).expect("a position this stream gave");
                (resume, Some(shard))
            }
        }
    }

    /// The position this stream gives for a cursor's `resume` (and `shard`).
    pub fn position_of(&self, resume: &str, shard: Option<&Shard>) -> String {
        match (self, shard) {
            (Stream::Sharded(sharded), Some(shard)) => sharded.position_of(resume, shard.end.as_deref()),
            _ => resume.to_string(),
        }
    }

    /// Goes back to `position` (a position this stream gave; `None`: its
    /// start) to pull again what followed it, at a smaller budget: the one
    /// stream is reopened there, in the instance slot the old one gives back.
    pub fn rewind(self, opener: &Opener, ctx: &CallContext, position: Option<&str>) -> Result<Stream, CallFailure> {
        match self {
            Stream::Sharded(mut sharded) => {
                sharded.rewind(position);
                Ok(Stream::Sharded(sharded))
            }
            Stream::One(call) => {
                drop(call);
                Ok(Stream::One(opener.open_one(ctx, position)?))
            }
        }
    }
}
