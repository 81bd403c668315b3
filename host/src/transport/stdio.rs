//! MCP over the process's stdin and stdout. Logs go to stderr only.

use std::sync::Arc;

use crate::server::Server;
use crate::session::Session;

/// Serves one session on stdin/stdout until stdin closes.
pub async fn serve(server: Arc<Server>) {
    let max_line = server.limits().max_line_bytes;
    super::lines::serve(tokio::io::stdin(), tokio::io::stdout(), Session::duplex(server), max_line).await;
}
