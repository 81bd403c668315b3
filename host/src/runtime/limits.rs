//! What one call may use, and the limiter that holds a call's store to it.
//!
//! Every limit fails closed: memory and table growth past the limit is refused
//! (the guest sees `memory.grow` fail; a Rust guest then aborts), a resource
//! past `max_handles` is refused by the store's tables (a trap), and output
//! past `max_chunk_bytes` / `max_info_bytes` is refused by wasmtime's hostcall
//! fuel before it is copied out of the guest. The limiter remembers what it
//! refused, so a trap that follows is reported as that limit.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use wasmtime::ResourceLimiter;

use super::memory::MemoryBudget;

/// Limits applied to every call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// The most linear memory, summed over all the call's memories, in bytes.
    pub memory_bytes: usize,
    /// The most table elements, summed over all tables.
    pub table_elements: usize,
    /// The most core and component instances.
    pub instances: usize,
    /// The most resources a call holds at once: host (WASI) resources such as
    /// open files, directory streams and pollables, and the guest's own.
    pub max_handles: usize,
    /// The most payload bytes one chunk may carry, whatever the page budget;
    /// larger budgets are lowered to it.
    pub max_chunk_bytes: usize,
    /// The most bytes of any other text a tool returns at once: its `info`, a
    /// summary, an error message, a resume position.
    pub max_info_bytes: usize,
    /// Wall time from the start of a request to its answer.
    pub wall_time: Duration,
    /// How long past `wall_time` the host waits for a guest stuck in a host
    /// call (which the epoch deadline cannot interrupt) before answering
    /// without it.
    pub host_grace: Duration,
    /// What a call's HTTP requests may move (tools with network grants).
    pub net: super::NetLimits,
}

