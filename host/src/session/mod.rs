//! The session core: every transport hands frames to a `Session` and sends on
//! what it gives back. Request handling exists once, here.
//!
//! A session knows its negotiated revision (legacy era) and its log level, and
//! the requests it is running, so `notifications/cancelled` can stop one. Tool
//! calls come back as futures the transport runs concurrently; the session
//! bounds how many run at once. Messages other than responses (progress, log
//! messages) go to the `Outbox` the transport gave with the request.
//!
//! On transports that carry requests to the client (stdio, TCP), a legacy
//! session asks the client for its roots, which narrow every call's (`roots`).

mod listen;
mod resources;
mod roots;
mod watched;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};

use crate::clients::Client;
use crate::framing::Frame;
use crate::protocol::body::Body;
use crate::protocol::jsonrpc::{self, Code, ErrorObject, Id, Message};
use crate::protocol::mcp::{LogLevel, Request, ToolCall, Version};
use crate::protocol::modern::{self, Headers};
use crate::results::{self, Answer, Failed, Fault};
use crate::runtime::CallSignal;
use crate::server::{Caller, Server};
use crate::telemetry::traces::{RequestSpan, Start};
use roots::ClientRoots;

/// What handling a frame gives: an answer now, or a call to run.
pub enum Handled {
    Now(Option<Reply>),
    Later(Pin<Box<dyn Future<Output = Option<Reply>> + Send>>),
}

/// A response, serialized, with what a transport needs to know about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub line: String,
    /// The JSON-RPC error code, when it is an error.
    pub error: Option<Code>,
    /// Whether it answers a request of the stateless era.
    pub modern: bool,
    /// The scope the request needed and its token lacks (a `-32003`
    /// `insufficient_scope` error), for HTTP's challenge.
    pub scope: Option<String>,
}

/// How one request is served: its revision, the log messages it wants, and
/// the agent client it came from, when it said so on the request itself
/// (the stateless era; a legacy session's client said it at `initialize`).
#[derive(Debug, Clone, Copy)]
struct Context {
    version: Version,
    log_level: Option<LogLevel>,
    client: Option<Client>,
}

/// Where a request's notifications go (progress, log messages). Sending never
/// waits: when the transport's queue is full, a notification is dropped, as
/// progress and logs may be.
#[derive(Clone)]
pub struct Outbox(mpsc::Sender<String>);

impl Outbox {
    pub fn new(tx: mpsc::Sender<String>) -> Outbox {
        Outbox(tx)
    }

    /// An outbox whose messages go nowhere (a plain JSON HTTP response).
    pub fn closed() -> Outbox {
        Outbox(mpsc::channel(1).0)
    }

    fn notify(&self, method: &str, params: Value) {
        if self.0.try_send(jsonrpc::notification(method, params)).is_err() {
            tracing::debug!(method, "notification dropped: the transport's queue is full or closed");
        }
    }

    /// Sends a message that must not be dropped, waiting while the
    /// transport's queue is full; false once the transport is gone.
    async fn send(&self, line: String) -> bool {
        self.0.send(line).await.is_ok()
    }

    /// Sends a request of the server's to the client.
    fn request(&self, line: String) {
        if self.0.try_send(line).is_err() {
            tracing::warn!("a request to the client was dropped: the transport's queue is full or closed");
        }
    }
}

/// What a message came with from its transport: the way back to the
/// client, and an HTTP request's MCP headers (none on stdio and TCP).
#[derive(Clone, Copy)]
struct Via<'a> {
    out: &'a Outbox,
    headers: Option<&'a Headers>,
}

/// A tool call asked for: its id, where its notifications go, and its span.
struct Asked<'a> {
    id: Id,
    out: &'a Outbox,
    span: RequestSpan,
}

/// One client's session over a shared server.
pub struct Session {
    server: Arc<Server>,
    /// The transport's name (`stdio`, `tcp`, `http`).
    transport: &'static str,
    /// The revision `initialize` negotiated (legacy era).
    version: Mutex<Option<Version>>,
    /// The least severe log message sent, once the client set one.
    log_level: Mutex<Option<LogLevel>>,
    /// Requests running, by id, for cancellation and duplicate detection.
    inflight: Mutex<HashMap<Id, Arc<CallSignal>>>,
    /// Calls running at once.
    slots: Arc<Semaphore>,
    /// The client's roots, when it gives some.
    roots: ClientRoots,
    /// The latest stream of unsolicited messages (see `unsolicited`).
    listener: AtomicU64,
    /// The client's input ended (stdio, TCP): listen streams end with their result.
    input_ended: AtomicBool,
    /// Who the client is: its principal and rights, and for the audit
    /// trail the transport's part, then the name and version `initialize` gave.
    caller: Mutex<Caller>,
    /// What the session subscribed to (legacy era), and what waits to be sent.
    notices: Arc<crate::notices::Listener>,
}

