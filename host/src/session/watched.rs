//! A session's tool call on one thread: the whole call, guest work
//! included, runs on a thread of the runtime's call pool, and the session
//! awaits its answer, keeping the call's host timeout itself (see
//! `server::Watch`): at the deadline plus the grace, or the cancellation
//! plus the grace, it records and answers the call in its place.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{Semaphore, oneshot};

use crate::clients::Client;
use crate::registry::Entry;
use crate::results::{Answer, Fault};
use crate::runtime::{CallSignal, kept_above};
use crate::server::{CallRequest, Caller, Server, Waited, Watch};
use crate::telemetry::traces;

/// The most calls of every session together that run at once, each on a
/// thread of its own (the rest wait their turn).
static CALL_THREADS: Semaphore = Semaphore::const_new(512);

/// What a session's call runs with, shared by the call's thread and the
/// session (which records the call itself if it gives up on it).
pub(super) struct CallJob {
    pub server: Arc<Server>,
    pub tool: Entry,
    pub arguments: Value,
    pub client_roots: Option<Arc<Vec<PathBuf>>>,
    pub signal: Arc<CallSignal>,
    pub caller: Caller,
    pub client: Client,
}

impl CallJob {
    /// The call as the server takes it.
    fn request<'a>(&'a self, watch: Option<&'a Watch>) -> CallRequest<'a> {
        CallRequest {
            tool: self.tool.clone(),
            arguments: &self.arguments,
            client_roots: self.client_roots.as_deref().map(Vec::as_slice),
            signal: &self.signal,
            for_model: true,
            caller: self.caller.clone(),
            client: self.client,
            watch,
        }
    }

    /// Runs the call on a thread of the call pool and awaits its answer,
    /// answering in its place when it does not come in time. The wait is a
    /// task of its own, so that a session that stops awaiting (an HTTP
    /// client gone) still has its call given up on, recorded and counted.
    pub async fn run(self) -> Result<Answer, Fault> {
        // Bounded like tokio's blocking pool, which ran these calls before.
        let Ok(thread) = CALL_THREADS.acquire().await else { return Err(Fault::CallThread) };
        let (job, watch) = (Arc::new(self), Watch::new());
        let (tx, rx) = oneshot::channel();
        let (on_thread, on_record) = (traces::current(), traces::current());
        let work = {
            let (job, watch) = (Arc::clone(&job), Arc::clone(&watch));
            Box::new(move || {
                let _thread = thread;
                let answer = kept_above(|| on_thread.in_scope(|| job.server.call(job.request(Some(&watch)))));
                // The call's span is let go before it is answered: a client
                // that ends the server on the answer must not find the span
                // still open on this thread, and so never exported.
                drop(on_thread);
                let _ = tx.send(answer);
            })
        };
        if let Err(e) = job.server.spawn_call(work) {
            tracing::error!("no thread for a tool call: {e}");
            return Err(Fault::CallThread);
        }
        let waited = tokio::spawn(async move {
            match watch.wait(rx, &job.signal).await {
                Waited::Answered(Ok(answer)) => answer,
                Waited::Answered(Err(_)) => {
                    tracing::error!("a tool call's thread ended without an answer");
                    Err(Fault::CallThread)
                }
                Waited::Abandoned(abandoned) => {
                    // The record is a file write: off the session's thread.
                    let recorded = tokio::task::spawn_blocking(move || {
                        on_record.in_scope(|| job.server.answer_abandoned(&job.request(None), abandoned))
                    });
                    recorded.await.unwrap_or(Err(Fault::CallThread))
                }
            }
        });
        waited.await.unwrap_or(Err(Fault::CallThread))
    }
}
