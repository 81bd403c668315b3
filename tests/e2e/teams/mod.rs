//! Teams: every person and agent its own identity and rights. Cordon over
//! HTTP (and TCP) as an OAuth 2.1 resource server for a real authorization
//! server (oidc-provider, `support::issuer`), with named static tokens and
//! `[[access]]` rules: bad tokens refused with 401 (`tokens`), scopes with
//! 403, principals kept to their own roots, tools and results, on one
//! replica and across two sharing a real Redis (`principals`), and the
//! audit trail naming who did what.

mod principals;
mod resources;
mod tokens;

use std::path::Path;

use serde_json::{Value, json};

use crate::support::issuer::Issuer;
use crate::support::{HttpResponse, Listening, request, spawn_listening};

/// The resource URI the servers under test are (a token's audience must hold it).
pub const AUDIENCE: &str = "https://cordon.test/mcp";

/// `cordon serve --http` on loopback accepting `issuer`'s tokens for
/// `AUDIENCE`, with `extra` flags.
pub fn serve(root: &Path, issuer: &Issuer, extra: &[&str]) -> Listening {
    let mut flags = vec!["--auth-issuer", issuer.url.as_str(), "--auth-audience", AUDIENCE];
    flags.extend_from_slice(extra);
    spawn_listening(root, &["--http", "127.0.0.1:0"], &flags)
}

/// `host:port` of a listening HTTP server.
pub fn addr_of(server: &Listening) -> String {
    server.addr.trim_start_matches("http://").trim_end_matches("/mcp").to_string()
}

/// A client of one server as one principal, in one era: a legacy client
/// initializes a session first; a stateless one sends the 2026-07-28 envelope.
pub struct Client {
    pub addr: String,
    pub token: Option<String>,
    pub modern: bool,
    session: Option<String>,
    next_id: u64,
}

impl Client {
    pub fn new(addr: &str, token: Option<&str>, modern: bool) -> Client {
        Client { addr: addr.to_string(), token: token.map(str::to_string), modern, session: None, next_id: 1 }
    }

    /// POSTs one request to `path` (normally `/mcp`) and returns the raw response.
    pub fn post_to(&mut self, path: &str, method: &str, mut params: Value) -> HttpResponse {
        let mut headers = vec![
            ("Content-Type", "application/json".to_string()),
            ("Accept", "application/json, text/event-stream".to_string()),
        ];
        if let Some(token) = &self.token {
            headers.push(("Authorization", format!("Bearer {token}")));
        }
        if self.modern {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "teams-e2e", "version": "1"},
            });
            headers.push(("MCP-Protocol-Version", "2026-07-28".to_string()));
            headers.push(("Mcp-Method", method.to_string()));
            // What the request addresses: a tool's name, a resource's URI.
            if let Some(name) = params.get("name").or_else(|| params.get("uri")).and_then(Value::as_str) {
                headers.push(("Mcp-Name", name.to_string()));
            }
        } else if let Some(session) = &self.session {
            headers.push(("Mcp-Session-Id", session.clone()));
            headers.push(("MCP-Protocol-Version", "2025-11-25".to_string()));
        }
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        request(&self.addr, "POST", path, &headers, body.to_string().as_bytes())
    }

    /// Initializes a legacy session (a stateless client has nothing to do):
    /// the response, whose `instructions` name the roots.
    pub fn initialize(&mut self) -> HttpResponse {
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                            "clientInfo": {"name": "teams-e2e", "version": "1"}});
        let response = self.post_to("/mcp", "initialize", params);
        self.session = response.header("mcp-session-id").map(str::to_string);
        response
    }

    /// One request; the JSON-RPC response it got (a 4xx without one as
    /// `{"http_status": N}`).
    pub fn rpc(&mut self, method: &str, params: Value) -> Value {
        if !self.modern && self.session.is_none() && method != "initialize" {
            let init = self.initialize();
            assert_eq!(init.status, 200, "initialize: {}", String::from_utf8_lossy(&init.body));
        }
        let response = self.post_to("/mcp", method, params);
        let last = response.messages().pop().unwrap_or_else(|| json!({"http_status": response.status}).to_string());
        serde_json::from_str(&last).unwrap()
    }

    /// A tool call's result (or error response).
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.rpc("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// The names of the tools `tools/list` shows.
    pub fn tool_names(&mut self) -> Vec<String> {
        let listed = self.rpc("tools/list", json!({}));
        let tools = listed["result"]["tools"].as_array().cloned().unwrap_or_default();
        tools.iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
    }
}

/// The lines of an audit log, parsed.
pub fn audit_lines(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}
