//! What the server sends unasked, in both eras.
//!
//! Legacy era: a session's stream (stdio and TCP: the connection; HTTP: the
//! latest GET stream) carries `notifications/tools/list_changed` when the
//! offered tools change, and `notifications/resources/updated` for what the
//! session subscribed to.
//!
//! Stateless era: `subscriptions/listen` is a request that stays open. Its
//! response stream (HTTP: the POST's SSE stream; stdio: the connection)
//! first carries `notifications/subscriptions/acknowledged` with what the
//! server agreed to, then only the notifications the client asked for, each
//! with the request's id as `io.modelcontextprotocol/subscriptionId`. A client
//! ends it by closing the stream, or on stdio with `notifications/cancelled`.
//! The server ends it with the request's result when the client's input ends
//! (stdio, TCP: the connection then closes once every call has answered) or
//! its tool set closes behind it; a server process that ends cuts the stream
//! without one, and the client listens again (the Python SDK raises
//! `SubscriptionLost`).
//!
//! Notifications here are never dropped for a full queue: sending waits, and
//! meanwhile the listener merges what waits (see `notices::listener`).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Asked, Context, Handled, Session, stamped};
use crate::notices::{Listener, Notice};
use crate::protocol::jsonrpc;
use crate::protocol::mcp::Filter;
use crate::runtime::CallSignal;
use crate::server::FileUri;

/// The `_meta` key naming the listen request a notification belongs to.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The `_meta` key of a resync notice: more changed under the URI than is named.
pub const RESYNC: &str = "cordon/resync";

/// How often a listen request looks whether the client cancelled it.
const CANCEL_POLL: Duration = Duration::from_millis(100);

/// A notice's kind, as the metrics count it.
fn kind(notice: &Notice) -> &'static str {
    match notice {
        Notice::Updated { resync: false, .. } => "updated",
        Notice::Updated { resync: true, .. } => "resync",
        Notice::ListChanged => "list_changed",
    }
}

/// A notice as a notification line, tagged with `subscription` when it goes
/// on a listen stream.
fn rendered(notice: &Notice, subscription: Option<&Value>) -> String {
    let (method, mut params) = match notice {
        Notice::Updated { uri, resync } => {
            let mut params = json!({ "uri": uri });
            if *resync {
                params["_meta"] = json!({ RESYNC: true });
            }
            ("notifications/resources/updated", params)
        }
        Notice::ListChanged => ("notifications/resources/list_changed", json!({})),
    };
    tag(&mut params, subscription);
    jsonrpc::notification(method, params)
}

fn tag(params: &mut Value, subscription: Option<&Value>) {
    if let Some(id) = subscription {
        let meta = params.as_object_mut().expect("params are an object").entry("_meta").or_insert_with(|| json!({}));
        meta[SUBSCRIPTION_ID] = id.clone();
    }
}

