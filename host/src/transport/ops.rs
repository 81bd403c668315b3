//! The operator's endpoints: `GET /metrics` (Prometheus text), `GET /healthz`
//! (live: the process answers) and `GET /readyz` (ready to take calls, else
//! 503 with the reason as JSON). They are served on the HTTP listener beside
//! `/mcp` (`/metrics` there behind the same credentials as `/mcp`), and on a
//! listener of their own with `--metrics ADDR`, whatever the transport, stdio
//! included.

use std::sync::Arc;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use crate::metrics::CONTENT_TYPE;
use crate::server::Server;

/// `GET /metrics`: the exposition.
pub fn metrics(server: &Server) -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, CONTENT_TYPE)], server.render_metrics()).into_response()
}

/// `GET /healthz`: the process answers.
pub fn healthz() -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], json!({"status": "ok"}).to_string()).into_response()
}

/// `GET /readyz`: 200 when the server can take calls, else 503 with why.
pub fn readyz(server: &Server) -> Response {
    let (status, body) = match server.ready() {
        Ok(()) => (StatusCode::OK, json!({"status": "ready"})),
        Err(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"status": "not_ready", "reason": why.code(), "detail": why.to_string()}),
        ),
    };
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// `/healthz` and `/readyz` for `server`, to merge into a router.
pub fn health_routes<S: Clone + Send + Sync + 'static>(server: &Arc<Server>) -> Router<S> {
    let ready = Arc::clone(server);
    Router::new()
        .route("/healthz", get(|| async { healthz() }))
        .route("/readyz", get(move || async move { readyz(&ready) }))
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `listener` (bound before,
/// so that an address in use stops the start) until the process ends.
pub async fn serve(server: Arc<Server>, listener: tokio::net::TcpListener) {
    if let Ok(addr) = listener.local_addr() {
        tracing::info!("metrics on http://{addr}/metrics");
    }
    let scraped = Arc::clone(&server);
    let app =
        Router::new().route("/metrics", get(move || async move { metrics(&scraped) })).merge(health_routes(&server));
    if let Err(e) = axum::serve(listener, app).await {
        tracing::error!("the metrics listener stopped: {e}");
    }
}
