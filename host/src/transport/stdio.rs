//! MCP over the process's stdin and stdout. Logs go to stderr only.

use std::sync::Arc;

use crate::audit::Who;
use crate::auth::Principal;
use crate::server::Server;
use crate::session::Session;

/// Serves one session on stdin/stdout until stdin closes.
pub async fn serve(server: Arc<Server>) {
    let max_line = server.limits().max_line_bytes;
    // The client is the process that started this one, run by the local user.
    let who = Who { peer: Some(format!("pid {}", std::os::unix::process::parent_id())), ..Who::new("stdio") };
    let caller = server.caller(&Principal::Local, who);
    super::lines::serve(tokio::io::stdin(), tokio::io::stdout(), Session::duplex(server, caller), max_line).await;
}
