//! One call of a tool: a fresh `Store`, a WASI context holding only the granted
//! preopens, limits, and the chunk stream the tool returned.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::{ResourceAny, ResourceTable};
use wasmtime::{Store, UpdateDeadline};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::Runtime;
use super::bindings::{CordonTool, CordonToolPre, RawManifest};
use super::failure::DescribeError;
use super::failure::{CallFailure, HostFault, Seen, Violation};
use super::host_scan::{OpenRoots, Seeker};
use super::limits::{CallLimiter, CallLimits, Limit};
use super::outbound::{NetAccess, Outbound};
use super::shards::Shardable;
use super::signal::{CallSignal, Interrupted};
use super::slots::Slot;
use super::watchdog::{Bounds, Job};
use crate::policy::Environment;
use crate::policy::{Grant, Judge, Mode};
use crate::tool::{Budget, Chunk, Fingerprint, Manifest, Summary, ToolError};

/// The request a call serves: the preopens it is granted, the deny rules and
/// roots its paths are judged by (the server's, and its principal's own),
/// its cancellation and progress, and when it must be answered. Built once
/// per request and handed down through the pager to the runtime.
#[derive(Debug, Clone)]
pub struct CallContext {
    pub grants: Vec<Grant>,
    /// The variables of the server's environment the tool is granted.
    pub env: Environment,
    /// Where the tool may send HTTP requests, and the ledger of those it sends.
    pub net: NetAccess,
    pub judge: Arc<Judge>,
    pub signal: Arc<CallSignal>,
    pub deadline: Instant,
}

/// What a call runs: a linked tool component and the name it answers to.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    pub name: &'a str,
    pub pre: &'a CordonToolPre<CallState>,
    /// Set when the component exports `shards` (see `runtime::shards`).
    pub shards: Option<&'a Shardable>,
}

/// Everything a call's `Store` holds.
pub struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
    /// The call's outgoing HTTP requests: its network grants, limits and deadline.
    outbound: Outbound,
    limiter: CallLimiter,
    /// The preopens this call holds, for the host's file services.
    grants: Vec<Grant>,
    /// The server's deny rules and roots, for the `policy` import.
    judge: Arc<Judge>,
    /// The grants' roots, opened for the host's file services and listings.
    open_roots: OpenRoots,
    /// The needles `read-head-seeking` was last given, prepared.
    seeker: Seeker,
    /// The request this call serves now (a parked stream serves several).
    signal: Arc<CallSignal>,
    /// When the request being served must be answered.
    deadline: Instant,
}

impl CallState {
    pub(super) fn grants(&self) -> &[Grant] {
        &self.grants
    }

    pub(super) fn policy(&self) -> &Arc<Judge> {
        &self.judge
    }

    pub(super) fn open_roots(&mut self) -> &mut OpenRoots {
        &mut self.open_roots
    }

    pub(super) fn seeker(&mut self) -> &mut Seeker {
        &mut self.seeker
    }

    pub(super) fn signal(&self) -> &CallSignal {
        &self.signal
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { ctx: &mut self.http, table: &mut self.table, hooks: &mut self.outbound }
    }
}

