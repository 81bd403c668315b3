//! MCP over the process's stdin and stdout. Logs go to stderr only.

use std::sync::Arc;

use crate::server::{Server, Session};

/// Serves one session on stdin/stdout until stdin closes.
pub async fn serve(server: Arc<Server>) {
    let limits = *server.limits();
    let session = Arc::new(Session::new(server));
    super::lines::serve(
        tokio::io::stdin(),
        tokio::io::stdout(),
        session,
        limits.max_line_bytes,
        limits.max_concurrent_calls,
    )
    .await;
}
