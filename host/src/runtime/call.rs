//! One call of a tool: a fresh `Store`, a WASI context holding only the granted
//! preopens, limits, and the chunk stream the tool returned.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::component::{ResourceAny, ResourceTable};
use wasmtime::{ResourceLimiter, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::Runtime;
use super::bindings::{CordonTool, RawManifest};
use super::failure::CallFailure;
use super::signal::{CallSignal, Interrupted};
use crate::policy::{Deny, Grant};
use crate::registry::Tool;
use crate::tool::{Budget, Chunk, Fingerprint, Manifest, Summary, ToolError};

/// Limits applied to every call.
#[derive(Debug, Clone, Copy)]
pub struct CallLimits {
    /// The most linear memory, summed over all the call's memories, in bytes.
    pub memory_bytes: usize,
    /// The most table elements, summed over all tables.
    pub table_elements: usize,
    /// The most core and component instances.
    pub instances: usize,
    /// Wall time from the start of the call to its last chunk.
    pub wall_time: Duration,
}

/// Everything a call's `Store` holds.
pub struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: CallLimiter,
    /// The preopens this call holds, for the host's file services.
    grants: Vec<Grant>,
    /// The server's deny rules, for the `policy` import.
    deny: Arc<Deny>,
    /// The request this call serves now (a parked stream serves several).
    signal: Arc<CallSignal>,
    /// When the current page must be done.
    deadline: Instant,
}

impl CallState {
    pub(super) fn grants(&self) -> &[Grant] {
        &self.grants
    }

