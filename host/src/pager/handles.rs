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
//! that share the directory share them, without a file per page), a Redis
//! server that replicas share (`--handle-store redis://…`), or, without a
//! state directory, memory (handles die with the process, as cursors signed
//! with a throwaway key do).

use std::collections::HashMap;
use std::fmt;
use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use cap_std::fs::Dir;

const PREFIX: &str = "h1_";
/// Hex digits after the prefix: 128 bits.
const DIGITS: usize = 32;

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

/// Why a handle could not be made or resolved.
#[derive(Debug)]
pub enum HandleError {
    /// No store holds this handle: it expired, or another server that does not
    /// share this one's store made it, or it was mistyped.
    Unknown,
    /// The store holds the handle, past its expiry.
    Expired,
    /// The store could not be read or written.
    Store(std::io::Error),
}

impl fmt::Display for HandleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandleError::Unknown => f.write_str("no handle store here holds this handle"),
            HandleError::Expired => f.write_str("the handle has expired"),
            HandleError::Store(e) => write!(f, "the handle store failed: {e}"),
        }
    }
}

impl std::error::Error for HandleError {}

/// Where handles are kept.
pub enum Store {
    /// Handles die with the process.
    Memory(Mutex<HashMap<String, (u64, String)>>),
    /// One file per result in this directory, named by its 32 hex digits: a
    /// line `<page> <expiry secs> <cursor>` per page, appended.
    Dir(Dir),
    /// A Redis server that replicas share: a key per handle, which Redis
    /// expires with its cursor.
    Redis(Box<RedisStore>),
}

/// A Redis server holding handles under `cordon:handle:<handle>`, through one
/// connection, opened again when it fails.
pub struct RedisStore {
    client: redis::Client,
    connection: Mutex<Option<redis::Connection>>,
}

impl RedisStore {
    /// Connects to `url` (`redis://host:port/db`), so that a server whose store
    /// is unreachable does not start.
    pub fn connect(url: &str) -> Result<RedisStore, HandleError> {
        let client = redis::Client::open(url).map_err(redis_error)?;
        let connection = client.get_connection().map_err(redis_error)?;
        Ok(RedisStore { client, connection: Mutex::new(Some(connection)) })
    }

    /// Runs `command` on the connection, reconnecting once if it failed.
    fn run<T: redis::FromRedisValue>(&self, command: &redis::Cmd) -> Result<T, HandleError> {
        let mut held = self.connection.lock().expect("redis connection lock");
        for attempt in 0..2 {
            let connection = match held.as_mut() {
                Some(connection) => connection,
                None => held.insert(self.client.get_connection().map_err(redis_error)?),
            };
            match command.query::<T>(connection) {
                Ok(value) => return Ok(value),
                Err(e) if attempt == 0 && (e.is_io_error() || e.is_connection_dropped()) => *held = None,
                Err(e) => return Err(redis_error(e)),
            }
        }
        unreachable!("the second attempt returns")
    }
}

fn redis_error(e: redis::RedisError) -> HandleError {
    HandleError::Store(std::io::Error::other(e))
}

fn redis_key(handle: &str) -> String {
    format!("cordon:handle:{handle}")
}

/// How often a directory store is swept of expired handles while serving.
const SWEEP_EVERY_SECS: u64 = 600;

/// The handles a server mints and resolves.
pub struct Handles {
    store: Store,
    /// How long a cursor lives: a result's file in a directory store is swept
    /// this long after its last page was written.
    ttl_secs: u64,
    /// When a directory store was last swept, in seconds since the epoch.
    swept: AtomicU64,
}

impl Handles {
    /// Handles kept in `store`. A directory store is swept of the handles that
    /// expired while the server was not running (on a thread, so the start
    /// does not wait), and again every ten minutes while it mints.
    pub fn new(store: Store, ttl_secs: u64) -> Handles {
        if let Store::Dir(dir) = &store {
            // A day of results can be many files: not on the start's path.
            sweep_on_a_thread(dir, ttl_secs);
        }
        Handles { store, ttl_secs, swept: AtomicU64::new(now_secs()) }
    }

    /// A handle for `cursor`, the one that continues to page `page` of the
    /// result `stream` (a new result when `None`), which expires (and the
    /// handle with it) at `expires`, in seconds since the Unix epoch.
    pub fn mint(&self, stream: Option<&str>, page: u64, cursor: &str, expires: u64) -> Result<String, HandleError> {
        let stream = match stream {
            Some(stream) => stream.to_string(),
            None => {
                let mut bits = [0u8; DIGITS / 2];
                getrandom::fill(&mut bits).expect("the OS random source works");
                hex::encode(bits)
            }
        };
        let handle = format!("{PREFIX}{stream}.{page}");
        match &self.store {
            Store::Memory(map) => {
                let mut map = map.lock().expect("handles lock");
                if map.len() % 1024 == 0 {
                    map.retain(|_, (until, _)| *until >= now_secs());
                }
                map.insert(handle.clone(), (expires, cursor.to_string()));
            }
            Store::Dir(dir) => {
                self.sweep_in_background(dir);
                let mut options = cap_std::fs::OpenOptions::new();
                options.append(true).create(true);
                let mut file = dir.open_with(&stream, &options).map_err(HandleError::Store)?;
                // One write of a whole line: appends from two servers do not interleave.
                file.write_all(format!("{page} {expires} {cursor}\n").as_bytes()).map_err(HandleError::Store)?;
            }
            Store::Redis(redis) => {
                // Redis drops the key once the cursor's expiry second is over.
                let set = redis::cmd("SET").arg(redis_key(&handle)).arg(cursor).arg("EXAT").arg(expires + 1).clone();
                redis.run::<()>(&set)?;
            }
        }
        Ok(handle)
    }

