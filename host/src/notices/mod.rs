//! Change notifications: the operating system's file events (the `notify`
//! crate: inotify here), batched, and handed to every `Listener` whose
//! subscriptions they touch.
//!
//! The `Hub` watches only what someone listens to: the directory holding a
//! subscribed file (so a write, a rename over it and a delete are all seen), a
//! subscribed directory recursively, and the roots recursively for a listener
//! of list changes. Watches are counted and dropped with the last
//! subscription that needs them. The directories holding files share one
//! watcher (one inotify instance; each directory one watch); each recursive
//! watch has a watcher of its own, so that watches of the same or nested
//! directories never touch each other's kernel watches (`notify` keeps one
//! entry a path in an instance: a second watch of a path would change the
//! first's mode, and unwatching either, or a tree above, would end both).
//!
//! Events are batched: the first event of a quiet spell opens a window of
//! `WINDOW` (50 ms), every event in it is merged by path, and at its end the
//! batch goes to the listeners, so a burst of changes to one file is one
//! notification per window. A batch holds at most `MAX_BATCH` paths; past
//! that, or when the kernel's own queue overflowed, it says only that
//! anything may have changed, and each listener resyncs (see `listener`).
//! So does a batch after events were dropped because `MAX_QUEUED` of them
//! were waiting: memory stays bounded however large the burst.

mod listener;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind};
use notify::{RecursiveMode, Watcher};

pub use listener::{Listener, Notice, Scope, SubscribeError, Subscribed};

/// How long a batch of events is gathered after its first one.
pub const WINDOW: Duration = Duration::from_millis(50);

/// The most paths a batch names; beyond, the batch overflows.
const MAX_BATCH: usize = 4096;

/// The most events waiting for the batching thread; beyond, events are
/// dropped and the next batch overflows (memory stays bounded whatever the
/// burst, and nothing is lost silently).
const MAX_QUEUED: usize = 8192;

/// The process's watcher of files, and everyone listening.
pub struct Hub {
    shared: Arc<Shared>,
}

struct Shared {
    /// Where every watcher's events go; made, with the batching thread, on
    /// the first watch (nothing runs for a server nobody subscribes to).
    feed: Mutex<Option<Feed>>,
    /// The watcher of the directories that hold subscribed files.
    flat: Mutex<Option<notify::RecommendedWatcher>>,
    /// Each (path, recursive) watch: its holders, and a recursive one's own watcher.
    watches: Mutex<HashMap<(PathBuf, bool), Held>>,
    listeners: Mutex<Vec<Weak<Listener>>>,
}

/// The sending end of the event queue, and the flag a full queue raises.
#[derive(Clone)]
struct Feed {
    tx: mpsc::SyncSender<notify::Result<notify::Event>>,
    dropped: Arc<AtomicBool>,
}

impl Feed {
    /// A watcher whose events go into the queue; never blocking its own
    /// thread, a full queue drops the event and says so.
    fn watcher(&self) -> Result<notify::RecommendedWatcher, notify::Error> {
        let Feed { tx, dropped } = self.clone();
        notify::recommended_watcher(move |event| {
            if let Err(mpsc::TrySendError::Full(_)) = tx.try_send(event) {
                dropped.store(true, Ordering::Relaxed);
            }
        })
    }
}

/// One watch: how many hold it, and, for a recursive one, its watcher.
struct Held {
    count: usize,
    own: Option<notify::RecommendedWatcher>,
}

/// What changed in one window.
#[derive(Debug, Default)]
pub struct Batch {
    /// Each path changed, and whether an entry appeared, vanished or was
    /// renamed there (the list changed), not only its content.
    paths: HashMap<PathBuf, bool>,
    /// More changed than the batch names: anything may have.
    overflowed: bool,
}

impl Batch {
    fn add(&mut self, event: notify::Result<notify::Event>) {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                tracing::warn!("file watcher error: {e}");
                self.overflowed = true;
                return;
            }
        };
        if event.need_rescan() {
            self.overflowed = true;
            return;
        }
        let listed = match event.kind {
            EventKind::Create(_) | EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_)) => true,
            EventKind::Modify(_) | EventKind::Any | EventKind::Other => false,
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => false,
            EventKind::Access(_) => return,
        };
        for path in event.paths {
            if self.paths.len() >= MAX_BATCH && !self.paths.contains_key(&path) {
                self.overflowed = true;
                return;
            }
            *self.paths.entry(path).or_default() |= listed;
        }
    }

    /// Each changed path and whether the list changed there.
    pub fn paths(&self) -> impl Iterator<Item = (&Path, bool)> {
        self.paths.iter().map(|(p, listed)| (p.as_path(), *listed))
    }

    pub fn overflowed(&self) -> bool {
        self.overflowed
    }
}

