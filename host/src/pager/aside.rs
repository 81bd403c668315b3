//! A chunk's SHA-256 taken aside: a large chunk of a page that a program
//! reads (the JSON form, whose metadata gives each chunk's SHA-256) is
//! hashed on an idle thread of the call pool while the page's own thread goes on:
//! it hashes the same bytes into the result's running hash, signs the
//! cursor, records the call, and renders the page. Each byte is still
//! hashed twice (the chunk's digest and the running one are two states),
//! but the two passes overlap instead of following each other, on a page's
//! path where the client, waiting for it, leaves a core free.
//!
//! Nothing waits for the other thread: when the page is rendered before its
//! digest is ready, the page's thread hashes the chunk itself, as it would
//! without this (the digest is the same whichever thread took it).

use std::sync::{Arc, OnceLock};

use crate::runtime::Job;
use crate::sha256::Sha256;

/// Chunks smaller than this are hashed by the page's own thread when it is
/// rendered: handing them over would cost more than it saves.
pub const ASIDE_MIN: usize = 32 << 10;

/// A digest being taken on another thread: the cell it fills when done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aside(Arc<OnceLock<String>>);

impl Aside {
    /// Starts hashing a copy of `bytes` with `offer` (a pool's idle thread);
    /// `None` when it gives the job back (no thread idle: no thread is
    /// started for it, and the page's thread hashes the chunk itself).
    pub fn start(bytes: &[u8], offer: impl FnOnce(Job) -> Result<(), Job>) -> Option<Aside> {
        let (digest, bytes) = (Arc::new(OnceLock::new()), bytes.to_vec());
        let cell = Arc::clone(&digest);
        offer(Box::new(move || {
            let _ = cell.set(Sha256::hex(&bytes));
        }))
        .ok()?;
        Some(Aside(digest))
    }

    /// The digest (lowercase hex) if the other thread has given it by now;
    /// never waited for.
    pub fn ready(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn a_digest_taken_aside_is_the_bytes_own_and_a_late_or_refused_one_is_not_waited_for() {
        let bytes = vec![7u8; ASIDE_MIN + 3];
        // A pool that runs the job at once: the digest is ready.
        let aside = Aside::start(&bytes, |job: Job| {
            std::thread::spawn(job).join().unwrap();
            Ok(())
        })
        .unwrap();
        assert_eq!(aside.ready(), Some(Sha256::hex(&bytes).as_str()));
        assert_eq!(aside.ready(), Some(Sha256::hex(&bytes).as_str()), "asked again");
        // A job that has not run when asked: no digest, now or later.
        let parked = Mutex::new(None);
        let late = Aside::start(&bytes, |job: Job| {
            *parked.lock().unwrap() = Some(job);
            Ok(())
        })
        .unwrap();
        assert_eq!(late.ready(), None, "not waited for");
        (parked.lock().unwrap().take().unwrap())();
        assert_eq!(late.ready(), Some(Sha256::hex(&bytes).as_str()), "had once it comes");
        // A pool with no thread idle gives the job back: nothing to wait for.
        assert!(Aside::start(&bytes, Err).is_none());
    }
}