    /// The cursor behind `handle`.
    pub fn resolve(&self, handle: &str) -> Result<String, HandleError> {
        let (stream, page) = parse(handle).ok_or(HandleError::Unknown)?;
        let (expires, cursor) = match &self.store {
            Store::Memory(map) => map.lock().expect("handles lock").get(handle).cloned().ok_or(HandleError::Unknown)?,
            Store::Dir(dir) => {
                let file = match dir.open(stream) {
                    Ok(file) => file,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(HandleError::Unknown),
                    Err(e) => return Err(HandleError::Store(e)),
                };
                find_page(file, page).map_err(HandleError::Store)?.ok_or(HandleError::Unknown)?
            }
            Store::Redis(redis) => {
                let cursor: Option<String> = redis.run(redis::cmd("GET").arg(redis_key(handle)))?;
                // Redis removes an expired key itself: what it still holds is valid.
                return cursor.ok_or(HandleError::Unknown);
            }
        };
        // As a cursor: valid through its expiry second.
        if expires < now_secs() {
            return Err(HandleError::Expired);
        }
        Ok(cursor)
    }

    /// Sweeps `dir` on a thread of its own when the last sweep is old enough.
    fn sweep_in_background(&self, dir: &Dir) {
        let (now, last) = (now_secs(), self.swept.load(Ordering::Relaxed));
        let due = now >= last.saturating_add(SWEEP_EVERY_SECS);
        if !due || self.swept.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_err() {
            return;
        }
        sweep_on_a_thread(dir, self.ttl_secs);
    }
}

/// The line for `page` in a result's file: its expiry and cursor. Pages are
/// appended in order and the one asked for is nearly always among the last,
/// so the file is read from its end, a growing tail at a time.
fn find_page(mut file: cap_std::fs::File, page: u64) -> std::io::Result<Option<(u64, String)>> {
    let size = file.seek(SeekFrom::End(0))?;
    let mut tail = 8 * 1024u64;
    loop {
        let from = size.saturating_sub(tail);
        file.seek(SeekFrom::Start(from))?;
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        // The first line of a tail may be cut: skip it unless the tail is the whole file.
        let lines = text.lines().skip(usize::from(from > 0)).collect::<Vec<_>>();
        for line in lines.iter().rev() {
            let mut fields = line.splitn(3, ' ');
            let (Some(at), Some(expires), Some(cursor)) = (fields.next(), fields.next(), fields.next()) else {
                continue;
            };
            if at.parse::<u64>().ok() == Some(page) {
                return Ok(expires.parse().ok().map(|e| (e, cursor.to_string())));
            }
        }
        if from == 0 {
            return Ok(None);
        }
        tail *= 8;
    }
}

/// Sweeps `dir` on a thread of its own.
fn sweep_on_a_thread(dir: &Dir, ttl_secs: u64) {
    if let Ok(dir) = dir.try_clone() {
        let _ = std::thread::Builder::new().name("cordon-handles-sweep".into()).spawn(move || sweep(&dir, ttl_secs));
    }
}