/// A limit that cannot be used as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitError {
    /// The limit is zero, which would refuse every call.
    Zero(&'static str),
    /// A time in seconds that is not a finite number above zero.
    NotSeconds(&'static str),
    /// The limit is above what the host can represent.
    AboveMaximum { name: &'static str, max: u64 },
    /// The instance pool these limits need cannot be reserved.
    Capacity(super::pool::CapacityError),
}

impl fmt::Display for LimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitError::Zero(name) => {
                write!(f, "the limit `{name}` is zero: limits must be positive (nothing runs unlimited)")
            }
            LimitError::NotSeconds(name) => {
                write!(f, "--{} must be a positive number of seconds (`{name}`)", name.replace('_', "-"))
            }
            LimitError::AboveMaximum { name, max } => write!(f, "the limit `{name}` is above its maximum of {max}"),
            LimitError::Capacity(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for LimitError {}

impl CallLimits {
    /// Refuses a chunk limit above what a budget can carry. (A zero limit is
    /// refused by `limits::Limits::validate`, generated from the limit table.)
    pub fn validate(&self) -> Result<(), LimitError> {
        if self.max_chunk_bytes > u32::MAX as usize {
            return Err(LimitError::AboveMaximum { name: "max_output_chunk_bytes", max: u64::from(u32::MAX) });
        }
        Ok(())
    }

    /// The hostcall fuel (the most bytes wasmtime copies out of the guest in
    /// one transfer) while the guest produces a chunk or does its work: a chunk
    /// and the text around it. It also bounds what the guest passes to WASI.
    pub(super) fn work_fuel(&self) -> usize {
        self.max_chunk_bytes.saturating_add(self.max_info_bytes)
    }
}

/// A limit a call ran into, with its configured value (memory in bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// Linear memory, summed over the call's memories (`memory_mib`).
    Memory(usize),
    /// Table elements, summed over the call's tables (`max_table_elements`).
    Tables(usize),
    /// Resources held at once (`max_handles`).
    Handles(usize),
    /// Payload bytes of one chunk (`max_output_chunk_bytes`).
    ChunkBytes(usize),
    /// Bytes of an `info`, summary, message or resume position (`max_info_bytes`).
    InfoBytes(usize),
    /// Linear memory of every tool instance together (`max_memory_mib`), in bytes.
    ServerMemory(usize),
}

impl Limit {
    /// The limit's name in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            Limit::Memory(_) => "memory_mib",
            Limit::Tables(_) => "max_table_elements",
            Limit::Handles(_) => "max_handles",
            Limit::ChunkBytes(_) => "max_output_chunk_bytes",
            Limit::InfoBytes(_) => "max_info_bytes",
            Limit::ServerMemory(_) => "max_memory_mib",
        }
    }

    /// The configured value, in the unit its name says (memory in MiB).
    pub fn max(self) -> usize {
        match self {
            Limit::Memory(bytes) | Limit::ServerMemory(bytes) => bytes >> 20,
            Limit::Tables(n) | Limit::Handles(n) | Limit::ChunkBytes(n) | Limit::InfoBytes(n) => n,
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (max, name) = (self.max(), self.name());
        match self {
            Limit::Memory(_) => write!(f, "asked for more than the {max} MiB of memory a call may use (`{name}`)"),
            Limit::Tables(_) => write!(f, "asked for more than the {max} table elements a call may use (`{name}`)"),
            Limit::Handles(_) => write!(f, "held more than the {max} open handles a call may hold (`{name}`)"),
            Limit::ChunkBytes(_) => write!(f, "returned a chunk over the {max} bytes a chunk may carry (`{name}`)"),
            Limit::InfoBytes(_) => {
                write!(f, "returned metadata or a message over the {max} bytes it may carry (`{name}`)")
            }
            Limit::ServerMemory(_) => write!(
                f,
                "asked for memory while the server's tool instances together hold their budget of {max} MiB \
                 (`{name}`) with nothing parked left to give up; try again when fewer calls run"
            ),
        }
    }
}

/// Caps the total memory and table size of a call, not only each one's, takes
/// its memory from the server's budget (given back when dropped, with the
/// store), and remembers the first growth it refused.
pub(super) struct CallLimiter {
    limits: CallLimits,
    budget: Arc<MemoryBudget>,
    memory_used: usize,
    table_used: usize,
    refused: Option<Limit>,
}

impl CallLimiter {
    pub(super) fn new(limits: CallLimits, budget: Arc<MemoryBudget>) -> CallLimiter {
        CallLimiter { limits, budget, memory_used: 0, table_used: 0, refused: None }
    }

    /// The linear memory the store holds, summed over its memories.
    pub(super) fn memory_used(&self) -> usize {
        self.memory_used
    }

    /// Holds the store to its share of the call's memory: one of `running`
    /// instances the call runs at once (its shards), so that together they
    /// stay inside the call's limit. Set before the instance is made.
    pub(super) fn share_memory(&mut self, running: usize) {
        self.limits.memory_bytes /= running.max(1);
    }

    /// The linear memory this store may use, summed over its memories.
    pub(super) fn memory_bytes(&self) -> usize {
        self.limits.memory_bytes
    }

    /// The first limit this call's growth was refused by, if any.
    pub(super) fn refused(&self) -> Option<Limit> {
        self.refused
    }

    fn refuse(&mut self, limit: Limit) -> bool {
        self.refused.get_or_insert(limit);
        false
    }
}

impl ResourceLimiter for CallLimiter {
    fn memory_growing(&mut self, current: usize, desired: usize, _max: Option<usize>) -> wasmtime::Result<bool> {
        let total = (self.memory_used - current).saturating_add(desired);
        if total > self.limits.memory_bytes {
            return Ok(self.refuse(Limit::Memory(self.limits.memory_bytes)));
        }
        if !self.budget.take(desired.saturating_sub(current)) {
            return Ok(self.refuse(Limit::ServerMemory(self.budget.max())));
        }
        self.memory_used = total;
        Ok(true)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        tracing::debug!("memory growth failed: {error}");
        self.refuse(Limit::Memory(self.limits.memory_bytes));
        Ok(())
    }

    fn table_growing(&mut self, current: usize, desired: usize, _max: Option<usize>) -> wasmtime::Result<bool> {
        let total = (self.table_used - current).saturating_add(desired);
        if total > self.limits.table_elements {
            return Ok(self.refuse(Limit::Tables(self.limits.table_elements)));
        }
        self.table_used = total;
        Ok(true)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        tracing::debug!("table growth failed: {error}");
        self.refuse(Limit::Tables(self.limits.table_elements));
        Ok(())
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

impl Drop for CallLimiter {
    fn drop(&mut self) {
        self.budget.give_back(self.memory_used);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unbounded() -> Arc<MemoryBudget> {
        Arc::new(MemoryBudget::new(usize::MAX))
    }

    #[test]
    fn the_default_limits_are_valid_and_a_chunk_past_a_budget_is_refused_by_name() {
        assert_eq!(crate::limits::Limits::default().call.validate(), Ok(()));
        let huge = CallLimits { max_chunk_bytes: u32::MAX as usize + 1, ..crate::limits::Limits::default().call };
        assert!(matches!(huge.validate(), Err(LimitError::AboveMaximum { name: "max_output_chunk_bytes", .. })));
    }

    #[test]
    fn the_limiter_caps_memory_summed_over_memories_and_remembers_the_refusal() {
        let limits = CallLimits { memory_bytes: 100, ..crate::limits::Limits::default().call };
        let mut limiter = CallLimiter::new(limits, unbounded());
        assert!(limiter.memory_growing(0, 60, None).unwrap());
        assert_eq!(limiter.refused(), None);
        // A second memory: 60 + 50 is over the call's 100, though each is under it.
        assert!(!limiter.memory_growing(0, 50, None).unwrap());
        assert_eq!(limiter.refused(), Some(Limit::Memory(100)));
        assert!(limiter.memory_growing(0, 40, None).unwrap());
        assert!(!limiter.table_growing(0, limits.table_elements + 1, None).unwrap());
        assert_eq!(limiter.refused(), Some(Limit::Memory(100)), "the first refusal is kept");
    }

    #[test]
    fn a_shard_gets_its_share_of_the_calls_memory() {
        let limits = CallLimits { memory_bytes: 100, ..crate::limits::Limits::default().call };
        let mut limiter = CallLimiter::new(limits, unbounded());
        limiter.share_memory(4);
        assert!(limiter.memory_growing(0, 25, None).unwrap());
        assert!(!limiter.memory_growing(25, 26, None).unwrap());
        assert_eq!(limiter.refused(), Some(Limit::Memory(25)), "the refusal names the share");
    }

    #[test]
    fn a_call_takes_its_memory_from_the_servers_budget_and_gives_it_back_when_dropped() {
        let limits = CallLimits { memory_bytes: 100, ..crate::limits::Limits::default().call };
        let budget = Arc::new(MemoryBudget::new(150));
        let mut first = CallLimiter::new(limits, Arc::clone(&budget));
        assert!(first.memory_growing(0, 100, None).unwrap());
        let mut second = CallLimiter::new(limits, Arc::clone(&budget));
        assert!(!second.memory_growing(0, 60, None).unwrap(), "100 + 60 is over the server's 150");
        assert_eq!(second.refused(), Some(Limit::ServerMemory(150)));
        assert!(second.memory_growing(0, 50, None).unwrap());
        drop(first);
        assert_eq!(budget.used(), 50, "the dropped store's memory came back");
        assert!(second.memory_growing(50, 100, None).unwrap(), "growth takes only what it adds");
        assert_eq!(budget.used(), 100);
    }
}