impl Runtime {
    /// A store for one call: only `grants` preopened, limits set, and
    /// `deadline`. The epoch callback runs at every tick: it stops the guest
    /// when the request is cancelled or the deadline has passed. The call's
    /// resource table and component handles are capped at `max_handles`, and
    /// each transfer out of the guest at the hostcall fuel set before each call.
    /// The instance holds its share of the call's memory, one of `running`
    /// instances the call runs at once (see `CallLimiter::share_memory`), and
    /// is told it in its environment ([`cordon_contract::MEMORY_ENV`]).
    pub(super) fn store(&self, ctx: &CallContext, running: usize) -> Result<Store<CallState>, CallFailure> {
        let CallContext { grants, env, net, judge, signal, deadline } = ctx;
        let mut limiter = CallLimiter::new(self.limits, Arc::clone(&self.memory));
        limiter.share_memory(running);
        let mut wasi = WasiCtx::builder();
        wasi.allow_blocking_current_thread(true);
        // No sockets, ever: a tool reaches the network only through wasi:http
        // (and a component importing wasi:sockets loads only with its sockets
        // stubbed, see `Runtime::load`): each use is refused, no socket made.
        wasi.allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
        for (name, value) in env.vars() {
            wasi.env(name, value);
        }
        wasi.env(cordon_contract::MEMORY_ENV, limiter.memory_bytes().to_string());
        for grant in grants {
            let perms = match grant.mode {
                Mode::ReadWrite => FsPerms::ReadWrite,
                Mode::ReadOnly => FsPerms::ReadOnly,
            };
            wasi.preopened_dir(&grant.host, &grant.guest, perms).map_err(|e| {
                CallFailure::Host(HostFault::Preopen { dir: grant.host.clone(), reason: e.to_string() })
            })?;
        }
        let mut table = ResourceTable::new();
        table.set_max_capacity(self.limits.max_handles);
        let state = CallState {
            wasi: wasi.build(),
            table,
            http: WasiHttpCtx::new(),
            outbound: Outbound { access: net.clone(), limits: self.limits.net, deadline: *deadline },
            limiter,
            grants: grants.clone(),
            judge: Arc::clone(judge),
            open_roots: OpenRoots::default(),
            seeker: Seeker::default(),
            signal: Arc::clone(signal),
            deadline: *deadline,
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limiter);
        store.set_max_component_handles(self.limits.max_handles);
        store.set_hostcall_fuel(self.limits.work_fuel());
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|ctx| {
            let state = ctx.data();
            if state.signal.is_cancelled() {
                return Err(Interrupted::Cancelled.into());
            }
            if Instant::now() >= state.deadline {
                return Err(Interrupted::Timeout.into());
            }
            Ok(UpdateDeadline::Continue(1))
        });
        Ok(store)
    }

    /// Asks a freshly loaded component what it is. It gets no preopens, and a
    /// deadline of its own: a short call limit must not stop tools loading. It
    /// runs under the host timeout like a call, so a component blocked in a
    /// host call cannot hang the start.
    pub(crate) fn describe(&self, pre: &CordonToolPre<CallState>) -> Result<Manifest, DescribeError> {
        let deadline = Instant::now() + super::DESCRIBE_DEADLINE;
        let signal = Arc::new(CallSignal::new());
        let slot = self.slots.acquire(deadline, &signal).map_err(DescribeError::Call)?;
        let ctx = CallContext {
            grants: Vec::new(),
            env: Environment::default(),
            net: NetAccess::default(),
            judge: Arc::clone(&self.judge),
            signal,
            deadline,
        };
        let mut store = self.store(&ctx, 1).map_err(DescribeError::Call)?;
        let pre = pre.clone();
        let work = move || {
            let described = (|| {
                let instance = pre.instantiate(&mut store).map_err(DescribeError::Instantiate)?;
                let raw = instance.cordon_tool_tool().call_describe(&mut store).map_err(DescribeError::Trapped)?;
                RawManifest(raw).check().map_err(DescribeError::Manifest)
            })();
            // The instance goes back to the pool before its slot does.
            drop(store);
            drop(slot);
            described
        };
        let bounds = Bounds { wall_time: super::DESCRIBE_DEADLINE, deadline, grace: self.limits.host_grace };
        self.watchdog.run("describe", bounds, &CallSignal::new(), work).map_err(DescribeError::Call)?
    }

    /// Runs `work` (the guest calls of the request behind `signal`, due by
    /// `deadline`) under the host timeout: if a guest is blocked in a host call
    /// at the deadline (or the cancellation) plus the grace, the answer is
    /// `HostTimeout` (or `Cancelled`) and the work is left to end by itself.
    pub fn bounded<T: Send + 'static>(
        &self,
        tool: &str,
        deadline: Instant,
        signal: &CallSignal,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, CallFailure> {
        let bounds = Bounds { wall_time: self.limits.wall_time, deadline, grace: self.limits.host_grace };
        self.watchdog.bounded(tool, bounds, signal, work)
    }

    /// Runs `job` on a thread of the call pool (see `watchdog::kept_above`).
    pub fn spawn(&self, job: Job) -> std::io::Result<()> {
        self.watchdog.spawn(job)
    }

    /// Runs `job` on an idle thread of the call pool, or on a new one while
    /// the pool runs fewer threads than twice the cores; else gives it back:
    /// for work the caller can as well do itself.
    pub fn offer(&self, job: Job) -> Result<(), Job> {
        static ROOM: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let room = *ROOM.get_or_init(|| 2 * std::thread::available_parallelism().map_or(1, |n| n.get()));
        self.watchdog.offer(job, room)
    }

    /// Counts a call of `tool` given up on with `failure` (a timeout or a
    /// cancellation) by a caller that keeps the host timeout, and says so;
    /// returns how many are.
    pub fn hold_stuck(&self, tool: &str, failure: &CallFailure) -> usize {
        self.watchdog.stuck().hold(tool, failure)
    }

    /// A call counted by `hold_stuck` has ended.
    pub fn release_stuck(&self, tool: &str) {
        self.watchdog.stuck().release(tool)
    }

    /// Starts a call of `target` for the request `ctx`, with `args` (JSON) at
    /// `resume`, in an instance slot of its own (waiting for one, see
    /// `Slots::acquire`); the tool's own refusal is the inner error.
    pub fn open(
        &self,
        target: Target<'_>,
        ctx: &CallContext,
        args: &str,
        resume: Option<&str>,
    ) -> Result<LiveCall, CallFailure> {
        let chunk = Limit::ChunkBytes(self.limits.max_chunk_bytes);
        let fresh = self.fresh(target.name, Claim::one(ctx), chunk, |store| {
            let instance = target.pre.instantiate(&mut *store)?;
            let stream = instance.cordon_tool_tool().call_open(store, args, resume)?;
            Ok((instance, stream))
        })?;
        let Fresh { store, slot, made: instance, answer: stream } = fresh;
        Ok(self.live(target.name, Opened { store, instance, stream, slot }))
    }

    /// Runs `work` (instantiating `name`'s guest and asking it one thing) in
    /// a fresh store and slot, as `claim` says, and says what it came to (see
    /// `answered`; `output` is the limit the answer is held to). Every
    /// instance a call makes is made here.
    pub(super) fn fresh<X, T, E: Into<ToolError>>(
        &self,
        name: &str,
        claim: Claim<'_>,
        output: Limit,
        work: impl FnOnce(&mut Store<CallState>) -> wasmtime::Result<(X, Result<T, E>)>,
    ) -> Result<Fresh<X, T>, CallFailure> {
        let Claim { ctx, ahead, running } = claim;
        // Declared before the store, so dropped after it on every early return.
        // Work run ahead is optional: it takes a free slot or none, never
        // another session's parked stream's.
        let slot = match ahead {
            true => self.slots.free()?,
            false => self.slots.acquire(ctx.deadline, &ctx.signal)?,
        };
        let mut store = self.store(ctx, running)?;
        let result = work(&mut store);
        let (made, answer) = self.answered(name, &store, output, result)?;
        Ok(Fresh { store, slot, made, answer })
    }
}

