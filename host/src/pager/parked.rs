//! Live streams between pages: a bounded table (max count, max bytes, idle
//! TTL), shared fairly among principals: when it is full, the principal
//! holding the most (streams, or bytes when bytes are short) gives up its
//! least recently used stream, so one busy agent evicts its own streams
//! before anyone else's.
//!
//! Keeping a tool's stream alive makes the next page cost only that page. A
//! stream that is evicted, expires or was lost with a restart is not an error:
//! the pager reopens the tool at the cursor's resume position instead. Each
//! parked stream holds one of the runtime's instance slots and its memory, so
//! the table is bounded by bytes as well as by count (`max_parked_mib`: what
//! the streams' instances and buffers hold), and is also what the runtime
//! reclaims from when a new call finds no slot free or the server's memory
//! budget reached.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::runtime::Reclaim;

/// A fresh stream id, random so that ids from before a restart do not collide,
/// and drawn afresh each time: ids travel readable in cursors, so ids from a
/// counter would tell a client how many streams others started between its
/// own.
pub fn new_id() -> u64 {
    getrandom::u64().expect("the OS random source works")
}

struct Entry<T> {
    parked: T,
    /// What the stream holds (its instances' memory and buffered output).
    bytes: usize,
    /// The resume position after the last chunk delivered; the parked stream
    /// continues exactly there.
    position: String,
    /// The principal whose result the stream is.
    owner: String,
    last_used: Instant,
}

/// Where a stream is parked: its resume position and its principal.
#[derive(Debug, Clone)]
pub struct Place {
    pub position: String,
    pub owner: String,
}

/// The entries and the bytes they hold together.
struct Table<T> {
    entries: HashMap<u64, Entry<T>>,
    bytes: usize,
}

impl<T> Table<T> {
    fn remove(&mut self, id: &u64) -> Option<Entry<T>> {
        let entry = self.entries.remove(id)?;
        self.bytes -= entry.bytes;
        Some(entry)
    }

    /// Takes out the least recently used entry of the principal holding the
    /// most: streams, or bytes when `by_bytes`.
    fn remove_fairly(&mut self, by_bytes: bool) -> Option<Entry<T>> {
        let mut held: HashMap<&str, (usize, usize)> = HashMap::new();
        for entry in self.entries.values() {
            let (count, bytes) = held.entry(entry.owner.as_str()).or_default();
            *count += 1;
            *bytes += entry.bytes;
        }
        let share = |owner: &str| {
            let (count, bytes) = held[owner];
            if by_bytes { bytes } else { count }
        };
        let most = held.keys().map(|owner| share(owner)).max()?;
        let victim = (self.entries.iter())
            .filter(|(_, e)| share(&e.owner) == most)
            .min_by_key(|(_, e)| e.last_used)
            .map(|(id, _)| *id)?;
        self.remove(&victim)
    }
}

/// How many streams a table keeps, and how much they may hold.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Streams at most.
    pub count: usize,
    /// Bytes the streams hold together, at most.
    pub bytes: usize,
    /// How long a stream waits for its next page.
    pub ttl: Duration,
}

/// The table of parked streams (`T`: a live call and what it holds).
pub struct ParkedStreams<T> {
    table: Mutex<Table<T>>,
    bounds: Bounds,
    /// Streams given up so far: expired, evicted or reclaimed.
    given_up: std::sync::atomic::AtomicU64,
}

