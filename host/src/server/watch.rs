//! A call whose host timeout its awaiting caller keeps: one thread runs the
//! whole call, its guest work included, and the caller (a session, on its
//! async runtime) answers in the call's place when the call is still running
//! at its deadline plus the host grace, or at its cancellation plus the grace.
//!
//! Without this the call runs on a thread that hands its guest work to a
//! second one and waits for it with a timeout (`runtime::watchdog`): two
//! handoffs more a call. Here the call's thread is a worker of the runtime's
//! call pool, the guest runs on it (`runtime::kept_above`), and the caller
//! awaits the answer with a timer. Which of the two ends the call is settled
//! once, under a lock: the call's thread, when it finishes first, records
//! and answers; the caller, when it gives up first, records the timeout (or
//! the cancellation) and answers it, the call is counted as stuck until it
//! ends, and what it comes to is neither recorded nor answered. Either way
//! a call is answered once, after its record.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::record::Seen;
use super::{CallRequest, Server};
use crate::results::{Answer, Fault};
use crate::runtime::{CallFailure, CallSignal, Runtime, Slot};

/// How often a waiting caller looks for a cancellation, which has no wake-up
/// of its own.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// One call's host timeout, kept by its caller.
#[derive(Default)]
pub struct Watch {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    phase: Phase,
    due: Option<Due>,
    /// The call's place among the server's calls in flight: given back when
    /// the call is answered, by its thread or in its place (a call left
    /// blocked keeps only its instance slot).
    in_flight: Option<Slot>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Phase {
    #[default]
    Running,
    /// The call's thread is answering.
    Done,
    /// The caller answered in the call's place.
    Abandoned,
}

/// When the call must be answered, and what its record says of it so far.
#[derive(Clone)]
pub(super) struct Due {
    /// Where a call given up on is counted as stuck until it ends.
    pub runtime: Arc<Runtime>,
    pub tool: String,
    pub deadline: Instant,
    pub grace: Duration,
    pub wall_time: Duration,
    pub seen: Seen,
    pub started: Instant,
}

/// What a call's watch is armed with (`Server::arm_watch`).
pub(super) struct Arming<'s> {
    pub deadline: Instant,
    pub started: Instant,
    pub seen: &'s mut Seen,
    pub in_flight: Slot,
}

/// What a caller's wait came to.
pub enum Waited<T> {
    /// The call's thread answered (or ended without an answer: it panicked).
    Answered(Result<T, oneshot::error::RecvError>),
    /// The call was still running when the caller gave up: it answers the
    /// call with `Server::answer_abandoned`.
    Abandoned(Box<Abandoned>),
}

/// What a look at a call's watch found.
enum Look {
    /// The call is due: given up on, or already answering (`None`).
    Due(Option<Box<Abandoned>>),
    /// Not due: look again after this long.
    Nap(Duration),
}

/// A call its caller gave up on, and why.
pub struct Abandoned {
    due: Due,
    failure: CallFailure,
}

impl Watch {
    pub fn new() -> Arc<Watch> {
        Arc::new(Watch::default())
    }

    /// Called by the call's thread before its guest work starts: from now on
    /// the caller gives up at the deadline plus the grace.
    pub(super) fn arm(&self, due: Due, in_flight: Slot) {
        let mut inner = self.lock();
        (inner.due, inner.in_flight) = (Some(due), Some(in_flight));
    }

    /// Called by the call's thread when its work is done, before it records
    /// anything: whether the caller gave up on it (then it records and
    /// answers nothing, and is released from the stuck count); else what the
    /// call's record says, lent to the watch when it was armed, goes back
    /// into `seen`.
    pub(super) fn finish(&self, seen: &mut Seen) -> bool {
        let mut inner = self.lock();
        inner.in_flight = None;
        match (inner.phase, inner.due.take()) {
            (Phase::Abandoned, Some(due)) => {
                due.runtime.release_stuck(&due.tool);
                true
            }
            (Phase::Abandoned, None) => true,
            (_, due) => {
                inner.phase = Phase::Done;
                if let Some(due) = due {
                    *seen = due.seen;
                }
                false
            }
        }
    }

    /// Waits for the call's answer on `answer`, giving up at the deadline
    /// plus the grace (known once the call is armed), or at the request's
    /// cancellation plus the grace. A call not armed yet (its guest work has
    /// not started) is not given up on.
    pub async fn wait<T>(&self, mut answer: oneshot::Receiver<T>, signal: &CallSignal) -> Waited<T> {
        loop {
            let nap = match self.look(signal) {
                Look::Due(Some(abandoned)) => return Waited::Abandoned(abandoned),
                // The call's thread finished as the wait ended: its answer is on the way.
                Look::Due(None) => return Waited::Answered(answer.await),
                Look::Nap(nap) => nap,
            };
            tokio::select! {
                answered = &mut answer => return Waited::Answered(answered),
                () = tokio::time::sleep(nap) => {}
            }
        }
    }

