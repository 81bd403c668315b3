//! Why a call did not produce its output. Tool errors (the WIT `error`) and
//! traps are kept apart: a tool error is the tool's answer and goes to the
//! client as it is; a trap means the guest is broken or was stopped, its store
//! is dropped, and the client learns only what kind of failure it was, and
//! which limit stopped it when one did.

use std::fmt;
use std::time::Duration;

use wasmtime::component::ResourceTableError;

use super::limits::Limit;
use super::signal::Interrupted;
use crate::tool::ToolError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallFailure {
    /// The tool refused the call with a WIT error.
    Tool(ToolError),
    /// The call ran past its wall-time limit and the guest was interrupted.
    Timeout { wall_time: Duration },
    /// The call ran past its wall-time limit and its grace period while the
    /// guest was blocked in a host call, where the epoch cannot interrupt it:
    /// the host answered without it, and the guest stops when the host call
    /// returns.
    HostTimeout { wall_time: Duration },
    /// The request was cancelled and the guest interrupted; nothing is answered.
    Cancelled,
    /// The guest trapped (a bug); details are logged.
    Trapped { tool: String },
    /// The guest ran into one of the call's limits and was stopped.
    Limit { tool: String, limit: Limit },
    /// Earlier calls of this tool are still blocked in host calls past their
    /// deadlines; the tool gets no new calls until some of them end.
    Stuck { tool: String, calls: usize },
    /// No slot was free before the request's deadline: every one `limit`
    /// allows (`capacity`) is held by calls in flight or by calls still blocked
    /// past their deadline. Parked streams were given up first.
    Busy { limit: &'static str, capacity: usize },
    /// The tool broke a rule of the contract (e.g. a chunk over its budget).
    Contract { tool: String, broke: Violation },
    /// The host could not set the call up or see it through.
    Host(HostFault),
}

/// A rule of the contract a tool broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// A chunk larger than the budget it was asked for.
    OverBudget { bytes: usize, items: u32, budget: crate::tool::Budget },
    /// Too many chunks in a row that moved nothing (empty continued chunks,
    /// the same checkpoint again): the stream makes no progress.
    NoProgress { chunks: u32 },
    /// A summary whose totals are not a JSON object.
    SummaryTotals,
    /// An `info` that is not a JSON object.
    InfoNotObject,
    /// `split` returned `returned` boundaries when asked for at most `count` shards.
    Boundaries { returned: usize, count: u32 },
    /// A range was asked of a tool that does not export `shards`.
    NotShardable,
}

/// What kept the host from setting a call up or seeing it through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostFault {
    /// A granted directory could not be preopened (`reason`: wasmtime's words).
    Preopen { dir: std::path::PathBuf, reason: String },
    /// No thread could be started for the call.
    Thread { reason: String },
    /// The call's thread ended without an answer.
    NoAnswer,
    /// The tool's component could not be compiled or linked, or does not
    /// describe itself as the server was built to offer it (`reason`).
    Unloadable { tool: String, reason: String },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::OverBudget { bytes, items, budget } => write!(
                f,
                "returned a chunk of {bytes} bytes and {items} items for a budget of {} bytes and {} items",
                budget.bytes, budget.items
            ),
            Violation::NoProgress { chunks } => {
                write!(f, "returned {chunks} chunks in a row that moved nothing; a stream must make progress")
            }
            Violation::SummaryTotals => f.write_str("returned summary totals that are not a JSON object"),
            Violation::InfoNotObject => f.write_str("returned an info that is not a JSON object"),
            Violation::Boundaries { returned, count } => {
                write!(f, "split its output at {returned} boundaries when asked for at most {count} shards")
            }
            Violation::NotShardable => f.write_str("was asked for a range of its output but does not export `shards`"),
        }
    }
}

impl fmt::Display for HostFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostFault::Preopen { dir, reason } => write!(f, "cannot preopen {}: {reason}", dir.display()),
            HostFault::Thread { reason } => write!(f, "cannot start a thread for the call: {reason}"),
            HostFault::NoAnswer => f.write_str("the call's thread ended without an answer"),
            HostFault::Unloadable { tool, reason } => write!(f, "the tool `{tool}` cannot be loaded: {reason}"),
        }
    }
}

/// Why the runtime could not start, or not load a component.
#[derive(Debug)]
pub enum RuntimeError {
    /// The limits cannot be used.
    Limits(super::LimitError),
    /// The engine or its linker could not be built (wasmtime's error).
    Engine(wasmtime::Error),
    /// The component could not be compiled (wasmtime's error).
    Compile(wasmtime::Error),
    /// The component cannot be linked: it imports what the host does not provide.
    Link(wasmtime::Error),
    /// The component imports `wasi:sockets` (this import): no tool gets sockets.
    Sockets(String),
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeError::Limits(e) => e.fmt(f),
            RuntimeError::Engine(e) => write!(f, "the wasm engine could not be built: {e:#}"),
            RuntimeError::Compile(e) => write!(f, "{e:#}"),
            RuntimeError::Link(e) => write!(f, "{e:#}"),
            RuntimeError::Sockets(import) => write!(
                f,
                "the component imports `{import}`: Cordon gives no tool sockets (a tool reaches the network \
                 through wasi:http, within its `net:` grants). If a language runtime imports them without \
                 using them (componentize-py does), install it with `cordon tool add --stub-sockets`: every \
                 socket and name lookup it tries then fails"
            ),
        }
    }
}

