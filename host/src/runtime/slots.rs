//! Slots: the host's own count of what may exist at once, handed out as
//! `Slot`s that give themselves back when dropped.
//!
//! wasmtime's pooling allocator holds a fixed number of component instances
//! (with the memories, tables and stacks each may need); asked for one more, it
//! traps. So the runtime gives every store it creates a slot of its `Slots` —
//! a call being answered, a stream parked between pages, a call left blocked in
//! a host call past its deadline, a tool being loaded — and the slot comes back
//! only once the store is gone. When no slot is free, the registered `Reclaim`
//! (the pager's parked streams) gives up its least recently used stream, whose
//! cursor still resumes by reopening the tool; when nothing can be given up,
//! the caller waits for a slot until its deadline and is then answered `Busy`,
//! never a trap. The server bounds its calls in flight with a `Slots` too,
//! one without a reclaimer.

use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use super::failure::CallFailure;
use super::signal::CallSignal;

/// How often a waiting caller looks for a cancellation.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// Something that can free a slot by giving up work nobody is waiting for.
pub trait Reclaim: Send + Sync {
    /// Gives up one holder of a slot (the least recently used first) and drops
    /// it; false when there is nothing to give up.
    fn give_up_one(&self) -> bool;
}

/// A fixed number of slots.
pub struct Slots {
    inner: Arc<Inner>,
}

struct Inner {
    /// The limit the slots stand for, named in a `Busy` answer.
    limit: &'static str,
    capacity: usize,
    used: Mutex<usize>,
    /// Callers waiting for a slot now.
    waiting: std::sync::atomic::AtomicUsize,
    freed: Condvar,
    reclaim: Mutex<Option<Weak<dyn Reclaim>>>,
}

/// A caller counted as waiting until dropped.
struct Waiting<'a>(&'a Inner);

impl Waiting<'_> {
    fn new(inner: &Inner) -> Waiting<'_> {
        inner.waiting.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Waiting(inner)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// One slot, held until dropped.
pub struct Slot {
    inner: Arc<Inner>,
}

impl Slots {
    /// `capacity` slots standing for the configured limit `limit`.
    pub fn new(limit: &'static str, capacity: usize) -> Slots {
        Slots {
            inner: Arc::new(Inner {
                limit,
                capacity,
                used: Mutex::new(0),
                waiting: std::sync::atomic::AtomicUsize::new(0),
                freed: Condvar::new(),
                reclaim: Mutex::new(None),
            }),
        }
    }

    /// The slots held now, how many there are, and how many callers wait for one.
    pub fn usage(&self) -> (usize, usize, usize) {
        let waiting = self.inner.waiting.load(std::sync::atomic::Ordering::Relaxed);
        (*self.inner.used.lock().expect("slots lock"), self.inner.capacity, waiting)
    }

    /// Lets `reclaim` free slots when none is free (replacing any earlier one).
    pub fn reclaim_with(&self, reclaim: Weak<dyn Reclaim>) {
        *self.inner.reclaim.lock().expect("reclaim lock") = Some(reclaim);
    }

    /// Slots held now.
    #[cfg(test)]
    fn used(&self) -> usize {
        *self.inner.used.lock().expect("slots lock")
    }

    /// A free slot, else one the reclaimer frees, else the first one given back
    /// before `deadline`; `Busy` past it, `Cancelled` once `signal` is.
    pub fn acquire(&self, deadline: Instant, signal: &CallSignal) -> Result<Slot, CallFailure> {
        // Counted as waiting from the first wait on until it returns.
        let mut waiting = None;
        loop {
            if let Some(slot) = self.try_acquire() {
                return Ok(slot);
            }
            // Outside the lock: what is given up gives its slot back on drop.
            if self.reclaim_one() {
                continue;
            }
            if signal.is_cancelled() {
                return Err(CallFailure::Cancelled);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(CallFailure::Busy { limit: self.inner.limit, capacity: self.inner.capacity });
            }
            let used = self.inner.used.lock().expect("slots lock");
            if *used >= self.inner.capacity {
                waiting.get_or_insert_with(|| Waiting::new(&self.inner));
                let wait = (deadline - now).min(CANCEL_POLL);
                drop(self.inner.freed.wait_timeout(used, wait).expect("slots lock"));
            }
        }
    }