    /// For a caller that looks now and then instead of awaiting the answer:
    /// the call given up on when it is due (the caller then answers it with
    /// `Server::answer_abandoned`), else how long to wait before looking again.
    pub fn give_up_if_due(&self, signal: &CallSignal) -> Result<Box<Abandoned>, Duration> {
        match self.look(signal) {
            Look::Due(Some(abandoned)) => Ok(abandoned),
            Look::Due(None) => Err(CANCEL_POLL),
            Look::Nap(nap) => Err(nap),
        }
    }

    /// Gives the call up if it is due: at the deadline plus the grace, or at
    /// the cancellation plus the grace, once armed. Not armed yet, or not
    /// due: a nap, woken now and then to see a cancellation, which has no
    /// wake-up of its own.
    fn look(&self, signal: &CallSignal) -> Look {
        let cancelled_at = signal.cancelled_at();
        let give_up = self.lock().due.as_ref().map(|due| {
            let from = cancelled_at.map_or(due.deadline, |at| at.min(due.deadline));
            from + due.grace
        });
        let now = Instant::now();
        match give_up {
            Some(at) if at <= now => Look::Due(self.abandon(cancelled_at.is_some()).map(Box::new)),
            Some(at) => Look::Nap((at - now).min(CANCEL_POLL)),
            None => Look::Nap(CANCEL_POLL),
        }
    }

    /// Whether the caller gave up on the call.
    pub(super) fn given_up(&self) -> bool {
        self.lock().phase == Phase::Abandoned
    }

    /// Gives up on the call unless its thread is already answering, and
    /// counts it as stuck (under the same lock as `finish`, which releases it).
    fn abandon(&self, cancelled: bool) -> Option<Abandoned> {
        let mut inner = self.lock();
        let due = match (inner.phase, &inner.due) {
            (Phase::Running, Some(due)) => due.clone(),
            _ => return None,
        };
        (inner.phase, inner.in_flight) = (Phase::Abandoned, None);
        let failure = match cancelled {
            true => CallFailure::Cancelled,
            false => CallFailure::HostTimeout { wall_time: due.wall_time },
        };
        due.runtime.hold_stuck(&due.tool, &failure);
        Some(Abandoned { due, failure })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for Watch {
    /// A call given up on whose thread ended without `finish` (it panicked)
    /// is no longer counted as stuck.
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let (Phase::Abandoned, Some(due)) = (inner.phase, inner.due.take()) {
            due.runtime.release_stuck(&due.tool);
        }
    }
}

impl Server {
    /// Runs `job` (a call whose caller keeps a `Watch`) on a thread of the
    /// runtime's call pool, where its guest work runs too.
    pub fn spawn_call(&self, job: crate::runtime::Job) -> std::io::Result<()> {
        self.runtime.spawn(job)
    }

    /// Records and answers a call its caller gave up on (see `Watch::wait`),
    /// counting it as stuck until its thread ends. Blocks (the record).
    pub fn answer_abandoned(&self, request: &CallRequest<'_>, abandoned: Box<Abandoned>) -> Result<Answer, Fault> {
        let Abandoned { due, failure } = *abandoned;
        self.record(request, due.seen, Ok(Answer::Failed(failure.into())), due.started)
    }

    /// What a process does before it exits with a call it gave up on still
    /// running (`cordon call`, whose keeper ends the process): its own
    /// uploads directory is removed, as when a server stops.
    pub fn before_exit(&self) {
        self.uploads.close();
    }

    /// Arms `request`'s watch, if its caller keeps one, before the guest
    /// work that may not return in time; the call's slot among the calls in
    /// flight goes with it (else it is given back to be held here), and what
    /// its record says so far is lent to it (`Watch::finish` gives it back).
    pub(super) fn arm_watch(&self, request: &CallRequest<'_>, arming: Arming<'_>) -> Option<Slot> {
        let Arming { deadline, started, seen, in_flight } = arming;
        let Some(watch) = request.watch else { return Some(in_flight) };
        let due = Due {
            runtime: Arc::clone(&self.runtime),
            tool: request.name().to_string(),
            deadline,
            grace: self.limits.call.host_grace,
            wall_time: self.limits.call.wall_time,
            seen: std::mem::take(seen),
            started,
        };
        watch.arm(due, in_flight);
        None
    }