/// A watch held: dropped, the watch ends with its last holder.
pub struct WatchGuard {
    shared: Weak<Shared>,
    key: (PathBuf, bool),
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        let Some(shared) = self.shared.upgrade() else { return };
        let mut watches = shared.watches.lock().expect("watches lock");
        let Some(held) = watches.get_mut(&self.key) else { return };
        held.count -= 1;
        if held.count > 0 {
            return;
        }
        // A recursive watch ends with its own watcher, dropped here.
        let held = watches.remove(&self.key);
        if held.is_some_and(|h| h.own.is_none())
            && let Some(flat) = shared.flat.lock().expect("flat watcher lock").as_mut()
        {
            // The directory may be gone, and its watch with it.
            let _ = flat.unwatch(&self.key.0);
        }
    }
}

impl Default for Hub {
    fn default() -> Self {
        Hub::new()
    }
}

impl Hub {
    pub fn new() -> Hub {
        Hub {
            shared: Arc::new(Shared {
                feed: Mutex::new(None),
                flat: Mutex::new(None),
                watches: Mutex::new(HashMap::new()),
                listeners: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Starts telling `listener` of the changes its subscriptions touch (once,
    /// however often it is registered).
    pub fn register(&self, listener: &Arc<Listener>) {
        let mut listeners = self.shared.listeners.lock().expect("listeners lock");
        listeners.retain(|l| l.strong_count() > 0);
        let held = Arc::downgrade(listener);
        if !listeners.iter().any(|l| l.ptr_eq(&held)) {
            listeners.push(held);
        }
    }

    /// How many listeners are registered and alive.
    pub fn listeners(&self) -> usize {
        self.shared.listeners.lock().expect("listeners lock").iter().filter(|l| l.strong_count() > 0).count()
    }

    /// How many distinct watches are held.
    pub fn watches(&self) -> usize {
        self.shared.watches.lock().expect("watches lock").len()
    }

    /// Watches `dir` (an existing directory), with everything under it when
    /// `recursive`, until the guard is dropped.
    pub fn watch(&self, dir: &Path, recursive: bool) -> Result<WatchGuard, notify::Error> {
        let key = (dir.to_path_buf(), recursive);
        let mut watches = self.shared.watches.lock().expect("watches lock");
        if let Some(held) = watches.get_mut(&key) {
            held.count += 1;
        } else {
            let feed = self.feed()?;
            let own = if recursive {
                let mut own = feed.watcher()?;
                own.watch(dir, RecursiveMode::Recursive)?;
                Some(own)
            } else {
                let mut flat = self.shared.flat.lock().expect("flat watcher lock");
                if flat.is_none() {
                    *flat = Some(feed.watcher()?);
                }
                flat.as_mut().expect("made above").watch(dir, RecursiveMode::NonRecursive)?;
                None
            };
            watches.insert(key.clone(), Held { count: 1, own });
        }
        Ok(WatchGuard { shared: Arc::downgrade(&self.shared), key })
    }

    /// The event queue, made with the thread that batches its events and
    /// hands them out on first use; the thread ends with the hub.
    fn feed(&self) -> Result<Feed, notify::Error> {
        let mut feed = self.shared.feed.lock().expect("feed lock");
        if let Some(feed) = feed.as_ref() {
            return Ok(feed.clone());
        }
        let (tx, rx) = mpsc::sync_channel(MAX_QUEUED);
        let dropped = Arc::new(AtomicBool::new(false));
        let (seen, shared) = (Arc::clone(&dropped), Arc::downgrade(&self.shared));
        std::thread::Builder::new()
            .name("cordon-changes".into())
            .spawn(move || batches(&rx, &seen, &shared))
            .map_err(notify::Error::io)?;
        Ok(feed.insert(Feed { tx, dropped }).clone())
    }
}

/// Gathers events into batches and hands each to the listeners; a batch
/// after dropped events overflows. The last batch is handed out too when the
/// watchers go.
fn batches(rx: &mpsc::Receiver<notify::Result<notify::Event>>, dropped: &AtomicBool, shared: &Weak<Shared>) {
    while let Ok(first) = rx.recv() {
        let mut batch = Batch::default();
        batch.add(first);
        let closes = Instant::now() + WINDOW;
        loop {
            let left = closes.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(event) => batch.add(event),
                Err(mpsc::RecvTimeoutError::Timeout | mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        batch.overflowed |= dropped.swap(false, Ordering::Relaxed);
        let Some(shared) = shared.upgrade() else { return };
        let listeners: Vec<Arc<Listener>> =
            shared.listeners.lock().expect("listeners lock").iter().filter_map(Weak::upgrade).collect();
        for listener in listeners {
            listener.offer(&batch);
        }
    }
}

#[cfg(test)]
mod tests;
