//! A sharded call: one call's output as contiguous ranges ("shards", between
//! the boundaries the tool's `split` gave) paged strictly in order.
//!
//! The head shard is pulled by the pager itself, in an instance of its own;
//! up to `shards - 1` shards after it run ahead on threads of their own into
//! bounded buffers (`ahead`). A shard ahead that ends makes room for the next
//! one (started when the head gives its next chunk), while what the ended
//! ones buffered stays under `STREAM_AHEAD_BYTES`: shards of uneven sizes
//! keep the threads busy. When the head ends, the next shard is taken over
//! (its buffer, then its live call) and becomes the head, and one more starts
//! running ahead. A buffered chunk pulled at a larger budget than the page's
//! is not given: the shard is reopened where the pager stands and pulled
//! again at the page's budget. Each shard's `info` and totals count its own
//! range; the call's are the head's raised by the earlier shards' (`totals`).
//!
//! Positions: a chunk's `resume` is the shard's own, valid only with the
//! shard's end, so the stream gives positions as `INDEX:RESUME` (the shard's
//! index in this stream), and `locate` turns one into what a cursor keeps: the
//! shard's own position, its end and the counts before it.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::ahead::{Ahead, OpenRange, STREAM_AHEAD_BYTES};
use super::cursor::Shard;
use super::totals::{Base, Final};
use crate::policy::Grant;
use crate::runtime::{CallContext, CallFailure, LiveCall};
use crate::tool::{Budget, Chunk, Summary};

/// The shard being paged.
struct Head {
    index: usize,
    call: Option<LiveCall>,
    /// Chunks pulled ahead, not given yet.
    buffer: VecDeque<Chunk>,
    /// Where the shard's stream stands: after the last chunk pulled, buffered
    /// or given (`None`: the shard's start).
    produced: Option<String>,
    /// After the last chunk given (`None`: the shard's start).
    given: Option<String>,
    /// The shard's own final counts, once it has given all it pulled.
    ended: Option<Final>,
}

impl Head {
    fn fresh(index: usize, at: Option<String>) -> Head {
        Head { index, call: None, buffer: VecDeque::new(), produced: at.clone(), given: at, ended: None }
    }
}

/// What a sharded stream needs to open its shards and answer for them.
pub struct Plan {
    pub open: Arc<dyn OpenRange>,
    /// Shards run at once.
    pub running: usize,
    /// The call's wall-time limit, named in a timeout.
    pub wall_time: std::time::Duration,
    pub grants: Vec<Grant>,
    /// Where each shard starts (`None`: the output's beginning) and ends
    /// (`None`: the output's end); the first may start inside its range.
    pub starts: Vec<Option<String>>,
    pub ends: Vec<Option<String>>,
    /// The counts of the shards before the first.
    pub base: Base,
}

/// A call paged as shards.
pub struct Sharded {
    plan: Plan,
    /// The base of each shard reached so far.
    bases: Vec<Option<Base>>,
    head: Head,
    /// The shards after the head that have been started ahead, in order.
    ahead: VecDeque<Ahead>,
    /// The request being served, and the page's budget (unset while parked).
    armed: Option<(CallContext, Budget)>,
    /// How many shards ahead have ended, counted by their threads, and how
    /// many of those `fill` has seen.
    ends: Arc<AtomicUsize>,
    ends_seen: usize,
}

impl Sharded {
    pub fn new(plan: Plan) -> Sharded {
        let mut bases = vec![None; plan.starts.len()];
        bases[0] = Some(plan.base.clone());
        let head = Head::fresh(0, plan.starts[0].clone());
        Sharded { plan, bases, head, ahead: VecDeque::new(), armed: None, ends: Arc::default(), ends_seen: 0 }
    }

    pub fn grants(&self) -> &[Grant] {
        &self.plan.grants
    }

    /// What the call holds: the head's instance memory and buffer, and what
    /// the shards after it hold (see `Ahead::held_bytes`).
    pub fn memory_bytes(&self) -> usize {
        let head = self.head.call.as_ref().map_or(0, LiveCall::memory_bytes);
        let buffered: usize = self.head.buffer.iter().map(|c| c.payload.len() + c.resume.len()).sum();
        head + buffered + self.ahead.iter().map(Ahead::held_bytes).sum::<usize>()
    }

    /// Readies the stream for a page of the request `ctx` at `budget`: the
    /// head serves the request, and the shards after it run ahead.
    pub fn arm(&mut self, ctx: &CallContext, budget: Budget) {
        if let Some(call) = &mut self.head.call {
            call.arm(ctx);
        }
        self.armed = Some((ctx.clone(), budget));
        self.fill();
    }

