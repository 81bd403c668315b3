//! Handles: short continuations for the model.
//!
//! A signed cursor is self-contained but long (hundreds of characters); a
//! model copying one back pays output tokens on every page, and one wrong
//! character refuses it. A handle is `h1_`, 32 hex digits naming the result
//! (128 random bits, the same on every page of it), a dot and the index of
//! the page it continues to: `h1_8e661cd6222b5035356ffcdcf9b19743.2`, 37
//! characters for the first pages. The server maps it to the signed cursor
//! in a store: the model copies the handle, programs may keep using the
//! cursor. The cursor behind a handle is decoded and checked like any
//! cursor, so a store that was tampered with cannot make the server resume
//! anything it did not sign. A handle lives as long as its cursor
//! (`cursor_ttl_secs`).
//!
//! The store is a directory (`<state-dir>/handles`, one file per result, a
//! line appended for each page, so handles survive a restart, and replicas
//! that share the directory share them, without a file per page; see
//! `dir`), a Redis server that replicas share (`--handle-store redis://…`;
//! see `redis_store`), or, without a state directory, memory (handles die with
//! the process, as cursors signed with a throwaway key do; see `memory`).
//!
//! Every store is bounded (`Caps`), whatever its clients do:
//!
//! - a page is recorded once: replaying the handle of page N, which mints
//!   the handle of page N+1 again, writes nothing when page N+1 is recorded
//!   at the same position (the digest of where it resumes). A replay that
//!   lands elsewhere (another page size) starts a new result;
//! - one result keeps at most `MAX_RESULT_PAGES` pages and
//!   `MAX_RESULT_BYTES` bytes; later pages carry the signed cursor instead
//!   of a handle;
//! - a store keeps at most `max_handle_results` results (and a directory
//!   store `max_handle_store_bytes` bytes); past that the results written
//!   longest ago are evicted first, and their handles are unknown.

mod dir;
mod memory;
mod redis_store;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use cap_std::fs::Dir;
use sha2::{Digest, Sha256};

use memory::MemoryStore;
pub use redis_store::RedisStore;

const PREFIX: &str = "h1_";
/// Hex digits after the prefix: 128 bits.
const DIGITS: usize = 32;

/// The most pages one result keeps handles for.
pub const MAX_RESULT_PAGES: u64 = 4096;
/// The most bytes one result's handles may take (its file, in a directory store).
pub const MAX_RESULT_BYTES: u64 = 4 << 20;

/// Whether `text` has the shape of a handle (else it is taken as a cursor).
pub fn is_handle(text: &str) -> bool {
    text.starts_with(PREFIX)
}

/// A handle taken apart: the result it belongs to (32 lowercase hex digits)
/// and the page it continues to; `None` when it is malformed.
fn parse(handle: &str) -> Option<(&str, u64)> {
    let (stream, page) = handle.strip_prefix(PREFIX)?.split_once('.')?;
    let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    let page_ok = !page.is_empty() && page.len() <= 20 && page.bytes().all(|b| b.is_ascii_digit());
    if stream.len() != DIGITS || !stream.bytes().all(hex) || !page_ok || (page.len() > 1 && page.starts_with('0')) {
        return None;
    }
    Some((stream, page.parse().ok()?))
}

/// The result a handle belongs to, so the next page's handle names it too.
pub fn stream_of(handle: &str) -> Option<&str> {
    parse(handle).map(|(stream, _)| stream)
}

/// Where a page resumes, as a store keeps it: the first 16 hex digits of the
/// SHA-256 of its resume position.
pub fn position(resume: &str) -> String {
    hex::encode(&Sha256::digest(resume.as_bytes())[..8])
}

/// Why a handle could not be made or resolved.
#[derive(Debug)]
pub enum HandleError {
    /// No store holds this handle: it expired, or was evicted, or another
    /// server that does not share this one's store made it, or it was mistyped.
    Unknown,
    /// The store holds the handle, past its expiry.
    Expired,
    /// The result has as many pages or bytes as one result may keep: its
    /// later pages carry the signed cursor.
    Full,
    /// The store could not be read or written.
    Store(std::io::Error),
}

impl fmt::Display for HandleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandleError::Unknown => f.write_str("no handle store here holds this handle"),
            HandleError::Expired => f.write_str("the handle has expired"),
            HandleError::Full => write!(
                f,
                "the result has the most handles one result keeps ({MAX_RESULT_PAGES} pages, {MAX_RESULT_BYTES} \
                 bytes); its next pages continue with the signed cursor"
            ),
            HandleError::Store(e) => write!(f, "the handle store failed: {e}"),
        }
    }
}

impl std::error::Error for HandleError {}

/// How much a store keeps in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Results kept; the ones written longest ago are evicted first.
    pub results: u64,
    /// Bytes a directory store holds; the results written longest ago are
    /// evicted first.
    pub bytes: u64,
}

/// One page's handle as a store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// When the cursor (and the handle) expires, in seconds since the epoch.
    expires: u64,
    /// Where the page resumes (`position`): a replay that lands there again
    /// reuses the handle.
    position: String,
    cursor: String,
}

/// Where handles are kept.
pub enum Store {
    /// Handles die with the process.
    Memory(MemoryStore),
    /// One file per result in this directory, named by its 32 hex digits: a
    /// line `<page> <expiry secs> <position> <cursor>` per page, appended.
    Dir(Dir),
    /// A Redis server that replicas share.
    Redis(Box<RedisStore>),
}