impl Session {
    /// A session on a transport that only answers (Streamable HTTP here: it
    /// has no stream on which to ask the client anything).
    pub fn new(server: Arc<Server>, caller: Caller) -> Arc<Session> {
        Session::with(server, caller, false)
    }

    /// A session on a transport that also carries the server's requests to the
    /// client (stdio, TCP), so it can ask for the client's roots.
    pub fn duplex(server: Arc<Server>, caller: Caller) -> Arc<Session> {
        Session::with(server, caller, true)
    }

    fn with(server: Arc<Server>, caller: Caller, duplex: bool) -> Arc<Session> {
        let slots = Arc::new(Semaphore::new(server.limits().max_concurrent_calls.max(1)));
        let scope = crate::notices::Scope { roots: Vec::new(), judge: Arc::clone(&caller.rights.judge) };
        Arc::new(Session {
            server,
            transport: caller.who.transport,
            version: Mutex::new(None),
            log_level: Mutex::new(None),
            inflight: Mutex::new(HashMap::new()),
            slots,
            roots: ClientRoots::new(duplex),
            listener: AtomicU64::new(0),
            input_ended: AtomicBool::new(false),
            caller: Mutex::new(caller),
            notices: crate::notices::Listener::new(scope),
        })
    }

    /// The id of the principal the session serves (`Principal::id`).
    pub fn owner(&self) -> String {
        self.caller.lock().expect("caller lock").owner.clone()
    }

    fn rights(&self) -> Arc<crate::policy::Rights> {
        Arc::clone(&self.caller.lock().expect("caller lock").rights)
    }

    /// Says that the client's input ended (stdio, TCP): calls still answer,
    /// and listen streams, which would never end by themselves, end now.
    pub fn end_of_input(&self) {
        self.input_ended.store(true, Ordering::SeqCst);
    }

    /// Whether `initialize` has negotiated a revision (legacy era).
    pub fn initialized(&self) -> bool {
        self.version.lock().expect("version lock").is_some()
    }

    /// Handles one frame. Lifecycle and listing requests are answered at once, in
    /// order; tool calls come back as a future the transport runs concurrently.
    /// `headers` are an HTTP request's MCP headers (none on stdio and TCP).
    pub fn handle(self: &Arc<Self>, frame: Frame, out: &Outbox, headers: Option<&Headers>) -> Handled {
        let line = match frame {
            Frame::Line(line) => line,
            Frame::TooLong { observed, head } => {
                let id = jsonrpc::salvage_id(&head);
                return Handled::Now(Some(error_reply(id.as_ref(), &self.too_long(observed), false)));
            }
        };
        match jsonrpc::parse(&line) {
            Err(rejected) => Handled::Now(Some(error_reply(rejected.id.as_ref(), &rejected.error, false))),
            Ok(Message::Notification { method, params }) => {
                self.notification(&method, params, out);
                Handled::Now(None)
            }
            Ok(Message::Response { id, outcome }) => {
                if !self.roots.answered(&id, &outcome) {
                    tracing::debug!(?id, "ignored a response to no request");
                }
                Handled::Now(None)
            }
            Ok(Message::Request { id, method, params }) => self.request(id, &method, params, Via { out, headers }),
        }
    }

    /// The `payload_too_large` error for a message over the line limit.
    fn too_long(&self, observed: usize) -> ErrorObject {
        let limit = self.server.limits().max_line_bytes;
        // Base64 grows a chunk by a third; half the limit leaves room for the envelope.
        let max_chunk = self.server.limits().uploads.max_chunk.min(limit / 2);
        Fault::TooLong { observed, limit, max_chunk }.into()
    }

