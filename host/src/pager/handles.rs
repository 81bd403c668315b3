//! Handles: short continuations for the model.
//!
//! A signed cursor is self-contained but long (hundreds of characters); a
//! model copying one back pays output tokens on every page, and one wrong
//! character refuses it. A handle is `h1_` and 32 hex digits (128 random
//! bits, 35 characters) that the server maps to the signed cursor in a store:
//! the model copies the handle, programs may keep using the cursor. The
//! cursor behind a handle is decoded and checked like any cursor, so a store
//! that was tampered with cannot make the server resume anything it did not
//! sign. A handle lives as long as its cursor (`cursor_ttl_secs`).
//!
//! The store is a directory (`<state-dir>/handles`, one small file per handle,
//! so handles survive a restart, and replicas that share the directory share
//! them), a Redis server that replicas share (`--handle-store redis://…`), or,
//! without a state directory, memory (handles die with the process, as
//! cursors signed with a throwaway key do).

use std::collections::HashMap;
use std::fmt;
use std::io::{Read, Write};
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
    /// One file per handle in this directory: `<expiry secs>\n<cursor>`.
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
    /// When a directory store was last swept, in seconds since the epoch.
    swept: AtomicU64,
}

impl Handles {
    /// Handles kept in `store`. A directory store is swept of the handles that
    /// expired while the server was not running (on a thread, so the start
    /// does not wait), and again every ten minutes while it mints.
    pub fn new(store: Store) -> Handles {
        if let Store::Dir(dir) = &store {
            // A day of handles can be many files: not on the start's path.
            sweep_on_a_thread(dir);
        }
        Handles { store, swept: AtomicU64::new(now_secs()) }
    }

    /// A new handle for `cursor`, which expires (and the handle with it) at
    /// `expires`, in seconds since the Unix epoch.
    pub fn mint(&self, cursor: &str, expires: u64) -> Result<String, HandleError> {
        let mut bits = [0u8; DIGITS / 2];
        getrandom::fill(&mut bits).expect("the OS random source works");
        let handle = format!("{PREFIX}{}", hex::encode(bits));
        match &self.store {
            Store::Memory(map) => {
                let mut map = map.lock().expect("handles lock");
                map.retain(|_, (until, _)| *until >= now_secs());
                map.insert(handle.clone(), (expires, cursor.to_string()));
            }
            Store::Dir(dir) => {
                self.sweep_in_background(dir);
                // A fresh random name: nobody else can be writing or reading it
                // until the page that carries it is answered.
                let mut options = cap_std::fs::OpenOptions::new();
                options.write(true).create_new(true);
                let mut file = dir.open_with(&handle, &options).map_err(HandleError::Store)?;
                file.write_all(format!("{expires}\n{cursor}").as_bytes()).map_err(HandleError::Store)?;
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
        let digits = handle.strip_prefix(PREFIX).ok_or(HandleError::Unknown)?;
        if digits.len() != DIGITS || !digits.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err(HandleError::Unknown);
        }
        let (expires, cursor) = match &self.store {
            Store::Memory(map) => map.lock().expect("handles lock").get(handle).cloned().ok_or(HandleError::Unknown)?,
            Store::Dir(dir) => {
                let mut text = String::new();
                match dir.open(handle) {
                    Ok(mut file) => file.read_to_string(&mut text).map_err(HandleError::Store)?,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(HandleError::Unknown),
                    Err(e) => return Err(HandleError::Store(e)),
                };
                let (expires, cursor) = text.split_once('\n').ok_or(HandleError::Unknown)?;
                (expires.parse().map_err(|_| HandleError::Unknown)?, cursor.to_string())
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
        sweep_on_a_thread(dir);
    }
}

/// Sweeps `dir` on a thread of its own.
fn sweep_on_a_thread(dir: &Dir) {
    if let Ok(dir) = dir.try_clone() {
        let _ = std::thread::Builder::new().name("cordon-handles-sweep".into()).spawn(move || sweep(&dir));
    }
}

/// Removes the handles past their expiry from a directory store.
fn sweep(dir: &Dir) {
    let Ok(entries) = dir.entries() else { return };
    let now = now_secs();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !is_handle(&name) {
            continue;
        }
        let mut head = [0u8; 24];
        let read = dir.open(&name).and_then(|mut f| f.read(&mut head));
        let expires = read.ok().and_then(|n| {
            let text = std::str::from_utf8(&head[..n]).ok()?;
            text.split_once('\n')?.0.parse::<u64>().ok()
        });
        if expires.is_some_and(|until| until < now) {
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

    fn stores() -> Vec<(tempfile::TempDir, Handles)> {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let memory = Handles::new(Store::Memory(Mutex::default()));
        vec![(tempfile::tempdir().unwrap(), memory), (tmp, Handles::new(Store::Dir(dir)))]
    }

    fn in_a_minute() -> u64 {
        now_secs() + 60
    }

    #[test]
    fn a_handle_is_short_unguessable_and_resolves_to_its_cursor() {
        for (_tmp, handles) in stores() {
            let a = handles.mint("c1.cursor-a", in_a_minute()).unwrap();
            let b = handles.mint("c1.cursor-b", in_a_minute()).unwrap();
            assert!(is_handle(&a) && a.len() == 35 && a.len() <= 64, "{a}");
            assert_ne!(a, b);
            assert_eq!(handles.resolve(&a).unwrap(), "c1.cursor-a");
            assert_eq!(handles.resolve(&b).unwrap(), "c1.cursor-b");
        }
    }

    #[test]
    fn unknown_mistyped_and_expired_handles_are_refused() {
        for (_tmp, handles) in stores() {
            let good = handles.mint("c1.x", in_a_minute()).unwrap();
            let mut flipped = good.clone().into_bytes();
            flipped[10] = if flipped[10] == b'0' { b'1' } else { b'0' };
            let flipped = String::from_utf8(flipped).unwrap();
            for bad in [flipped.as_str(), "h1_", "h1_zz", &format!("{good}0"), &good.to_uppercase()] {
                assert!(matches!(handles.resolve(bad), Err(HandleError::Unknown)), "{bad}");
            }
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let short = Handles::new(Store::Dir(dir));
        let handle = short.mint("c1.x", now_secs()).unwrap();
        std::thread::sleep(Duration::from_millis(1100));
        assert!(matches!(short.resolve(&handle), Err(HandleError::Expired)));
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let _restarted = Handles::new(Store::Dir(dir));
        let started = std::time::Instant::now();
        while tmp.path().join(&handle).exists() && started.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!tmp.path().join(&handle).exists(), "a restart sweeps expired handles");
    }

    #[test]
    fn a_directory_store_is_swept_of_expired_handles_while_it_mints() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        // Without the start's sweep (its own thread would race this test's file).
        let handles = Handles { store: Store::Dir(dir), swept: AtomicU64::new(now_secs()) };
        let stale = format!("{PREFIX}{}", "0".repeat(DIGITS));
        std::fs::write(tmp.path().join(&stale), "1\nc1.old").unwrap();
        handles.mint("c1.fresh", in_a_minute()).unwrap();
        assert!(tmp.path().join(&stale).exists(), "not yet due");
        handles.swept.store(0, Ordering::Relaxed);
        let kept = handles.mint("c1.fresh", in_a_minute()).unwrap();
        let started = std::time::Instant::now();
        while tmp.path().join(&stale).exists() && started.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!tmp.path().join(&stale).exists(), "the expired handle is swept");
        assert_eq!(handles.resolve(&kept).unwrap(), "c1.fresh");
    }
}