    /// Whether `request`'s caller gave up on it (then its answer goes
    /// nowhere and nothing is recorded: the caller recorded the timeout).
    pub(super) fn was_abandoned(&self, request: &CallRequest<'_>, seen: &mut Seen) -> bool {
        request.watch.is_some_and(|watch| watch.finish(seen))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Slots;

    const LONG: Duration = Duration::from_secs(60);

    fn runtime() -> Arc<Runtime> {
        let limits = crate::limits::Limits::default();
        let capacity = crate::runtime::Capacity { parked: 0, in_flight: 2, shards: 1, memory: usize::MAX };
        Arc::new(Runtime::new(limits.call, capacity, None, Arc::new(crate::policy::Judge::none())).unwrap())
    }

    /// A watch armed for a call of `t` due in `due`, holding one of `calls`.
    fn armed(runtime: &Arc<Runtime>, calls: &Slots, due: Duration) -> Arc<Watch> {
        let watch = Watch::new();
        let now = Instant::now();
        let due = Due {
            runtime: Arc::clone(runtime),
            tool: "t".into(),
            deadline: now + due,
            grace: Duration::from_millis(10),
            wall_time: due,
            seen: Seen::default(),
            started: now,
        };
        watch.arm(due, calls.free().unwrap());
        watch
    }

    /// The stuck calls of `t` now (a hold counts one more, then is released).
    fn stuck(runtime: &Runtime) -> usize {
        let now = runtime.hold_stuck("t", &CallFailure::Cancelled) - 1;
        runtime.release_stuck("t");
        now
    }

    #[tokio::test]
    async fn an_answer_in_time_is_the_calls_own_and_gives_its_slot_back() {
        let (runtime, calls) = (runtime(), Slots::new("calls", 1));
        let watch = armed(&runtime, &calls, LONG);
        assert!(calls.free().is_err(), "the call holds the one slot");
        let (tx, rx) = oneshot::channel();
        let thread = std::thread::spawn({
            let watch = Arc::clone(&watch);
            move || {
                let abandoned = watch.finish(&mut Seen::default());
                tx.send(42).unwrap();
                abandoned
            }
        });
        assert!(matches!(watch.wait(rx, &CallSignal::new()).await, Waited::Answered(Ok(42))));
        assert!(!thread.join().unwrap(), "not given up on");
        assert!(calls.free().is_ok(), "its slot is back");
        assert_eq!(stuck(&runtime), 0);
    }

    #[tokio::test]
    async fn a_call_not_armed_yet_is_waited_for_without_a_deadline() {
        let watch = Watch::new();
        let (tx, rx) = oneshot::channel();
        tx.send(7).unwrap();
        assert!(matches!(watch.wait(rx, &CallSignal::new()).await, Waited::Answered(Ok(7))));
    }

    #[tokio::test]
    async fn a_call_past_its_deadline_is_given_up_counted_stuck_until_it_ends_and_keeps_no_call_slot() {
        let (runtime, calls) = (runtime(), Slots::new("calls", 1));
        let watch = armed(&runtime, &calls, Duration::from_millis(30));
        let (_tx, rx) = oneshot::channel::<u32>();
        let started = Instant::now();
        let Waited::Abandoned(abandoned) = watch.wait(rx, &CallSignal::new()).await else {
            panic!("a call that never answers is given up on")
        };
        assert!(started.elapsed() >= Duration::from_millis(30), "not before the deadline");
        assert_eq!(abandoned.failure, CallFailure::HostTimeout { wall_time: Duration::from_millis(30) });
        assert_eq!(stuck(&runtime), 1, "counted as stuck");
        assert!(calls.free().is_ok(), "a call given up on keeps no slot among the calls in flight");
        assert!(watch.finish(&mut Seen::default()), "its thread, ending late, is told it was given up on");
        assert_eq!(stuck(&runtime), 0, "and is no longer counted");
    }

    #[tokio::test]
    async fn a_call_given_up_on_whose_thread_ends_without_finishing_is_no_longer_counted_stuck() {
        let (runtime, calls) = (runtime(), Slots::new("calls", 1));
        let watch = armed(&runtime, &calls, Duration::ZERO);
        let (_tx, rx) = oneshot::channel::<u32>();
        assert!(matches!(watch.wait(rx, &CallSignal::new()).await, Waited::Abandoned(_)));
        assert_eq!(stuck(&runtime), 1);
        drop(watch);
        assert_eq!(stuck(&runtime), 0, "released when the last holder lets go");
    }

    #[tokio::test]
    async fn a_cancelled_call_is_given_up_after_the_grace_not_the_deadline() {
        let (runtime, calls) = (runtime(), Slots::new("calls", 1));
        let watch = armed(&runtime, &calls, LONG);
        let signal = CallSignal::new();
        signal.cancel();
        let (_tx, rx) = oneshot::channel::<u32>();
        let started = Instant::now();
        let Waited::Abandoned(abandoned) = watch.wait(rx, &signal).await else { panic!("given up on") };
        assert!(started.elapsed() < LONG);
        assert_eq!(abandoned.failure, CallFailure::Cancelled);
        assert!(watch.finish(&mut Seen::default()));
    }

    #[tokio::test]
    async fn a_call_that_finished_as_the_wait_ended_is_answered_by_its_thread() {
        let (runtime, calls) = (runtime(), Slots::new("calls", 1));
        let watch = armed(&runtime, &calls, Duration::ZERO);
        assert!(!watch.finish(&mut Seen::default()), "its thread is answering");
        let (tx, rx) = oneshot::channel();
        tx.send(1).unwrap();
        // Past the deadline, yet not given up on: the answer is on its way.
        assert!(watch.abandon(false).is_none());
        assert!(matches!(watch.wait(rx, &CallSignal::new()).await, Waited::Answered(Ok(1))));
        assert_eq!(stuck(&runtime), 0);
    }
}
