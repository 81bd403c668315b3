//! One listener: a legacy session's `resources/subscribe` set, or one
//! `subscriptions/listen` request's. It holds its subscriptions (each with the
//! watch it needs), what its caller may see (`Scope`), and what is waiting to
//! be sent.
//!
//! What waits is bounded and merged: a URI waits once however often it
//! changes, a batch names at most `MAX_NAMED` files under one subscribed
//! directory, and at most `MAX_PENDING` URIs wait. Past either (thousands of
//! files changed under a subscribed directory, or a listener that does not
//! read), or when a batch overflowed, the subscription itself is sent as a
//! resync notice (`Notice::Updated` with `resync`: read or list again), so a
//! slow listener loses nothing silently and a burst costs a bounded number
//! of notifications.
//! A change the caller may not see (outside its roots, under a deny rule) is
//! never sent, nor is a subscription to such a path accepted.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{Batch, Hub, WatchGuard};
use crate::ambient;
use crate::policy::Judge;
use crate::results::resources::file_uri;

/// The most subscriptions one listener holds.
pub const MAX_SUBSCRIPTIONS: usize = 256;

/// The most URIs waiting to be sent to one listener.
pub const MAX_PENDING: usize = 1024;

/// The most files under one subscribed directory a batch names; when more
/// changed, the directory is sent as a resync notice instead.
pub const MAX_NAMED: usize = 16;

/// What a caller may see: the directories its resources are under (the roots
/// narrowed by its rights and its client's roots) and the deny rules.
pub struct Scope {
    pub roots: Vec<PathBuf>,
    pub judge: Arc<Judge>,
}

impl Scope {
    /// Whether a change at `path` (absolute, real) may be told: under a root,
    /// and not denied as written or where it leads.
    pub fn visible(&self, path: &Path) -> bool {
        self.roots.iter().any(|root| path.starts_with(root)) && self.judge.check(path, true).is_none()
    }
}

/// What is sent to a listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// The resource at `uri` changed; with `resync`, something under the
    /// subscribed `uri` changed that is not named (read or list it again).
    Updated { uri: String, resync: bool },
    /// Files appeared, vanished or were renamed under the roots.
    ListChanged,
}

/// Why a subscription was refused, each a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubscribeError {
    /// Neither the path nor the directory that would hold it exists.
    NotFound { path: String },
    /// Under a deny rule (as written or where it leads).
    Denied { path: String, rule: String },
    /// Outside the caller's roots.
    Outside { path: String },
    /// The listener holds `MAX_SUBSCRIPTIONS` already.
    TooMany,
    /// The operating system would not watch it (its watch limit, say).
    Watch { path: String, reason: String },
}

impl std::fmt::Display for SubscribeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SubscribeError::NotFound { path } => write!(f, "`{path}` does not exist, nor does its directory"),
            SubscribeError::Denied { path, rule } => {
                write!(f, "`{path}` is denied by the server's rule `{rule}`; no tool may open it")
            }
            SubscribeError::Outside { path } => write!(f, "`{path}` is outside every root this client may read"),
            SubscribeError::TooMany => {
                write!(f, "this listener holds {MAX_SUBSCRIPTIONS} subscriptions, the most it may; unsubscribe some")
            }
            SubscribeError::Watch { path, reason } => write!(f, "`{path}` cannot be watched: {reason}"),
        }
    }
}

impl SubscribeError {
    /// The tools' error code for it.
    pub fn code(&self) -> &'static str {
        match self {
            SubscribeError::NotFound { .. } => "not_found",
            SubscribeError::Denied { .. } | SubscribeError::Outside { .. } => "permission_denied",
            SubscribeError::TooMany => "too_large",
            SubscribeError::Watch { .. } => "io",
        }
    }
}

/// One subscription: the URI as given, the path it names and where that
/// really is, and the watch that sees it change.
struct Sub {
    uri: String,
    written: PathBuf,
    real: PathBuf,
    dir: bool,
    _watch: WatchGuard,
}

impl Sub {
    /// The URI to tell of a change at `path`, when this subscription covers it.
    fn covers(&self, path: &Path) -> Option<String> {
        if path == self.real {
            return Some(self.uri.clone());
        }
        let under = path.strip_prefix(&self.real).ok().filter(|_| self.dir)?;
        Some(file_uri(&self.written.join(under)))
    }
}

#[derive(Default)]
struct State {
    subs: Vec<Sub>,
    /// Watches of the roots, held while list changes are listened to.
    list: Vec<WatchGuard>,
    pending: Vec<String>,
    queued: HashSet<String>,
    resync: Vec<String>,
    list_changed: bool,
}

/// Someone listening to changes (see the module doc).
pub struct Listener {
    scope: Mutex<Scope>,
    state: Mutex<State>,
    wake: tokio::sync::Notify,
}

/// What a subscription holds now: a file, or a directory and what is under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subscribed {
    File,
    Directory,
}

impl Listener {
    pub fn new(scope: Scope) -> Arc<Listener> {
        Arc::new(Listener { scope: Mutex::new(scope), state: Mutex::default(), wake: tokio::sync::Notify::new() })
    }

    /// Replaces what the caller may see (its client's roots changed).
    pub fn set_scope(&self, scope: Scope) {
        *self.scope.lock().expect("scope lock") = scope;
    }

