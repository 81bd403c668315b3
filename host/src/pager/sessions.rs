//! Live streams between pages: a bounded table (max count, idle TTL, LRU).
//!
//! Keeping a tool's stream alive makes the next page cost only that page. A
//! stream that is evicted, expires or was lost with a restart is not an error:
//! the pager reopens the tool at the cursor's resume position instead.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::runtime::LiveCall;
use crate::tool::Chunk;

/// A stream parked between two pages.
pub struct Parked {
    pub call: LiveCall,
    /// A chunk pulled but not delivered: it did not fit the last page.
    pub pending: Option<Chunk>,
    /// The resume position after the last chunk delivered; the stream (with its
    /// pending chunk) continues exactly there.
    pub position: String,
}

struct Entry {
    parked: Parked,
    last_used: Instant,
}

/// The table of parked streams.
pub struct Sessions {
    entries: Mutex<HashMap<u64, Entry>>,
    max: usize,
    ttl: Duration,
}

impl Sessions {
    pub fn new(max: usize, ttl: Duration) -> Sessions {
        Sessions { entries: Mutex::new(HashMap::new()), max, ttl }
    }

    /// A fresh session id.
    pub fn new_id() -> u64 {
        getrandom::u64().expect("the OS random source works")
    }

    /// Takes the stream parked under `id` if it is there, still fresh, and at
    /// `position`; a stream elsewhere (an older cursor replayed) stays parked.
    pub fn take(&self, id: u64, position: &str) -> Option<Parked> {
        let mut entries = self.entries.lock().expect("sessions lock");
        let entry = entries.get(&id)?;
        if entry.last_used.elapsed() > self.ttl {
            let stale = entries.remove(&id);
            drop(entries);
            drop(stale);
            return None;
        }
        if entry.parked.position != position {
            return None;
        }
        entries.remove(&id).map(|e| e.parked)
    }

    /// Parks a stream, evicting expired ones and then the least recently used
    /// while the table is full.
    pub fn park(&self, id: u64, parked: Parked) {
        let mut evicted = Vec::new();
        {
            let mut entries = self.entries.lock().expect("sessions lock");
            let ttl = self.ttl;
            let expired: Vec<u64> =
                entries.iter().filter(|(_, e)| e.last_used.elapsed() > ttl).map(|(id, _)| *id).collect();
            for old in expired {
                evicted.extend(entries.remove(&old));
            }
            while entries.len() >= self.max {
                let Some(oldest) = entries.iter().min_by_key(|(_, e)| e.last_used).map(|(id, _)| *id) else { break };
                evicted.extend(entries.remove(&oldest));
            }
            if self.max > 0 {
                entries.insert(id, Entry { parked, last_used: Instant::now() });
            }
        }
        if !evicted.is_empty() {
            tracing::debug!(count = evicted.len(), "evicted parked streams");
        }
        // Stores are dropped here, outside the lock.
        drop(evicted);
    }

    /// How many streams are parked.
    pub fn len(&self) -> usize {
        self.entries.lock().expect("sessions lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
