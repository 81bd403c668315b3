//! Resource requests: `resources/list` and `resources/read` run as tool calls
//! do (a slot, the client's roots, a blocking thread, cancellable), and the
//! legacy era's `resources/subscribe` and `unsubscribe`, which add to and take
//! from the session's own listener (its notices go out on the session's
//! stream, see `listen`).

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};

use super::{Asked, Context, Handled, Session, stamped};
use crate::notices::{Scope, SubscribeError};
use crate::protocol::jsonrpc::ErrorObject;
use crate::protocol::mcp::Request;
use crate::results::{self, Fault, ToolFailure};
use crate::runtime::CallSignal;
use crate::server::{Asker, FileUri, Server};

/// What a resource request does on its blocking thread.
pub(super) type Work = Box<dyn FnOnce(&Arc<Server>, Asker<'_>) -> Result<Value, ErrorObject> + Send>;

impl Session {
    /// A resource request (`method`, typed): files listed, read or watched,
    /// directories read; answered at once where nothing is read, and as a
    /// server without resources answers them under `--no-resources`.
    pub(super) fn resource(self: &Arc<Self>, asked: Asked<'_>, ctx: Context, request: (&str, Request)) -> Handled {
        let (method, request) = request;
        let offered = self.server.offers_resources();
        let work: Work = match request {
            Request::ListResources { cursor } if offered => {
                Box::new(move |server, asker| server.list_resources(asker, cursor.as_deref()))
            }
            Request::ReadResource { uri } if offered => {
                Box::new(move |server, asker| server.read_resource(asker, &uri))
            }
            Request::ReadDirectory { uri, cursor } if offered => {
                Box::new(move |server, asker| server.read_directory(asker, &uri, cursor.as_deref()))
            }
            Request::Subscribe { uri } if offered => return self.subscribe(asked, ctx, uri),
            request => {
                let (result, cacheable) = self.at_once(method, request, offered);
                let Asked { id, span, .. } = asked;
                let result = stamped(ctx, result, cacheable);
                span.finish(&result);
                return Handled::Now(Some(self.respond(&id, result, ctx.version.is_modern())));
            }
        };
        self.resource_request(asked, ctx, work)
    }

    /// The answer to a resource request that reads nothing, and whether a
    /// client may cache it.
    fn at_once(&self, method: &str, request: Request, offered: bool) -> (Result<Value, ErrorObject>, bool) {
        match request {
            Request::ListResources { .. } => (Ok(results::empty_list("resources")), true),
            Request::ReadResource { uri } => (Err(Fault::UnknownResource { uri }.into()), true),
            Request::ListResourceTemplates if offered => (Ok(results::resources::templates()), true),
            Request::ListResourceTemplates => (Ok(results::empty_list("resourceTemplates")), true),
            Request::Unsubscribe { uri } if offered => {
                self.notices.unsubscribe(&uri);
                (Ok(json!({})), false)
            }
            Request::ListSkills if offered => (Ok(json!({ "skills": [] })), true),
            Request::GetSkill { uri } if offered => (Err(Fault::UnknownSkill { uri }.into()), true),
            _ => (Err(Fault::NoResources { method: method.to_string() }.into()), false),
        }
    }

    /// Runs `work` as a call runs: registered (so it can be cancelled), in a
    /// slot, with the client's roots, on a thread that may block.
    fn resource_request(self: &Arc<Self>, asked: Asked<'_>, ctx: Context, work: Work) -> Handled {
        let Asked { id, out: _, span } = asked;
        let Some(guard) = self.running(id.clone(), Arc::new(CallSignal::new())) else {
            let result: Result<Value, ErrorObject> = Err(Fault::DuplicateId.into());
            span.finish(&result);
            return Handled::Now(Some(self.respond(&id, result, ctx.version.is_modern())));
        };
        let answered = async move {
            let mut guard = guard;
            let slots = Arc::clone(&guard.session.slots);
            let _permit = slots.acquire_owned().await.expect("the session's semaphore never closes");
            let result = match guard.session.client_roots(ctx).await {
                Err(error) => Err(error),
                Ok(client_roots) => {
                    let (server, signal) = (Arc::clone(&guard.session.server), Arc::clone(&guard.signal));
                    let caller = guard.session.caller.lock().expect("caller lock").clone();
                    let joined = tokio::task::spawn_blocking(move || {
                        let asker =
                            Asker { caller, client_roots: client_roots.as_deref().map(Vec::as_slice), signal: &signal };
                        work(&server, asker)
                    })
                    .await;
                    joined.unwrap_or_else(|e| {
                        tracing::error!("resource request thread failed: {e}");
                        Err(Fault::CallThread.into())
                    })
                }
            };
            guard.done = true;
            if guard.signal.is_cancelled() {
                return None;
            }
            span.finish(&result);
            Some(guard.session.respond(&guard.id, stamped(ctx, result, true), ctx.version.is_modern()))
        };
        Handled::Later(Box::pin(answered))
    }

    /// The client's roots for a request: asked of a legacy client that has
    /// them (waiting for its answer), none in the stateless era.
    pub(super) async fn client_roots(&self, ctx: Context) -> Result<Option<Arc<Vec<PathBuf>>>, ErrorObject> {
        if ctx.version.is_modern() { Ok(None) } else { self.roots.for_call().await }
    }

    /// What this session's caller may see, within `client_roots`.
    pub(super) fn scope(&self, client_roots: Option<&[PathBuf]>) -> Scope {
        let rights = self.rights();
        Scope { roots: self.server.resource_roots(&rights, client_roots), judge: Arc::clone(&rights.judge) }
    }

    /// `resources/subscribe` (legacy era): the session's listener now watches
    /// the file or directory `uri` names, within what the caller may see.
    fn subscribe(self: &Arc<Self>, asked: Asked<'_>, ctx: Context, uri: String) -> Handled {
        let Asked { id, span, .. } = asked;
        let session = Arc::clone(self);
        let answered = async move {
            let result = match session.client_roots(ctx).await {
                Err(error) => Err(error),
                Ok(client_roots) => {
                    session.notices.set_scope(session.scope(client_roots.as_deref().map(Vec::as_slice)));
                    session.server.notices().register(&session.notices);
                    // Watching a directory walks it: off the runtime's threads.
                    let (watcher, uri) = (Arc::clone(&session), uri.clone());
                    let done = tokio::task::spawn_blocking(move || subscribed(&watcher, &uri)).await;
                    done.unwrap_or_else(|_| Err(Fault::CallThread.into())).map(|()| json!({}))
                }
            };
            span.finish(&result);
            Some(session.respond(&id, stamped(ctx, result, false), false))
        };
        Handled::Later(Box::pin(answered))
    }
}

/// Subscribes the session's listener to `uri`, or says why not as the tools
/// would (a refusal names the URI and the tool error code).
fn subscribed(session: &Session, uri: &str) -> Result<(), ErrorObject> {
    let file = FileUri::parse(uri).filter(|f| f.cursor.is_none());
    let Some(file) = file else { return Err(Fault::UnknownResource { uri: uri.to_string() }.into()) };
    session.notices.subscribe(session.server.notices(), uri, &file.path).map(|_| ()).map_err(|e| refusal(uri, &e))
}

/// A refused subscription as the JSON-RPC error a refused read is.
pub(super) fn refusal(uri: &str, error: &SubscribeError) -> ErrorObject {
    let failure = ToolFailure { code: error.code(), message: error.to_string(), limit: None };
    Fault::ResourceRefused { uri: uri.to_string(), failure }.into()
}
