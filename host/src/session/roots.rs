//! The client's roots (legacy era): a client that declares the `roots`
//! capability is asked for them with `roots/list` once it is initialized, and
//! again after `notifications/roots/list_changed`. Its roots narrow the
//! configured ones for every call of the session (see `Policy::grants`); they
//! never widen them.
//!
//! Until the client answers, calls wait (fail closed): a call never runs with
//! more than the client allowed. A client that answers with an error is taken
//! to have no roots to give, and the configured roots apply; one that does not
//! answer within `ANSWER_WAIT` gets its calls refused.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::ambient;
use crate::protocol::jsonrpc::{self, ErrorObject, Id};
use crate::results::Fault;

/// How long a call waits for the client's answer to `roots/list`.
pub const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// The prefix of the ids of the server's `roots/list` requests.
const ID_PREFIX: &str = "cordon-roots-";

/// What the session knows of the client's roots.
#[derive(Debug, Clone)]
pub enum State {
    /// The client gives none: the configured roots apply.
    Configured,
    /// Asked; calls wait for the answer.
    Asked,
    /// The client's roots, canonical; only what they cover of the configured roots.
    Client(Arc<Vec<PathBuf>>),
}

/// A session's view of its client's roots.
pub struct ClientRoots {
    /// Whether this transport can carry requests to the client.
    duplex: bool,
    /// Whether the client declared the `roots` capability.
    declared: AtomicBool,
    /// The number of the last `roots/list` sent; older answers are ignored.
    asked: AtomicU64,
    state: watch::Sender<State>,
}

impl ClientRoots {
    pub fn new(duplex: bool) -> ClientRoots {
        ClientRoots {
            duplex,
            declared: AtomicBool::new(false),
            asked: AtomicU64::new(0),
            state: watch::Sender::new(State::Configured),
        }
    }

    /// Records what `initialize` said. A client with roots makes calls wait
    /// from now on, until it has answered.
    pub fn initialized(&self, declared: bool) {
        let declared = declared && self.duplex;
        self.declared.store(declared, Ordering::SeqCst);
        self.state.send_replace(if declared { State::Asked } else { State::Configured });
    }

    /// The `roots/list` request to send now (after `notifications/initialized`
    /// or `notifications/roots/list_changed`), if the client has roots.
    pub fn ask(&self) -> Option<String> {
        if !self.declared.load(Ordering::SeqCst) {
            return None;
        }
        let n = self.asked.fetch_add(1, Ordering::SeqCst) + 1;
        self.state.send_replace(State::Asked);
        Some(jsonrpc::request(&Id::String(format!("{ID_PREFIX}{n}")), "roots/list", json!({})))
    }

    /// Takes a response from the client; false when it answers no request of
    /// this module's.
    pub fn answered(&self, id: &Id, outcome: &Result<Value, Value>) -> bool {
        let Id::String(id) = id else { return false };
        let Some(n) = id.strip_prefix(ID_PREFIX).and_then(|n| n.parse::<u64>().ok()) else { return false };
        if n != self.asked.load(Ordering::SeqCst) {
            tracing::debug!(id, "an answer to an earlier roots/list; ignored");
            return true;
        }
        let state = match outcome {
            Ok(result) => State::Client(Arc::new(roots_of(result))),
            Err(error) => {
                tracing::warn!(%error, "the client declared roots but refused roots/list; the configured roots apply");
                State::Configured
            }
        };
        if let State::Client(roots) = &state {
            tracing::info!(roots = ?roots, "the client's roots narrow the configured roots");
        }
        self.state.send_replace(state);
        true
    }

    /// The roots a call runs within: `None` for the configured roots, or the
    /// client's. Waits while the client has not answered.
    pub async fn for_call(&self) -> Result<Option<Arc<Vec<PathBuf>>>, ErrorObject> {
        let mut state = self.state.subscribe();
        let settled = tokio::time::timeout(ANSWER_WAIT, state.wait_for(|s| !matches!(s, State::Asked))).await;
        match settled {
            Ok(Ok(state)) => Ok(match &*state {
                State::Client(roots) => Some(Arc::clone(roots)),
                _ => None,
            }),
            _ => Err(Fault::RootsUnanswered { waited_secs: ANSWER_WAIT.as_secs() }.into()),
        }
    }
}

/// The directories a `roots/list` result names: `file:` URIs of directories
/// that exist, resolved; anything else is left out (and logged).
fn roots_of(result: &Value) -> Vec<PathBuf> {
    let listed = result.get("roots").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut roots = Vec::new();
    for root in listed {
        let uri = root.get("uri").and_then(Value::as_str).unwrap_or_default();
        let path = url::Url::parse(uri).ok().filter(|u| u.scheme() == "file").and_then(|u| u.to_file_path().ok());
        match path.map(|p| ambient::canonical_dir(&p)) {
            Some(Ok((canonical, true))) => roots.push(canonical),
            _ => tracing::warn!(uri, "a client root that is not an existing local directory; left out"),
        }
    }
    roots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_of_existing_directories_are_roots_and_nothing_else_is() {
        let dir = tempfile::tempdir().unwrap();
        let canonical = dir.path().canonicalize().unwrap();
        std::fs::write(canonical.join("file"), "x").unwrap();
        let uri = url::Url::from_directory_path(&canonical).unwrap().to_string();
        let file = url::Url::from_file_path(canonical.join("file")).unwrap().to_string();
        let result = json!({ "roots": [
            { "uri": uri, "name": "project" },
            { "uri": file },
            { "uri": "https://example.com/x" },
            { "uri": "file:///no/such/dir" },
            { "name": "no uri" },
        ]});
        assert_eq!(roots_of(&result), [canonical]);
    }

    #[tokio::test]
    async fn calls_wait_for_the_answer_and_stale_answers_are_ignored() {
        let roots = ClientRoots::new(true);
        roots.initialized(true);
        let first = roots.ask().unwrap();
        let second = roots.ask().unwrap();
        assert!(first.contains("cordon-roots-1") && second.contains("cordon-roots-2"), "{first} {second}");
        assert!(roots.answered(&Id::String("cordon-roots-1".into()), &Ok(json!({ "roots": [] }))));
        assert!(matches!(*roots.state.borrow(), State::Asked), "an answer to the earlier request changes nothing");
        assert!(!roots.answered(&Id::String("other".into()), &Ok(json!({}))));
        roots.answered(&Id::String("cordon-roots-2".into()), &Ok(json!({ "roots": [] })));
        let narrowed = roots.for_call().await.unwrap().expect("the client's roots");
        assert!(narrowed.is_empty(), "no roots from the client: nothing is granted");
    }

    #[tokio::test]
    async fn a_client_without_roots_or_without_a_duplex_transport_is_not_asked() {
        let roots = ClientRoots::new(true);
        roots.initialized(false);
        assert!(roots.ask().is_none());
        assert!(roots.for_call().await.unwrap().is_none());
        let http = ClientRoots::new(false);
        http.initialized(true);
        assert!(http.ask().is_none());
        assert!(http.for_call().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn an_error_answer_leaves_the_configured_roots() {
        let roots = ClientRoots::new(true);
        roots.initialized(true);
        roots.ask().unwrap();
        roots.answered(&Id::String("cordon-roots-1".into()), &Err(json!({ "code": -32601, "message": "no" })));
        assert!(roots.for_call().await.unwrap().is_none());
    }
}
