//! The host timeout: a request's guest work runs on a thread of its own, and
//! the caller waits for it only until the request's deadline plus a grace.
//!
//! The epoch deadline stops a guest while it runs wasm, but not while it is
//! blocked inside a host call (a WASI poll on a long timer, say): wasmtime
//! checks the epoch only in wasm code. Such a call is answered with
//! `HostTimeout` at the deadline plus the grace, and its thread is left to
//! finish: when the host call returns the guest is back in wasm, past its
//! deadline, and the epoch stops it at the next tick; its store is dropped
//! with the thread. A thread left that way is counted against its tool, and a
//! tool with `MAX_STUCK_PER_TOOL` of them gets no new calls until one ends, so a
//! tool that always blocks cannot hold every instance slot of the pool.
//!
//! A caller that keeps the host timeout itself (a session, which awaits the
//! call's thread with a timer and answers in its place: `server::watch`; or
//! `cordon call --all`'s keeper) runs the call with `kept_above`: the guest
//! work then runs on that same thread, one handoff to a thread and back fewer
//! a call, and the count of calls left stuck is kept with `hold` and `release`.
//!
//! Threads are reused (spawning one costs ~30 µs, a handoff to an idle one
//! ~3 µs): a worker that finishes a call waits for the next one, up to
//! `MAX_IDLE_WORKERS` of them; a worker left stuck rejoins when it ends.
//!
//! A worker that finished a call looks for the next one for a short while
//! (`WORKER_LOOKS`) before it sleeps, and a caller that handed its call to a
//! worker that was looking looks for the result (`CALLER_LOOKS`) the same
//! way: on a virtual machine a thread woken on an idle processor starts late
//! (the processor was halted), which cost `cordon call --all` about 110 µs of
//! wall time a page. A looking thread yields the processor between looks. A
//! caller whose worker was asleep does not look: the woken worker is often
//! put on the caller's own processor, where the two would take turns.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use super::failure::{CallFailure, HostFault};
use super::signal::CallSignal;

/// Calls of one tool that may be left blocked in host calls at once.
pub const MAX_STUCK_PER_TOOL: usize = 4;

/// How often a waiting caller looks for a cancellation.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// Idle worker threads kept for the next calls.
const MAX_IDLE_WORKERS: usize = 16;

/// How long a worker that finished a call looks for the next one before it
/// sleeps: a client making small calls one after another asks again about
/// this soon (100 µs was too short for one MCP client's small reads over stdio).
const WORKER_LOOKS: Duration = Duration::from_micros(300);

/// How long a caller looks for its call's result before it sleeps: most
/// pages and small calls are done by then.
const CALLER_LOOKS: Duration = Duration::from_millis(1);

/// How long a worker a caller claimed looks for that caller's job, which is
/// sent right after the claim, before it sleeps after all.
const CLAIMED_LOOKS: Duration = Duration::from_millis(10);

/// What comes on `rx` within `within`, looked for again after each yield of
/// the processor: `Empty` when the time is up, `Disconnected` at once when
/// nothing more can come.
pub fn look_for<T>(within: Duration, rx: &mpsc::Receiver<T>) -> Result<T, mpsc::TryRecvError> {
    let until = Instant::now() + within;
    loop {
        match rx.try_recv() {
            Err(mpsc::TryRecvError::Empty) if Instant::now() < until => thread::yield_now(),
            found => return found,
        }
    }
}