impl std::error::Error for RuntimeError {}

/// Why a component could not say what it is.
#[derive(Debug)]
pub enum DescribeError {
    /// No instance slot, no store, or the host timeout (as for a call).
    Call(CallFailure),
    /// The component could not be instantiated (wasmtime's error).
    Instantiate(wasmtime::Error),
    /// `describe` trapped (wasmtime's error).
    Trapped(wasmtime::Error),
    /// The manifest it gave is malformed.
    Manifest(super::bindings::ManifestError),
}

impl fmt::Display for DescribeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DescribeError::Call(e) => e.fmt(f),
            DescribeError::Instantiate(e) => write!(f, "instantiate: {e}"),
            DescribeError::Trapped(e) => write!(f, "describe trapped: {e}"),
            DescribeError::Manifest(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for DescribeError {}

/// The limit `Busy` names when the instance pool is full.
pub const INSTANCE_SLOTS: &str = "instance_slots";

/// What the store knew when a call into the guest failed, to name the limit
/// behind a trap.
#[derive(Debug, Clone, Copy)]
pub(super) struct Seen {
    pub wall_time: Duration,
    /// The first memory or table growth the limiter refused.
    pub refused: Option<Limit>,
    /// The limit on what the failed call could return (its hostcall fuel).
    pub output: Limit,
    pub max_handles: usize,
}

/// wasmtime 48 reports these two refusals as plain messages (its types for
/// them are private); they are recognized here, at the edge, and nowhere else.
const FUEL_EXHAUSTED: &str = "fuel allocated for hostcalls has been exhausted";
const HANDLES_EXHAUSTED: &str = "store handle limit exceeded";

impl CallFailure {
    /// Classifies an error from calling into the guest, logging its details.
    pub(super) fn from_guest(tool: &str, err: wasmtime::Error, seen: Seen) -> CallFailure {
        match err.downcast_ref::<Interrupted>() {
            Some(Interrupted::Timeout) => {
                tracing::warn!(tool, "call interrupted at its deadline");
                return CallFailure::Timeout { wall_time: seen.wall_time };
            }
            Some(Interrupted::Cancelled) => {
                tracing::info!(tool, "call interrupted: cancelled");
                return CallFailure::Cancelled;
            }
            None => {}
        }
        let said = |needle: &str| err.chain().any(|e| e.to_string().contains(needle));
        let limit = if matches!(err.downcast_ref::<ResourceTableError>(), Some(ResourceTableError::Full))
            || said(HANDLES_EXHAUSTED)
        {
            Some(Limit::Handles(seen.max_handles))
        } else if said(FUEL_EXHAUSTED) {
            Some(seen.output)
        } else {
            seen.refused
        };
        match limit {
            Some(limit) => {
                tracing::warn!(tool, limit = limit.name(), "guest stopped by a limit: {err:?}");
                CallFailure::Limit { tool: tool.to_string(), limit }
            }
            None => {
                tracing::warn!(tool, "guest trapped: {err:?}");
                CallFailure::Trapped { tool: tool.to_string() }
            }
        }
    }

    /// The configured limit behind this failure, if a limit caused it.
    pub fn limit_name(&self) -> Option<&'static str> {
        match self {
            CallFailure::Timeout { .. } | CallFailure::HostTimeout { .. } => Some("wall_time"),
            CallFailure::Limit { limit, .. } => Some(limit.name()),
            CallFailure::Busy { limit, .. } => Some(limit),
            _ => None,
        }
    }
}

impl fmt::Display for CallFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallFailure::Tool(e) => write!(f, "{e}"),
            CallFailure::Timeout { wall_time } => {
                write!(f, "the call ran past its time limit of {:.3} s (`wall_time`) and was stopped", secs(wall_time))
            }
            CallFailure::HostTimeout { wall_time } => write!(
                f,
                "the call ran past its time limit of {:.3} s (`wall_time`) while the tool was blocked in a host \
                 call; it was answered without the tool, which stops when that host call returns",
                secs(wall_time)
            ),
            CallFailure::Cancelled => f.write_str("the call was cancelled"),
            CallFailure::Trapped { tool } => {
                write!(f, "tool `{tool}` failed inside its sandbox; the server log has details")
            }
            CallFailure::Limit { tool, limit } => write!(f, "tool `{tool}` {limit} and was stopped"),
            CallFailure::Stuck { tool, calls } => write!(
                f,
                "tool `{tool}` has {calls} earlier calls still blocked in host calls past their time limit; \
                 it takes no new calls until they end"
            ),
            CallFailure::Busy { limit: INSTANCE_SLOTS, capacity } => write!(
                f,
                "the server is busy: all {capacity} tool instances it may keep (`{INSTANCE_SLOTS}`: `max_parked_streams` + \
                 `max_calls_in_flight` + 1) are held by calls in flight or blocked past their time limit; try again \
                 shortly"
            ),
            CallFailure::Busy { limit, capacity } => write!(
                f,
                "the server is busy: {capacity} tool calls are in flight, its limit (`{limit}`), and none ended \
                 before this call's time limit; try again shortly"
            ),
            CallFailure::Contract { tool, broke } => write!(f, "tool `{tool}` {broke}"),
            CallFailure::Host(fault) => fault.fmt(f),
        }
    }
}

impl std::error::Error for CallFailure {}

fn secs(d: &Duration) -> f64 {
    d.as_secs_f64()
}
