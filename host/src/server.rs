//! The server: tools, policy, runtime and pager shared by every session (see
//! `session` for the request handling), and one tool call end to end.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::Value;

use crate::ambient;
use crate::installed::ToolsDir;
use crate::pager::cursor::CursorKey;
use crate::pager::{PageError, PageLimits, Pager, Paging};
use crate::policy::{DirSpec, Policy};
use crate::protocol::jsonrpc::ErrorObject;
use crate::protocol::mcp::Version;
use crate::registry::{Origin, Registry, Source, Tool};
use crate::results::{self as mcp, Fault};
use crate::runtime::{CallContext, CallFailure, CallLimits, CallSignal, Capacity, LimitError, Runtime, Slots};
use crate::staging::{self, UPLOAD_TOOL};
use crate::tool::Access;
use crate::uploads::{UploadLimits, Uploads};

/// Everything needed to start a server.
#[derive(Debug, Clone)]
pub struct Config {
    pub roots: Vec<DirSpec>,
    /// Where compiled components and the cursor key are kept; `None` compiles
    /// at every start and signs cursors with a key that dies with the process.
    pub state_dir: Option<PathBuf>,
    /// The cursor signing key (hex), shared by replicas; else the state dir's.
    pub cursor_key: Option<String>,
    /// Extra tool components to load; they get no filesystem access.
    pub components: Vec<PathBuf>,
    /// Where `cordon tool add` installs tools (with their lockfile); `None`:
    /// no installed tools.
    pub tools_dir: Option<PathBuf>,
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
    /// Tool calls being answered at once across every session and transport;
    /// more wait for one to end, until their deadline.
    pub max_calls_in_flight: usize,
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
            max_calls_in_flight: 16,
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
    /// would refuse everything) or out of range, and limits whose instance
    /// pool cannot be reserved; the error names the limit.
    pub fn validate(&self) -> Result<(), LimitError> {
        self.call.validate()?;
        let counts = [
            ("max_line_bytes", self.max_line_bytes),
            ("max_response_bytes", self.max_response_bytes),
            ("max_concurrent_calls", self.max_concurrent_calls),
            ("max_calls_in_flight", self.max_calls_in_flight),
            ("page_tokens", self.pages.default_tokens as usize),
            ("max_page_tokens", self.pages.max_tokens as usize),
            ("max_page_items", self.pages.max_items as usize),
        ];
        if let Some((name, _)) = counts.iter().find(|(_, n)| *n == 0) {
            return Err(LimitError::Zero(name));
        }
        self.capacity().validate().map_err(LimitError::Capacity)?;
        Ok(())
    }

    /// The tool instances these limits keep alive at once.
    pub fn capacity(&self) -> Capacity {
        Capacity { parked: self.pages.parked, in_flight: self.max_calls_in_flight }
    }
}

/// The state shared by every session: tools, policy, runtime.
pub struct Server {
    runtime: Runtime,
    /// The tools offered now; replaced whole when the installed tools change.
    registry: RwLock<Arc<Registry>>,
    installed: Installed,
    policy: Policy,
    pager: Pager,
    uploads: Uploads,
    limits: Limits,
    /// One per tool call being answered, across every session (`max_calls_in_flight`).
    calls: Slots,
}

impl Server {
    /// Resolves the roots, builds the runtime and loads the built-in tools.
    pub fn start(config: &Config) -> anyhow::Result<Arc<Server>> {
        config.limits.validate()?;
        let policy = Policy::new(&config.roots, &config.deny, config.read_only)?;
        // Stray temporary files older than this start, on a background thread.
        crate::cleanup::spawn(policy.roots(), std::time::SystemTime::now());
        let state = state_dir(config)?;
        let cache_dir = compile_cache(state.as_ref())?;
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
        let runtime = Runtime::new(config.limits.call, config.limits.capacity(), cache_dir, Arc::clone(policy.deny()))?;
        let installed = Installed::new(config.tools_dir.clone());
        let mut extra =
            config.components.iter().map(|path| Source::component(path)).collect::<anyhow::Result<Vec<_>>>()?;
        let lock_text = match installed.dir()? {
            Some(dir) => {
                let text = dir.lock_text()?;
                extra.extend(installed_sources(&policy, &dir, text.clone())?);
                text
            }
            None => None,
        };
        *installed.seen.lock().expect("seen lock") = lock_text;
        let registry = RwLock::new(Arc::new(Registry::load(&runtime, extra)?));
        let pager = Pager::new(key, config.limits.pages);
        runtime.reclaim_with(pager.parked_streams());
        let calls = Slots::new("max_calls_in_flight", config.limits.max_calls_in_flight);
        Ok(Arc::new(Server { runtime, registry, installed, policy, pager, uploads, limits: config.limits, calls }))
    }

