//! The linear memory every tool instance of the process holds together, held
//! to the server's budget (`max_memory_mib`).
//!
//! Each call's limiter takes what its memories grow by from the budget and
//! gives it all back when its store is dropped. A growth that would pass the
//! budget first makes the registered `Reclaim` (the pager's parked streams)
//! give up its least recently used stream, whose memory comes back as its store
//! is dropped, and tries again; when nothing is left to give up, the growth is
//! refused and the call ends with `limit_exceeded` naming the budget. So a
//! client that leaves many expensive calls unfinished costs other calls nothing
//! but the time to reopen their streams.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Weak};

use super::slots::Reclaim;

/// The memory budget of all instances together.
pub struct MemoryBudget {
    max: usize,
    used: AtomicUsize,
    reclaim: Mutex<Option<Weak<dyn Reclaim>>>,
}

impl MemoryBudget {
    /// A budget of `max` bytes (`usize::MAX`: none).
    pub fn new(max: usize) -> MemoryBudget {
        MemoryBudget { max, used: AtomicUsize::new(0), reclaim: Mutex::new(None) }
    }

    /// Lets `reclaim` free memory when the budget is reached (replacing any earlier one).
    pub fn reclaim_with(&self, reclaim: Weak<dyn Reclaim>) {
        *self.reclaim.lock().expect("reclaim lock") = Some(reclaim);
    }

    /// The budget in bytes.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Bytes held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Takes `bytes` more, giving up parked streams while they would pass the
    /// budget; false (nothing taken) when nothing is left to give up.
    pub fn take(&self, bytes: usize) -> bool {
        let mut given_up = 0usize;
        loop {
            let taken = self.used.fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&total| total <= self.max)
            });
            if taken.is_ok() {
                if given_up > 0 {
                    tracing::info!(
                        given_up,
                        used = self.used(),
                        budget = self.max,
                        "the tool instances reached their memory budget (max_memory_mib): gave up parked streams, \
                         least recently used first"
                    );
                }
                return true;
            }
            if !self.reclaim_one() {
                tracing::warn!(
                    asked = bytes,
                    used = self.used(),
                    budget = self.max,
                    "the tool instances reached their memory budget (max_memory_mib) with nothing parked to give up: \
                     a growth was refused"
                );
                return false;
            }
            given_up += 1;
        }
    }

    /// Gives back `bytes` taken earlier.
    pub fn give_back(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
    }

    fn reclaim_one(&self) -> bool {
        let reclaim = self.reclaim.lock().expect("reclaim lock").as_ref().and_then(Weak::upgrade);
        reclaim.is_some_and(|r| r.give_up_one())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// Parked "streams" of fixed sizes, given back to the budget when given up.
    struct Parked {
        budget: Arc<MemoryBudget>,
        sizes: Mutex<Vec<usize>>,
        given_up: AtomicUsize,
    }

    impl Reclaim for Parked {
        fn give_up_one(&self) -> bool {
            let Some(size) = self.sizes.lock().unwrap().pop() else { return false };
            self.budget.give_back(size);
            self.given_up.fetch_add(1, Ordering::Relaxed);
            true
        }
    }

    #[test]
    fn growth_past_the_budget_gives_up_parked_memory_first_and_is_refused_when_none_is_left() {
        let budget = Arc::new(MemoryBudget::new(100));
        assert!(budget.take(30) && budget.take(30));
        let parked =
            Arc::new(Parked { budget: Arc::clone(&budget), sizes: Mutex::new(vec![30, 30]), given_up: 0.into() });
        budget.reclaim_with(Arc::downgrade(&(Arc::clone(&parked) as Arc<dyn Reclaim>)));
        assert!(budget.take(70), "one parked stream given up makes room");
        assert_eq!((parked.given_up.load(Ordering::Relaxed), budget.used()), (1, 100));
        assert!(!budget.take(31), "the second is not enough: refused");
        assert_eq!(budget.used(), 70, "what was refused was not taken");
        budget.give_back(70);
        assert_eq!(budget.used(), 0);
        assert!(MemoryBudget::new(usize::MAX).take(usize::MAX), "no budget: anything fits");
    }
}