impl<T> ParkedStreams<T> {
    pub fn new(bounds: Bounds) -> ParkedStreams<T> {
        let table = Mutex::new(Table { entries: HashMap::new(), bytes: 0 });
        ParkedStreams { table, bounds, given_up: std::sync::atomic::AtomicU64::new(0) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table<T>> {
        self.table.lock().expect("parked streams lock")
    }

    /// Takes the stream parked under `id` if it is there, still fresh, and at
    /// `position`; a stream elsewhere (an older cursor replayed) stays parked.
    pub fn take(&self, id: u64, position: &str) -> Option<T> {
        let mut table = self.lock();
        let entry = table.entries.get(&id)?;
        if entry.last_used.elapsed() > self.bounds.ttl {
            let stale = table.remove(&id);
            self.gave_up(1);
            drop(table);
            drop(stale);
            return None;
        }
        if entry.position != position {
            return None;
        }
        table.remove(&id).map(|e| e.parked)
    }

    /// Parks a stream holding `bytes`, evicting expired ones and then the
    /// least recently used while the table is full, by count or by bytes. A
    /// stream that alone holds more than the table may is not parked.
    pub fn park(&self, id: u64, place: Place, parked: T, bytes: usize) {
        let Place { position, owner } = place;
        let Bounds { count, bytes: max_bytes, ttl } = self.bounds;
        let mut evicted = Vec::new();
        let mut over_bytes = 0usize;
        let kept = {
            let mut table = self.lock();
            let expired: Vec<u64> =
                table.entries.iter().filter(|(_, e)| e.last_used.elapsed() > ttl).map(|(id, _)| *id).collect();
            for old in expired {
                evicted.extend(table.remove(&old));
            }
            let fits = count > 0 && bytes <= max_bytes;
            while fits && (table.entries.len() >= count || table.bytes + bytes > max_bytes) {
                let by_bytes = table.entries.len() < count;
                let Some(oldest) = table.remove_fairly(by_bytes) else { break };
                over_bytes += usize::from(by_bytes);
                evicted.push(oldest);
            }
            if fits {
                table.bytes += bytes;
                table.entries.insert(id, Entry { parked, bytes, position, owner, last_used: Instant::now() });
                None
            } else {
                Some(parked)
            }
        };
        if over_bytes > 0 || (kept.is_some() && count > 0) {
            tracing::info!(
                evicted = over_bytes,
                not_parked = kept.is_some(),
                stream_bytes = bytes,
                budget = max_bytes,
                "parked streams reached their memory budget (max_parked_mib): gave up the least recently used \
                 (their cursors resume by reopening)"
            );
        }
        if !evicted.is_empty() {
            tracing::debug!(count = evicted.len(), "evicted parked streams");
        }
        self.gave_up(evicted.len());
        // Stores are dropped here, outside the lock.
        drop(evicted);
        drop(kept);
    }

    /// Gives up the least recently used stream of the principal holding the
    /// most streams, if any, and drops it (outside the lock).
    pub fn evict_oldest(&self) -> bool {
        let oldest = self.lock().remove_fairly(false);
        self.gave_up(usize::from(oldest.is_some()));
        oldest.is_some()
    }

    fn gave_up(&self, n: usize) {
        self.given_up.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
    }

    /// How many streams were given up since start (expired, evicted, reclaimed).
    pub fn given_up(&self) -> u64 {
        self.given_up.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many streams are parked.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// The bytes the parked streams hold together.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
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

    /// A place of principal `a`'s.
    fn at(position: &str) -> Place {
        Place { position: position.into(), owner: "a".into() }
    }

    fn bounds(count: usize, ttl: Duration) -> Bounds {
        Bounds { count, bytes: usize::MAX, ttl }
    }

    #[test]
    fn streams_past_the_byte_budget_give_up_the_least_recently_used_and_one_too_large_is_not_parked() {
        let parked = ParkedStreams::new(Bounds { count: 10, bytes: 100, ttl: Duration::from_secs(60) });
        parked.park(1, at("p"), 1, 40);
        std::thread::sleep(Duration::from_millis(5));
        parked.park(2, at("p"), 2, 40);
        std::thread::sleep(Duration::from_millis(5));
        parked.park(3, at("p"), 3, 40);
        assert_eq!((parked.len(), parked.bytes()), (2, 80), "the oldest was given up for the third");
        assert_eq!(parked.take(1, "p"), None);
        parked.park(4, at("p"), 4, 101);
        assert_eq!((parked.len(), parked.bytes()), (2, 80), "a stream over the whole budget is not parked");
        assert_eq!(parked.take(4, "p"), None);
        assert_eq!(parked.take(3, "p"), Some(3));
        assert_eq!(parked.bytes(), 40, "taking gives its bytes back");
        assert!(parked.give_up_one());
        assert_eq!((parked.len(), parked.bytes()), (0, 0));
    }

    #[test]
    fn a_stream_is_taken_once_and_only_at_its_position() {
        let parked = ParkedStreams::new(bounds(4, Duration::from_secs(60)));
        parked.park(1, at("10:2"), "stream", 1);
        assert_eq!(parked.take(1, "5:1"), None, "an older cursor does not take the stream");
        assert_eq!(parked.take(1, "10:2"), Some("stream"));
        assert_eq!(parked.take(1, "10:2"), None);
    }

    #[test]
    fn a_full_table_evicts_the_least_recently_used() {
        let parked = ParkedStreams::new(bounds(2, Duration::from_secs(60)));
        parked.park(1, at("p"), 1, 1);
        std::thread::sleep(Duration::from_millis(5));
        parked.park(2, at("p"), 2, 1);
        std::thread::sleep(Duration::from_millis(5));
        parked.park(3, at("p"), 3, 1);
        assert_eq!(parked.len(), 2);
        assert_eq!(parked.take(1, "p"), None, "the oldest was evicted");
        assert_eq!((parked.take(2, "p"), parked.take(3, "p")), (Some(2), Some(3)));
    }

    #[test]
    fn reclaiming_gives_up_the_least_recently_used_stream() {
        let parked = ParkedStreams::new(bounds(4, Duration::from_secs(60)));
        assert!(!parked.give_up_one(), "nothing parked, nothing given up");
        parked.park(1, at("p"), 1, 1);
        std::thread::sleep(Duration::from_millis(5));
        parked.park(2, at("p"), 2, 1);
        assert!(parked.give_up_one());
        assert_eq!((parked.take(1, "p"), parked.take(2, "p")), (None, Some(2)));
    }

    #[test]
    fn an_idle_stream_expires() {
        let parked = ParkedStreams::new(bounds(4, Duration::from_millis(20)));
        parked.park(1, at("p"), (), 1);
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(parked.take(1, "p"), None);
        parked.park(2, at("p"), (), 1);
        std::thread::sleep(Duration::from_millis(40));
        parked.park(3, at("p"), (), 1);
        assert_eq!(parked.len(), 1, "parking sweeps out expired streams");
    }

    #[test]
    fn a_table_of_size_zero_keeps_nothing() {
        let parked = ParkedStreams::new(bounds(0, Duration::from_secs(60)));
        parked.park(1, at("p"), (), 1);
        assert!(parked.is_empty());
    }

    #[test]
    fn a_full_table_evicts_from_the_principal_holding_the_most() {
        let parked = ParkedStreams::new(bounds(4, Duration::from_secs(60)));
        let of = |owner: &str| Place { position: "p".into(), owner: owner.into() };
        parked.park(1, of("quiet"), 1, 1);
        std::thread::sleep(Duration::from_millis(5));
        for id in 2..=4 {
            parked.park(id, of("busy"), id, 1);
            std::thread::sleep(Duration::from_millis(5));
        }
        parked.park(5, of("busy"), 5, 1);
        assert_eq!(parked.take(1, "p"), Some(1), "the quiet principal's older stream stays");
        assert_eq!(parked.take(2, "p"), None, "the busy one gave up its own oldest");
        let bytes = ParkedStreams::new(Bounds { count: 10, bytes: 100, ttl: Duration::from_secs(60) });
        bytes.park(1, of("quiet"), 1, 10);
        std::thread::sleep(Duration::from_millis(5));
        bytes.park(2, of("busy"), 2, 80);
        bytes.park(3, of("quiet"), 3, 20);
        assert_eq!((bytes.take(1, "p"), bytes.take(2, "p")), (Some(1), None), "by bytes: the one holding the most");
    }
}
