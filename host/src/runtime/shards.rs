//! Parallel, ordered streams, the runtime's part: a tool that exports the WIT
//! `shards` interface (world `cordon-sharded-tool`) is found out when it is
//! loaded, and its calls can be split into ranges (`split`) and each range
//! opened in an instance of its own (`open-range`). Every such instance is a
//! call's like any other (a slot, the call's grants, deadline and
//! cancellation), holding its share of the call's memory: the shards a call
//! runs at once stay together inside its limit. The pager decides which calls
//! shard and pages them in order (`pager::shards`).

use std::time::Duration;

use wasmtime::Store;

use super::Runtime;
use super::bindings::{CordonToolIndices, CordonToolPre, ShardsIndices};
use super::call::{CallContext, CallState, Claim, Fresh, LiveCall, Opened, Target};
use super::failure::{CallFailure, Violation};
use super::limits::Limit;
use super::slots::Slot;

/// Where to find a shardable component's exports in an instance the host
/// makes itself: `tool` (for the chunk stream) and `shards`.
#[derive(Clone)]
pub struct Shardable {
    tool: CordonToolIndices,
    shards: ShardsIndices,
}

impl Shardable {
    /// Set when the linked component exports `shards`.
    pub(super) fn of(pre: &CordonToolPre<CallState>) -> Option<Shardable> {
        let shards = ShardsIndices::new(pre.instance_pre()).ok()?;
        let tool = CordonToolIndices::new(pre.instance_pre()).ok()?;
        Some(Shardable { tool, shards })
    }
}

/// What `split_or_open` found.
// Moved at once into the pager's stream, which keeps the one call inline too.
#[allow(clippy::large_enum_variant)]
pub enum Opening {
    /// The boundaries to shard the call by (at least one).
    Shards(Vec<String>),
    /// The call's one stream.
    One(LiveCall),
}

/// An instance that was asked for boundaries, with its store and slot.
struct Asked {
    store: Store<CallState>,
    instance: wasmtime::component::Instance,
    slot: Slot,
    tool: CordonToolIndices,
}

/// One range of a call's output to open.
#[derive(Debug, Clone, Copy)]
pub struct Range<'a> {
    /// The call's arguments (JSON).
    pub args: &'a str,
    /// Where the range starts: `None` (the beginning), a boundary, or a
    /// position of an earlier stream of the same range.
    pub start: Option<&'a str>,
    /// The boundary it ends at; `None`: the end of the output.
    pub end: Option<&'a str>,
    /// How many instances the call runs at once: this one gets that share of
    /// the call's memory.
    pub running: usize,
    /// A range opened ahead of need takes a free instance slot (or a parked
    /// stream's) or none: it never waits for one.
    pub ahead: bool,
}

/// Where a call's output is to be divided: after the resume position
/// `after` (from the start when `None`), into at most `count` shards.
#[derive(Debug, Clone, Copy)]
pub struct SplitAt<'a> {
    pub after: Option<&'a str>,
    pub count: u32,
}

impl Runtime {
    /// The call's wall-time limit, named in a timeout.
    pub fn wall_time(&self) -> Duration {
        self.limits.wall_time
    }

    /// The boundaries dividing `target`'s output after `start` into at most
    /// `count` shards, asked of the tool in an instance of its own (given
    /// back before this returns). Empty for a tool that does not export
    /// `shards`, as for one that keeps its output in one piece.
    pub fn split(
        &self,
        target: Target<'_>,
        ctx: &CallContext,
        args: &str,
        at: SplitAt<'_>,
    ) -> Result<Vec<String>, CallFailure> {
        Ok(self.ask_split(target, ctx, args, at)?.map_or_else(Vec::new, |(boundaries, _)| boundaries))
    }

    /// A first page's opening: the boundaries to shard the call by, or, when
    /// the tool keeps it in one piece, its one stream, opened in the instance
    /// that was asked (a call that is not split costs no second instance).
    pub fn split_or_open(
        &self,
        target: Target<'_>,
        ctx: &CallContext,
        args: &str,
        count: u32,
    ) -> Result<Opening, CallFailure> {
        let asked = match self.ask_split(target, ctx, args, SplitAt { after: None, count })? {
            Some((boundaries, _)) if !boundaries.is_empty() => return Ok(Opening::Shards(boundaries)),
            Some((_, asked)) => asked,
            None => return Ok(Opening::One(self.open(target, ctx, args, None)?)),
        };
        let Asked { mut store, instance, slot, tool } = asked;
        let name = target.name;
        store.set_hostcall_fuel(self.limits.work_fuel());
        let opened = (|| {
            let tool = tool.load(&mut store, &instance)?;
            let stream = tool.cordon_tool_tool().call_open(&mut store, args, None)?;
            Ok::<_, wasmtime::Error>((tool, stream))
        })();
        let chunk = Limit::ChunkBytes(self.limits.max_chunk_bytes);
        let (instance, stream) = self.answered(name, &store, chunk, opened)?;
        Ok(Opening::One(self.live(name, Opened { store, instance, stream, slot })))
    }

    /// Asks `target` for the boundaries after `start`, in an instance of its
    /// own, kept with them; `None` for a tool that does not export `shards`.
    fn ask_split(
        &self,
        target: Target<'_>,
        ctx: &CallContext,
        args: &str,
        SplitAt { after: start, count }: SplitAt<'_>,
    ) -> Result<Option<(Vec<String>, Asked)>, CallFailure> {
        let Some(shardable) = target.shards else { return Ok(None) };
        let name = target.name;
        let info = Limit::InfoBytes(self.limits.max_info_bytes);
        let fresh = self.fresh(name, Claim::one(ctx), info, |store| {
            let instance = target.pre.instance_pre().instantiate(&mut *store)?;
            let shards = shardable.shards.load(&mut *store, &instance)?;
            // The boundaries together are metadata: held to `max_info_bytes`.
            store.set_hostcall_fuel(self.limits.max_info_bytes);
            Ok((instance, shards.call_split(store, args, start, count)?))
        })?;
        if fresh.answer.len() >= count.max(1) as usize {
            let broke = Violation::Boundaries { returned: fresh.answer.len(), count };
            return Err(CallFailure::Contract { tool: name.to_string(), broke });
        }
        let Fresh { store, slot, made: instance, answer: boundaries } = fresh;
        let asked = Asked { store, instance, slot, tool: shardable.tool.clone() };
        Ok(Some((boundaries, asked)))
    }

    /// Opens one range of `target`'s output for the request `ctx`, in an
    /// instance slot of its own (see `Range::ahead`) holding its share of the
    /// call's memory; the tool's own refusal is the inner error.
    pub fn open_range(&self, target: Target<'_>, ctx: &CallContext, range: Range<'_>) -> Result<LiveCall, CallFailure> {
        let name = target.name;
        let Some(shardable) = target.shards else {
            let broke = Violation::NotShardable;
            return Err(CallFailure::Contract { tool: name.to_string(), broke });
        };
        let claim = Claim { ctx, ahead: range.ahead, running: range.running };
        let chunk = Limit::ChunkBytes(self.limits.max_chunk_bytes);
        let fresh = self.fresh(name, claim, chunk, |store| {
            let instance = target.pre.instance_pre().instantiate(&mut *store)?;
            let tool = shardable.tool.load(&mut *store, &instance)?;
            let shards = shardable.shards.load(&mut *store, &instance)?;
            let stream = shards.call_open_range(store, range.args, range.start, range.end)?;
            Ok((tool, stream))
        })?;
        let Fresh { store, slot, made: instance, answer: stream } = fresh;
        Ok(self.live(name, Opened { store, instance, stream, slot }))
    }
}
