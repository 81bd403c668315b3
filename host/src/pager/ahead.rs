//! A shard running ahead: a thread of its own pulls the shard's chunks, at
//! the page's budget, into a bounded buffer while the pager pages the shards
//! before it. The thread owns the shard's live call and instance; it runs only
//! while a request is being answered (`resume` .. `pause`): a parked stream's
//! shards are stopped (their guests interrupted within an epoch tick, their
//! instances given back) and keep what they buffered and where they stand,
//! to go on from there at the next page. When the shard's turn comes the
//! pager takes it over (`hand_over`): its buffer, its live call if it has one,
//! and how it ended, if it did.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use super::totals::Final;
use crate::runtime::{CallContext, CallFailure, CallSignal, LiveCall};
use crate::tool::{Budget, Chunk};

/// Bytes the shards running ahead of one stream buffer together, at most
/// (each shard its share; one chunk more may take it over), each chunk
/// counted with its position and `CHUNK_OVERHEAD`; shards that ended keep
/// theirs, and new ones start only while those hold less than this (see
/// `Sharded::fill`): the shards ahead of a parked stream hold at most twice
/// this, whatever the number of shards (its head may hold a share more,
/// taken over from one of them).
pub const STREAM_AHEAD_BYTES: usize = 4 << 20;
/// What a buffered chunk costs besides its payload and position.
const CHUNK_OVERHEAD: usize = 96;
/// Chunks a shard buffers ahead, at most: enough that a tool of small items
/// (a path each) runs ahead as far as the bytes allow.
const MAX_CHUNKS: usize = 32 << 10;
/// How often the pager, waiting for a shard to be handed over, looks at the
/// request's cancellation and deadline.
const POLL: Duration = Duration::from_millis(10);

/// What `chunk` counts against `MAX_BYTES`.
fn buffered_bytes(chunk: &Chunk) -> usize {
    chunk.payload.len() + chunk.resume.len() + CHUNK_OVERHEAD
}

/// Opens the range `[start, end)` of the call's output (`start` `None`: the
/// range's beginning) for a thread: `ahead` ranges never wait for a slot.
pub trait OpenRange: Send + Sync {
    fn open(
        &self,
        ctx: &CallContext,
        start: Option<&str>,
        end: Option<&str>,
        ahead: bool,
    ) -> Result<LiveCall, CallFailure>;
}

/// What the worker is told to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Pull ahead for the request it was last given.
    Run,
    /// Stop, keeping what was pulled (the stream is parked, or not armed yet).
    Pause,
    /// Give the live call to the pager and stop.
    HandOver,
    /// The shard is given up.
    Stop,
}

/// The state a shard's worker thread and the pager share.
struct State {
    mode: Mode,
    /// The request the thread works for (its signal a child of the request's).
    ctx: Option<CallContext>,
    budget: Budget,
    /// Bumped at every thread started: an older thread's results are dropped.
    generation: u64,
    /// Whether the thread of `generation` is running.
    running: bool,
    buffer: VecDeque<Chunk>,
    bytes: usize,
    /// The most `bytes` this shard buffers.
    max_bytes: usize,
    /// The position after the last chunk pulled (`None`: the shard's start).
    produced: Option<String>,
    /// How the shard ended, once it did.
    ended: Option<Result<Final, CallFailure>>,
    /// The live call, once handed over.
    handed: Option<LiveCall>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    /// Counted up when the shard ends: shared by a stream's shards, so that
    /// the pager sees at its next chunk that a shard's thread is free.
    ends: Arc<AtomicUsize>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("shard state lock")
    }
}

/// What the pager takes over from a shard whose turn has come.
pub struct Taken {
    pub buffer: VecDeque<Chunk>,
    pub produced: Option<String>,
    pub ended: Option<Result<Final, CallFailure>>,
    pub call: Option<LiveCall>,
}

/// A shard after the head, with the thread that pulls it ahead.
pub struct Ahead {
    /// The shard's index in its call.
    pub index: usize,
    /// Where the shard starts and ends.
    start: Option<String>,
    end: Option<String>,
    shared: Arc<Shared>,
}

impl Ahead {
    /// The shard `index`, spanning `[start, end)`, not running yet, buffering
    /// at most `max_bytes`; `ends` is counted up when it ends.
    pub fn new(
        index: usize,
        (start, end): (Option<String>, Option<String>),
        max_bytes: usize,
        ends: Arc<AtomicUsize>,
    ) -> Ahead {
        let state = State {
            mode: Mode::Pause,
            ctx: None,
            budget: Budget { bytes: 4, items: 1 },
            generation: 0,
            running: false,
            buffer: VecDeque::new(),
            bytes: 0,
            max_bytes,
            produced: None,
            ended: None,
            handed: None,
        };
        let shared = Arc::new(Shared { state: Mutex::new(state), changed: Condvar::new(), ends });
        Ahead { index, start, end, shared }
    }

