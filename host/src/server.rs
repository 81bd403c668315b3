//! The server: tools, policy, runtime and pager shared by every session (see
//! `session` for the request handling), and one tool call end to end.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};

use crate::ambient;
use crate::pager::cursor::{CursorError, CursorKey};
use crate::pager::{PageError, PageLimits, Pager, Paging};
use crate::policy::{Policy, RootSpec};
use crate::protocol::jsonrpc::ErrorObject;
use crate::protocol::mcp::Version;
use crate::protocol::results as mcp;
use crate::registry::{Origin, Registry, Tool};
use crate::runtime::{CallFailure, CallLimits, CallSignal, LimitError, Runtime};
use crate::staging::{self, UPLOAD_TOOL};
use crate::tool::Access;
use crate::uploads::{UploadLimits, Uploads};

/// Everything needed to start a server.
#[derive(Debug, Clone)]
pub struct Config {
    pub roots: Vec<RootSpec>,
    /// Where compiled components and the cursor key are kept; `None` compiles
    /// at every start and signs cursors with a key that dies with the process.
    pub state_dir: Option<PathBuf>,
    /// The cursor signing key (hex), shared by replicas; else the state dir's.
    pub cursor_key: Option<String>,
    /// Extra tool components to load; they get no filesystem access.
    pub components: Vec<PathBuf>,
    /// Deny rules: globs, relative to each root, no tool may open or list.
    pub deny: Vec<String>,
    /// Offer no tool that writes, and treat every root as read-only.
    pub read_only: bool,
    pub limits: Limits,
}

/// The server's limits; each fails closed.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The longest request line accepted, in bytes.
    pub max_line_bytes: usize,
    /// The longest response sent, in bytes; a longer one becomes an error.
    pub max_response_bytes: usize,
    /// Calls one session runs at once; more wait.
    pub max_concurrent_calls: usize,
    pub call: CallLimits,
    pub pages: PageLimits,
    pub uploads: UploadLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line_bytes: 8 * 1024 * 1024,
            max_response_bytes: 4 * 1024 * 1024,
            max_concurrent_calls: 8,
            call: CallLimits {
                memory_bytes: 256 * 1024 * 1024,
                table_elements: 100_000,
                instances: 64,
                max_handles: 1024,
                max_chunk_bytes: 4 * 1024 * 1024,
                max_info_bytes: 64 * 1024,
                wall_time: Duration::from_secs(30),
                host_grace: Duration::from_secs(1),
            },
            pages: PageLimits::default(),
            uploads: UploadLimits::default(),
        }
    }
}

impl Limits {
    /// Refuses a limit that is zero (nothing runs unlimited, and a zero limit
    /// would refuse everything) or out of range; the error names it.
    pub fn validate(&self) -> Result<(), LimitError> {
        self.call.validate()?;
        let counts = [
            ("max_line_bytes", self.max_line_bytes),
            ("max_response_bytes", self.max_response_bytes),
            ("max_concurrent_calls", self.max_concurrent_calls),
            ("page_tokens", self.pages.default_tokens as usize),
            ("max_page_tokens", self.pages.max_tokens as usize),
            ("max_page_items", self.pages.max_items as usize),
        ];
        if let Some((name, _)) = counts.iter().find(|(_, n)| *n == 0) {
            return Err(LimitError::Zero(name));
        }
        Ok(())
    }
}

/// The state shared by every session: tools, policy, runtime.
pub struct Server {
    runtime: Runtime,
    registry: Registry,
    policy: Policy,
    pager: Pager,
    uploads: Uploads,
    limits: Limits,
}

impl Server {
    /// Resolves the roots, builds the runtime and loads the built-in tools.
    pub fn start(config: &Config) -> anyhow::Result<Arc<Server>> {
        config.limits.validate()?;
        let policy = Policy::new(&config.roots, &config.deny, config.read_only)?;
        // Stray temporary files older than this start, on a background thread.
        crate::cleanup::spawn(policy.roots(), std::time::SystemTime::now());
        let state = match &config.state_dir {
            Some(dir) => Some(ambient::create_dir_handle(dir).with_context(|| format!("open {}", dir.display()))?),
            None => None,
        };
        let cache_dir = match &state {
            Some(state) => {
                state.create_dir_all("compiled").context("create the compile cache")?;
                Some(state.open_dir("compiled").context("open the compile cache")?)
            }
            None => None,
        };
        let key = match (&config.cursor_key, &state) {
            (Some(hex), _) => {
                CursorKey::from_hex(hex).map_err(|e| anyhow::anyhow!("the cursor key is unusable: {e}"))?
            }
            (None, Some(state)) => CursorKey::load_or_create(state).context("load the cursor key")?,
            (None, None) => {
                tracing::warn!("no state directory or cursor key: cursors will not survive a restart");
                CursorKey::random()
            }
        };
        let uploads_path = match &config.state_dir {
            Some(dir) => dir.join("uploads"),
            None => std::env::temp_dir().join(format!("cordon-uploads-{}", std::process::id())),
        };
        let uploads_dir = ambient::create_dir_handle(&uploads_path)
            .with_context(|| format!("open the uploads directory {}", uploads_path.display()))?;
        let uploads =
            Uploads::new(uploads_path, uploads_dir, config.limits.uploads).context("clean the uploads directory")?;
        let runtime = Runtime::new(config.limits.call, cache_dir, Arc::clone(policy.deny()))?;
        let registry = Registry::load(&runtime, &config.components)?;
        let pager = Pager::new(key, config.limits.pages);
        Ok(Arc::new(Server { runtime, registry, policy, pager, uploads, limits: config.limits }))
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The tools clients may call: all of them, or, when the server runs
    /// read-only, those that do not write.
    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        let read_only = self.policy.read_only();
        self.registry.tools().iter().map(|t| &**t).filter(move |t| !(read_only && t.manifest.access == Access::Write))
    }