    /// A runtime alone, for commands that load a tool without serving (`cordon
    /// tool add`, `inspect`): the server's limits and compile cache, no roots.
    pub fn runtime_only(config: &Config) -> anyhow::Result<Runtime> {
        config.limits.validate()?;
        let cache = compile_cache(state_dir(config)?.as_ref())?;
        // One instance at a time: a tool being loaded and asked what it is.
        let capacity = Capacity { parked: 0, in_flight: 1 };
        Runtime::new(config.limits.call, capacity, cache, Arc::new(crate::policy::Deny::none()))
    }

    /// The tools as they are now.
    pub fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry.read().expect("registry lock"))
    }

    /// The tools clients may call: all of them, or, when the server runs
    /// read-only, those that do not write.
    pub fn tools(&self) -> Vec<Arc<Tool>> {
        self.registry().tools().iter().filter(|t| self.may_call(t)).cloned().collect()
    }

    /// Whether clients may call the tool `name` (a tool, or the host's `upload`).
    pub fn offers(&self, name: &str) -> bool {
        if name == UPLOAD_TOOL {
            return !self.policy.read_only();
        }
        self.registry().get(name).is_some_and(|t| self.may_call(t))
    }

    /// Whether `tool` is offered: any tool, but none that writes on a read-only server.
    fn may_call(&self, tool: &Tool) -> bool {
        !(self.policy.read_only() && tool.manifest.access == Access::Write)
    }

    /// The `tools/list` result.
    pub fn list_tools(&self, version: Version) -> Value {
        mcp::list_tools_result(self.tools().iter().map(|t| &**t), !self.policy.read_only(), version)
    }

    /// A receiver that sees a new value each time the tools change.
    pub fn tool_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.installed.changes.subscribe()
    }

    /// Reloads the installed tools if the lockfile changed since they were
    /// last loaded; returns whether the offered tools changed. A lockfile or
    /// component that cannot be used leaves the tools as they were (the error
    /// says why), and is not tried again until the lockfile changes again.
    pub fn reload_installed(&self) -> anyhow::Result<bool> {
        let Some(dir) = self.installed.dir()? else { return Ok(false) };
        let text = dir.lock_text()?;
        {
            let mut seen = self.installed.seen.lock().expect("seen lock");
            if *seen == text {
                return Ok(false);
            }
            *seen = text.clone();
        }
        let sources = installed_sources(&self.policy, &dir, text)?;
        let current = self.registry();
        let next = current.with_installed(&self.runtime, sources)?;
        let offered = |r: &Registry| -> Vec<(String, String, Origin)> {
            r.tools().iter().map(|t| (t.manifest.name.clone(), t.digest.clone(), t.origin.clone())).collect()
        };
        if offered(&current) == offered(&next) {
            return Ok(false);
        }
        tracing::info!(
            tools = ?next.tools().iter().map(|t| t.manifest.name.as_str()).collect::<Vec<_>>(),
            "the installed tools changed"
        );
        *self.registry.write().expect("registry lock") = Arc::new(next);
        self.installed.changes.send_modify(|generation| *generation += 1);
        Ok(true)
    }

    /// Watches the tools directory from a thread of its own, reloading the
    /// installed tools whenever the lockfile changes, until the server is
    /// dropped.
    pub fn watch_installed(self: &Arc<Self>) {
        if self.installed.path.is_none() {
            return;
        }
        let weak = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("cordon-tools-watch".into())
            .spawn(move || {
                while let Some(server) = weak.upgrade() {
                    if let Err(e) = server.reload_installed() {
                        tracing::error!("the installed tools were not reloaded: {e:#}");
                    }
                    drop(server);
                    std::thread::sleep(WATCH_INTERVAL);
                }
            })
            .expect("spawn the tools watcher");
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
        let tool = Arc::clone(self.registry().get(name).ok_or_else(|| self.not_offered(name))?);
        let (paging, args) = Paging::split(arguments).map_err(|e| Fault::BadArgument(e).to_error())?;
        let mut args = match args {
            Value::Object(map) => map,
            _ => Default::default(),
        };
        let attached = match staging::attach(&self.uploads, &tool.manifest, &mut args)
            .map_err(|e| Fault::BadArgument(e).to_error())?
        {
            Ok(attached) => attached,
            Err(e) => return mcp::call_failure(CallFailure::Tool(e), version),
        };
        let mut grants = match &tool.origin {
            Origin::Builtin => self.policy.grants(tool.manifest.access, client_roots),
            Origin::Component(_) => Vec::new(),
            Origin::Installed { grants } => self.policy.grants_within(tool.manifest.access, client_roots, Some(grants)),
        };
        grants.extend(attached.as_ref().map(|a| a.grant.clone()));
        // Held until this call is answered (a guest left blocked past its
        // deadline keeps only its instance slot).
        let _in_flight = match self.calls.acquire(deadline, signal) {
            Ok(slot) => slot,
            Err(busy) => return mcp::call_failure(busy, version),
        };
        let ctx = CallContext { grants, signal: Arc::clone(signal), deadline };
        let (server, called) = (Arc::clone(self), Arc::clone(&tool));
        let page = self.runtime.bounded(name, deadline, signal, move || {
            server.pager.page(&server.runtime, &ctx, &called, Value::Object(args), paging)
        });
        match page.map_err(PageError::Call).and_then(|page| page) {
            Ok(page) => {
                if let Some(attached) = attached {
                    self.uploads.finish(&attached.id);
                }
                Ok(mcp::call_result(page, version))
            }
            Err(PageError::Call(failure)) => mcp::call_failure(self.explain_denial(&tool, failure), version),
            Err(PageError::Cursor(e)) => Err(Fault::Cursor(e).into()),
        }
    }
}