    /// Whether the shard has ended (pulled to its end, or failed) and its
    /// thread has given its instance back.
    pub fn has_ended(&self) -> bool {
        let state = self.shared.lock();
        state.ended.is_some() && !state.running
    }

    /// Runs the shard ahead for the request `ctx` at `budget`, on a thread of
    /// its own (started unless one runs or the shard has ended).
    pub fn resume(&self, ctx: &CallContext, budget: Budget, open: &Arc<dyn OpenRange>) {
        let mut state = self.shared.lock();
        if state.ended.is_some() || matches!(state.mode, Mode::HandOver | Mode::Stop) {
            return;
        }
        let same = state.ctx.as_ref().is_some_and(|c| c.deadline == ctx.deadline) && state.budget == budget;
        if state.mode == Mode::Run && state.running && same {
            return;
        }
        stop_thread(&mut state);
        let child = CallContext {
            grants: ctx.grants.clone(),
            env: ctx.env.clone(),
            net: ctx.net.clone(),
            judge: Arc::clone(&ctx.judge),
            signal: Arc::new(CallSignal::child_of(&ctx.signal)),
            deadline: ctx.deadline,
        };
        state.ctx = Some(child);
        state.budget = budget;
        state.mode = Mode::Run;
        state.generation += 1;
        state.running = true;
        let worker = Worker {
            shared: Arc::clone(&self.shared),
            open: Arc::clone(open),
            generation: state.generation,
            start: state.produced.clone().or_else(|| self.start.clone()),
            end: self.end.clone(),
        };
        drop(state);
        // An older thread waiting on a full buffer sees its generation is over.
        self.shared.changed.notify_all();
        let spawned = thread::Builder::new().name("cordon-shard".into()).spawn(move || worker.run());
        if spawned.is_err() {
            // No thread: the shard waits for its turn, when the pager opens it.
            self.shared.lock().running = false;
        }
    }

    /// What the shard holds while parked: the chunks it pulled ahead, and the
    /// live call it handed over, if any (a paused thread drops its own).
    pub fn held_bytes(&self) -> usize {
        let state = self.shared.lock();
        state.bytes + state.handed.as_ref().map_or(0, LiveCall::memory_bytes)
    }

    /// Stops the thread (its guest interrupted), keeping what it pulled.
    pub fn pause(&self) {
        let mut state = self.shared.lock();
        if state.mode == Mode::Run {
            state.mode = Mode::Pause;
        }
        stop_thread(&mut state);
        self.shared.changed.notify_all();
    }

    /// Takes the shard over for the request `ctx`: waits for its thread to
    /// finish the chunk it is pulling and give up its live call.
    pub fn hand_over(self, ctx: &CallContext, wall_time: Duration) -> Result<Taken, CallFailure> {
        let mut state = self.shared.lock();
        state.mode = Mode::HandOver;
        self.shared.changed.notify_all();
        while state.running {
            if ctx.signal.is_cancelled() {
                return Err(CallFailure::Cancelled);
            }
            if Instant::now() >= ctx.deadline {
                return Err(CallFailure::Timeout { wall_time });
            }
            state = self.shared.changed.wait_timeout(state, POLL).expect("shard state lock").0;
        }
        Ok(Taken {
            buffer: std::mem::take(&mut state.buffer),
            produced: state.produced.take().or(self.start.clone()),
            ended: state.ended.take(),
            call: state.handed.take(),
        })
    }
}

/// Stops the running thread, if any: interrupts its guest and forgets it
/// (what it still sends is dropped); it gives its instance back as it ends.
fn stop_thread(state: &mut State) {
    if let Some(ctx) = &state.ctx {
        ctx.signal.cancel();
    }
    if state.running {
        state.running = false;
        state.generation += 1;
    }
}

impl Drop for Ahead {
    /// A shard given up (its call ended, failed or was evicted) stops its
    /// thread, which lets go of its instance within an epoch tick.
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.mode = Mode::Stop;
        stop_thread(&mut state);
        let handed = state.handed.take();
        drop(state);
        self.shared.changed.notify_all();
        drop(handed);
    }
}

/// One thread's run of a shard.
struct Worker {
    shared: Arc<Shared>,
    open: Arc<dyn OpenRange>,
    generation: u64,
    start: Option<String>,
    end: Option<String>,
}