    /// Parks the stream: the head lets go of the request, the shards ahead stop.
    pub fn disarm(&mut self) {
        if let Some(call) = &mut self.head.call {
            call.disarm();
        }
        for ahead in &self.ahead {
            ahead.pause();
        }
        self.armed = None;
    }

    /// Runs shards after the head ahead, `running` in all with the head: the
    /// first that have not ended, then new ones past the head's window only
    /// while the shards ahead hold less than `STREAM_AHEAD_BYTES` (so at most
    /// twice that is held).
    fn fill(&mut self) {
        self.ends_seen = self.ends.load(Ordering::Acquire);
        let Some((ctx, budget)) = &self.armed else { return };
        let room = self.plan.running.max(1) - 1;
        let mut busy = 0;
        for ahead in &self.ahead {
            if ahead.has_ended() {
                continue;
            }
            match busy < room {
                true => {
                    ahead.resume(ctx, *budget, &self.plan.open);
                    busy += 1;
                }
                // After a rewind, shards past the running ones wait their turn.
                false => ahead.pause(),
            }
        }
        let mut next = self.ahead.back().map_or(self.head.index + 1, |a| a.index + 1);
        let window = self.head.index + room;
        // A shard started here holds nothing yet: what is held is counted once.
        let held: usize = self.ahead.iter().map(Ahead::held_bytes).sum();
        while next < self.plan.starts.len() && busy < room {
            if next > window && held >= STREAM_AHEAD_BYTES {
                break;
            }
            let range = (self.plan.starts[next].clone(), self.plan.ends[next].clone());
            tracing::debug!(shard = next, head = self.head.index, "a shard runs ahead");
            let ahead = Ahead::new(next, range, self.ahead_bytes(), Arc::clone(&self.ends));
            ahead.resume(ctx, *budget, &self.plan.open);
            self.ahead.push_back(ahead);
            busy += 1;
            next += 1;
        }
    }

    /// What each shard ahead may buffer: its share of the stream's.
    fn ahead_bytes(&self) -> usize {
        STREAM_AHEAD_BYTES / self.plan.running.saturating_sub(1).max(1)
    }

    fn ctx(&self) -> Result<&CallContext, CallFailure> {
        // The pager arms a stream before it pulls: a stream not armed has no
        // request to serve, as if it had been cancelled.
        self.armed.as_ref().map(|(ctx, _)| ctx).ok_or(CallFailure::Cancelled)
    }

    /// The next chunk within `budget`, in order, its position `INDEX:RESUME`;
    /// `None` at the end of the last shard.
    pub fn next(&mut self, budget: Budget) -> Result<Option<Chunk>, CallFailure> {
        // A shard ahead ended since: its thread runs the next one.
        if self.ends.load(Ordering::Acquire) != self.ends_seen {
            self.fill();
        }
        loop {
            if let Some(mut chunk) = self.pull_head(budget)? {
                chunk.resume = format!("{}:{}", self.head.index, chunk.resume);
                return Ok(Some(chunk));
            }
            let index = self.head.index;
            if index + 1 == self.plan.starts.len() {
                return Ok(None);
            }
            let ended = self.head.ended.as_ref().expect("a head that gave its last chunk has ended");
            let base = self.bases[index].as_ref().expect("the head's base is known").after(ended);
            self.bases[index + 1] = Some(base);
            self.promote()?;
        }
    }

    /// The head's next chunk: buffered if it fits `budget`, else pulled.
    fn pull_head(&mut self, budget: Budget) -> Result<Option<Chunk>, CallFailure> {
        let head = &mut self.head;
        loop {
            if let Some(front) = head.buffer.front() {
                if front.payload.len() <= budget.bytes as usize && front.budget_items() <= budget.items {
                    let chunk = head.buffer.pop_front().expect("a front chunk");
                    head.given = Some(chunk.resume.clone());
                    return Ok(Some(chunk));
                }
                // Pulled ahead at a larger budget: pull it again at this one.
                head.buffer.clear();
                head.ended = None;
                head.call = None;
                head.produced = head.given.clone();
            }
            if head.ended.is_some() {
                return Ok(None);
            }
            let call = match &mut head.call {
                Some(call) => call,
                None => {
                    let ctx = self.armed.as_ref().map(|(ctx, _)| ctx).ok_or(CallFailure::Cancelled)?;
                    let (start, end) = (self.plan.starts[head.index].as_deref(), self.plan.ends[head.index].as_deref());
                    let at = head.produced.as_deref().or(start);
                    head.call.insert(self.plan.open.open(ctx, at, end, false)?)
                }
            };
            match call.next(budget)? {
                Some(chunk) => {
                    head.produced = Some(chunk.resume.clone());
                    head.given = head.produced.clone();
                    return Ok(Some(chunk));
                }
                None => {
                    let info = call.info()?;
                    head.ended = Some(Final { info, summary: call.summary()? });
                    head.call = None;
                }
            }
        }
    }

