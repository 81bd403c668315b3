//! The WebAssembly runtime: one engine, a compile cache, a linker with WASI, an
//! instance pool sized from the limits (`pool`) whose slots the host counts
//! (`slots`), and a fresh store per call (see `call`).

pub mod bindings;
pub mod cache;
mod call;
pub mod engine;
mod failure;
mod host_files;
mod host_policy;
mod host_scan;
mod limits;
mod listing;
mod memory;
mod outbound;
mod pool;
mod shards;
mod signal;
mod slots;
mod watchdog;

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, InstanceAllocationStrategy};

pub use call::{CallContext, CallState, LiveCall, Target};
pub use failure::INSTANCE_SLOTS;
pub use failure::{CallFailure, DescribeError, HostFault, RuntimeError, Violation};
pub use limits::{CallLimits, Limit, LimitError};
use memory::MemoryBudget;
pub use outbound::{Exchange, Ledger, NetAccess, NetLimits, Refusal};
pub use pool::{Capacity, CapacityError};
pub use shards::{Opening, Range, Shardable, SplitAt};
pub use signal::{CallSignal, PROGRESS_INTERVAL, ProgressSink};
pub use slots::{Reclaim, Slot, Slots};
pub use watchdog::{Job, MAX_STUCK_PER_TOOL, kept_above, look_for};

use crate::policy::Judge;
use bindings::CordonToolPre;
use cache::{CompileCache, Outcome};
use watchdog::Watchdog;

/// How often the epoch advances: the granularity of call deadlines.
const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The time a tool's `describe` may take when it is loaded.
const DESCRIBE_DEADLINE: Duration = Duration::from_secs(10);

/// The engine, linker and compile cache shared by every call.
pub struct Runtime {
    engine: Engine,
    linker: Linker<CallState>,
    cache: CompileCache,
    limits: CallLimits,
    /// The deny rules and roots every call's `policy` import judges paths by.
    judge: Arc<Judge>,
    watchdog: Watchdog,
    /// One per live store: the pool's instances, counted by the host.
    slots: Slots,
    /// The linear memory all live stores hold together, against its budget.
    memory: Arc<MemoryBudget>,
}

/// What loading does with a component that imports `wasi:sockets`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sockets {
    /// It is refused (the default: tools reach the network through wasi:http).
    #[default]
    Refuse,
    /// It loads, and every socket and name lookup it tries is refused: for
    /// language runtimes that always import them (componentize-py), installed
    /// with `cordon tool add --stub-sockets`.
    Stub,
}

/// A component to load: its bytes, their SHA-256 (hex), what to do if it
/// imports sockets, and its artifact compiled with the binary, if any.
#[derive(Clone, Copy)]
pub struct Code<'a> {
    pub bytes: &'a [u8],
    pub digest: &'a str,
    pub sockets: Sockets,
    pub precompiled: Option<cache::Precompiled>,
}

/// A compiled component, ready to instantiate.
pub struct Loaded {
    pub pre: CordonToolPre<CallState>,
    /// Set when the component exports `shards`: its calls may run as shards.
    pub shards: Option<Shardable>,
    pub outcome: Outcome,
}

