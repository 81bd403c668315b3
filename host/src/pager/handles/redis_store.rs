//! The Redis store, shared by replicas: a hash per result,
//! `cordon:result:<stream>`, with a field `p<page>` per page
//! (`<expiry secs> <position> <cursor>`, set once: `HSETNX`) and `bytes`,
//! which Redis expires with the result's latest cursor; and a sorted set,
//! `cordon:results`, of the results by when they were last written, from
//! which the ones written longest ago are evicted past `Caps::results`.

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use super::{Caps, Entry, HandleError, MAX_RESULT_BYTES};

/// The sorted set of results, by the time of their last write.
const RESULTS: &str = "cordon:results";

/// A Redis server holding handles, through one connection, opened again
/// when it fails.
pub struct RedisStore {
    client: redis::Client,
    connection: Mutex<Option<redis::Connection>>,
}

fn redis_error(e: redis::RedisError) -> HandleError {
    HandleError::Store(std::io::Error::other(e))
}

fn result_key(stream: &str) -> String {
    format!("cordon:result:{stream}")
}

fn page_field(page: u64) -> String {
    format!("p{page}")
}

impl RedisStore {
    /// Connects to `url` (`redis://host:port/db`), so that a server whose store
    /// is unreachable does not start.
    pub fn connect(url: &str) -> Result<RedisStore, HandleError> {
        let client = redis::Client::open(url).map_err(redis_error)?;
        let connection = client.get_connection().map_err(redis_error)?;
        Ok(RedisStore { client, connection: Mutex::new(Some(connection)) })
    }

    /// Runs `query` on the connection, reconnecting once if it failed.
    fn run<T>(&self, query: impl Fn(&mut redis::Connection) -> redis::RedisResult<T>) -> Result<T, HandleError> {
        let mut held = self.connection.lock().expect("redis connection lock");
        for attempt in 0..2 {
            let connection = match held.as_mut() {
                Some(connection) => connection,
                None => held.insert(self.client.get_connection().map_err(redis_error)?),
            };
            match query(connection) {
                Ok(value) => return Ok(value),
                Err(e) if attempt == 0 && (e.is_io_error() || e.is_connection_dropped()) => *held = None,
                Err(e) => return Err(redis_error(e)),
            }
        }
        unreachable!("the second attempt returns")
    }

    /// Whether Redis answers (`PING`).
    pub(super) fn ping(&self) -> Result<(), HandleError> {
        self.run(|c| redis::cmd("PING").query::<String>(c)).map(|_| ())
    }

    /// The entry for `page` of `stream`, if Redis still holds it.
    pub(super) fn lookup(&self, stream: &str, page: u64) -> Result<Option<Entry>, HandleError> {
        let get = redis::cmd("HGET").arg(result_key(stream)).arg(page_field(page)).clone();
        let value: Option<String> = self.run(|c| get.query(c))?;
        Ok(value.and_then(|value| {
            let mut fields = value.splitn(3, ' ');
            let (expires, position, cursor) = (fields.next()?, fields.next()?, fields.next()?);
            Some(Entry { expires: expires.parse().ok()?, position: position.into(), cursor: cursor.into() })
        }))
    }

    /// Records `entry` for `page` of `stream` unless that page is recorded
    /// already, within the result's caps; a new result past `caps.results`
    /// evicts the results written longest ago, and results older than a
    /// cursor lives leave the set.
    pub(super) fn record(
        &self,
        (stream, page): (&str, u64),
        entry: &Entry,
        caps: Caps,
        ttl_secs: u64,
    ) -> Result<(), HandleError> {
        let key = result_key(stream);
        let value = format!("{} {} {}", entry.expires, entry.position, entry.cursor);
        let held = redis::cmd("HGET").arg(&key).arg("bytes").clone();
        let held: Option<u64> = self.run(|c| held.query(c))?;
        if held.unwrap_or(0) + value.len() as u64 > MAX_RESULT_BYTES {
            return Err(HandleError::Full);
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        let mut write = redis::pipe();
        write.atomic();
        write.cmd("HSETNX").arg(&key).arg(page_field(page)).arg(&value);
        write.cmd("HINCRBY").arg(&key).arg("bytes").arg(value.len()).ignore();
        // Redis drops the result once its latest cursor's expiry second is over.
        write.cmd("EXPIREAT").arg(&key).arg(entry.expires + 1).ignore();
        write.cmd("ZADD").arg(RESULTS).arg(now).arg(stream);
        write.cmd("ZREMRANGEBYSCORE").arg(RESULTS).arg("-inf").arg(now - ttl_secs as f64 - 1.0).ignore();
        write.cmd("ZCARD").arg(RESULTS);
        let (set, added, count): (u64, u64, u64) = self.run(|c| write.query(c))?;
        if set == 0 {
            // Another writer recorded this page first: its bytes are not ours to count.
            let undo = redis::cmd("HINCRBY").arg(&key).arg("bytes").arg(-(value.len() as i64)).clone();
            self.run(|c| undo.query::<i64>(c))?;
        }
        if added == 1 && count > caps.results {
            let excess = count - caps.results;
            let pop = redis::cmd("ZPOPMIN").arg(RESULTS).arg(excess).clone();
            let popped: Vec<(String, f64)> = self.run(|c| pop.query(c))?;
            let keys: Vec<String> = popped.iter().map(|(s, _)| result_key(s)).collect();
            if !keys.is_empty() {
                let del = redis::cmd("DEL").arg(&keys).clone();
                self.run(|c| del.query::<u64>(c))?;
            }
        }
        Ok(())
    }
}