impl Session {
    /// What the server sends this session unasked (legacy era): a
    /// `notifications/tools/list_changed` each time the offered tools change,
    /// once the session is initialized, and a `notifications/resources/updated`
    /// for each change to what it subscribed to. Only the latest stream asked
    /// for carries them (a message goes on one stream only); an earlier one
    /// ends at its next message.
    pub fn unsolicited(self: &Arc<Self>) -> impl futures_util::Stream<Item = String> + Send + 'static {
        let mut changes = self.server.tool_changes();
        changes.mark_unchanged();
        let stream = self.listener.fetch_add(1, Ordering::SeqCst) + 1;
        let start = (Arc::clone(self), changes, VecDeque::new());
        futures_util::stream::unfold(start, move |(session, mut changes, mut queued)| async move {
            loop {
                if let Some(line) = queued.pop_front() {
                    return Some((line, (session, changes, queued)));
                }
                if session.listener.load(Ordering::SeqCst) != stream {
                    return None;
                }
                tokio::select! {
                    changed = changes.changed() => {
                        changed.ok()?;
                        if session.initialized() {
                            queued.push_back(jsonrpc::notification("notifications/tools/list_changed", json!({})));
                        }
                    }
                    notices = session.notices.next() => {
                        notices.iter().for_each(|n| session.server.metrics().notice(kind(n)));
                        queued.extend(notices.iter().map(|n| rendered(n, None)));
                    }
                }
            }
        })
    }

    /// `subscriptions/listen` (stateless era): see the module doc.
    pub(super) fn listen(self: &Arc<Self>, asked: Asked<'_>, ctx: Context, filter: Filter) -> Handled {
        let Asked { id, out, span } = asked;
        let Some(guard) = self.running(id.clone(), Arc::new(CallSignal::new())) else {
            let result: Result<Value, jsonrpc::ErrorObject> = Err(crate::results::Fault::DuplicateId.into());
            span.finish(&result);
            return Handled::Now(Some(self.respond(&id, result, true)));
        };
        let out = out.clone();
        let answered = async move {
            let mut guard = guard;
            // Watching a tree walks it: off the runtime's threads.
            let session = Arc::clone(&guard.session);
            let (listener, honored) = tokio::task::spawn_blocking(move || {
                let listener = Listener::new(session.scope(None));
                let honored = session.honor(&listener, &filter);
                (listener, honored)
            })
            .await
            .ok()?;
            let subscription = serde_json::to_value(&guard.id).expect("an id serializes");
            let mut ack = json!({ "notifications": honored.to_json() });
            tag(&mut ack, Some(&subscription));
            if !out.send(jsonrpc::notification("notifications/subscriptions/acknowledged", ack)).await {
                return None;
            }
            let mut changes = guard.session.server.tool_changes();
            changes.mark_unchanged();
            let mut poll = tokio::time::interval(CANCEL_POLL);
            loop {
                let lines: Vec<String> = tokio::select! {
                    _ = poll.tick() => {
                        if guard.signal.is_cancelled() {
                            return None;
                        }
                        if guard.session.input_ended.load(Ordering::SeqCst) {
                            break;
                        }
                        continue;
                    }
                    changed = changes.changed(), if honored.tools_list_changed => match changed {
                        Ok(()) => {
                            let mut params = json!({});
                            tag(&mut params, Some(&subscription));
                            vec![jsonrpc::notification("notifications/tools/list_changed", params)]
                        }
                        Err(_) => break,
                    },
                    notices = listener.next() => {
                        notices.iter().for_each(|n| guard.session.server.metrics().notice(kind(n)));
                        notices.iter().map(|n| rendered(n, Some(&subscription))).collect()
                    }
                };
                for line in lines {
                    if !out.send(line).await {
                        return None;
                    }
                }
            }
            guard.done = true;
            let result = Ok(json!({ "_meta": { SUBSCRIPTION_ID: subscription } }));
            span.finish(&result);
            Some(guard.session.respond(&guard.id, stamped(ctx, result, false), true))
        };
        Handled::Later(Box::pin(answered))
    }

    /// Subscribes `listener` to what `filter` asks that the server can tell,
    /// and says what that is: the tools' changes always, resources' when the
    /// server offers them and each URI may be watched, prompts' never (there
    /// are none to change).
    fn honor(&self, listener: &Arc<Listener>, filter: &Filter) -> Filter {
        let mut honored = Filter { tools_list_changed: filter.tools_list_changed, ..Filter::default() };
        if !self.server.offers_resources() {
            return honored;
        }
        let hub = self.server.notices();
        for uri in &filter.resource_subscriptions {
            let Some(file) = FileUri::parse(uri).filter(|f| f.cursor.is_none()) else { continue };
            match listener.subscribe(hub, uri, &file.path) {
                Ok(_) => honored.resource_subscriptions.push(uri.clone()),
                Err(e) => tracing::debug!(%uri, "subscription not honored: {e}"),
            }
        }
        honored.resources_list_changed = filter.resources_list_changed && listener.listen_to_list(hub);
        hub.register(listener);
        honored
    }
}
