//! MCP over Streamable HTTP at `/mcp`, on axum, for both eras.
//!
//! Every POST carries one JSON-RPC message, handed to the same session core as
//! stdio and TCP. What this adapter adds is HTTP's own: checks of `Origin` and
//! `Host` (against DNS rebinding) and of the bearer credential, which makes the
//! request's principal (`admit`), the protected resource metadata, the legacy era's
//! sessions (`Mcp-Session-Id`, minted by `initialize`, ended by `DELETE`), and
//! the status codes each era gives to JSON-RPC errors. A request answered at
//! once gets a JSON body; a tool call gets an SSE stream that carries its
//! progress and log notifications, then its response. A call whose client goes
//! away (the POST or the stream closed) is cancelled.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::ConnectInfo;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::{ListenerExt, TapIo};
use futures_util::StreamExt;
use futures_util::stream::{self, Stream};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use crate::auth::Auth;
use crate::framing::Frame;
use crate::limits::FIXED;
use crate::protocol::jsonrpc::Code;
use crate::protocol::modern::Headers;
use crate::results::faults::refusal::{Challenge, Refusal, status_of};
use crate::server::Caller;
use crate::server::Server;
use crate::session::{Handled, Outbox, Reply, Session};

/// The header naming a legacy session.
const SESSION_ID: &str = "mcp-session-id";

mod admit;

/// Where the endpoint listens and how it is protected.
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// The credentials accepted as `Authorization: Bearer …` (see `auth`).
    pub auth: Arc<Auth>,
}

struct Endpoint {
    server: Arc<Server>,
    auth: Arc<Auth>,
    /// Where the protected resource metadata is, for challenges.
    metadata_url: Option<String>,
    loopback: bool,
    sessions: Mutex<HashMap<String, (Arc<Session>, Instant)>>,
}

/// Serves `/mcp` on `options.addr` until the process ends.
pub async fn serve(server: Arc<Server>, options: HttpOptions) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(options.addr).await?;
    let local = listener.local_addr()?;
    let listener = answering_at_once(listener);
    tracing::info!("listening on http://{local}/mcp");
    options.auth.warm().await;
    let endpoint = Arc::new(Endpoint {
        server,
        metadata_url: options.auth.resource_metadata_url(),
        auth: options.auth,
        loopback: local.ip().is_loopback(),
        sessions: Mutex::new(HashMap::new()),
    });
    let health = super::ops::health_routes(&endpoint.server);
    let app = Router::new()
        .route("/mcp", post(on_post).get(on_get).delete(on_delete))
        .route("/.well-known/oauth-protected-resource", get(admit::on_metadata))
        .route("/.well-known/oauth-protected-resource/mcp", get(admit::on_metadata))
        .route("/metrics", get(on_metrics))
        .merge(health)
        .with_state(endpoint);
    axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await?;
    Ok(())
}

/// `listener`, with every connection it accepts set to send each write at
/// once (see `no_delay`).
fn answering_at_once(listener: tokio::net::TcpListener) -> TapIo<tokio::net::TcpListener, fn(&mut TcpStream)> {
    listener.tap_io(|stream| super::no_delay(stream))
}

impl Endpoint {
    /// The legacy session `id`, if it is still there and serves `caller`'s
    /// principal (another principal's session is as unknown as a made-up one).
    fn session(&self, id: &str, caller: &Caller) -> Option<Arc<Session>> {
        let session = self.live_session(id)?;
        (session.owner() == caller.owner).then_some(session)
    }

    /// The 403 a request whose token lacks `scope` gets, with its challenge.
    fn forbidden(&self, mut response: Response, scope: Option<&str>) -> Response {
        let challenge = Challenge { metadata: self.metadata_url.as_deref(), error: Some("insufficient_scope"), scope };
        response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge.value());
        response
    }

    fn live_session(&self, id: &str) -> Option<Arc<Session>> {
        let mut sessions = self.sessions.lock().expect("sessions lock");
        let entry = sessions.get_mut(id)?;
        if entry.1.elapsed() > FIXED.http_session_idle {
            sessions.remove(id);
            return None;
        }
        entry.1 = Instant::now();
        Some(Arc::clone(&entry.0))
    }

    fn register(&self, session: Arc<Session>) -> String {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).expect("the operating system's random source works");
        let id = hex::encode(bytes);
        let mut sessions = self.sessions.lock().expect("sessions lock");
        sessions.retain(|_, (_, used)| used.elapsed() <= FIXED.http_session_idle);
        if sessions.len() >= FIXED.http_sessions
            && let Some(oldest) = sessions.iter().min_by_key(|(_, (_, used))| *used).map(|(k, _)| k.clone())
        {
            sessions.remove(&oldest);
        }
        sessions.insert(id.clone(), (session, Instant::now()));
        id
    }
}