/// What the worker does next.
enum Step {
    Pull(CallContext, Budget),
    HandOver,
    Quit,
}

impl Worker {
    fn run(self) {
        let mut call: Option<LiveCall> = None;
        loop {
            let (ctx, budget) = match self.wait() {
                Step::Pull(ctx, budget) => (ctx, budget),
                Step::HandOver => {
                    let mut state = self.shared.lock();
                    if state.generation == self.generation {
                        state.handed = call.take();
                        state.running = false;
                    }
                    drop(state);
                    self.shared.changed.notify_all();
                    return;
                }
                Step::Quit => break,
            };
            let live = match &mut call {
                Some(live) => live,
                None => match self.open.open(&ctx, self.start.as_deref(), self.end.as_deref(), true) {
                    Ok(opened) => call.insert(opened),
                    Err(failure) => {
                        self.fail(failure);
                        break;
                    }
                },
            };
            match live.next(budget) {
                Ok(Some(chunk)) => self.push(chunk),
                Ok(None) => {
                    let last = live.info().and_then(|info| Ok(Final { info, summary: live.summary()? }));
                    self.finish(last);
                    break;
                }
                Err(failure) => {
                    self.fail(failure);
                    break;
                }
            }
        }
        // The instance goes back before the thread says it is done, so that
        // a shard started in its place finds it free.
        drop(call);
        let mut state = self.shared.lock();
        if state.generation == self.generation {
            state.running = false;
            if state.ended.is_some() {
                self.shared.ends.fetch_add(1, Ordering::Release);
            }
        }
        drop(state);
        self.shared.changed.notify_all();
    }

    /// Waits until there is room to pull, or the thread is told otherwise.
    fn wait(&self) -> Step {
        let mut state = self.shared.lock();
        loop {
            if state.generation != self.generation {
                return Step::Quit;
            }
            match state.mode {
                Mode::HandOver => return Step::HandOver,
                Mode::Pause | Mode::Stop => return Step::Quit,
                Mode::Run => {}
            }
            if state.bytes < state.max_bytes && state.buffer.len() < MAX_CHUNKS {
                let Some(ctx) = state.ctx.clone() else { return Step::Quit };
                return Step::Pull(ctx, state.budget);
            }
            state = self.shared.changed.wait(state).expect("shard state lock");
        }
    }

    /// Buffers `chunk`; a checkpoint replaces one just before it (only the
    /// furthest position of a run of them matters), so a shard that finds
    /// little never fills its buffer with them.
    fn push(&self, chunk: Chunk) {
        let mut state = self.shared.lock();
        if state.generation == self.generation {
            if chunk.is_checkpoint() && state.buffer.back().is_some_and(Chunk::is_checkpoint) {
                let replaced = state.buffer.pop_back().expect("a checkpoint at the back");
                state.bytes -= buffered_bytes(&replaced);
            }
            state.produced = Some(chunk.resume.clone());
            state.bytes += buffered_bytes(&chunk);
            state.buffer.push_back(chunk);
        }
    }

    fn finish(&self, last: Result<Final, CallFailure>) {
        let mut state = self.shared.lock();
        if state.generation == self.generation {
            state.ended = Some(last);
        }
    }

    /// A failure ends the shard, unless the run was only interrupted (the
    /// stream parked, the request cancelled or past its deadline: the pager
    /// answers those itself) or found no free instance: then the shard goes
    /// on from where it stands when next run, or when its turn comes.
    fn fail(&self, failure: CallFailure) {
        if matches!(failure, CallFailure::Cancelled | CallFailure::Timeout { .. } | CallFailure::Busy { .. }) {
            return;
        }
        self.finish(Err(failure));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_not_yet_run_is_handed_over_empty_from_its_start() {
        let ahead = Ahead::new(3, (Some("b2".into()), Some("b3".into())), STREAM_AHEAD_BYTES, Arc::default());
        let ctx = CallContext {
            grants: Vec::new(),
            env: Default::default(),
            net: Default::default(),
            judge: Arc::new(crate::policy::Judge::none()),
            signal: Arc::new(CallSignal::new()),
            deadline: Instant::now() + Duration::from_secs(5),
        };
        let taken = ahead.hand_over(&ctx, Duration::from_secs(5)).expect("nothing to wait for");
        assert!(taken.buffer.is_empty() && taken.call.is_none() && taken.ended.is_none());
        assert_eq!(taken.produced.as_deref(), Some("b2"), "it starts at its boundary");
    }
}