    /// The shard after the head becomes the head.
    fn promote(&mut self) -> Result<(), CallFailure> {
        let index = self.head.index + 1;
        // The old head's instance goes back first: the new one may need it.
        self.head = Head::fresh(index, self.plan.starts[index].clone());
        let ctx = self.ctx()?.clone();
        if self.ahead.front().is_some_and(|a| a.index == index) {
            let ahead = self.ahead.pop_front().expect("the next shard");
            let taken = ahead.hand_over(&ctx, self.plan.wall_time)?;
            let ended = taken.ended.transpose()?;
            let mut call = taken.call;
            if let Some(call) = &mut call {
                call.arm(&ctx);
            }
            let given = self.plan.starts[index].clone();
            self.head = Head { index, call, buffer: taken.buffer, produced: taken.produced, given, ended };
        }
        self.fill();
        Ok(())
    }

    /// The whole call's `info`: the head's, raised by the shards before it.
    pub fn info(&mut self) -> Result<serde_json::Value, CallFailure> {
        let own = match (&mut self.head.call, &self.head.ended) {
            (Some(call), _) => call.info()?,
            (None, Some(ended)) => ended.info.clone(),
            (None, None) => self.open_head()?.info()?,
        };
        Ok(self.base().info.apply(own))
    }

    /// The whole call's summary (see `Base::summary`).
    pub fn summary(&mut self) -> Result<Summary, CallFailure> {
        let own = match (&mut self.head.call, &self.head.ended) {
            (Some(call), _) => call.summary()?,
            (None, Some(ended)) => ended.summary.clone(),
            (None, None) => self.open_head()?.summary()?,
        };
        let last = self.head.index + 1 == self.plan.starts.len();
        Ok(self.base().summary(own, last))
    }

    /// Opens the head where it stands, to ask it for its counts.
    fn open_head(&mut self) -> Result<&mut LiveCall, CallFailure> {
        let ctx = self.armed.as_ref().map(|(ctx, _)| ctx).ok_or(CallFailure::Cancelled)?;
        let head = &mut self.head;
        let start = head.produced.as_deref().or(self.plan.starts[head.index].as_deref());
        let call = self.plan.open.open(ctx, start, self.plan.ends[head.index].as_deref(), false)?;
        Ok(head.call.insert(call))
    }

    fn base(&self) -> &Base {
        self.bases[self.head.index].as_ref().expect("the head's base is known")
    }

    /// What a cursor keeps of `position` (`INDEX:RESUME`, as `next` gave
    /// it): the shard's own position, its end and the counts before it.
    pub fn locate(&self, position: &str) -> Option<(String, Shard)> {
        let (index, resume) = parse(position)?;
        let base = self.bases.get(index)?.clone()?;
        let end = self.plan.ends.get(index)?.clone();
        Some((resume.to_string(), Shard { end, base }))
    }

    /// The position `INDEX:RESUME` of the shard ending at `end` (a cursor's),
    /// at its own position `resume`.
    pub fn position_of(&self, resume: &str, end: Option<&str>) -> String {
        let index = (0..=self.head.index).rev().find(|&i| self.plan.ends[i].as_deref() == end).unwrap_or(0);
        format!("{index}:{resume}")
    }

    /// Goes back to `position` (`None`: the very start): what the pager pulled
    /// after it is pulled again, from the shard it is in. Shards the pager
    /// had pulled from since start again from their starts; those still
    /// ahead keep what they pulled.
    pub fn rewind(&mut self, position: Option<&str>) {
        let (index, at) = match position.map(parse) {
            None => (0, self.plan.starts[0].clone()),
            Some(parsed) => {
                let (index, resume) = parsed.expect("a position this stream gave");
                (index, Some(resume.to_string()))
            }
        };
        let head = self.head.index;
        self.head = Head::fresh(index, at);
        for shard in (index + 1..=head).rev() {
            let (start, end) = (self.plan.starts[shard].clone(), self.plan.ends[shard].clone());
            self.ahead.push_front(Ahead::new(shard, (start, end), self.ahead_bytes(), Arc::clone(&self.ends)));
        }
        self.fill();
    }
}

/// The shard index and the shard's own position in `INDEX:RESUME`.
fn parse(position: &str) -> Option<(usize, &str)> {
    let (index, resume) = position.split_once(':')?;
    Some((index.parse().ok()?, resume))
}