    /// Whether clients may call the tool `name` (a tool, or the host's `upload`).
    pub fn offers(&self, name: &str) -> bool {
        if name == UPLOAD_TOOL {
            return !self.policy.read_only();
        }
        self.tools().any(|t| t.manifest.name == name)
    }

    /// The `tools/list` result.
    pub fn list_tools(&self, version: Version) -> Value {
        mcp::list_tools_result(self.tools(), !self.policy.read_only(), version)
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    pub fn pager(&self) -> &Pager {
        &self.pager
    }

    /// Runs one `tools/call`: one page of the tool's output, as an MCP result.
    /// `client_roots` narrows the roots to the client's (canonical paths), when
    /// it gave some. `signal` carries the request's cancellation and progress.
    /// Blocks: call it from a thread that may block.
    /// The guest runs on a thread of its own and the answer comes by the
    /// wall-time limit plus the host grace, even from a guest blocked in a host
    /// call.
    pub fn call_tool(
        self: &Arc<Self>,
        name: &str,
        arguments: &Value,
        version: Version,
        client_roots: Option<&[PathBuf]>,
        signal: &Arc<CallSignal>,
    ) -> Result<Value, ErrorObject> {
        if !self.offers(name) {
            return Err(self.not_offered(name));
        }
        if name == UPLOAD_TOOL {
            return match staging::call_upload(&self.uploads, arguments) {
                Ok(ack) => Ok(mcp::host_tool_result(ack, version)),
                Err(e) => mcp::call_failure(CallFailure::Tool(e), version),
            };
        }
        let deadline = Instant::now() + self.limits.call.wall_time;
        let tool = Arc::clone(self.registry.get(name).ok_or_else(|| self.not_offered(name))?);
        let (paging, args) = Paging::split(arguments)?;
        let mut args = match args {
            Value::Object(map) => map,
            _ => Default::default(),
        };
        let attached = match staging::attach(&self.uploads, &tool.manifest, &mut args)? {
            Ok(attached) => attached,
            Err(e) => return mcp::call_failure(CallFailure::Tool(e), version),
        };
        let mut grants = match tool.origin {
            Origin::Builtin => self.policy.grants(tool.manifest.access, client_roots),
            Origin::Component(_) => Vec::new(),
        };
        grants.extend(attached.as_ref().map(|a| a.grant.clone()));
        let (server, request) = (Arc::clone(self), Arc::clone(signal));
        let page = self.runtime.bounded(name, deadline, signal, move || {
            server.pager.page(&server.runtime, &grants, &tool, Value::Object(args), paging, &request, deadline)
        });
        match page.map_err(PageError::Call).and_then(|page| page) {
            Ok(page) => {
                if let Some(attached) = attached {
                    self.uploads.finish(&attached.id);
                }
                Ok(mcp::call_result(page, version))
            }
            Err(PageError::Call(failure)) => mcp::call_failure(failure, version),
            Err(PageError::Cursor(e)) => Err(invalid_cursor(&e)),
        }
    }
}

impl Server {
    /// The -32602 answer to a call of a tool clients may not call.
    pub fn not_offered(&self, name: &str) -> ErrorObject {
        let exists = name == UPLOAD_TOOL || self.registry.get(name).is_some();
        if self.policy.read_only() && exists {
            ErrorObject::new(
                crate::protocol::jsonrpc::INVALID_PARAMS,
                format!("Tool `{name}` is not offered: this server runs read-only (`--read-only`), so nothing writes"),
            )
            .with_data(json!({ "name": name, "error": "read_only" }))
        } else {
            mcp::unknown_tool(name)
        }
    }
}

/// The -32602 answer to a refused cursor.
fn invalid_cursor(e: &CursorError) -> ErrorObject {
    ErrorObject::new(crate::protocol::jsonrpc::INVALID_PARAMS, format!("Invalid cursor: {e}"))
        .with_data(json!({ "error": "invalid_cursor", "reason": e.reason() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_limits_are_valid_and_a_zero_server_or_call_limit_is_refused_by_name() {
        assert_eq!(Limits::default().validate(), Ok(()));
        let limits = Limits { max_concurrent_calls: 0, ..Limits::default() };
        assert_eq!(limits.validate(), Err(LimitError::Zero("max_concurrent_calls")));
        let limits = Limits { call: CallLimits { max_handles: 0, ..Limits::default().call }, ..Limits::default() };
        assert_eq!(limits.validate(), Err(LimitError::Zero("max_handles")));
        let limits = Limits { pages: PageLimits { max_items: 0, ..PageLimits::default() }, ..Limits::default() };
        assert_eq!(limits.validate(), Err(LimitError::Zero("max_page_items")));
    }
}