impl Store {
    /// A store in memory.
    pub fn memory() -> Store {
        Store::Memory(MemoryStore::default())
    }
}

/// A handle to mint: for `cursor`, which continues to page `page` of the
/// result `stream` (a new result when `None`), resumes at `position` and
/// expires (and the handle with it) at `expires`, in seconds since the epoch.
#[derive(Debug, Clone, Copy)]
pub struct Mint<'a> {
    pub stream: Option<&'a str>,
    pub page: u64,
    pub cursor: &'a str,
    pub position: &'a str,
    pub expires: u64,
}

/// How often a directory store is swept of expired handles while serving.
const SWEEP_EVERY_SECS: u64 = 600;

/// The handles a server mints and resolves.
pub struct Handles {
    store: Store,
    /// How long a cursor lives: a result's file in a directory store is swept
    /// this long after its last page was written.
    ttl_secs: u64,
    caps: Caps,
    /// When a directory store was last swept, in seconds since the epoch.
    swept: AtomicU64,
    /// What a directory store holds, as this process last counted it.
    usage: dir::Usage,
}

impl Handles {
    /// Handles kept in `store`, within `caps`. A directory store is swept of
    /// the handles that expired while the server was not running, and of the
    /// oldest results past the caps (on a thread, so the start does not
    /// wait), and again every ten minutes while it mints.
    pub fn new(store: Store, ttl_secs: u64, caps: Caps) -> Handles {
        let handles = Handles::unswept(store, ttl_secs, caps);
        if let Store::Dir(dir) = &handles.store {
            // A day of results can be many files: not on the start's path.
            dir::sweep_on_a_thread(dir, ttl_secs, caps, handles.usage.clone());
        }
        handles
    }

    /// Handles kept in `store`, without the start's sweep.
    fn unswept(store: Store, ttl_secs: u64, caps: Caps) -> Handles {
        Handles { store, ttl_secs, caps, swept: AtomicU64::new(now_secs()), usage: dir::Usage::default() }
    }

    /// The handle for `mint`. A page already recorded at the same position
    /// gets its handle back and nothing is written.
    pub fn mint(&self, mint: Mint<'_>) -> Result<String, HandleError> {
        if mint.page > MAX_RESULT_PAGES {
            return Err(HandleError::Full);
        }
        if let Some(stream) = mint.stream {
            match self.lookup(stream, mint.page)? {
                Some(entry) if entry.position == mint.position => return Ok(handle_of(stream, mint.page)),
                // Another page size: this page starts elsewhere, as a new result.
                Some(_) => return self.mint(Mint { stream: None, ..mint }),
                None => {}
            }
        }
        let stream = match mint.stream {
            Some(stream) => stream.to_string(),
            None => {
                let mut bits = [0u8; DIGITS / 2];
                getrandom::fill(&mut bits).expect("the OS random source works");
                hex::encode(bits)
            }
        };
        let entry = Entry { expires: mint.expires, position: mint.position.to_string(), cursor: mint.cursor.into() };
        match &self.store {
            Store::Memory(memory) => memory.record(&stream, mint.page, entry, self.caps)?,
            Store::Dir(dir) => {
                self.sweep_in_background(dir);
                dir::record(dir, (&stream, mint.page), &entry, self.caps, &self.usage)?;
            }
            Store::Redis(redis) => redis.record((&stream, mint.page), &entry, self.caps, self.ttl_secs)?,
        }
        Ok(handle_of(&stream, mint.page))
    }

    /// What kind of store it is: `memory`, `dir` or `redis`.
    pub fn kind(&self) -> &'static str {
        match &self.store {
            Store::Memory(_) => "memory",
            Store::Dir(_) => "dir",
            Store::Redis(_) => "redis",
        }
    }

    /// Whether the store answers: always for memory and a directory; a
    /// Redis server must answer `PING`.
    pub fn reachable(&self) -> Result<(), HandleError> {
        match &self.store {
            Store::Redis(redis) => redis.ping(),
            Store::Memory(_) | Store::Dir(_) => Ok(()),
        }
    }

    /// The cursor behind `handle`.
    pub fn resolve(&self, handle: &str) -> Result<String, HandleError> {
        let (stream, page) = parse(handle).ok_or(HandleError::Unknown)?;
        let entry = self.lookup(stream, page)?.ok_or(HandleError::Unknown)?;
        // As a cursor: valid through its expiry second.
        if entry.expires < now_secs() {
            return Err(HandleError::Expired);
        }
        Ok(entry.cursor)
    }

    /// The entry the store holds for `page` of `stream`.
    fn lookup(&self, stream: &str, page: u64) -> Result<Option<Entry>, HandleError> {
        match &self.store {
            Store::Memory(memory) => Ok(memory.lookup(stream, page)),
            Store::Dir(dir) => dir::lookup(dir, stream, page),
            Store::Redis(redis) => redis.lookup(stream, page),
        }
    }

    /// Sweeps `dir` on a thread of its own when the last sweep is old enough.
    fn sweep_in_background(&self, dir: &Dir) {
        let (now, last) = (now_secs(), self.swept.load(Ordering::Relaxed));
        let due = now >= last.saturating_add(SWEEP_EVERY_SECS);
        if !due || self.swept.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_err() {
            return;
        }
        dir::sweep_on_a_thread(dir, self.ttl_secs, self.caps, self.usage.clone());
    }
}

fn handle_of(stream: &str, page: u64) -> String {
    format!("{PREFIX}{stream}.{page}")
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests;