thread_local! {
    /// Set while a thread runs work whose host timeout its caller keeps.
    static KEPT_ABOVE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `work` on this thread so that the guest work it reaches runs here
/// too, not on a worker of its own: whoever awaits this thread keeps the host
/// timeout (it answers in the call's place at the deadline plus the grace,
/// and counts the call as stuck with `Runtime::hold_stuck`).
pub fn kept_above<T>(work: impl FnOnce() -> T) -> T {
    /// Clears the mark however `work` ends.
    struct Unmark(bool);
    impl Drop for Unmark {
        fn drop(&mut self) {
            KEPT_ABOVE.with(|kept| kept.set(self.0));
        }
    }
    let _unmark = Unmark(KEPT_ABOVE.with(|kept| kept.replace(true)));
    work()
}

/// Runs requests' guest work with a host timeout; counts the calls left stuck.
#[derive(Default)]
pub(super) struct Watchdog {
    stuck: Arc<Stuck>,
    workers: Arc<Workers>,
}

/// The calls of each tool left blocked in host calls, answered without them.
#[derive(Default)]
pub(super) struct Stuck(Mutex<HashMap<String, usize>>);

impl Stuck {
    /// Refuses a call of a tool with `MAX_STUCK_PER_TOOL` calls left stuck.
    fn admit(&self, tool: &str) -> Result<(), CallFailure> {
        let stuck_now = self.0.lock().expect("stuck lock").get(tool).copied().unwrap_or(0);
        match stuck_now >= MAX_STUCK_PER_TOOL {
            true => Err(CallFailure::Stuck { tool: tool.to_string(), calls: stuck_now }),
            false => Ok(()),
        }
    }

    /// Counts a call of `tool` given up on with `failure` (a timeout or a
    /// cancellation) until `release`, and says so; returns how many are.
    pub(super) fn hold(&self, tool: &str, failure: &CallFailure) -> usize {
        let mut stuck = self.0.lock().expect("stuck lock");
        let count = stuck.entry(tool.to_string()).or_insert(0);
        *count += 1;
        match failure {
            CallFailure::Cancelled => {
                tracing::warn!(tool, stuck = *count, "cancelled call blocked in a host call; let go of it");
            }
            _ => tracing::warn!(
                tool,
                stuck = *count,
                "call blocked in a host call past its deadline; answered without it"
            ),
        }
        *count
    }

    /// A call counted by `hold` has ended.
    pub(super) fn release(&self, tool: &str) {
        if let Some(n) = self.0.lock().expect("stuck lock").get_mut(tool) {
            *n = n.saturating_sub(1);
        }
        tracing::info!(tool, "a call answered without its tool has ended");
    }

    #[cfg(test)]
    fn of(&self, tool: &str) -> Option<usize> {
        self.0.lock().unwrap().get(tool).copied()
    }
}

/// Work for a thread of the call pool.
pub type Job = Box<dyn FnOnce() + Send>;

/// A job for a worker, with the way back to it.
struct Ticket {
    job: Job,
    home: Home,
}

/// The way to a worker, which travels with each of its jobs and goes back in
/// the idle list once the job is done: the sender of its channel, and whether
/// it is looking for a job now (running, not asleep). A caller that takes a
/// looking worker clears the flag, claiming it: the worker then keeps looking
/// until the job comes rather than go to sleep.
#[derive(Clone)]
struct Home {
    inbox: mpsc::Sender<Ticket>,
    looking: Arc<AtomicBool>,
}

/// Threads that run calls, reused. A worker ends when the idle list is full
/// or gone (the runtime was dropped).
#[derive(Default)]
struct Workers {
    /// The idle workers, the last to finish last.
    idle: Mutex<Vec<Home>>,
    /// The workers running now, idle or not.
    live: AtomicUsize,
}

/// Counts a worker out of `Workers::live` however its thread ends.
struct Live(std::sync::Weak<Workers>);

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(workers) = self.0.upgrade() {
            workers.live.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Workers {
    /// Runs `job` on an idle worker, or on a new one; says whether that
    /// worker was looking for it (so it runs on a processor of its own).
    fn execute(self: &Arc<Self>, job: Job) -> std::io::Result<bool> {
        match self.idle_one(job) {
            Ok(looking) => Ok(looking),
            Err(job) => self.start(job).map(|()| false).map_err(|(e, _)| e),
        }
    }

    /// Runs `job` on an idle worker, or on a new one while fewer than `room`
    /// are running; else (also when no thread can be started) gives it back.
    fn offer(self: &Arc<Self>, job: Job, room: usize) -> Result<(), Job> {
        match self.idle_one(job) {
            Ok(_) => Ok(()),
            Err(job) if self.live.load(Ordering::Acquire) >= room => Err(job),
            Err(job) => self.start(job).map_err(|(e, job)| {
                tracing::debug!("no worker for work offered: {e}");
                job
            }),
        }
    }

    /// Starts a worker with `job` as its first; else gives it back with the error.
    fn start(self: &Arc<Self>, job: Job) -> Result<(), (std::io::Error, Job)> {
        let (inbox, mine) = mpsc::channel::<Ticket>();
        let looking = Arc::new(AtomicBool::new(false));
        let home = Home { inbox, looking: Arc::clone(&looking) };
        let workers = Arc::downgrade(self);
        self.live.fetch_add(1, Ordering::AcqRel);
        let live = Live(workers.clone());
        let started = thread::Builder::new().name("cordon-call".into()).spawn(move || {
            let _live = live;
            while let Ok(Ticket { job, home }) = next_ticket(&mine, &looking) {
                job();
                let Some(workers) = workers.upgrade() else { return };
                let mut idle = workers.idle.lock().expect("idle lock");
                if idle.len() >= MAX_IDLE_WORKERS {
                    return;
                }
                looking.store(true, Ordering::Release);
                idle.push(home);
            }
        });
        // A thread not started drops its closure, and its count with it.
        if let Err(e) = started {
            return Err((e, job));
        }
        // The new worker waits for its first job: its receiver is there.
        home.inbox.send(Ticket { job, home: home.clone() }).expect("the new worker waits");
        Ok(())
    }

    /// Runs `job` on an idle worker if there is one (saying whether it was
    /// looking for it); else gives it back.
    fn idle_one(&self, mut job: Job) -> Result<bool, Job> {
        loop {
            let Some(home) = self.idle.lock().expect("idle lock").pop() else { return Err(job) };
            let looking = home.looking.swap(false, Ordering::AcqRel);
            match home.inbox.send(Ticket { job, home: home.clone() }) {
                Ok(()) => return Ok(looking),
                // That worker is gone (a job panicked): try another.
                Err(mpsc::SendError(ticket)) => job = ticket.job,
            }
        }
    }
}

/// A worker's next job: looked for a while (its `looking` flag was set when
/// it went back in the idle list; a new worker's job is already there), then
/// waited for asleep, unless a caller claimed it meanwhile (cleared the flag):
/// that caller's job is on its way, and is looked for until it comes.
fn next_ticket(mine: &mpsc::Receiver<Ticket>, looking: &AtomicBool) -> Result<Ticket, mpsc::RecvError> {
    let looked = look_for(WORKER_LOOKS, mine);
    let unclaimed = looking.swap(false, Ordering::AcqRel);
    let looked = match looked {
        Err(mpsc::TryRecvError::Empty) if !unclaimed => look_for(CLAIMED_LOOKS, mine),
        other => other,
    };
    match looked {
        Ok(ticket) => Ok(ticket),
        Err(mpsc::TryRecvError::Disconnected) => Err(mpsc::RecvError),
        Err(mpsc::TryRecvError::Empty) => mine.recv(),
    }
}

/// When a caller stops waiting for its call.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bounds {
    /// The limit the deadline comes from, to name in the answer.
    pub wall_time: Duration,
    /// When the request must be answered.
    pub deadline: Instant,
    /// How long past the deadline (or a cancellation) the caller still waits.
    pub grace: Duration,
}

/// Where one call's worker is, as the caller and the worker agree under a lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running,
    /// The worker finished; its result is (being) sent.
    Done,
    /// The caller gave up waiting; the worker is counted as stuck.
    Abandoned,
}