/// The address a connection comes from, as handlers see it.
type Peer = SocketAddr;

/// The MCP headers, for the session's checks.
fn mcp_headers(headers_map: &HeaderMap) -> Headers {
    let mut malformed = false;
    let mut get = |name: &str| {
        let value = headers_map.get(name)?;
        match value.to_str() {
            Ok(text) if text.bytes().all(|b| b == b' ' || b == b'\t' || b.is_ascii_graphic()) => Some(text.to_string()),
            _ => {
                malformed = true;
                None
            }
        }
    };
    let protocol_version = get("mcp-protocol-version");
    let method = get("mcp-method");
    let name = get("mcp-name");
    let mut headers = Headers { protocol_version, method, name, malformed, ..Headers::default() };
    if crate::telemetry::traces::on() {
        let text = |name: &str| headers_map.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        (headers.session, headers.traceparent, headers.tracestate) =
            (text("mcp-session-id"), text("traceparent"), text("tracestate"));
    }
    headers
}

/// Whether the request's `MCP-Protocol-Version` names the stateless era.
fn modern_header(headers: &Headers) -> bool {
    headers.era_named() == Some(true)
}

fn json_reply(reply: Reply, modern: bool, session_id: Option<&str>) -> Response {
    let mut response =
        (status_of(reply.error, modern), [(header::CONTENT_TYPE, "application/json")], reply.line).into_response();
    if let Some(id) = session_id.and_then(|id| HeaderValue::from_str(id).ok()) {
        response.headers_mut().insert(SESSION_ID, id);
    }
    response
}

async fn on_post(State(endpoint): State<Arc<Endpoint>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let peer = parts.extensions.get::<ConnectInfo<Peer>>().map(|p| p.0);
    let caller = match endpoint.admit(&parts, peer).await {
        Ok(caller) => caller,
        Err(refused) => return refused,
    };
    let content_type = parts.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !content_type.to_ascii_lowercase().starts_with("application/json") {
        return Refusal::NotJson.into_response();
    }
    let accept = parts.headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("*/*").to_string();
    let sse = accept.contains("text/event-stream") || accept.contains("*/*");
    if !sse && !accept.contains("application/json") {
        return Refusal::AcceptsNeither.into_response();
    }
    let headers = mcp_headers(&parts.headers);
    let modern = modern_header(&headers);
    let session_header = parts.headers.get(SESSION_ID).and_then(|v| v.to_str().ok()).map(str::to_string);
    // Legacy: the session named by the header, or a new one (kept if it initializes).
    let (session, known) = match (&session_header, modern) {
        (Some(id), false) => match endpoint.session(id, &caller) {
            Some(session) => (session, true),
            None => return Refusal::UnknownSession.into_response(),
        },
        _ => (Session::new(Arc::clone(&endpoint.server), caller), false),
    };
    let limit = endpoint.server.limits().max_line_bytes;
    let frame = match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => Frame::Line(bytes),
        Err(_) => {
            let observed = parts
                .headers
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()?.parse().ok())
                .unwrap_or(limit + 1);
            Frame::TooLong { observed, head: Bytes::new() }
        }
    };
    let too_long = matches!(frame, Frame::TooLong { .. });
    let (tx, rx) = mpsc::channel(FIXED.sse_queue);
    let outbox = Outbox::new(tx);
    match session.handle(frame, &outbox, Some(&headers)) {
        Handled::Now(None) => StatusCode::ACCEPTED.into_response(),
        Handled::Now(Some(mut reply)) if reply.error == Some(Code::Forbidden) => {
            let scope = reply.scope.take();
            endpoint.forbidden(json_reply(reply, modern, None), scope.as_deref())
        }
        Handled::Now(Some(reply)) => {
            let modern = modern || reply.modern;
            if too_long {
                let mut response = json_reply(reply, modern, None);
                *response.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
                response
            } else if modern || known {
                json_reply(reply, modern, None)
            } else if session.initialized() {
                // `initialize` came without a session: this is its session now.
                let id = endpoint.register(session);
                json_reply(reply, false, Some(&id))
            } else {
                // Any other legacy request needs the session `initialize` made.
                let mut response = json_reply(reply, false, None);
                if response.status() == StatusCode::OK && !response.headers().contains_key(SESSION_ID) {
                    *response.status_mut() = StatusCode::BAD_REQUEST;
                }
                response
            }
        }
        Handled::Later(call) => {
            if !sse {
                return match call.await {
                    Some(reply) => json_reply(reply, modern, None),
                    None => StatusCode::ACCEPTED.into_response(),
                };
            }
            let mut response = Sse::new(events(rx, call))
                .keep_alive(KeepAlive::new().interval(Duration::from_secs(5)))
                .into_response();
            response.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
            response
        }
    }
}

