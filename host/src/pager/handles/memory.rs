//! The memory store: handles that die with the process, within the same
//! caps as the other stores (results written longest ago evicted first).

use std::collections::HashMap;
use std::sync::Mutex;

use super::{Caps, Entry, HandleError, MAX_RESULT_BYTES, now_secs};

/// Results by their 32 hex digits.
#[derive(Default)]
pub struct MemoryStore(Mutex<Results>);

#[derive(Default)]
struct Results {
    by_stream: HashMap<String, Pages>,
    /// Bytes held in all.
    bytes: u64,
    /// Bumped at each write: orders the results by their last write.
    clock: u64,
    /// Records since expired pages were last dropped.
    since_prune: u64,
}

/// One result's pages.
struct Pages {
    pages: HashMap<u64, Entry>,
    bytes: u64,
    written: u64,
}

/// What an entry counts for against the caps.
fn size(entry: &Entry) -> u64 {
    (entry.cursor.len() + entry.position.len() + 48) as u64
}

impl MemoryStore {
    /// The entry for `page` of `stream`, if any.
    pub(super) fn lookup(&self, stream: &str, page: u64) -> Option<Entry> {
        let results = self.0.lock().expect("handles lock");
        results.by_stream.get(stream).and_then(|r| r.pages.get(&page)).cloned()
    }

    /// Records `entry` for `page` of `stream` (a page recorded already keeps
    /// its first entry), within the caps.
    pub(super) fn record(&self, stream: &str, page: u64, entry: Entry, caps: Caps) -> Result<(), HandleError> {
        let mut results = self.0.lock().expect("handles lock");
        results.since_prune += 1;
        if results.since_prune >= 1024 {
            results.prune();
        }
        results.clock += 1;
        let (clock, bytes) = (results.clock, size(&entry));
        let held = results.by_stream.get(stream).map_or(0, |pages| pages.bytes);
        if held + bytes > MAX_RESULT_BYTES {
            return Err(HandleError::Full);
        }
        let pages = results.by_stream.entry(stream.to_string()).or_insert(Pages {
            pages: HashMap::new(),
            bytes: 0,
            written: clock,
        });
        if pages.pages.contains_key(&page) {
            return Ok(());
        }
        pages.pages.insert(page, entry);
        pages.bytes += bytes;
        pages.written = clock;
        results.bytes += bytes;
        while results.by_stream.len() as u64 > caps.results || results.bytes > caps.bytes {
            let oldest = results.by_stream.iter().min_by_key(|(_, p)| p.written).map(|(s, _)| s.clone());
            let Some(oldest) = oldest.filter(|oldest| oldest != stream) else { break };
            let gone = results.by_stream.remove(&oldest).map_or(0, |p| p.bytes);
            results.bytes -= gone;
        }
        Ok(())
    }
}

impl Results {
    /// Drops the pages that expired, and the results left without pages.
    fn prune(&mut self) {
        self.since_prune = 0;
        let now = now_secs();
        let mut freed = 0;
        for pages in self.by_stream.values_mut() {
            pages.pages.retain(|_, entry| {
                let keep = entry.expires >= now;
                if !keep {
                    freed += size(entry);
                }
                keep
            });
        }
        self.by_stream.retain(|_, pages| !pages.pages.is_empty());
        self.bytes -= freed;
        for pages in self.by_stream.values_mut() {
            pages.bytes = pages.pages.values().map(size).sum();
        }
    }
}