/// How a call's fresh instance is had: for the request `ctx`, in a slot
/// waited for (or, for work run `ahead` of the page, only a free one), in a
/// store holding its share of the call's memory, one of `running` instances.
#[derive(Clone, Copy)]
pub(super) struct Claim<'a> {
    pub ctx: &'a CallContext,
    pub ahead: bool,
    pub running: usize,
}

impl<'a> Claim<'a> {
    /// The one instance of a call that is not sharded.
    pub fn one(ctx: &'a CallContext) -> Claim<'a> {
        Claim { ctx, ahead: false, running: 1 }
    }
}

/// What a guest made (`made`) and answered in a fresh instance, with the
/// store and the slot it holds (the store is dropped first).
pub(super) struct Fresh<X, T> {
    pub store: Store<CallState>,
    pub slot: Slot,
    pub made: X,
    pub answer: T,
}

impl Runtime {
    /// What calls into `store`'s guest came to: what they made (an instance)
    /// and the tool's answer; the tool's own refusal, or the guest's failure
    /// (a trap, a limit: `output` is the one its output is held to).
    pub(super) fn answered<X, T, E: Into<ToolError>>(
        &self,
        name: &str,
        store: &Store<CallState>,
        output: Limit,
        result: wasmtime::Result<(X, Result<T, E>)>,
    ) -> Result<(X, T), CallFailure> {
        match result {
            Ok((made, Ok(answer))) => Ok((made, answer)),
            Ok((_, Err(e))) => Err(tool_error(name, &self.limits, e.into())),
            Err(e) => Err(CallFailure::from_guest(name, e, seen(store, &self.limits, output))),
        }
    }
}

/// A store whose instance opened a stream (`runtime::shards` opens ranges).
pub(super) struct Opened {
    pub store: Store<CallState>,
    pub instance: CordonTool,
    pub stream: ResourceAny,
    pub slot: Slot,
}

impl Runtime {
    /// The call of `name` that `opened` is.
    pub(super) fn live(&self, name: &str, opened: Opened) -> LiveCall {
        let Opened { store, instance, stream, slot } = opened;
        LiveCall {
            store,
            instance,
            stream,
            name: name.to_string(),
            limits: self.limits,
            empty_run: 0,
            checkpoint: None,
            _slot: slot,
        }
    }
}

/// What the store knew when a call into it failed.
fn seen(store: &Store<CallState>, limits: &CallLimits, output: Limit) -> Seen {
    Seen {
        wall_time: limits.wall_time,
        refused: store.data().limiter.refused(),
        output,
        max_handles: limits.max_handles,
    }
}

/// A tool's own error, unless its message is over `max_info_bytes`.
fn tool_error(tool: &str, limits: &CallLimits, e: ToolError) -> CallFailure {
    if e.message.len() > limits.max_info_bytes {
        return CallFailure::Limit { tool: tool.to_string(), limit: Limit::InfoBytes(limits.max_info_bytes) };
    }
    CallFailure::Tool(e)
}

/// Chunks in a row that move nothing (empty continued chunks, or the same
/// checkpoint again) after which a stream is taken to make no progress.
const MAX_EMPTY_CHUNKS: u32 = 64;

/// A call in progress: its own store and the tool's chunk stream.
pub struct LiveCall {
    store: Store<CallState>,
    instance: CordonTool,
    stream: ResourceAny,
    name: String,
    limits: CallLimits,
    /// Chunks that moved nothing returned in a row.
    empty_run: u32,
    /// The position of the last checkpoint, while no data followed it.
    checkpoint: Option<String>,
    /// The store's instance slot. Last, so it is given back only after the
    /// store (dropped first) has returned its instance to the pool.
    _slot: Slot,
}

impl LiveCall {
    /// Readies the call for a page of the request `ctx` (a live stream serves
    /// many requests, each with its own deadline, cancellation and progress).
    pub fn arm(&mut self, ctx: &CallContext) {
        let state = self.store.data_mut();
        state.signal = Arc::clone(&ctx.signal);
        state.deadline = ctx.deadline;
        state.outbound.access = ctx.net.clone();
        state.outbound.deadline = ctx.deadline;
        self.store.set_epoch_deadline(1);
    }