    /// Tells of changes to the file or directory `path` (absolute) as `uri`.
    /// The file need not exist yet; its directory must.
    pub fn subscribe(&self, hub: &Hub, uri: &str, path: &Path) -> Result<Subscribed, SubscribeError> {
        let shown = path.display().to_string();
        // Where the path really is: itself, or (a file that does not exist yet) its directory.
        let (real, dir) = match ambient::canonical_dir(path) {
            Ok(found) => found,
            Err(_) => match (path.parent().map(ambient::canonical_dir), path.file_name()) {
                (Some(Ok((parent, true))), Some(name)) => (parent.join(name), false),
                _ => return Err(SubscribeError::NotFound { path: shown }),
            },
        };
        {
            let scope = self.scope.lock().expect("scope lock");
            if let Some(rule) = scope.judge.check(path, true).or_else(|| scope.judge.check(&real, false)) {
                return Err(SubscribeError::Denied { path: shown, rule: rule.to_string() });
            }
            if !scope.visible(&real) {
                return Err(SubscribeError::Outside { path: shown });
            }
        }
        let kind = if dir { Subscribed::Directory } else { Subscribed::File };
        let mut state = self.state.lock().expect("state lock");
        if state.subs.iter().any(|s| s.uri == uri) {
            return Ok(kind);
        }
        if state.subs.len() >= MAX_SUBSCRIPTIONS {
            return Err(SubscribeError::TooMany);
        }
        let watched = if dir { real.as_path() } else { real.parent().unwrap_or(&real) };
        let watch = hub
            .watch(watched, dir)
            .map_err(|e| SubscribeError::Watch { path: shown.clone(), reason: e.to_string() })?;
        state.subs.push(Sub { uri: uri.to_string(), written: path.to_path_buf(), real, dir, _watch: watch });
        Ok(kind)
    }

    /// Stops telling of `uri`; whether it was subscribed.
    pub fn unsubscribe(&self, uri: &str) -> bool {
        let mut state = self.state.lock().expect("state lock");
        let before = state.subs.len();
        state.subs.retain(|s| s.uri != uri);
        state.subs.len() != before
    }

    /// Tells of files appearing, vanishing or renamed under the caller's
    /// roots, each watched recursively; whether every root could be.
    pub fn listen_to_list(&self, hub: &Hub) -> bool {
        let roots = self.scope.lock().expect("scope lock").roots.clone();
        let mut guards = Vec::new();
        for root in &roots {
            match hub.watch(root, true) {
                Ok(guard) => guards.push(guard),
                Err(e) => {
                    tracing::warn!(root = %root.display(), "list changes cannot be watched: {e}");
                    return false;
                }
            }
        }
        self.state.lock().expect("state lock").list = guards;
        true
    }

    /// Takes in a batch of changes: what this listener's subscriptions cover
    /// and its caller may see waits to be sent.
    pub(super) fn offer(&self, batch: &Batch) {
        let scope = self.scope.lock().expect("scope lock");
        let mut state = self.state.lock().expect("state lock");
        let State { subs, list, pending, queued, resync, list_changed } = &mut *state;
        let before = (pending.len(), resync.len(), *list_changed);
        if batch.overflowed() {
            for sub in subs.iter() {
                if !resync.contains(&sub.uri) {
                    resync.push(sub.uri.clone());
                }
            }
            *list_changed |= !list.is_empty();
        } else {
            for sub in subs.iter() {
                let mut named: Vec<String> = Vec::new();
                for (path, _) in batch.paths() {
                    match sub.covers(path) {
                        Some(uri) if !queued.contains(&uri) && scope.visible(path) => named.push(uri),
                        _ => {}
                    }
                    if named.len() > MAX_NAMED {
                        break;
                    }
                }
                if named.len() > MAX_NAMED || pending.len() + named.len() > MAX_PENDING {
                    if !resync.contains(&sub.uri) {
                        resync.push(sub.uri.clone());
                    }
                    continue;
                }
                for uri in named {
                    if queued.insert(uri.clone()) {
                        pending.push(uri);
                    }
                }
            }
            if !list.is_empty() && !*list_changed {
                *list_changed = batch.paths().any(|(path, listed)| listed && scope.visible(path));
            }
        }
        if before != (pending.len(), resync.len(), *list_changed) {
            self.wake.notify_one();
        }
    }

    /// What waits to be sent, taken; empty when nothing does.
    pub fn take(&self) -> Vec<Notice> {
        let mut state = self.state.lock().expect("state lock");
        let mut out = Vec::new();
        if std::mem::take(&mut state.list_changed) {
            out.push(Notice::ListChanged);
        }
        out.extend(state.resync.drain(..).map(|uri| Notice::Updated { uri, resync: true }));
        out.extend(state.pending.drain(..).map(|uri| Notice::Updated { uri, resync: false }));
        state.queued.clear();
        out
    }

    /// The next notices, waiting until there are some.
    pub async fn next(&self) -> Vec<Notice> {
        loop {
            let notices = self.take();
            if !notices.is_empty() {
                return notices;
            }
            // `notify_one` keeps a permit when no one waits, so a change
            // offered between the take and this wait is not missed.
            self.wake.notified().await;
        }
    }
}