    fn notification(&self, method: &str, params: Option<Value>, out: &Outbox) {
        match method {
            "notifications/cancelled" => {
                let id = params.as_ref().and_then(|p| p.get("requestId")).cloned().and_then(|v| match v {
                    Value::Number(n) => Some(Id::Number(n)),
                    Value::String(s) => Some(Id::String(s)),
                    _ => None,
                });
                let Some(id) = id else {
                    tracing::debug!("notifications/cancelled without a usable requestId; ignored");
                    return;
                };
                match self.inflight.lock().expect("inflight lock").get(&id) {
                    Some(signal) => {
                        tracing::info!(?id, "request cancelled by the client");
                        signal.cancel();
                    }
                    None => tracing::debug!(?id, "cancelled a request that is not running"),
                }
            }
            "notifications/initialized" | "notifications/roots/list_changed" => {
                tracing::debug!(method, "notification");
                if let Some(request) = self.roots.ask() {
                    out.request(request);
                }
            }
            other => tracing::debug!(method = other, "unknown notification ignored"),
        }
    }

    /// Answers the request `id` (`method` with `params`) that came `via` a transport.
    fn request(self: &Arc<Self>, id: Id, method: &str, params: Option<Value>, via: Via<'_>) -> Handled {
        let Via { out, headers } = via;
        // Entered only where it must be: once entered, a span's name is fixed (a
        // call's is named after its tool once the tool is known to be offered).
        let params_ref = params.as_ref();
        let span =
            RequestSpan::start(Start { method, id: &id, params: params_ref, transport: self.transport, headers });
        if span.is_recording() {
            let named = self.caller.lock().expect("caller lock").who.principal.as_ref().map(crate::auth::Named::label);
            span.principal(named.as_deref().unwrap_or("local"));
        }
        let modern = modern::is_modern(method, params.as_ref(), headers);
        let reply = |ctx: Option<Context>, result: Result<Body, ErrorObject>| {
            span.finish(&result);
            Handled::Now(Some(self.respond(&id, result, ctx.map_or(modern, |c| c.version.is_modern()))))
        };
        let (request, ctx) = if modern {
            let envelope = match modern::check(method, params.as_ref(), headers) {
                Ok(envelope) => envelope,
                Err(error) => return reply(None, Err(error)),
            };
            match Request::parse(method, params, true) {
                Ok(request) => {
                    let client = envelope.client.as_deref().map(|name| self.server.client(name));
                    (request, Context { version: Version::MODERN, log_level: envelope.log_level, client })
                }
                Err(error) => return reply(None, Err(error)),
            }
        } else {
            let request = match Request::parse(method, params, false) {
                Ok(request) => request,
                Err(error) => return reply(None, Err(error)),
            };
            let negotiated = *self.version.lock().expect("version lock");
            let version = match (&request, negotiated) {
                (Request::Initialize { protocol_version, client, roots }, _) => {
                    let version = Version::negotiate(protocol_version);
                    span.era(version.as_str());
                    span.span().in_scope(|| {
                        tracing::info!(%client, requested = %protocol_version, negotiated = version.as_str(), "initialize");
                    });
                    let (transport, rights) = {
                        let mut caller = self.caller.lock().expect("caller lock");
                        caller.who.client = Some(client.clone());
                        (caller.who.transport, Arc::clone(&caller.rights))
                    };
                    self.server.metrics().session(transport, version.as_str());
                    *self.version.lock().expect("version lock") = Some(version);
                    self.roots.initialized(*roots);
                    let instructions = self.server.instructions_for(&rights);
                    let result = results::initialize_result(version, &instructions, self.server.offers_resources());
                    return reply(None, Ok(result.into()));
                }
                (Request::Ping, _) => return reply(None, Ok(json!({}).into())),
                (_, None) => {
                    return reply(None, Err(Fault::NotInitialized { method: method.to_string() }.into()));
                }
                (_, Some(version)) => version,
            };
            (request, Context { version, log_level: *self.log_level.lock().expect("log level lock"), client: None })
        };
        span.era(ctx.version.as_str());
        self.server.metrics().request(self.transport, ctx.version.as_str());
        let done = |result: Result<Value, ErrorObject>, cacheable| reply(Some(ctx), stamped(ctx, result, cacheable));
        match request {
            Request::Discover => {
                let capabilities = results::capabilities(Version::MODERN, self.server.offers_resources());
                let instructions = self.server.instructions_for(&self.rights());
                done(Ok(modern::discover_result(capabilities, &instructions)), true)
            }
            Request::ListTools => done(Ok(self.server.list_tools_for(ctx.version, &self.rights())), true),
            Request::Listen(filter) => self.listen(Asked { id, out, span }, ctx, filter),
            resource @ (Request::ListResources { .. }
            | Request::ReadResource { .. }
            | Request::ListResourceTemplates
            | Request::Subscribe { .. }
            | Request::Unsubscribe { .. }
            | Request::ReadDirectory { .. }
            | Request::ListSkills
            | Request::GetSkill { .. }) => self.resource(Asked { id, out, span }, ctx, (method, resource)),
            Request::ListPrompts => done(Ok(results::empty_list("prompts")), true),
            Request::GetPrompt { name } => done(Err(Fault::UnknownPrompt { name }.into()), false),
            Request::SetLogLevel { level } => {
                *self.log_level.lock().expect("log level lock") = Some(level);
                done(Ok(json!({})), false)
            }
            Request::CallTool(call) => self.call(Asked { id, out, span }, call, ctx),
            Request::Initialize { .. } | Request::Ping => unreachable!("answered above"),
        }
    }

