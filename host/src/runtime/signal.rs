//! What a session can tell a running call (stop), and what the call tells the
//! session while it runs (progress).
//!
//! A `CallSignal` is shared by the session that started a request and the store
//! running it. Cancelling sets a flag the store's epoch callback checks at every
//! tick, so the guest is interrupted within a tick wherever it is; the store is
//! then dropped. Progress reports, from the tool (the `progress` import) or from
//! the pager when the tool reports none, go to a sink the session supplies:
//! none in a call's first interval (a quick call sends none), then at most one
//! per interval, and only when `done` grows, as MCP requires.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The least time between two progress notifications of one call.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// Where progress goes: `(done, total, message)`.
pub type ProgressSink = Box<dyn Fn(u64, Option<u64>, Option<&str>) + Send + Sync>;

/// The link between a request and the call serving it.
#[derive(Default)]
pub struct CallSignal {
    cancelled: OnceLock<Instant>,
    progress: Option<Progress>,
    /// The request's signal, for a part of its work that can also be stopped
    /// alone (a shard running ahead, see `child_of`).
    parent: Option<Arc<CallSignal>>,
}

struct Progress {
    sink: ProgressSink,
    state: Mutex<ProgressState>,
}

struct ProgressState {
    /// The last `done` sent; a report must exceed it.
    last_done: Option<u64>,
    /// When the last report was sent, or the call started.
    last_sent: Instant,
    /// Once the tool reports, the pager's fallback reports stop.
    from_tool: bool,
}

impl CallSignal {
    /// A signal whose progress goes nowhere.
    pub fn new() -> CallSignal {
        CallSignal::default()
    }

    /// A signal whose progress goes to `sink`.
    pub fn with_progress(sink: ProgressSink) -> CallSignal {
        let state = ProgressState { last_done: None, last_sent: Instant::now(), from_tool: false };
        CallSignal {
            cancelled: OnceLock::new(),
            progress: Some(Progress { sink, state: Mutex::new(state) }),
            parent: None,
        }
    }

    /// A signal for a part of `parent`'s work: cancelled when `parent` is, or
    /// on its own; its progress goes nowhere (only the part the request sees
    /// reports).
    pub fn child_of(parent: &Arc<CallSignal>) -> CallSignal {
        CallSignal { parent: Some(Arc::clone(parent)), ..CallSignal::default() }
    }

    /// Asks the call to stop; it is interrupted at the next epoch tick.
    pub fn cancel(&self) {
        let _ = self.cancelled.set(Instant::now());
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.get().is_some() || self.parent.as_ref().is_some_and(|p| p.is_cancelled())
    }

    /// When the call was first cancelled.
    pub fn cancelled_at(&self) -> Option<Instant> {
        let parent = self.parent.as_ref().and_then(|p| p.cancelled_at());
        match (self.cancelled.get().copied(), parent) {
            (Some(own), Some(parent)) => Some(own.min(parent)),
            (own, parent) => own.or(parent),
        }
    }

    /// Whether anyone listens to progress (so a caller can skip work).
    pub fn wants_progress(&self) -> bool {
        self.progress.is_some()
    }

    /// A report from the tool itself.
    pub fn tool_report(&self, done: u64, total: Option<u64>, message: Option<&str>) {
        self.report(done, total, message, true);
    }

    /// A report from the host (bytes delivered so far), used only while the
    /// tool reports nothing itself.
    pub fn host_report(&self, done: u64, total: Option<u64>, message: Option<&str>) {
        self.report(done, total, message, false);
    }

    fn report(&self, done: u64, total: Option<u64>, message: Option<&str>, from_tool: bool) {
        let Some(progress) = &self.progress else { return };
        let mut state = progress.state.lock().expect("progress lock");
        if from_tool {
            state.from_tool = true;
        } else if state.from_tool {
            return;
        }
        if state.last_done.is_some_and(|last| done <= last) {
            return;
        }
        let now = Instant::now();
        if now.duration_since(state.last_sent) < PROGRESS_INTERVAL {
            return;
        }
        state.last_done = Some(done);
        state.last_sent = now;
        drop(state);
        (progress.sink)(done, total, message);
    }
}

impl fmt::Debug for CallSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallSignal")
            .field("cancelled", &self.is_cancelled())
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// Why the epoch callback stopped a guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupted {
    /// The request was cancelled.
    Cancelled,
    /// The call ran past its wall-time limit.
    Timeout,
}

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Interrupted::Cancelled => "the call was cancelled",
            Interrupted::Timeout => "the call ran past its time limit",
        })
    }
}

impl std::error::Error for Interrupted {}

/// The `progress` import: a tool's reports go to the request it serves now.
impl super::bindings::cordon::tool::progress::Host for super::CallState {
    fn report(&mut self, done: u64, total: Option<u64>, message: Option<String>) {
        self.signal().tool_report(done, total, message.as_deref());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn recording() -> (CallSignal, Arc<Mutex<Vec<u64>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        (CallSignal::with_progress(Box::new(move |done, _, _| sink.lock().unwrap().push(done))), seen)
    }

    #[test]
    fn progress_waits_an_interval_is_rate_limited_and_only_grows() {
        let (signal, seen) = recording();
        signal.tool_report(5, None, None); // the call's first interval: a quick call sends nothing
        std::thread::sleep(PROGRESS_INTERVAL);
        signal.tool_report(10, None, None);
        signal.tool_report(20, None, None); // within the interval: dropped
        std::thread::sleep(PROGRESS_INTERVAL);
        signal.tool_report(5, None, None); // smaller: dropped
        signal.tool_report(30, Some(100), None);
        assert_eq!(*seen.lock().unwrap(), [10, 30]);
    }

    #[test]
    fn host_reports_stop_once_the_tool_reports_and_the_sequence_still_grows() {
        let (signal, seen) = recording();
        std::thread::sleep(PROGRESS_INTERVAL);
        signal.host_report(1000, None, None);
        std::thread::sleep(PROGRESS_INTERVAL);
        signal.tool_report(1, None, None); // below what was sent: dropped
        signal.tool_report(2000, None, None);
        std::thread::sleep(PROGRESS_INTERVAL);
        signal.host_report(5000, None, None); // the tool reports now: ignored
        assert_eq!(*seen.lock().unwrap(), [1000, 2000]);
    }

    #[test]
    fn a_child_is_cancelled_with_its_parent_or_alone_and_reports_nothing() {
        let (parent, seen) = recording();
        let parent = Arc::new(parent);
        let (child, other) = (CallSignal::child_of(&parent), CallSignal::child_of(&parent));
        std::thread::sleep(PROGRESS_INTERVAL);
        child.tool_report(10, None, None);
        assert!(seen.lock().unwrap().is_empty(), "a child's progress goes nowhere");
        child.cancel();
        assert!(child.is_cancelled() && !parent.is_cancelled() && !other.is_cancelled());
        parent.cancel();
        assert!(other.is_cancelled() && other.cancelled_at() == parent.cancelled_at());
    }

    #[test]
    fn cancelling_is_seen_by_every_holder() {
        let signal = Arc::new(CallSignal::new());
        let other = Arc::clone(&signal);
        assert!(!other.is_cancelled());
        signal.cancel();
        assert!(other.is_cancelled());
    }
}
