//! SHA-256 taken on another thread while a page is made: a chunk's own
//! digest, and the result's running hash (see `Running`).
//!
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

use std::sync::{Arc, OnceLock, mpsc};
use std::time::Duration;

use crate::runtime::{Job, look_for};
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

/// The result's running SHA-256 while a page is filled. A large piece is
/// hashed into it on an idle thread of the call pool while the page's own
/// thread pulls the next piece (the guest's work, which does not need the
/// hash); the page's thread takes the state back before it hashes another
/// piece, and when the page ends. Pieces are hashed in their order, one at a
/// time, so the state is the one hashing them here would give.
pub struct Running {
    here: Option<Sha256>,
    /// The state, once the thread hashing a piece into it gives it back.
    away: Option<mpsc::Receiver<Sha256>>,
}

/// How long the page's thread looks for the state to come back
/// (`runtime::look_for`) before it sleeps until it does: a piece aside takes
/// about as long as the pull the page's thread does meanwhile.
const LOOKS: Duration = Duration::from_micros(200);

impl Running {
    pub fn new(hasher: Sha256) -> Running {
        Running { here: Some(hasher), away: None }
    }

    /// Hashes `bytes` after what came before: a copy on a thread `offer`
    /// gives (a pool's idle one) when there are `ASIDE_MIN` or more, else here
    /// (also when `offer` gives the job back). `None` when the state is lost:
    /// the thread that had it ended without giving it back.
    pub fn update(&mut self, bytes: &[u8], offer: impl FnOnce(Job) -> Result<(), Job>) -> Option<()> {
        if bytes.len() < ASIDE_MIN {
            return self.update_here(bytes);
        }
        let mut hasher = self.take()?;
        let (tx, rx) = mpsc::sync_channel(1);
        let bytes = bytes.to_vec();
        let job: Job = Box::new(move || {
            hasher.update(&bytes);
            let _ = tx.send(hasher);
        });
        if let Err(job) = offer(job) {
            job();
        }
        self.away = Some(rx);
        Some(())
    }

    /// Hashes `bytes` after what came before, here.
    pub fn update_here(&mut self, bytes: &[u8]) -> Option<()> {
        let mut hasher = self.take()?;
        hasher.update(bytes);
        self.here = Some(hasher);
        Some(())
    }

    /// The state with every piece hashed into it; `None` when it was lost.
    pub fn finish(mut self) -> Option<Sha256> {
        self.take()
    }

    fn take(&mut self) -> Option<Sha256> {
        if let Some(hasher) = self.here.take() {
            return Some(hasher);
        }
        let away = self.away.take()?;
        match look_for(LOOKS, &away) {
            Ok(hasher) => Some(hasher),
            Err(mpsc::TryRecvError::Empty) => away.recv().ok(),
            Err(mpsc::TryRecvError::Disconnected) => None,
        }
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

    /// `pieces` hashed through a `Running` whose pool is `offer`.
    fn running(pieces: &[Vec<u8>], offer: impl Fn(Job) -> Result<(), Job>) -> Option<[u8; 32]> {
        let mut running = Running::new(Sha256::new());
        for piece in pieces {
            running.update(piece, &offer)?;
        }
        running.finish().map(Sha256::finalize)
    }

    #[test]
    fn the_running_hash_is_the_pieces_in_order_whichever_thread_hashed_them_and_a_lost_state_is_said() {
        let pieces = vec![vec![1u8; ASIDE_MIN], b"small".to_vec(), vec![2u8; ASIDE_MIN * 2 + 1], vec![3u8; 9]];
        let whole = Sha256::digest(&pieces.concat());
        // A pool that runs each job on a thread of its own, later than asked.
        let threads = Mutex::new(Vec::new());
        let later = |job: Job| {
            threads.lock().unwrap().push(std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(5));
                job()
            }));
            Ok(())
        };
        assert_eq!(running(&pieces, later), Some(whole));
        assert_eq!(threads.lock().unwrap().len(), 2, "the two large pieces went aside");
        // A pool that gives every job back: all hashed here.
        assert_eq!(running(&pieces, Err), Some(whole));
        // A pool that drops a job without running it: the state is lost, and said.
        let dropped = |job: Job| {
            drop(job);
            Ok(())
        };
        assert_eq!(running(&pieces, dropped), None);
    }
}
