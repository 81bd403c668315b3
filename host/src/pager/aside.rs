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
//! without this, and the other thread's digest is dropped.

use std::fmt;
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, OnceLock};

use crate::sha256::Sha256;

/// Chunks smaller than this are hashed by the page's own thread when it is
/// rendered: handing them over would cost more than it saves.
pub const ASIDE_MIN: usize = 32 << 10;

/// Work for a thread of a pool.
pub type Job = Box<dyn FnOnce() + Send>;

/// A digest being taken on another thread.
pub struct Aside {
    /// The digest once had (`None`: the other thread gave none in time).
    hex: OnceLock<Option<String>>,
    from: Mutex<Option<Receiver<String>>>,
}

impl Aside {
    /// Starts hashing a copy of `bytes` with `offer` (a pool's idle thread);
    /// `None` when it gives the job back (no thread idle: no thread is
    /// started for it, and the page's thread hashes the chunk itself).
    pub fn start(bytes: &[u8], offer: impl FnOnce(Job) -> Result<(), Job>) -> Option<Arc<Aside>> {
        let bytes: Arc<[u8]> = Arc::from(bytes);
        let (tx, rx) = mpsc::sync_channel(1);
        let job = Box::new(move || {
            let _ = tx.send(Sha256::hex(&bytes));
        });
        offer(job).ok()?;
        Some(Arc::new(Aside { hex: OnceLock::new(), from: Mutex::new(Some(rx)) }))
    }

    /// The digest (lowercase hex) if the other thread has given it by now;
    /// else `None`, and it is not waited for, now or later.
    pub fn ready(&self) -> Option<&str> {
        let hex = self.hex.get_or_init(|| {
            let rx = self.from.lock().expect("aside lock").take()?;
            // Not ready yet (or its thread gave none): not waited for.
            rx.try_recv().ok()
        });
        hex.as_deref()
    }
}

impl fmt::Debug for Aside {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Aside").field("hex", &self.hex.get()).finish_non_exhaustive()
    }
}

/// Two pages' chunks are the same when their digests are had the same way
/// from the same hand-over.
impl PartialEq for Aside {
    fn eq(&self, other: &Aside) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for Aside {}

#[cfg(test)]
mod tests {
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
        assert_eq!(late.ready(), None);
        (parked.lock().unwrap().take().unwrap())();
        assert_eq!(late.ready(), None, "not waited for once given up");
        // A pool with no thread idle gives the job back: nothing to wait for.
        assert!(Aside::start(&bytes, Err).is_none());
    }
}