/// Removes from a directory store the results whose last page was written
/// longer ago than a cursor lives (one `stat` per result, no read), and the
/// files of the earlier format, one per handle (`h1_…`), once they expired.
fn sweep(dir: &Dir, ttl_secs: u64) {
    let Ok(entries) = dir.entries() else { return };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let ours = (name.len() == DIGITS && !name.contains('.')) || is_handle(&name);
        if !ours {
            continue;
        }
        let written = entry.metadata().ok().and_then(|m| m.modified().ok()).map(|t| t.into_std());
        let age = written.and_then(|t| now.duration_since(t).ok()).map_or(0, |d| d.as_secs());
        if age > ttl_secs.saturating_add(1) {
            let _ = dir.remove_file(&name);
        }
    }
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Duration;

    const TTL: u64 = 60;

    fn dir_store(tmp: &tempfile::TempDir) -> Handles {
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        Handles::new(Store::Dir(dir), TTL)
    }

    fn stores() -> Vec<(tempfile::TempDir, Handles)> {
        let tmp = tempfile::tempdir().unwrap();
        let dir = dir_store(&tmp);
        let memory = Handles::new(Store::Memory(Mutex::default()), TTL);
        vec![(tempfile::tempdir().unwrap(), memory), (tmp, dir)]
    }

    fn in_a_minute() -> u64 {
        now_secs() + 60
    }

    #[test]
    fn a_handle_is_short_unguessable_and_resolves_to_its_cursor() {
        for (_tmp, handles) in stores() {
            let a = handles.mint(None, 1, "c1.cursor-a", in_a_minute()).unwrap();
            let b = handles.mint(None, 1, "c1.cursor-b", in_a_minute()).unwrap();
            assert!(is_handle(&a) && a.len() == 37 && a.ends_with(".1"), "{a}");
            assert_ne!(a, b);
            assert_eq!(handles.resolve(&a).unwrap(), "c1.cursor-a");
            assert_eq!(handles.resolve(&b).unwrap(), "c1.cursor-b");
        }
    }

    #[test]
    fn every_page_of_a_result_keeps_its_own_handle_in_one_file() {
        for (tmp, handles) in stores() {
            let first = handles.mint(None, 1, "c1.page-1", in_a_minute()).unwrap();
            let stream = stream_of(&first).unwrap().to_string();
            // Long cursors, so the later lookups read more than one tail of the file.
            let long = |n: u64| format!("c1.page-{n}-{}", "x".repeat(3000));
            let later: Vec<String> =
                (2..40).map(|n| handles.mint(Some(&stream), n, &long(n), in_a_minute()).unwrap()).collect();
            assert!(later.iter().all(|h| stream_of(h) == Some(stream.as_str())), "{later:?}");
            assert_eq!(handles.resolve(&first).unwrap(), "c1.page-1", "an early page still resolves");
            assert_eq!(handles.resolve(&later[10]).unwrap(), long(12));
            assert_eq!(handles.resolve(&later[37]).unwrap(), long(39));
            if let Store::Dir(_) = handles.store {
                let files = std::fs::read_dir(tmp.path()).unwrap().count();
                assert_eq!(files, 1, "one file for the whole result");
            }
        }
    }

    #[test]
    fn unknown_mistyped_and_expired_handles_are_refused() {
        for (_tmp, handles) in stores() {
            let good = handles.mint(None, 3, "c1.x", in_a_minute()).unwrap();
            let mut flipped = good.clone().into_bytes();
            flipped[10] = if flipped[10] == b'0' { b'1' } else { b'0' };
            let flipped = String::from_utf8(flipped).unwrap();
            let other_page = good.replace(".3", ".4");
            let leading_zero = good.replace(".3", ".03");
            let no_page = good.trim_end_matches(".3").to_string();
            for bad in [
                &flipped,
                "h1_",
                "h1_zz.1",
                &format!("{good}0"),
                &good.to_uppercase(),
                &other_page,
                &leading_zero,
                &no_page,
            ] {
                assert!(matches!(handles.resolve(bad), Err(HandleError::Unknown)), "{bad}");
            }
        }
        let tmp = tempfile::tempdir().unwrap();
        let short = dir_store(&tmp);
        let handle = short.mint(None, 1, "c1.x", now_secs()).unwrap();
        std::thread::sleep(Duration::from_millis(1100));
        assert!(matches!(short.resolve(&handle), Err(HandleError::Expired)));
    }

    #[test]
    fn a_directory_store_is_swept_of_results_older_than_a_cursor_lives() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        // Without the start's sweep (its own thread would race this test's files).
        let handles = Handles { store: Store::Dir(dir), ttl_secs: TTL, swept: AtomicU64::new(now_secs()) };
        let old_result = "0".repeat(DIGITS);
        let old_format = format!("{PREFIX}{}", "1".repeat(DIGITS));
        for name in [&old_result, &old_format] {
            std::fs::write(tmp.path().join(name), "1 1 c1.old\n").unwrap();
            let long_ago = SystemTime::now() - Duration::from_secs(TTL + 3600);
            std::fs::File::options().write(true).open(tmp.path().join(name)).unwrap().set_modified(long_ago).unwrap();
        }
        handles.mint(None, 1, "c1.fresh", in_a_minute()).unwrap();
        assert!(tmp.path().join(&old_result).exists(), "not yet due");
        handles.swept.store(0, Ordering::Relaxed);
        let kept = handles.mint(None, 1, "c1.fresh", in_a_minute()).unwrap();
        let started = std::time::Instant::now();
        let gone = |name: &str| !tmp.path().join(name).exists();
        while !(gone(&old_result) && gone(&old_format)) && started.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(gone(&old_result) && gone(&old_format), "results past a cursor's life are swept");
        assert_eq!(handles.resolve(&kept).unwrap(), "c1.fresh");
        // A restart sweeps too.
        std::fs::write(tmp.path().join(&old_result), "1 1 c1.old\n").unwrap();
        let long_ago = SystemTime::now() - Duration::from_secs(TTL + 3600);
        std::fs::File::options()
            .write(true)
            .open(tmp.path().join(&old_result))
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        let _restarted = dir_store(&tmp);
        let started = std::time::Instant::now();
        while !gone(&old_result) && started.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(gone(&old_result), "a restart sweeps results past a cursor's life");
    }
}
