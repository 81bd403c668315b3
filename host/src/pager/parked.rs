//! Live streams between pages: a bounded table (max count, idle TTL, LRU).
//!
//! Keeping a tool's stream alive makes the next page cost only that page. A
//! stream that is evicted, expires or was lost with a restart is not an error:
//! the pager reopens the tool at the cursor's resume position instead. Each
//! parked stream holds one of the runtime's instance slots, so the table is
//! also what the runtime reclaims from when a new call finds none free.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::runtime::Reclaim;

/// A fresh stream id, random so that ids from before a restart do not collide.
pub fn new_id() -> u64 {
    getrandom::u64().expect("the OS random source works")
}

struct Entry<T> {
    parked: T,
    /// The resume position after the last chunk delivered; the parked stream
    /// continues exactly there.
    position: String,
    last_used: Instant,
}

/// The table of parked streams (`T`: a live call and what it holds).
pub struct ParkedStreams<T> {
    entries: Mutex<HashMap<u64, Entry<T>>>,
    max: usize,
    ttl: Duration,
}

impl<T> ParkedStreams<T> {
    pub fn new(max: usize, ttl: Duration) -> ParkedStreams<T> {
        ParkedStreams { entries: Mutex::new(HashMap::new()), max, ttl }
    }

    /// Takes the stream parked under `id` if it is there, still fresh, and at
    /// `position`; a stream elsewhere (an older cursor replayed) stays parked.
    pub fn take(&self, id: u64, position: &str) -> Option<T> {
        let mut entries = self.entries.lock().expect("parked streams lock");
        let entry = entries.get(&id)?;
        if entry.last_used.elapsed() > self.ttl {
            let stale = entries.remove(&id);
            drop(entries);
            drop(stale);
            return None;
        }
        if entry.position != position {
            return None;
        }
        entries.remove(&id).map(|e| e.parked)
    }

    /// Parks a stream, evicting expired ones and then the least recently used
    /// while the table is full.
    pub fn park(&self, id: u64, position: String, parked: T) {
        let mut evicted = Vec::new();
        {
            let mut entries = self.entries.lock().expect("parked streams lock");
            let ttl = self.ttl;
            let expired: Vec<u64> =
                entries.iter().filter(|(_, e)| e.last_used.elapsed() > ttl).map(|(id, _)| *id).collect();
            for old in expired {
                evicted.extend(entries.remove(&old));
            }
            while entries.len() >= self.max {
                let Some(oldest) = remove_oldest(&mut entries) else { break };
                evicted.push(oldest);
            }
            if self.max > 0 {
                entries.insert(id, Entry { parked, position, last_used: Instant::now() });
            }
        }
        if !evicted.is_empty() {
            tracing::debug!(count = evicted.len(), "evicted parked streams");
        }
        // Stores are dropped here, outside the lock.
        drop(evicted);
    }

    /// Gives up the least recently used stream, if any, and drops it
    /// (outside the lock).
    pub fn evict_oldest(&self) -> bool {
        let oldest = remove_oldest(&mut self.entries.lock().expect("parked streams lock"));
        oldest.is_some()
    }

    /// How many streams are parked.
    pub fn len(&self) -> usize {
        self.entries.lock().expect("parked streams lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Takes the least recently used entry out of the table.
fn remove_oldest<T>(entries: &mut HashMap<u64, Entry<T>>) -> Option<Entry<T>> {
    let oldest = entries.iter().min_by_key(|(_, e)| e.last_used).map(|(id, _)| *id)?;
    entries.remove(&oldest)
}

/// A call that finds no free instance slot takes a parked stream's, the least
/// recently used first; its cursor still resumes, by reopening the tool.
impl<T: Send> Reclaim for ParkedStreams<T> {
    fn give_up_one(&self) -> bool {
        let given_up = self.evict_oldest();
        if given_up {
            tracing::debug!("gave up a parked stream for its instance slot");
        }
        given_up
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_taken_once_and_only_at_its_position() {
        let parked = ParkedStreams::new(4, Duration::from_secs(60));
        parked.park(1, "10:2".into(), "stream");
        assert_eq!(parked.take(1, "5:1"), None, "an older cursor does not take the stream");
        assert_eq!(parked.take(1, "10:2"), Some("stream"));
        assert_eq!(parked.take(1, "10:2"), None);
    }

    #[test]
    fn a_full_table_evicts_the_least_recently_used() {
        let parked = ParkedStreams::new(2, Duration::from_secs(60));
        parked.park(1, "p".into(), 1);
        std::thread::sleep(Duration::from_millis(5));
        parked.park(2, "p".into(), 2);
        std::thread::sleep(Duration::from_millis(5));
        parked.park(3, "p".into(), 3);
        assert_eq!(parked.len(), 2);
        assert_eq!(parked.take(1, "p"), None, "the oldest was evicted");
        assert_eq!((parked.take(2, "p"), parked.take(3, "p")), (Some(2), Some(3)));
    }

    #[test]
    fn reclaiming_gives_up_the_least_recently_used_stream() {
        let parked = ParkedStreams::new(4, Duration::from_secs(60));
        assert!(!parked.give_up_one(), "nothing parked, nothing given up");
        parked.park(1, "p".into(), 1);
        std::thread::sleep(Duration::from_millis(5));
        parked.park(2, "p".into(), 2);
        assert!(parked.give_up_one());
        assert_eq!((parked.take(1, "p"), parked.take(2, "p")), (None, Some(2)));
    }

    #[test]
    fn an_idle_stream_expires() {
        let parked = ParkedStreams::new(4, Duration::from_millis(20));
        parked.park(1, "p".into(), ());
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(parked.take(1, "p"), None);
        parked.park(2, "p".into(), ());
        std::thread::sleep(Duration::from_millis(40));
        parked.park(3, "p".into(), ());
        assert_eq!(parked.len(), 1, "parking sweeps out expired streams");
    }

    #[test]
    fn a_table_of_size_zero_keeps_nothing() {
        let parked = ParkedStreams::new(0, Duration::from_secs(60));
        parked.park(1, "p".into(), ());
        assert!(parked.is_empty());
    }
}