    /// Starts a tool call: registered as running (so it can be cancelled), run
    /// on a blocking thread once a slot is free, answered unless cancelled.
    fn call(self: &Arc<Self>, asked: Asked<'_>, call: ToolCall, ctx: Context) -> Handled {
        let Asked { id, out, span } = asked;
        let ToolCall { name, arguments, progress_token } = call;
        let signal = Arc::new(match progress_token {
            Some(token) => {
                let out = out.clone();
                CallSignal::with_progress(Box::new(move |done, total, message| {
                    let mut params = json!({ "progressToken": token, "progress": done });
                    if let Some(total) = total {
                        params["total"] = total.into();
                    }
                    if let Some(message) = message {
                        params["message"] = message.into();
                    }
                    out.notify("notifications/progress", params);
                }))
            }
            None => CallSignal::new(),
        });
        let mut caller = self.caller.lock().expect("caller lock").clone();
        caller.who.era = Some(ctx.version.as_str());
        let client = ctx
            .client
            .or_else(|| caller.who.client.as_deref().map(|name| self.server.client(name)))
            .unwrap_or_default();
        let refuse = |fault: Fault| {
            let result: Result<Value, ErrorObject> = Err(fault.into());
            span.finish(&result);
            Handled::Now(Some(self.respond(&id, result, ctx.version.is_modern())))
        };
        let tool = match self.server.called(&name, &caller) {
            Ok(tool) => tool,
            Err(fault) => return refuse(fault),
        };
        span.tool(&name);
        let Some(guard) = self.running(id.clone(), signal) else { return refuse(Fault::DuplicateId) };
        let out = out.clone();
        let traced = span.span().clone();
        let answered = async move {
            let mut guard = guard;
            let slots = Arc::clone(&guard.session.slots);
            let _permit = slots.acquire_owned().await.expect("the session's semaphore never closes");
            if guard.signal.is_cancelled() {
                return None;
            }
            let client_roots = match guard.session.client_roots(ctx).await {
                Ok(roots) => roots,
                Err(error) => {
                    guard.done = true;
                    return Some(guard.session.respond(&guard.id, Err::<Body, _>(error), false));
                }
            };
            let started = Instant::now();
            let asked = crate::args::Form::asked(&arguments);
            let server = Arc::clone(&guard.session.server);
            let signal = Arc::clone(&guard.signal);
            let job = watched::CallJob { server, tool, arguments, client_roots, signal, caller, client };
            let answer = job.run().await;
            guard.done = true;
            let elapsed = started.elapsed();
            if let Some(at) = guard.signal.cancelled_at() {
                let stop_ms = at.elapsed().as_secs_f64() * 1000.0;
                tracing::info!(id = ?guard.id, "cancelled call stopped {stop_ms:.1} ms after the cancellation");
                return None;
            }
            log_outcome(&out, ctx.log_level, &guard.id, &answer, elapsed);
            if let Ok(Answer::Failed(Failed::Tool(failure))) = &answer {
                span.tool_error(failure.code);
            }
            let result =
                answer.map_err(ErrorObject::from).and_then(|answer| results::answer(answer, ctx.version, asked));
            span.finish(&result);
            Some(guard.session.respond(&guard.id, stamped(ctx, result, false), ctx.version.is_modern()))
        };
        Handled::Later(Box::pin(tracing::Instrument::instrument(answered, traced)))
    }