    /// A free slot now, or `Busy`: nothing parked is given up for it (for
    /// work that may wait, such as a shard run ahead).
    pub fn free(&self) -> Result<Slot, CallFailure> {
        self.try_acquire().ok_or(CallFailure::Busy { limit: self.inner.limit, capacity: self.inner.capacity })
    }

    /// A free slot, if there is one.
    fn try_acquire(&self) -> Option<Slot> {
        let mut used = self.inner.used.lock().expect("slots lock");
        if *used >= self.inner.capacity {
            return None;
        }
        *used += 1;
        Some(Slot { inner: Arc::clone(&self.inner) })
    }

    fn reclaim_one(&self) -> bool {
        let reclaim = self.inner.reclaim.lock().expect("reclaim lock").as_ref().and_then(Weak::upgrade);
        reclaim.is_some_and(|r| r.give_up_one())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        *self.inner.used.lock().expect("slots lock") -= 1;
        self.inner.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn soon(ms: u64) -> Instant {
        Instant::now() + Duration::from_millis(ms)
    }

    #[test]
    fn slots_are_handed_out_up_to_the_capacity_and_come_back_on_drop() {
        let slots = Slots::new("max_calls_in_flight", 2);
        let (a, b) = (slots.try_acquire().unwrap(), slots.try_acquire().unwrap());
        assert!(slots.try_acquire().is_none());
        assert_eq!(slots.used(), 2);
        drop(a);
        let c = slots.acquire(soon(10), &CallSignal::new()).unwrap();
        drop((b, c));
        assert_eq!(slots.used(), 0);
    }

    /// Holds slots the way parked streams do, and gives up the oldest first.
    struct Parked {
        held: Mutex<Vec<Slot>>,
        given_up: AtomicUsize,
    }

    impl Reclaim for Parked {
        fn give_up_one(&self) -> bool {
            let mut held = self.held.lock().unwrap();
            if held.is_empty() {
                return false;
            }
            let oldest = held.remove(0);
            drop(held);
            drop(oldest);
            self.given_up.fetch_add(1, Ordering::SeqCst);
            true
        }
    }

    #[test]
    fn a_full_pool_gives_up_a_parked_holder_before_anyone_waits() {
        let slots = Slots::new("instance_slots", 3);
        let parked = Arc::new(Parked { held: Mutex::new(Vec::new()), given_up: AtomicUsize::new(0) });
        parked.held.lock().unwrap().extend([slots.try_acquire().unwrap(), slots.try_acquire().unwrap()]);
        let weak: Weak<dyn Reclaim> = Arc::downgrade(&(Arc::clone(&parked) as Arc<dyn Reclaim>));
        slots.reclaim_with(weak);
        let running = slots.acquire(soon(0), &CallSignal::new()).expect("a free slot");
        assert_eq!(parked.given_up.load(Ordering::SeqCst), 0, "a free slot is taken first");
        let second = slots.acquire(soon(0), &CallSignal::new()).expect("a parked holder's slot");
        let third = slots.acquire(soon(0), &CallSignal::new()).expect("the other parked holder's slot");
        assert_eq!(parked.given_up.load(Ordering::SeqCst), 2);
        let refused = slots.acquire(soon(30), &CallSignal::new()).err().expect("nothing left to give up");
        assert_eq!(refused, CallFailure::Busy { limit: "instance_slots", capacity: 3 });
        drop((running, second, third));
    }

    #[test]
    fn a_waiter_gets_the_first_slot_given_back_before_its_deadline() {
        let slots = Slots::new("max_calls_in_flight", 1);
        let held = slots.try_acquire().unwrap();
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            drop(held);
        });
        let slot = slots.acquire(soon(60_000), &CallSignal::new()).expect("the slot given back");
        releaser.join().unwrap();
        drop(slot);
    }

    #[test]
    fn a_full_pool_answers_busy_at_the_deadline_and_a_cancelled_waiter_at_once() {
        let slots = Slots::new("max_calls_in_flight", 1);
        let _held = slots.try_acquire().unwrap();
        let started = Instant::now();
        let busy = slots.acquire(soon(40), &CallSignal::new()).err().unwrap();
        assert_eq!(busy, CallFailure::Busy { limit: "max_calls_in_flight", capacity: 1 });
        assert!(started.elapsed() >= Duration::from_millis(40), "it waited until its deadline");
        let signal = CallSignal::new();
        signal.cancel();
        assert_eq!(slots.acquire(soon(60_000), &signal).err(), Some(CallFailure::Cancelled));
    }
}