/// `GET /metrics`, behind the same checks and credentials as `/mcp`.
async fn on_metrics(State(endpoint): State<Arc<Endpoint>>, request: Request) -> Response {
    let (parts, _) = request.into_parts();
    let peer = parts.extensions.get::<ConnectInfo<Peer>>().map(|p| p.0);
    match endpoint.admit(&parts, peer).await {
        Ok(_) => super::ops::metrics(&endpoint.server),
        Err(refused) => refused,
    }
}

/// The SSE stream of one call: its notifications as they come, then its
/// response, then the end. Dropped early (the client left), it drops the call,
/// which cancels it.
fn events(
    rx: mpsc::Receiver<String>,
    call: std::pin::Pin<Box<dyn std::future::Future<Output = Option<Reply>> + Send>>,
) -> impl Stream<Item = Result<Event, std::convert::Infallible>> {
    enum Phase {
        Running(mpsc::Receiver<String>, std::pin::Pin<Box<dyn std::future::Future<Output = Option<Reply>> + Send>>),
        Done,
    }
    stream::unfold(Phase::Running(rx, call), |phase| async move {
        let Phase::Running(mut rx, mut call) = phase else { return None };
        tokio::select! {
            biased;
            Some(note) = rx.recv() => Some((Ok(Event::default().event("message").data(note)), Phase::Running(rx, call))),
            reply = &mut call => {
                let reply = reply?;
                Some((Ok(Event::default().event("message").data(reply.line)), Phase::Done))
            }
        }
    })
}

/// A legacy session's stream of messages the server sends unasked
/// (`notifications/tools/list_changed`), as SSE; the stateless era has none.
async fn on_get(
    State(endpoint): State<Arc<Endpoint>>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    request: Request,
) -> Response {
    let (parts, _) = request.into_parts();
    let caller = match endpoint.admit(&parts, Some(peer)).await {
        Ok(caller) => caller,
        Err(refused) => return refused,
    };
    let headers = &parts.headers;
    let session_id = headers.get(SESSION_ID).and_then(|v| v.to_str().ok());
    let (true, Some(id)) = (!modern_header(&mcp_headers(headers)), session_id) else {
        return Refusal::GetWithoutSession.into_response();
    };
    let Some(session) = endpoint.session(id, &caller) else {
        return Refusal::UnknownSession.into_response();
    };
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !accept.contains("text/event-stream") {
        return Refusal::AcceptsNoStream.into_response();
    }
    let events = session
        .unsolicited()
        .map(|line| Ok::<_, std::convert::Infallible>(Event::default().event("message").data(line)));
    let mut response = Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response();
    response.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

async fn on_delete(
    State(endpoint): State<Arc<Endpoint>>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    request: Request,
) -> Response {
    let (parts, _) = request.into_parts();
    let caller = match endpoint.admit(&parts, Some(peer)).await {
        Ok(caller) => caller,
        Err(refused) => return refused,
    };
    let headers = &parts.headers;
    if modern_header(&mcp_headers(headers)) {
        return Refusal::DeleteStateless.into_response();
    }
    let Some(id) = headers.get(SESSION_ID).and_then(|v| v.to_str().ok()) else {
        return Refusal::DeleteWithoutSession.into_response();
    };
    if endpoint.session(id, &caller).is_none() {
        return Refusal::UnknownSession.into_response();
    }
    match endpoint.sessions.lock().expect("sessions lock").remove(id) {
        Some(_) => StatusCode::NO_CONTENT.into_response(),
        None => Refusal::UnknownSession.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mechanism behind tool calls without a 40 ms stall: every
    /// connection the HTTP listener accepts has Nagle's algorithm off, so an
    /// SSE response's last small write is not held for the client's ACK.
    #[tokio::test]
    async fn accepted_connections_send_each_write_at_once() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut listener = answering_at_once(listener);
        let _client = std::net::TcpStream::connect(addr).unwrap();
        let (stream, _) = axum::serve::Listener::accept(&mut listener).await;
        assert!(stream.nodelay().unwrap(), "TCP_NODELAY is set");
    }
}