impl Server {
    /// A third-party tool's refusal to touch a path, with what it is granted and
    /// how to grant more: the tool only sees its preopens and cannot know.
    fn explain_denial(&self, tool: &Tool, failure: CallFailure) -> CallFailure {
        let granted = match &tool.origin {
            Origin::Builtin => return failure,
            Origin::Component(path) => format!(
                "`{}` was loaded with `--component {}`, which grants no directories; install it with `cordon tool \
                 add {} --grant ro:DIR` (or rw:DIR) instead",
                tool.manifest.name,
                path.display(),
                path.display()
            ),
            Origin::Installed { grants } => {
                let list = match grants.is_empty() {
                    true => "no directories".to_string(),
                    false => grants.iter().map(DirSpec::to_string).collect::<Vec<_>>().join(", "),
                };
                let lock = self.installed.path.as_deref().map(|p| p.join(crate::installed::LOCK_FILE));
                format!(
                    "the installed tool `{}` is granted {list} (in {}); a path outside its grants needs one: `cordon \
                     tool add COMPONENT.wasm --grant ro:DIR` (or rw:DIR), repeating its other grants",
                    tool.manifest.name,
                    lock.as_deref().unwrap_or(Path::new("the lockfile")).display()
                )
            }
        };
        match failure {
            CallFailure::Tool(mut e) if e.code == crate::tool::ErrorCode::PermissionDenied => {
                e.message = format!("{} ({granted})", e.message.trim_end_matches('.'));
                CallFailure::Tool(e)
            }
            other => other,
        }
    }

    /// The -32602 answer to a call of a tool clients may not call.
    pub fn not_offered(&self, name: &str) -> ErrorObject {
        let exists = name == UPLOAD_TOOL || self.registry().get(name).is_some();
        if self.policy.read_only() && exists {
            Fault::ReadOnly { name: name.to_string() }.into()
        } else {
            mcp::unknown_tool(name)
        }
    }
}