    pub(super) fn deny(&self) -> &Deny {
        &self.deny
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

/// Caps the total memory and table size of a call, not only each one's.
struct CallLimiter {
    limits: CallLimits,
    memory_used: usize,
    table_used: usize,
}

impl ResourceLimiter for CallLimiter {
    fn memory_growing(&mut self, current: usize, desired: usize, _max: Option<usize>) -> wasmtime::Result<bool> {
        let total = self.memory_used - current + desired;
        if total > self.limits.memory_bytes {
            return Ok(false);
        }
        self.memory_used = total;
        Ok(true)
    }

    fn table_growing(&mut self, current: usize, desired: usize, _max: Option<usize>) -> wasmtime::Result<bool> {
        let total = self.table_used - current + desired;
        if total > self.limits.table_elements {
            return Ok(false);
        }
        self.table_used = total;
        Ok(true)
    }

    fn instances(&self) -> usize {
        self.limits.instances
    }

    fn memories(&self) -> usize {
        self.limits.instances
    }

    fn tables(&self) -> usize {
        self.limits.instances
    }
}

impl Runtime {
    /// A store for one call: only `grants` preopened, limits set, and a deadline
    /// `time` from now. The epoch callback runs at every tick: it stops the guest
    /// when the request is cancelled or the deadline has passed.
    fn store(
        &self,
        grants: &[Grant],
        time: Duration,
        signal: Arc<CallSignal>,
    ) -> Result<Store<CallState>, CallFailure> {
        let mut wasi = WasiCtx::builder();
        wasi.allow_blocking_current_thread(true);
        for grant in grants {
            wasi.preopened_dir(&grant.host, &grant.guest, grant.perms)
                .map_err(|e| CallFailure::Host(format!("cannot preopen {}: {e}", grant.host.display())))?;
        }
        let state = CallState {
            wasi: wasi.build(),
            table: ResourceTable::new(),
            limiter: CallLimiter { limits: self.limits, memory_used: 0, table_used: 0 },
            grants: grants.to_vec(),
            deny: Arc::clone(&self.deny),
            signal,
            deadline: Instant::now() + time,
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limiter);
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
    /// deadline of its own: a short call limit must not stop tools loading.
    pub(crate) fn describe(&self, pre: &super::bindings::CordonToolPre<CallState>) -> Result<Manifest, String> {
        let signal = Arc::new(CallSignal::new());
        let mut store = self.store(&[], super::DESCRIBE_DEADLINE, signal).map_err(|e| e.to_string())?;
        let instance = pre.instantiate(&mut store).map_err(|e| format!("instantiate: {e}"))?;
        let raw =
            instance.cordon_tool_tool().call_describe(&mut store).map_err(|e| format!("describe trapped: {e}"))?;
        RawManifest(raw).check()
    }

    /// Starts a call of `tool` with `grants` for the request behind `signal`;
    /// the tool's own refusal is the inner error.
    pub fn open(
        &self,
        tool: &Tool,
        grants: &[Grant],
        args: &str,
        resume: Option<&str>,
        signal: &Arc<CallSignal>,
    ) -> Result<LiveCall, CallFailure> {
        let mut store = self.store(grants, self.limits.wall_time, Arc::clone(signal))?;
        let instance = tool.pre().instantiate(&mut store).map_err(|e| CallFailure::trap(&tool.manifest.name, e))?;
        let opened = instance
            .cordon_tool_tool()
            .call_open(&mut store, args, resume)
            .map_err(|e| CallFailure::trap(&tool.manifest.name, e))?;
        let stream = opened.map_err(|e| CallFailure::Tool(e.into()))?;
        Ok(LiveCall { store, instance, stream, name: tool.manifest.name.clone(), wall_time: self.limits.wall_time })
    }
}

/// A call in progress: its own store and the tool's chunk stream.
pub struct LiveCall {
    store: Store<CallState>,
    instance: CordonTool,
    stream: ResourceAny,
    name: String,
    /// The time each page gets.
    wall_time: Duration,
}

impl LiveCall {
    /// Readies the call for a page of the request behind `signal`: a fresh
    /// deadline (a live stream serves many pages, each with the full wall-time
    /// limit) and that request's cancellation and progress.
    pub fn arm(&mut self, signal: &Arc<CallSignal>) {
        let state = self.store.data_mut();
        state.signal = Arc::clone(signal);
        state.deadline = Instant::now() + self.wall_time;
        self.store.set_epoch_deadline(1);
    }

    /// The preopens the call was opened with.
    pub fn grants(&self) -> &[Grant] {
        &self.store.data().grants
    }

    /// Lets go of the request the last page served (and so of its transport's
    /// queue) while the stream waits, parked, for its next page.
    pub fn disarm(&mut self) {
        self.store.data_mut().signal = Arc::new(CallSignal::new());
    }

    /// The next chunk within `budget`, `None` at the end.
    pub fn next(&mut self, budget: Budget) -> Result<Option<Chunk>, CallFailure> {
        let result = self
            .instance
            .cordon_tool_tool()
            .chunk_stream()
            .call_next(&mut self.store, self.stream, budget.into())
            .map_err(|e| self.trap(e))?;
        let chunk: Option<Chunk> = result.map_err(|e| CallFailure::Tool(ToolError::from(e)))?.map(Chunk::from);
        if let Some(chunk) = &chunk {
            let (bytes, items) = (chunk.payload.len(), chunk.budget_items());
            if bytes > budget.bytes as usize || items > budget.items || (bytes == 0 && !chunk.continued) {
                return Err(CallFailure::Contract(format!(
                    "tool `{}` returned a chunk of {bytes} bytes and {items} items for a budget of {} bytes and {} items",
                    self.name, budget.bytes, budget.items
                )));
            }
        }
        Ok(chunk)
    }

    /// What the tool can tell about the whole output now.
    pub fn summary(&mut self) -> Result<Summary, CallFailure> {
        let raw = self
            .instance
            .cordon_tool_tool()
            .chunk_stream()
            .call_summary(&mut self.store, self.stream)
            .map_err(|e| self.trap(e))?;
        Summary::try_from(raw).map_err(|e| CallFailure::Contract(format!("tool `{}`: {e}", self.name)))
    }

    /// The tool's `info` object about the whole output.
    pub fn info(&mut self) -> Result<serde_json::Value, CallFailure> {
        let text = self
            .instance
            .cordon_tool_tool()
            .chunk_stream()
            .call_info(&mut self.store, self.stream)
            .map_err(|e| self.trap(e))?;
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(value @ serde_json::Value::Object(_)) => Ok(value),
            _ => Err(CallFailure::Contract(format!("tool `{}` returned an info that is not a JSON object", self.name))),
        }
    }

    /// The fingerprint of the file the stream pages, read now, if any.
    pub fn fingerprint(&mut self) -> Result<Option<Fingerprint>, CallFailure> {
        let f = self
            .instance
            .cordon_tool_tool()
            .chunk_stream()
            .call_fingerprint(&mut self.store, self.stream)
            .map_err(|e| self.trap(e))?;
        Ok(f.map_err(|e| CallFailure::Tool(e.into()))?.map(Fingerprint::from))
    }

    fn trap(&self, err: wasmtime::Error) -> CallFailure {
        CallFailure::trap(&self.name, err)
    }
}