    /// The response line for a request's outcome; a response over the
    /// server's response limit is replaced by a `payload_too_large` error.
    fn respond(&self, id: &Id, result: Result<impl Into<Body>, ErrorObject>, modern: bool) -> Reply {
        let (line, error, scope) = match result {
            Ok(body) => (jsonrpc::success(id, body), None, None),
            Err(error) => (jsonrpc::failure(Some(id), &error), Some(error.code), needed_scope(&error)),
        };
        let limit = self.server.limits().max_response_bytes;
        if line.len() <= limit {
            return Reply { line, error, modern, scope };
        }
        tracing::warn!(?id, bytes = line.len(), limit, "response over the limit replaced by an error");
        // A page's payload can appear escaped and again in a footer: an eighth of
        // the limit fits. Never more than a call may ask for.
        let most = self.server.pager().limits().max_tokens as usize;
        let max_tokens = Fault::tokens_that_fit(limit, most);
        let error = Fault::ResponseTooLarge { size: line.len(), limit, max_tokens }.to_error();
        error_reply(Some(id), &error, modern)
    }
}

fn error_reply(id: Option<&Id>, error: &ErrorObject, modern: bool) -> Reply {
    Reply { line: jsonrpc::failure(id, error), error: Some(error.code), modern, scope: needed_scope(error) }
}

/// The scope an `insufficient_scope` error names.
fn needed_scope(error: &ErrorObject) -> Option<String> {
    let data = error.data.as_ref().filter(|_| error.code == Code::Forbidden)?;
    data.get("scope").and_then(Value::as_str).map(str::to_string)
}

/// A result as the request's era wants it: stamped in the stateless one.
fn stamped(ctx: Context, result: Result<impl Into<Body>, ErrorObject>, cacheable: bool) -> Result<Body, ErrorObject> {
    result.map(|body| {
        let mut body = body.into();
        if ctx.version.is_modern() {
            modern::stamp_body(&mut body, cacheable);
        }
        body
    })
}

/// Sends a `notifications/message` when the request wants this level.
fn log(out: &Outbox, wanted: Option<LogLevel>, level: LogLevel, data: Value) {
    if wanted.is_some_and(|least| level >= least) {
        out.notify("notifications/message", json!({ "level": level.as_str(), "logger": "cordon", "data": data }));
    }
}

/// Logs how a call ended: debug when it answered, warning for a tool error,
/// error for a failure of the server's.
fn log_outcome(
    out: &Outbox,
    wanted: Option<LogLevel>,
    id: &Id,
    answer: &Result<Answer, Fault>,
    elapsed: std::time::Duration,
) {
    let ms = elapsed.as_millis() as u64;
    let failed = |level, message: String| {
        log(out, wanted, level, json!({ "event": "failed", "request": id, "error": message, "ms": ms }));
    };
    match answer {
        Ok(Answer::Failed(Failed::Tool(failure))) => log(
            out,
            wanted,
            LogLevel::Warning,
            json!({ "event": "tool_error", "request": id, "error": failure.to_string(), "ms": ms }),
        ),
        Ok(Answer::Failed(Failed::Server(error))) => failed(LogLevel::Error, error.message.clone()),
        Ok(answer) => {
            let page = match answer {
                Answer::Page(page) => results::page_log(page),
                _ => Value::Null,
            };
            log(out, wanted, LogLevel::Debug, json!({ "event": "answered", "request": id, "page": page, "ms": ms }));
        }
        Err(fault) => {
            let error = fault.to_error();
            let level = if error.code == Code::InternalError { LogLevel::Error } else { LogLevel::Warning };
            failed(level, error.message);
        }
    }
}

impl Session {
    /// Registers the request `id` as running (so `notifications/cancelled`
    /// reaches `signal`) until the guard is dropped; `None` when a request
    /// with that id is running already.
    fn running(self: &Arc<Self>, id: Id, signal: Arc<CallSignal>) -> Option<Running> {
        let mut inflight = self.inflight.lock().expect("inflight lock");
        if inflight.contains_key(&id) {
            return None;
        }
        inflight.insert(id.clone(), Arc::clone(&signal));
        Some(Running { session: Arc::clone(self), id, signal, done: false })
    }
}

/// A request in progress. Dropped before it is done (the transport gave up on
/// it, e.g. an HTTP client went away), it cancels the call; either way it
/// removes the request from the session's running set.
struct Running {
    session: Arc<Session>,
    id: Id,
    signal: Arc<CallSignal>,
    done: bool,
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.done {
            self.signal.cancel();
        }
        self.session.inflight.lock().expect("inflight lock").remove(&self.id);
    }
}