    /// The preopens the call was opened with.
    pub fn grants(&self) -> &[Grant] {
        &self.store.data().grants
    }

    /// The linear memory the call's instance holds, in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.store.data().limiter.memory_used()
    }

    /// Lets go of the request the last page served (and so of its transport's
    /// queue) while the stream waits, parked, for its next page.
    pub fn disarm(&mut self) {
        self.store.data_mut().signal = Arc::new(CallSignal::new());
    }

    /// The next chunk within `budget` (its bytes lowered to `max_chunk_bytes`),
    /// `None` at the end. A chunk over `max_chunk_bytes` is refused by the
    /// hostcall fuel before it is copied out of the guest.
    pub fn next(&mut self, budget: Budget) -> Result<Option<Chunk>, CallFailure> {
        let budget = Budget { bytes: budget.bytes.min(self.limits.max_chunk_bytes as u32).max(4), ..budget };
        self.store.set_hostcall_fuel(self.limits.work_fuel());
        let result =
            self.instance.cordon_tool_tool().chunk_stream().call_next(&mut self.store, self.stream, budget.into());
        let result = result.map_err(|e| self.trap(e, Limit::ChunkBytes(self.limits.max_chunk_bytes)))?;
        let chunk = match result {
            Ok(chunk) => chunk.map(Chunk::from),
            Err(e) => return Err(tool_error(&self.name, &self.limits, e.into())),
        };
        let Some(chunk) = chunk else { return Ok(None) };
        let (bytes, items) = (chunk.payload.len(), chunk.budget_items());
        if bytes > budget.bytes as usize || items > budget.items {
            return Err(self.broke(Violation::OverBudget { bytes, items, budget }));
        }
        if chunk.resume.len() > self.limits.max_info_bytes {
            return Err(CallFailure::Limit {
                tool: self.name.clone(),
                limit: Limit::InfoBytes(self.limits.max_info_bytes),
            });
        }
        let moved = match chunk.is_checkpoint() {
            true if self.checkpoint.as_ref() == Some(&chunk.resume) => false,
            true => {
                self.checkpoint = Some(chunk.resume.clone());
                true
            }
            false => {
                self.checkpoint = None;
                bytes > 0
            }
        };
        self.empty_run = if moved { 0 } else { self.empty_run + 1 };
        if self.empty_run >= MAX_EMPTY_CHUNKS {
            return Err(self.broke(Violation::NoProgress { chunks: MAX_EMPTY_CHUNKS }));
        }
        Ok(Some(chunk))
    }

