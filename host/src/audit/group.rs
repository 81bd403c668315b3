//! Group commit: the records that threads of one process make at the same
//! time share one write.
//!
//! A thread that records queues its line and, when no thread is writing,
//! writes every line queued so far itself (one lock, one write, one anchor
//! update for all of them); the others wait for the batch that holds their
//! line and return its outcome. A thread alone pays no hand-over to another
//! thread; a burst of records pays the file lock once.

use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

/// The lines waiting for a writer, and whether one is writing.
#[derive(Default)]
pub struct Group {
    state: Mutex<State>,
    /// Signalled when a batch is written.
    written: Condvar,
}

#[derive(Default)]
struct State {
    queue: Vec<String>,
    /// The batch the queued lines will be written in.
    batch: Arc<Batch>,
    writing: bool,
    /// Threads waiting for a batch: a writer wakes them only if there are
    /// any (a wake is a system call even when no thread waits).
    waiting: usize,
}

/// One write of queued lines, and how it went.
#[derive(Default)]
struct Batch {
    outcome: OnceLock<Result<(), Failure>>,
}

/// A failed write, kept so that every caller in the batch gets the error.
#[derive(Clone)]
struct Failure {
    kind: io::ErrorKind,
    message: String,
}

impl Group {
    /// Queues `line` and returns once the batch holding it is written: by
    /// `write` on this thread when no other thread is writing (with every
    /// line queued until then, in order), else by the thread that is.
    pub fn commit(&self, line: String, write: impl FnOnce(Vec<String>) -> io::Result<()>) -> io::Result<()> {
        let mut write = Some(write);
        let mut state = self.lock();
        state.queue.push(line);
        let mine = Arc::clone(&state.batch);
        loop {
            if let Some(outcome) = mine.outcome.get() {
                return outcome.clone().map_err(|f| io::Error::new(f.kind, f.message));
            }
            if state.writing {
                state.waiting += 1;
                state = self.written.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
                state.waiting -= 1;
                continue;
            }
            // This thread writes: its own line is in the queue it takes.
            state.writing = true;
            let lines = std::mem::take(&mut state.queue);
            let batch = std::mem::take(&mut state.batch);
            drop(state);
            let leading = Leading { group: self, batch };
            let written = (write.take().expect("a thread writes one batch at most"))(lines);
            leading.settle(written);
            state = self.lock();
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The batch a thread is writing: settled when written, and failed if the
/// writer unwinds, so that no thread waits for it forever.
struct Leading<'a> {
    group: &'a Group,
    batch: Arc<Batch>,
}

impl Leading<'_> {
    fn settle(self, written: io::Result<()>) {
        let outcome = written.map_err(|e| Failure { kind: e.kind(), message: e.to_string() });
        let _ = self.batch.outcome.set(outcome);
    }
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        let unwound = Failure { kind: io::ErrorKind::Other, message: "the audit writer panicked".into() };
        let _ = self.batch.outcome.set(Err(unwound));
        let mut state = self.group.lock();
        state.writing = false;
        if state.waiting > 0 {
            self.group.written.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn concurrent_lines_are_each_written_once_and_some_share_a_write() {
        let group = Arc::new(Group::default());
        let (written, batches) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicUsize::new(0)));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let (group, written, batches) = (Arc::clone(&group), Arc::clone(&written), Arc::clone(&batches));
                std::thread::spawn(move || {
                    for n in 0..200 {
                        group
                            .commit(format!("{t}:{n}"), |lines| {
                                batches.fetch_add(1, Ordering::Relaxed);
                                std::thread::sleep(std::time::Duration::from_micros(200));
                                written.lock().unwrap().extend(lines);
                                Ok(())
                            })
                            .unwrap();
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let mut lines = written.lock().unwrap().clone();
        assert_eq!(lines.len(), 1600, "every line once");
        lines.sort();
        lines.dedup();
        assert_eq!(lines.len(), 1600);
        assert!(batches.load(Ordering::Relaxed) < 1600, "some lines shared a write");
    }

    #[test]
    fn a_failed_write_fails_every_line_of_its_batch_and_the_next_batch_is_tried_again() {
        let group = Arc::new(Group::default());
        let writes = Arc::new(AtomicUsize::new(0));
        let fail = |lines: Vec<String>, group: &Group, writes: &AtomicUsize| {
            if writes.fetch_add(1, Ordering::SeqCst) == 0 {
                // The first writer waits until the three others are queued:
                // they then share the next batch.
                while group.lock().queue.len() < 3 {
                    std::thread::yield_now();
                }
            }
            Err(io::Error::new(io::ErrorKind::StorageFull, format!("disk full ({} lines)", lines.len())))
        };
        let first = {
            let (group, writes) = (Arc::clone(&group), Arc::clone(&writes));
            std::thread::spawn(move || group.commit("a".into(), |lines| fail(lines, &group, &writes)))
        };
        while writes.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        let others: Vec<_> = ["b", "c", "d"]
            .into_iter()
            .map(|line| {
                let (group, writes) = (Arc::clone(&group), Arc::clone(&writes));
                std::thread::spawn(move || group.commit(line.into(), |lines| fail(lines, &group, &writes)))
            })
            .collect();
        assert_eq!(first.join().unwrap().unwrap_err().to_string(), "disk full (1 lines)");
        for other in others {
            let error = other.join().unwrap().unwrap_err();
            assert_eq!((error.kind(), error.to_string().as_str()), (io::ErrorKind::StorageFull, "disk full (3 lines)"));
        }
        assert_eq!(writes.load(Ordering::SeqCst), 2, "two writes: the first line's, then the three others'");
        assert!(group.commit("e".into(), |_| Ok(())).is_ok(), "the next batch is written again");
    }
}