impl Runtime {
    /// Builds the engine (a pooling allocator with room for `capacity`, epoch
    /// interruption) and starts the epoch clock. `cache_dir` holds compiled
    /// artifacts; `None` compiles each start. `judge` is what tools are told to
    /// keep out of.
    pub fn new(
        limits: CallLimits,
        capacity: Capacity,
        cache_dir: Option<cap_std::fs::Dir>,
        judge: Arc<Judge>,
    ) -> Result<Runtime, RuntimeError> {
        limits.validate().map_err(RuntimeError::Limits)?;
        let pool = capacity.pool(limits.memory_bytes).map_err(|e| RuntimeError::Limits(LimitError::Capacity(e)))?;
        let mut config = engine::compiling();
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        // `perf` names the guests' functions from /tmp/perf-<pid>.map.
        if std::env::var_os("CORDON_PERF_MAP").is_some() {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config).map_err(RuntimeError::Engine)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(RuntimeError::Engine)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker).map_err(RuntimeError::Engine)?;
        bindings::CordonFileTool::add_to_linker::<CallState, wasmtime::component::HasSelf<CallState>>(
            &mut linker,
            |state| state,
        )
        .map_err(RuntimeError::Engine)?;
        start_epoch_clock(&engine);
        let cache = CompileCache::new(cache_dir, &engine);
        let slots = Slots::new(INSTANCE_SLOTS, capacity.instances());
        let memory = Arc::new(MemoryBudget::new(capacity.memory));
        Ok(Runtime { engine, linker, cache, limits, judge, watchdog: Watchdog::default(), slots, memory })
    }

    /// Compiles (or loads from its embedded artifact, or from the cache) a
    /// component and links it. One that imports `wasi:sockets` is refused,
    /// naming the import, unless `sockets` says to stub them (every use then
    /// fails: see `store`).
    pub fn load(&self, code: Code<'_>) -> Result<Loaded, RuntimeError> {
        let (component, outcome): (Component, Outcome) =
            self.cache.load(&self.engine, &code).map_err(RuntimeError::Compile)?;
        if code.sockets == Sockets::Refuse {
            let ty = component.component_type();
            let mut imports = ty.imports(&self.engine).map(|(name, _)| name);
            if let Some(import) = imports.find(|name| name.starts_with("wasi:sockets/")) {
                return Err(RuntimeError::Sockets(import.to_string()));
            }
        }
        let instance_pre = self.linker.instantiate_pre(&component).map_err(RuntimeError::Link)?;
        let pre = CordonToolPre::new(instance_pre).map_err(RuntimeError::Link)?;
        let shards = Shardable::of(&pre);
        Ok(Loaded { pre, shards, outcome })
    }

    /// The names a linked component imports (interfaces, with versions).
    pub fn imports(&self, pre: &CordonToolPre<CallState>) -> Vec<String> {
        let component = pre.instance_pre().component();
        component.component_type().imports(&self.engine).map(|(name, _)| name.to_string()).collect()
    }

    /// The names a linked component exports (interfaces, with versions).
    pub fn exports(&self, pre: &CordonToolPre<CallState>) -> Vec<String> {
        let component = pre.instance_pre().component();
        component.component_type().exports(&self.engine).map(|(name, _)| name.to_string()).collect()
    }

    /// The WIT world a linked component targets: `cordon-file-tool` when it
    /// imports the host's file services, else `cordon-tool`.
    pub fn world(&self, pre: &CordonToolPre<CallState>) -> &'static str {
        if self.imports(pre).iter().any(|name| name.starts_with("cordon:tool/host-files")) {
            "cordon-file-tool"
        } else {
            "cordon-tool"
        }
    }

    /// The instance slots held now, how many there are, and how many calls
    /// wait for one.
    pub fn slot_usage(&self) -> (usize, usize, usize) {
        self.slots.usage()
    }

    /// Lets `reclaim` (the pager's parked streams) free instance slots when
    /// none is free, and memory when the budget is reached.
    pub fn reclaim_with(&self, reclaim: std::sync::Weak<dyn Reclaim>) {
        self.slots.reclaim_with(reclaim.clone());
        self.memory.reclaim_with(reclaim);
    }

    /// The linear memory all live stores hold now, in bytes, and the budget.
    pub fn memory(&self) -> (usize, usize) {
        (self.memory.used(), self.memory.max())
    }

    /// The compile cache, for tests and diagnostics.
    pub fn cache(&self) -> &CompileCache {
        &self.cache
    }
}

/// Advances the engine's epoch every tick until the engine is dropped.
fn start_epoch_clock(engine: &Engine) {
    let weak = engine.weak();
    thread::Builder::new()
        .name("cordon-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                thread::sleep(EPOCH_TICK);
            }
        })
        .expect("spawn the epoch thread");
}
