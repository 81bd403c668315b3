//! The instance pool, sized from the server's limits.
//!
//! Every live store holds one component instance of wasmtime's pooling
//! allocator: a call being answered, a stream parked between pages, a call
//! left blocked in a host call past its deadline, a tool being loaded. The
//! pool has room for the parked streams (`max_parked_streams`), the calls in flight
//! (`max_calls_in_flight`), each with the shards it runs at once (`shards`;
//! a parked stream keeps only the shard it pages), and one tool loading; each
//! instance gets room for
//! the most memories, tables and core instances one component may have, so an
//! instance slot is the only thing that can run short, and the host counts
//! those itself (`Slots`). A configuration whose pool cannot be reserved is
//! refused at start, naming the limits to lower.

use std::fmt;

use wasmtime::PoolingAllocationConfig;

use super::engine::{MEMORY_GUARD, MEMORY_RESERVATION};

/// Bytes of each linear memory reset in place when its slot is freed, rather
/// than given back to the kernel (see `Capacity::pool`).
const KEEP_RESIDENT: usize = 1 << 20;

/// The same for tables.
const KEEP_RESIDENT_TABLE: usize = 64 << 10;

/// Linear memories one component may have.
const MEMORIES_PER_INSTANCE: u32 = 4;
/// Tables one component may have.
const TABLES_PER_INSTANCE: u32 = 16;
/// Core instances one component may have.
const CORE_INSTANCES_PER_INSTANCE: u32 = 32;
/// Slots kept for loading a tool (its `describe`) while others run.
const LOADING: usize = 1;

/// The most address space the pool may reserve: half of the 128 TiB a 64-bit
/// Linux process can map, leaving the rest to everything else.
const ADDRESS_SPACE: u64 = 64 << 40;

/// How many tool instances may be alive at once, from the server's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capacity {
    /// Streams parked between pages (`max_parked_streams`).
    pub parked: usize,
    /// Tool calls being answered at once, server-wide (`max_calls_in_flight`).
    pub in_flight: usize,
    /// Instances one call runs at once (`shards`; 1 when calls are not sharded).
    pub shards: usize,
    /// The linear memory all instances may hold together, in bytes
    /// (`max_memory_mib`; see `runtime::memory`).
    pub memory: usize,
}

/// A capacity whose pool cannot be reserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapacityError {
    pub capacity: Capacity,
    /// The most instances that fit.
    pub fits: usize,
}

impl fmt::Display for CapacityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Capacity { parked, in_flight, shards, .. } = self.capacity;
        write!(
            f,
            "the limits ask for {} live tool instances (`max_parked_streams` {parked} parked streams + \
             `max_calls_in_flight` {in_flight} calls in flight × `shards` {shards} instances each + {LOADING} for \
             loading tools), but at most {} fit: each reserves {:.1} GiB of address space for its memories and the \
             pool may reserve {} TiB; lower `max_parked_streams` (--max-parked-streams, formerly --max-sessions), \
             `max_calls_in_flight` (--max-calls-in-flight) or `shards` (--shards)",
            self.capacity.instances(),
            self.fits,
            per_instance() as f64 / f64::from(1u32 << 30),
            ADDRESS_SPACE >> 40
        )
    }
}

impl std::error::Error for CapacityError {}

/// Address space one instance reserves for its memories.
fn per_instance() -> u64 {
    u64::from(MEMORIES_PER_INSTANCE) * (MEMORY_RESERVATION + MEMORY_GUARD)
}

impl Capacity {
    /// The instances the pool holds.
    pub fn instances(self) -> usize {
        let calls = self.in_flight.saturating_mul(self.shards.max(1));
        self.parked.saturating_add(calls).saturating_add(LOADING)
    }

    /// Refuses a capacity whose pool does not fit the address space.
    pub fn validate(self) -> Result<(), CapacityError> {
        let fits = usize::try_from(ADDRESS_SPACE / per_instance()).unwrap_or(usize::MAX);
        if self.instances() > fits {
            return Err(CapacityError { capacity: self, fits });
        }
        Ok(())
    }

    /// The pooling allocator's configuration: room for every instance, each
    /// with the most memories, tables and core instances a component may use,
    /// and memories of at most `memory_bytes`.
    pub(super) fn pool(self, memory_bytes: usize) -> Result<PoolingAllocationConfig, CapacityError> {
        self.validate()?;
        let instances = u32::try_from(self.instances()).expect("a capacity that fits the address space fits a u32");
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(instances)
            .total_core_instances(instances * CORE_INSTANCES_PER_INSTANCE)
            .total_memories(instances * MEMORIES_PER_INSTANCE)
            .total_tables(instances * TABLES_PER_INSTANCE)
            .total_stacks(instances)
            .max_memories_per_component(MEMORIES_PER_INSTANCE)
            .max_tables_per_component(TABLES_PER_INSTANCE)
            .max_core_instances_per_component(CORE_INSTANCES_PER_INSTANCE)
            .max_memory_size(memory_bytes)
            // A call's fresh instance reuses a slot: the pages it touched are
            // reset with `memset` (the resident ones only, found with the
            // PAGEMAP_SCAN ioctl where the kernel has it) instead of `madvise`,
            // whose TLB shootdowns across cores led the small-call profile.
            .linear_memory_keep_resident(KEEP_RESIDENT)
            .table_keep_resident(KEEP_RESIDENT_TABLE)
            .pagemap_scan(wasmtime::Enabled::Auto);
        Ok(pool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_holds_the_parked_streams_the_calls_in_flight_and_a_loading_tool() {
        let capacity = Capacity { parked: 64, in_flight: 16, shards: 1, memory: usize::MAX };
        assert_eq!(capacity.instances(), 81);
        assert_eq!(Capacity { shards: 4, ..capacity }.instances(), 64 + 16 * 4 + 1, "each call its shards");
        assert_eq!(capacity.validate(), Ok(()));
        assert!(capacity.pool(256 << 20).is_ok());
    }

    #[test]
    fn a_capacity_that_cannot_be_reserved_is_refused_with_the_numbers_and_the_limits_to_lower() {
        let capacity = Capacity { parked: 1_000_000, in_flight: 16, shards: 1, memory: usize::MAX };
        let err = capacity.validate().unwrap_err();
        assert_eq!(err.fits, 4064);
        let text = err.to_string();
        let needles =
            ["1000017 live tool instances", "at most 4064 fit", "--max-sessions", "--max-calls-in-flight", "--shards"];
        for needle in needles {
            assert!(text.contains(needle), "{needle:?} in {text}");
        }
        assert!(Capacity { parked: 4064 - 17, ..capacity }.validate().is_ok());
        assert!(Capacity { parked: 4064 - 16, ..capacity }.validate().is_err());
    }
}