impl Watchdog {
    /// Runs `job` on a worker of the pool (a looking one if there is).
    pub(super) fn spawn(&self, job: Job) -> std::io::Result<()> {
        self.workers.execute(job).map(|_| ())
    }

    /// Runs `job` on an idle worker, or a new one while `room` allows (`Workers::offer`).
    pub(super) fn offer(&self, job: Job, room: usize) -> Result<(), Job> {
        self.workers.offer(job, room)
    }

    /// The calls left stuck, for a caller that keeps the host timeout
    /// itself (see `kept_above`).
    pub(super) fn stuck(&self) -> &Stuck {
        &self.stuck
    }

    /// Runs `work` here when the caller keeps the host timeout (`kept_above`),
    /// else on a worker as `run` does.
    pub(super) fn bounded<T: Send + 'static>(
        &self,
        tool: &str,
        bounds: Bounds,
        signal: &CallSignal,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, CallFailure> {
        if !KEPT_ABOVE.with(Cell::get) {
            return self.run(tool, bounds, signal, work);
        }
        self.stuck.admit(tool)?;
        // A panic is a call that did not answer, as on a worker of its own:
        // the call goes on to its record.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).map_err(|_| CallFailure::Host(HostFault::NoAnswer))
    }

    /// Runs `work` on a worker thread and waits for it until `grace` past its
    /// `deadline`, or past the request's cancellation; then answers
    /// `HostTimeout` (the call's limit is `wall_time`) or `Cancelled` and leaves
    /// the thread to finish on its own.
    pub(super) fn run<T: Send + 'static>(
        &self,
        tool: &str,
        bounds: Bounds,
        signal: &CallSignal,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, CallFailure> {
        let Bounds { wall_time, deadline, grace } = bounds;
        self.stuck.admit(tool)?;
        let phase = Arc::new(Mutex::new(Phase::Running));
        let (tx, rx) = mpsc::sync_channel(1);
        let worker = {
            let (phase, stuck, tool) = (Arc::clone(&phase), Arc::clone(&self.stuck), tool.to_string());
            move || {
                let result = work();
                let mut phase = phase.lock().expect("phase lock");
                if *phase == Phase::Abandoned {
                    stuck.release(&tool);
                    return;
                }
                *phase = Phase::Done;
                drop(phase);
                let _ = tx.send(result);
            }
        };
        let looked_for = self
            .workers
            .execute(Box::new(worker))
            .map_err(|e| CallFailure::Host(HostFault::Thread { reason: e.to_string() }))?;
        // Only a worker that was looking runs on a processor of its own: one
        // woken from its sleep is often put on the caller's, where a looking
        // caller would take turns with it.
        // Never past the time the caller gives up at.
        let give_up = signal.cancelled_at().map_or(deadline, |at| at.min(deadline)) + grace;
        let within = CALLER_LOOKS.min(give_up.saturating_duration_since(Instant::now()));
        let looked = match looked_for {
            true => look_for(within, &rx),
            false => Err(mpsc::TryRecvError::Empty),
        };
        match looked {
            Ok(result) => return Ok(result),
            Err(mpsc::TryRecvError::Disconnected) => return Err(CallFailure::Host(HostFault::NoAnswer)),
            Err(mpsc::TryRecvError::Empty) => {}
        }
        loop {
            let give_up = signal.cancelled_at().map_or(deadline, |at| at.min(deadline)) + grace;
            let now = Instant::now();
            if now >= give_up {
                break;
            }
            // Woken now and then to see a cancellation, which has no wake-up of its own.
            match rx.recv_timeout((give_up - now).min(CANCEL_POLL)) {
                Ok(result) => return Ok(result),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(CallFailure::Host(HostFault::NoAnswer));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
        let mut phase = phase.lock().expect("phase lock");
        if *phase == Phase::Done {
            drop(phase);
            // Finished as the wait ended: its result is on the way.
            return rx.recv().map_err(|_| CallFailure::Host(HostFault::NoAnswer));
        }
        // Counted under the phase lock, which the worker takes before it
        // releases the count.
        *phase = Phase::Abandoned;
        let failure = match signal.is_cancelled() {
            true => CallFailure::Cancelled,
            false => CallFailure::HostTimeout { wall_time },
        };
        self.stuck.hold(tool, &failure);
        Err(failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHORT: Duration = Duration::from_millis(50);
    const LONG: Duration = Duration::from_secs(60);

    /// Runs `work` due in `due` (grace 10 ms) for a request that is not cancelled.
    fn run<T: Send + 'static>(
        watchdog: &Watchdog,
        due: Duration,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, CallFailure> {
        run_for(watchdog, "t", due, &CallSignal::new(), work)
    }

    fn run_for<T: Send + 'static>(
        watchdog: &Watchdog,
        tool: &str,
        due: Duration,
        signal: &CallSignal,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, CallFailure> {
        let bounds = Bounds { wall_time: due, deadline: Instant::now() + due, grace: Duration::from_millis(10) };
        watchdog.run(tool, bounds, signal, work)
    }

    fn wait_for(what: &str, done: impl Fn() -> bool) {
        let until = Instant::now() + Duration::from_secs(30);
        while !done() {
            assert!(Instant::now() < until, "{what} never happened");
            thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn looking_finds_what_comes_in_time_and_says_why_it_found_nothing() {
        let (tx, rx) = mpsc::channel::<u32>();
        let started = Instant::now();
        let timed_out = look_for(Duration::from_millis(2), &rx);
        assert_eq!(timed_out, Err(mpsc::TryRecvError::Empty), "nothing sent: the time runs out");
        assert!(started.elapsed() >= Duration::from_millis(2));
        let sender = thread::spawn(move || {
            thread::sleep(Duration::from_micros(200));
            tx.send(7).unwrap();
        });
        assert_eq!(look_for(LONG, &rx), Ok(7), "what comes while it looks is found");
        sender.join().unwrap();
        assert_eq!(
            look_for(LONG, &rx),
            Err(mpsc::TryRecvError::Disconnected),
            "a sender gone ends the looking at once"
        );
    }

    #[test]
    fn a_worker_is_marked_looking_only_until_it_has_a_job_or_its_sender_is_gone() {
        let (inbox, mine) = mpsc::channel::<Ticket>();
        let looking = Arc::new(AtomicBool::new(true));
        let home = Home { inbox: inbox.clone(), looking: Arc::clone(&looking) };
        inbox.send(Ticket { job: Box::new(|| ()), home }).unwrap();
        assert!(next_ticket(&mine, &looking).is_ok());
        assert!(!looking.load(Ordering::Acquire), "a worker with a job is no longer looking");
        looking.store(true, Ordering::Release);
        drop(inbox);
        assert!(next_ticket(&mine, &looking).is_err(), "no sender is left");
        assert!(!looking.load(Ordering::Acquire));
    }

    #[test]
    fn a_job_for_a_worker_asleep_is_not_looked_for_and_still_runs() {
        let watchdog = Watchdog::default();
        run(&watchdog, LONG, || ()).unwrap();
        let flag = || watchdog.workers.idle.lock().unwrap().first().map(|home| Arc::clone(&home.looking));
        wait_for("the worker becoming idle", || flag().is_some());
        let looking = flag().unwrap();
        wait_for("the worker done looking", || !looking.load(Ordering::Acquire));
        let (tx, rx) = mpsc::channel();
        let looked = watchdog.workers.execute(Box::new(move || tx.send(42).unwrap())).unwrap();
        assert!(!looked, "a worker asleep is not one to look for");
        assert_eq!(rx.recv_timeout(LONG), Ok(42));
    }

    #[test]
    fn work_kept_above_runs_on_the_callers_thread_and_a_panic_in_it_is_no_answer() {
        let watchdog = Watchdog::default();
        let bounds = Bounds { wall_time: LONG, deadline: Instant::now() + LONG, grace: SHORT };
        let here = thread::current().id();
        let ran = kept_above(|| watchdog.bounded("t", bounds, &CallSignal::new(), move || thread::current().id()));
        assert_eq!(ran, Ok(here));
        let panicked = kept_above(|| watchdog.bounded("t", bounds, &CallSignal::new(), || panic!("a bug")));
        assert_eq!(panicked, Err(CallFailure::Host(HostFault::NoAnswer)));
        let elsewhere = watchdog.bounded("t", bounds, &CallSignal::new(), move || thread::current().id());
        assert_ne!(elsewhere, Ok(here), "not kept above: on a worker");
        for _ in 0..MAX_STUCK_PER_TOOL {
            watchdog.stuck.hold("t", &CallFailure::Cancelled);
        }
        let refused = kept_above(|| watchdog.bounded("t", bounds, &CallSignal::new(), || ()));
        assert_eq!(refused, Err(CallFailure::Stuck { tool: "t".into(), calls: MAX_STUCK_PER_TOOL }));
        watchdog.stuck.release("t");
        assert_eq!(kept_above(|| watchdog.bounded("t", bounds, &CallSignal::new(), || 1)), Ok(1));
    }

    #[test]
    fn work_that_ends_in_time_is_answered_with_its_result() {
        assert_eq!(run(&Watchdog::default(), LONG, || 42), Ok(42));
    }

    #[test]
    fn blocked_work_is_answered_at_the_deadline_and_counted_until_it_ends() {
        let watchdog = Watchdog::default();
        let (release, blocked) = mpsc::channel::<()>();
        let started = Instant::now();
        let got = run(&watchdog, SHORT, move || blocked.recv().is_ok());
        assert_eq!(got, Err(CallFailure::HostTimeout { wall_time: SHORT }));
        assert!(started.elapsed() < LONG);
        assert_eq!(watchdog.stuck.of("t"), Some(1));
        release.send(()).unwrap();
        wait_for("the stuck count going down", || watchdog.stuck.of("t") == Some(0));
    }

    #[test]
    fn a_cancelled_call_blocked_in_a_host_call_is_let_go_after_the_grace_not_the_deadline() {
        let watchdog = Watchdog::default();
        let signal = Arc::new(CallSignal::new());
        let canceller = Arc::clone(&signal);
        thread::spawn(move || {
            thread::sleep(SHORT);
            canceller.cancel();
        });
        let (_release, blocked) = mpsc::channel::<()>();
        let started = Instant::now();
        let got = run_for(&watchdog, "t", LONG, &signal, move || blocked.recv().is_ok());
        assert_eq!(got, Err(CallFailure::Cancelled));
        assert!(started.elapsed() < LONG);
    }

    #[test]
    fn workers_are_reused_and_end_with_the_watchdog() {
        let watchdog = Watchdog::default();
        let first = run(&watchdog, LONG, || thread::current().id()).unwrap();
        // The worker puts itself back in the idle list just after answering.
        wait_for("the worker becoming idle", || !watchdog.workers.idle.lock().unwrap().is_empty());
        let second = run(&watchdog, LONG, || thread::current().id()).unwrap();
        assert_eq!(first, second);
        let weak = Arc::downgrade(&watchdog.workers);
        drop(watchdog);
        // A worker holds the pool only while it goes back in the idle list.
        wait_for("the pool ending with the watchdog", || weak.strong_count() == 0);
    }

    #[test]
    fn work_offered_runs_on_an_idle_worker_or_a_new_one_while_there_is_room() {
        let watchdog = Watchdog::default();
        let (tx, rx) = mpsc::channel();
        let job =
            |tx: mpsc::Sender<thread::ThreadId>| Box::new(move || tx.send(thread::current().id()).unwrap()) as Job;
        assert!(watchdog.offer(job(tx.clone()), 0).is_err(), "no worker idle, no room: given back");
        assert!(watchdog.offer(job(tx.clone()), 1).is_ok(), "room for one worker: started");
        let worker = rx.recv_timeout(LONG).unwrap();
        wait_for("the worker becoming idle", || !watchdog.workers.idle.lock().unwrap().is_empty());
        assert_eq!(watchdog.workers.live.load(Ordering::Acquire), 1);
        assert!(watchdog.offer(job(tx), 0).is_ok(), "an idle worker takes it whatever the room");
        assert_eq!(rx.recv_timeout(LONG).unwrap(), worker, "on the idle worker");
    }

    #[test]
    fn a_tool_with_too_many_stuck_calls_is_refused_and_other_tools_still_run() {
        let watchdog = Watchdog::default();
        let (release, blocked) = mpsc::channel::<()>();
        let blocked = Arc::new(Mutex::new(blocked));
        for _ in 0..MAX_STUCK_PER_TOOL {
            let blocked = Arc::clone(&blocked);
            let got = run(&watchdog, SHORT, move || {
                let _ = blocked.lock().unwrap().recv();
            });
            assert_eq!(got, Err(CallFailure::HostTimeout { wall_time: SHORT }));
        }
        let refused = run(&watchdog, SHORT, || ());
        assert_eq!(refused, Err(CallFailure::Stuck { tool: "t".into(), calls: MAX_STUCK_PER_TOOL }));
        assert_eq!(run_for(&watchdog, "other", LONG, &CallSignal::new(), || 1), Ok(1));
        drop(release);
    }
}