/// The state directory, created if needed (none: nothing is kept).
fn state_dir(config: &Config) -> anyhow::Result<Option<cap_std::fs::Dir>> {
    let Some(dir) = &config.state_dir else { return Ok(None) };
    Ok(Some(ambient::create_dir_handle(dir).with_context(|| format!("open {}", dir.display()))?))
}

/// The compile cache inside the state directory, created if needed.
fn compile_cache(state: Option<&cap_std::fs::Dir>) -> anyhow::Result<Option<cap_std::fs::Dir>> {
    let Some(state) = state else { return Ok(None) };
    state.create_dir_all("compiled").context("create the compile cache")?;
    Ok(Some(state.open_dir("compiled").context("open the compile cache")?))
}

/// How often the tools directory's lockfile is looked at while serving.
const WATCH_INTERVAL: Duration = Duration::from_millis(500);

/// The installed tools' directory and what was last loaded from it.
struct Installed {
    path: Option<PathBuf>,
    /// The lockfile's text as last loaded (`None`: there was none).
    seen: Mutex<Option<String>>,
    /// Bumped each time the offered tools change.
    changes: tokio::sync::watch::Sender<u64>,
}

impl Installed {
    fn new(path: Option<PathBuf>) -> Installed {
        Installed { path, seen: Mutex::new(None), changes: tokio::sync::watch::Sender::new(0) }
    }

    /// The tools directory, if one is configured and exists.
    fn dir(&self) -> anyhow::Result<Option<ToolsDir>> {
        match &self.path {
            Some(path) => Ok(ToolsDir::open(path)?),
            None => Ok(None),
        }
    }
}

/// The installed tools a lockfile lists, each component checked against its
/// pin (one that fails refuses them all), with the grants that still apply
/// here (a grant whose directory is gone or outside every root is dropped,
/// with a warning).
fn installed_sources(policy: &Policy, dir: &ToolsDir, lock_text: Option<String>) -> anyhow::Result<Vec<Source>> {
    let lock = dir.parse(lock_text)?;
    let mut sources = Vec::new();
    for verified in dir.verified(&lock)? {
        let mut grants = Vec::new();
        for grant in &verified.entry.grants {
            match policy.resolve_grant(grant) {
                Ok(resolved) => grants.push(resolved),
                Err(why) => tracing::warn!(tool = %verified.entry.name, "{why}; the tool runs without it"),
            }
        }
        if crate::registry::builtin_names().any(|b| b == verified.entry.name) {
            anyhow::bail!("the installed tool `{}` has the name of a built-in tool; remove it", verified.entry.name);
        }
        sources.push(Source::installed(verified, grants));
    }
    Ok(sources)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_limits_are_valid_and_a_zero_server_or_call_limit_is_refused_by_name() {
        let zero = |limits: Limits| limits.validate().unwrap_err();
        assert_eq!(Limits::default().validate(), Ok(()));
        assert_eq!(
            zero(Limits { max_concurrent_calls: 0, ..Limits::default() }),
            LimitError::Zero("max_concurrent_calls")
        );
        assert_eq!(
            zero(Limits { max_calls_in_flight: 0, ..Limits::default() }),
            LimitError::Zero("max_calls_in_flight")
        );
        let limits = Limits { call: CallLimits { max_handles: 0, ..Limits::default().call }, ..Limits::default() };
        assert_eq!(zero(limits), LimitError::Zero("max_handles"));
        let limits = Limits { pages: PageLimits { max_items: 0, ..PageLimits::default() }, ..Limits::default() };
        assert_eq!(zero(limits), LimitError::Zero("max_page_items"));
    }

    #[test]
    fn limits_whose_instance_pool_cannot_be_reserved_are_refused() {
        let limits = Limits { pages: PageLimits { parked: 10_000_000, ..PageLimits::default() }, ..Limits::default() };
        let err = limits.validate().unwrap_err();
        assert!(matches!(err, LimitError::Capacity(e) if e.capacity == limits.capacity()), "{err}");
    }
}