    /// What the tool can tell about the whole output now.
    pub fn summary(&mut self) -> Result<Summary, CallFailure> {
        self.store.set_hostcall_fuel(self.limits.max_info_bytes);
        let raw = self.instance.cordon_tool_tool().chunk_stream().call_summary(&mut self.store, self.stream);
        let raw = raw.map_err(|e| self.trap(e, Limit::InfoBytes(self.limits.max_info_bytes)))?;
        Summary::try_from(raw).map_err(|violation| self.broke(violation))
    }

    /// The tool's `info` object about the whole output; one over
    /// `max_info_bytes` is refused before it is copied out of the guest.
    pub fn info(&mut self) -> Result<serde_json::Value, CallFailure> {
        self.store.set_hostcall_fuel(self.limits.max_info_bytes);
        let text = self.instance.cordon_tool_tool().chunk_stream().call_info(&mut self.store, self.stream);
        let text = text.map_err(|e| self.trap(e, Limit::InfoBytes(self.limits.max_info_bytes)))?;
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(value @ serde_json::Value::Object(_)) => Ok(value),
            _ => Err(self.broke(Violation::InfoNotObject)),
        }
    }

    /// The fingerprint of the file the stream pages, read now, if any.
    pub fn fingerprint(&mut self) -> Result<Option<Fingerprint>, CallFailure> {
        self.store.set_hostcall_fuel(self.limits.max_info_bytes);
        let f = self.instance.cordon_tool_tool().chunk_stream().call_fingerprint(&mut self.store, self.stream);
        let f = f.map_err(|e| self.trap(e, Limit::InfoBytes(self.limits.max_info_bytes)))?;
        match f {
            Ok(f) => Ok(f.map(Fingerprint::from)),
            Err(e) => Err(tool_error(&self.name, &self.limits, e.into())),
        }
    }

    /// The failure of a tool that broke the contract.
    fn broke(&self, broke: Violation) -> CallFailure {
        CallFailure::Contract { tool: self.name.clone(), broke }
    }

    fn trap(&self, err: wasmtime::Error, output: Limit) -> CallFailure {
        CallFailure::from_guest(&self.name, err, seen(&self.store, &self.limits, output))
    }
}
