//! The server: tools, policy, runtime and pager shared by every session (see
//! `session` for the request handling), and one tool call end to end.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::audit::{Audit, AuditSettings, DigestKey, Event};
use crate::auth::ScopeNames;
use crate::installed::ToolsDir;
use crate::installed::signature::Signing;
use crate::limits::Limits;
use crate::pager::cursor::CursorKey;
use crate::pager::handles::{RedisStore, Store};
use crate::pager::{PageError, PageRequest, Pager, PagerParts};
use crate::policy::{AccessRules, AccessSpec, DirSpec, Environment, NetGrants, Policy, Within};
use crate::private;
use crate::protocol::mcp::Version;
use crate::registry::{Entry, HostTool, Origin, Registry, Source};
use crate::results::{self, Answer, Fault};
use crate::runtime::{CallContext, CallFailure, CallSignal, Capacity, NetAccess, Runtime, Slots, Sockets};
use crate::staging;
use crate::tool::{Access, Manifest};
use crate::uploads::Uploads;
pub use access::Caller;
pub use error::StartError;
pub use operate::NotReady;
use record::{Seen, tool_ref};

mod access;
mod error;
mod operate;
mod record;
mod resources;
mod watch;
pub use resources::{Asker, FileUri};
pub use watch::{Abandoned, Waited, Watch};

/// Everything needed to start a server.
#[derive(Debug, Clone)]
pub struct Config {
    pub roots: Vec<DirSpec>,
    /// Where compiled components and the cursor key are kept; `None` compiles
    /// at every start and signs cursors with a key that dies with the process.
    pub state_dir: Option<PathBuf>,
    /// The cursor signing key (hex), shared by replicas; else the state dir's.
    pub cursor_key: Option<String>,
    /// The Redis server that keeps continuation handles (`redis://…`), shared
    /// by replicas; else the state dir's `handles`, or memory.
    pub handle_store: Option<String>,
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
    /// Where the audit trail goes (see `audit`).
    pub audit: AuditSettings,
    /// PEM public keys whose signatures on installed tools are trusted.
    pub trusted_keys: Vec<PathBuf>,
    /// Refuse installed tools without a valid signature from a trusted key.
    pub require_signatures: bool,
    /// Mark no tool to be loaded up front: a client that defers tools (Claude
    /// Code's tool search) defers Cordon's too.
    pub defer_tools: bool,
    /// Offer the files under the roots as resources, and tell of their changes.
    pub resources: bool,
    /// The agent clients known by name, and the page each gets (`clients`).
    pub clients: crate::clients::Clients,
    /// Who may do what (`[[access]]`, roots already relative to nothing).
    pub access: Vec<AccessSpec>,
    /// What the read and write scopes are called.
    pub scope_names: ScopeNames,
    /// Count metrics (off: `--no-metrics`).
    pub metrics: bool,
}

impl Config {
    /// The SHA-256 of what the configuration says, secrets left out (the
    /// cursor key, the handle store's address, which may hold a password).
    pub fn digest(&self) -> String {
        let Config { roots, state_dir, components, tools_dir, deny, read_only, limits, audit, .. } = self;
        let said =
            format!("{roots:?} {state_dir:?} {components:?} {tools_dir:?} {deny:?} {read_only} {limits:?} {audit:?}");
        hex::encode(Sha256::digest(said.as_bytes()))
    }
}

/// The state shared by every session: tools, policy, runtime.
pub struct Server {
    runtime: Arc<Runtime>,
    /// The tools offered now; replaced whole when the installed tools change.
    registry: RwLock<Arc<Registry>>,
    installed: Installed,
    policy: Policy,
    pager: Arc<Pager>,
    uploads: Uploads,
    limits: Limits,
    /// One per tool call being answered, across every session (`max_calls_in_flight`).
    calls: Slots,
    /// What `initialize` tells the model with the server's full rights, the
    /// roots named (see `instructions_for`).
    instructions: String,
    /// The audit trail every call, refusal and tool change goes to.
    audit: Audit,
    /// Calls recorded, for the `stop` record.
    recorded: AtomicU64,
    /// Whether `tools/list` marks the everyday tools to be loaded up front.
    loading: results::Loading,
    /// The agent clients known by name (`clients`).
    clients: crate::clients::Clients,
    /// Who may do what (see `access`).
    access: AccessRules,
    /// What the read and write scopes are called, for a refusal.
    scope_names: ScopeNames,
    /// What an operator scrapes (see `operate`).
    metrics: Arc<crate::metrics::Metrics>,
    /// Whether the files are offered as resources (`Config::resources`).
    resources: bool,
    /// Who listens to changes of resources, and the watcher of files.
    notices: crate::notices::Hub,
}

impl Server {
    /// Resolves the roots, builds the runtime and loads the built-in tools.
    pub fn start(config: &Config) -> Result<Arc<Server>, StartError> {
        config.limits.validate().map_err(StartError::Limits)?;
        let policy = Policy::new(&config.roots, &config.deny, config.read_only).map_err(StartError::Policy)?;
        // Stray temporary files older than this start, on a background thread.
        crate::cleanup::spawn(policy.roots(), std::time::SystemTime::now());
        let state = state_dir(config)?;
        let cache_dir = state_subdir(config, state.as_ref(), "compiled", "open the compile cache")?;
        let key = match (&config.cursor_key, &state) {
            (Some(hex), _) => CursorKey::from_hex(hex).map_err(StartError::CursorKey)?,
            (None, Some(state)) => CursorKey::load_or_create(state).map_err(StartError::CursorKeyFile)?,
            (None, None) => {
                tracing::warn!("no state directory or cursor key: cursors will not survive a restart");
                CursorKey::random()
            }
        };
        let dir_error = |what, path: PathBuf| move |source| StartError::Dir { what, path, source };
        let uploads = match &config.state_dir {
            Some(dir) => {
                let path = dir.join("uploads");
                let opened =
                    private::create_dir_at(&path).map_err(dir_error("open the uploads directory", path.clone()))?;
                Uploads::new(path.clone(), opened, config.limits.uploads)
                    .map_err(dir_error("clean the uploads directory", path))?
            }
            None => {
                let temp = std::env::temp_dir();
                Uploads::private(&temp, config.limits.uploads)
                    .map_err(dir_error("make an uploads directory in", temp))?
            }
        };
        let runtime = Runtime::new(config.limits.call, config.limits.capacity(), cache_dir, Arc::clone(policy.judge()))
            .map(Arc::new)
            .map_err(StartError::Runtime)?;
        let signing = Signing::load(&config.trusted_keys, config.require_signatures).map_err(StartError::Keys)?;
        let installed = Installed::new(config.tools_dir.clone(), signing);
        let mut extra = config
            .components
            .iter()
            .map(|path| Source::component(path))
            .collect::<Result<Vec<_>, _>>()
            .map_err(StartError::Tools)?;
        let lock_text = match installed.dir()? {
            Some(dir) => {
                let text = dir.lock_text().map_err(StartError::Installed)?;
                extra.extend(installed_sources(&policy, &installed.signing, &dir, text.clone())?);
                text
            }
            None => None,
        };
        *installed.seen.lock().expect("seen lock") = lock_text;
        let registry = RwLock::new(Arc::new(Registry::load(&runtime, extra).map_err(StartError::Tools)?));
        let handles = match (&config.handle_store, &state) {
            (Some(url), _) => Store::Redis(Box::new(RedisStore::connect(url).map_err(StartError::HandleStore)?)),
            (None, state) => match state_subdir(config, state.as_ref(), "handles", "open the handle store")? {
                Some(dir) => Store::Dir(dir),
                None => Store::memory(),
            },
        };
        let digests = DigestKey::from_cursor_key(&key);
        let printers = Arc::new(results::CompactPrinters);
        let metrics = Arc::new(crate::metrics::Metrics::new(config.metrics));
        let parts = PagerParts { key, handles, limits: config.limits.pages, printers, metrics: Arc::clone(&metrics) };
        let pager = Arc::new(Pager::new(parts, Arc::clone(&runtime)));
        let calls = Slots::new("max_calls_in_flight", config.limits.max_calls_in_flight);
        let instructions = results::instructions(policy.roots());
        let access = AccessRules::new(&config.access, &policy).map_err(StartError::Access)?;
        let audit = Audit::open(&config.audit, digests).map_err(StartError::Audit)?;
        Ok(Arc::new(Server {
            runtime,
            registry,
            installed,
            policy,
            pager,
            uploads,
            limits: config.limits,
            calls,
            instructions,
            audit,
            recorded: AtomicU64::new(0),
            loading: if config.defer_tools { results::Loading::Deferred } else { results::Loading::UpFront },
            clients: config.clients.clone(),
            access,
            scope_names: config.scope_names.clone(),
            metrics,
            resources: config.resources,
            notices: crate::notices::Hub::new(),
        }))
    }

    /// A runtime alone, for commands that load a tool without serving (`cordon
    /// tool add`, `inspect`): the server's limits and compile cache, no roots.
    pub fn runtime_only(config: &Config) -> Result<Runtime, StartError> {
        config.limits.validate().map_err(StartError::Limits)?;
        let cache = state_subdir(config, state_dir(config)?.as_ref(), "compiled", "open the compile cache")?;
        // One instance at a time: a tool being loaded and asked what it is.
        let capacity = Capacity { parked: 0, in_flight: 1, shards: 1, memory: usize::MAX };
        Runtime::new(config.limits.call, capacity, cache, Arc::new(crate::policy::Judge::none()))
            .map_err(StartError::Runtime)
    }

    /// What a server does when it has stopped serving: it records the stop
    /// and removes its own uploads directory, if it has one (no state
    /// directory), with any upload left in it.
    pub fn stopped(&self) {
        self.record_stop();
        self.uploads.close();
    }

    /// Compiles the tools not compiled yet in the background (a server that
    /// serves: calls then rarely wait for a compile).
    pub fn compile_in_background(&self) {
        self.registry().compile_in_background(Arc::clone(&self.runtime));
    }

    /// Compiles every tool now; the first that cannot be is the error.
    pub fn compile_all(&self) -> Result<(), CallFailure> {
        self.registry().compile_all(&self.runtime)
    }

    /// The tools as they are now.
    pub fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry.read().expect("registry lock"))
    }

    /// The tools clients may call: all of them, or, when the server runs
    /// read-only, those that do not write.
    pub fn tools(&self) -> Vec<Entry> {
        self.registry().entries().iter().filter(|e| self.may_call(e.manifest())).cloned().collect()
    }

    /// The agent client that gave `name` (`clientInfo.name`), as the server
    /// pages for it.
    pub fn client(&self, name: &str) -> crate::clients::Client {
        self.clients.known(name)
    }

    /// The tool `name`, if clients may call it; else why not.
    pub fn offered(&self, name: &str) -> Result<Entry, Fault> {
        match self.registry().get(name) {
            Some(entry) if self.may_call(entry.manifest()) => Ok(entry.clone()),
            Some(_) => Err(Fault::ReadOnly { name: name.to_string() }),
            None => Err(Fault::UnknownTool { name: name.to_string() }),
        }
    }

    /// Whether a tool is offered: any tool, but none that writes on a read-only server.
    fn may_call(&self, tool: &Manifest) -> bool {
        !(self.policy.read_only() && tool.access == Access::Write)
    }

    /// The `tools/list` result.
    pub fn list_tools(&self, version: Version) -> Value {
        results::list_tools_result(self.tools().iter(), version, self.loading)
    }

    /// A receiver that sees a new value each time the tools change.
    pub fn tool_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.installed.changes.subscribe()
    }

    /// Reloads the installed tools if the lockfile changed since they were
    /// last loaded; returns whether the offered tools changed. A lockfile or
    /// component that cannot be used leaves the tools as they were (the error
    /// says why), and is not tried again until the lockfile changes again.
    pub fn reload_installed(&self) -> Result<bool, StartError> {
        let Some(dir) = self.installed.dir()? else { return Ok(false) };
        let text = dir.lock_text().map_err(StartError::Installed)?;
        {
            let mut seen = self.installed.seen.lock().expect("seen lock");
            if *seen == text {
                return Ok(false);
            }
            *seen = text.clone();
        }
        let current = self.registry();
        let next = installed_sources(&self.policy, &self.installed.signing, &dir, text)
            .and_then(|sources| current.with_installed(&self.runtime, sources).map_err(StartError::Tools));
        let next = match next {
            Ok(next) => next,
            Err(e) => {
                self.metrics.reload("rejected");
                let _ = self.write(&Event::ToolsRejected { reason: e.to_string() });
                return Err(e);
            }
        };
        if current.same_tools(&next) {
            self.metrics.reload("unchanged");
            return Ok(false);
        }
        let names =
            |r: &Registry| r.components().map(|t| (t.manifest.name.clone(), t.digest.clone())).collect::<Vec<_>>();
        let (before, after) = (names(&current), names(&next));
        let added = next.components().filter(|t| !before.contains(&(t.manifest.name.clone(), t.digest.clone())));
        let removed = before.iter().filter(|b| !after.contains(b)).map(|(name, _)| name.clone()).collect();
        let added = added.map(|t| tool_ref(t)).collect();
        self.metrics.reload("changed");
        let _ = self.write(&Event::ToolsChanged { added, removed });
        tracing::info!(
            tools = ?next.entries().iter().map(|e| e.manifest().name.as_str()).collect::<Vec<_>>(),
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

    /// Runs one `tools/call`: one page of a component tool's output, or a
    /// host tool's answer; a call's own failure is an answer too, and what
    /// refuses the request before or around the call is a `Fault`.
    /// Blocks. The answer comes by the wall-time limit plus the host grace,
    /// even from a guest blocked in a host call: the guest runs on a thread
    /// of its own, or here when the caller keeps a `watch` (see `watch`).
    pub fn call(self: &Arc<Self>, request: CallRequest<'_>) -> Result<Answer, Fault> {
        let started = Instant::now();
        if !self.audit.admits_calls() {
            let fault = Fault::AuditUnavailable { reason: "the audit log cannot be written".into() };
            tracing::warn!(tool = request.name(), who = ?request.caller.who, "{fault}");
            return Err(fault);
        }
        let mut seen = Seen::default();
        let answer = self.run(&request, &mut seen, started);
        match self.was_abandoned(&request, &mut seen) {
            true => answer,
            false => self.record(&request, seen, answer, started),
        }
    }

    /// The call itself; what it ran goes into `seen`, for the record.
    fn run(self: &Arc<Self>, request: &CallRequest<'_>, seen: &mut Seen, started: Instant) -> Result<Answer, Fault> {
        let tool = match &request.tool {
            Entry::Host { tool: HostTool::Upload, .. } => {
                return Ok(match staging::call_upload(&self.uploads, request.arguments) {
                    Ok(ack) => Answer::Host(ack),
                    Err(e) => Answer::Failed(CallFailure::Tool(e).into()),
                });
            }
            Entry::Component(tool) => Arc::clone(tool),
        };
        seen.tool = Some(tool_ref(&tool));
        // A built-in tool not compiled yet (a cold start) is compiled now, or
        // waited for, before the call's time starts.
        if let Err(failure) = tool.compiled(&self.runtime) {
            return Ok(Answer::Failed(failure.into()));
        }
        let deadline = Instant::now() + self.limits.call.wall_time;
        let (host, mut args) = crate::args::split(&tool.manifest, request.arguments).map_err(Fault::BadArgument)?;
        let attached = match host.upload.as_ref().map(|upload| staging::attach(&self.uploads, upload, &mut args)) {
            None => None,
            Some(Ok(attached)) => Some(attached),
            Some(Err(e)) => return Ok(Answer::Failed(CallFailure::Tool(e).into())),
        };
        let rights = &request.caller.rights;
        let within = Within { client: request.client_roots, principal: rights.roots.as_deref(), tool: None };
        let (mut grants, env, net) = match &tool.origin {
            Origin::Builtin => {
                (self.policy.narrowed(tool.manifest.access, within), Environment::default(), NetGrants::default())
            }
            Origin::Component(_) => (Vec::new(), Environment::default(), NetGrants::default()),
            Origin::Installed { grants, env, net, .. } => {
                let narrowed = self.policy.narrowed(tool.manifest.access, Within { tool: Some(grants), ..within });
                (narrowed, env.clone(), net.clone())
            }
        };
        grants.extend(attached.as_ref().map(|a| a.grant.clone()));
        if self.audit.is_on() {
            seen.grants = grants.iter().map(|g| json!({ "path": g.host, "mode": g.mode.as_str() })).collect();
        }
        // Held until answered (a guest left blocked keeps only its instance slot).
        let in_flight = match self.calls.acquire(deadline, request.signal) {
            Ok(slot) => slot,
            Err(busy) => return Ok(Answer::Failed(busy.into())),
        };
        let (judge, net) = (Arc::clone(&rights.judge), NetAccess::new(net));
        let ledger = Arc::clone(&net.ledger);
        seen.network = Some(Arc::clone(&ledger));
        let ctx = CallContext { grants, env, net, judge, signal: Arc::clone(request.signal), deadline };
        let asked = PageRequest {
            ctx,
            tool: Arc::clone(&tool),
            args: Value::Object(args),
            paging: request.client.fit(host.paging),
            for_model: request.for_model,
            in_process: request.caller.who.transport == "cli",
            owner: request.caller.owner.clone(),
        };
        let _in_flight = self.arm_watch(request, watch::Arming { deadline, started, seen, in_flight });
        let page = self.pager.page(asked);
        match page {
            Ok(page) => {
                if let Some(attached) = attached.filter(|_| !request.watch.is_some_and(Watch::given_up)) {
                    self.uploads.finish(&attached.id);
                }
                Ok(Answer::Page(Box::new(page)))
            }
            Err(PageError::Call(failure)) => {
                let refused = ledger.refusals();
                let lock = self.lock_file();
                Ok(Answer::Failed(results::explain_denial(&tool, lock.as_deref(), failure, &refused).into()))
            }
            Err(PageError::Cursor(e)) => Err(Fault::Cursor(e)),
            Err(PageError::Store(e)) => Err(Fault::HandleStore { reason: e.to_string() }),
        }
    }
}

/// One `tools/call` as the server runs it.
pub struct CallRequest<'a> {
    /// The tool called, as offered (`Server::offered`, looked up once by
    /// whoever took the call).
    pub tool: Entry,
    /// The arguments as the client sent them, the host's own included.
    pub arguments: &'a Value,
    /// The client's roots (canonical paths), when it gave some: the call's
    /// grants are narrowed to them.
    pub client_roots: Option<&'a [PathBuf]>,
    /// The request's cancellation and progress.
    pub signal: &'a Arc<CallSignal>,
    /// Whether a model reads the answer (an MCP client), so a page that is
    /// not the last carries a short handle and a first page the whole
    /// result's count; a program following the signed cursor (`cordon call
    /// --all`) needs neither.
    pub for_model: bool,
    /// Who asked: for the audit trail, their rights, and whose results are continued.
    pub caller: Caller,
    /// The agent client asking, whose cut sets the default page (`clients`).
    pub client: crate::clients::Client,
    /// Set when the caller keeps the call's host timeout (see `watch`).
    pub watch: Option<&'a Watch>,
}

impl CallRequest<'_> {
    /// The called tool's name.
    pub fn name(&self) -> &str {
        &self.tool.manifest().name
    }
}

impl Server {
    /// The lockfile installed tools' grants are kept in, if tools are installed.
    fn lock_file(&self) -> Option<PathBuf> {
        self.installed.path.as_deref().map(|p| p.join(crate::installed::LOCK_FILE))
    }
}

/// The state directory, created owner-only if needed (none: nothing is
/// kept), with any loose mode inside it tightened (see `private`).
fn state_dir(config: &Config) -> Result<Option<cap_std::fs::Dir>, StartError> {
    let Some(path) = &config.state_dir else { return Ok(None) };
    let dir =
        private::create_dir_at(path).map_err(|source| StartError::Dir { what: "open", path: path.clone(), source })?;
    let tightened = private::tighten(&dir, path).map_err(StartError::Private)?;
    private::report(path, &tightened);
    Ok(Some(dir))
}

/// The directory `name` inside the state directory (`compiled`, the compile
/// cache; `handles`, the handle store), created owner-only if needed; `what`
/// names it in an error.
fn state_subdir(
    config: &Config,
    state: Option<&cap_std::fs::Dir>,
    name: &str,
    what: &'static str,
) -> Result<Option<cap_std::fs::Dir>, StartError> {
    let (Some(state), Some(path)) = (state, &config.state_dir) else { return Ok(None) };
    let dir = private::create_dir(state, name);
    Ok(Some(dir.map_err(|source| StartError::Dir { what, path: path.join(name), source })?))
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
    /// The trusted keys, and whether installed tools must be signed.
    signing: Signing,
}

impl Installed {
    fn new(path: Option<PathBuf>, signing: Signing) -> Installed {
        Installed { path, seen: Mutex::new(None), changes: tokio::sync::watch::Sender::new(0), signing }
    }

    /// The tools directory, if one is configured and exists.
    fn dir(&self) -> Result<Option<ToolsDir>, StartError> {
        match &self.path {
            Some(path) => ToolsDir::open(path).map_err(StartError::Installed),
            None => Ok(None),
        }
    }
}

/// The installed tools a lockfile lists, each component checked against its
/// pin (one that fails refuses them all), with the grants that still apply
/// here (a grant whose directory is gone or outside every root is dropped,
/// with a warning).
fn installed_sources(
    policy: &Policy,
    signing: &Signing,
    dir: &ToolsDir,
    lock_text: Option<String>,
) -> Result<Vec<Source>, StartError> {
    let lock = dir.parse(lock_text).map_err(StartError::Installed)?;
    let mut sources = Vec::new();
    for verified in dir.verified(&lock).map_err(StartError::Installed)? {
        if let Some(pin) = &verified.entry.oci {
            crate::installed::oci::recheck(pin, &verified.entry.sha256)
                .map_err(|why| StartError::Registry { tool: verified.entry.name.clone(), why })?;
        }
        let signer = signing
            .signer(&verified.entry, &verified.bytes)
            .map_err(|why| StartError::Unsigned { tool: verified.entry.name.clone(), why })?;
        let mut grants = Vec::new();
        for grant in &verified.entry.grants {
            match policy.resolve_grant(grant) {
                Ok(resolved) => grants.push(resolved),
                Err(why) => tracing::warn!(tool = %verified.entry.name, "{why}; the tool runs without it"),
            }
        }
        let (env, unset) = Environment::read(&verified.entry.env);
        for name in unset {
            tracing::warn!(tool = %verified.entry.name, "the tool is granted env:{name}, which the server's environment does not set; the tool sees it unset");
        }
        if crate::registry::builtin_names().any(|b| b == verified.entry.name) {
            return Err(StartError::BuiltinName(verified.entry.name));
        }
        let net = NetGrants::new(&verified.entry.net);
        let sockets = if verified.entry.stub_sockets { Sockets::Stub } else { Sockets::Refuse };
        sources.push(Source::installed(verified, Origin::Installed { grants, env, net, sockets }, signer));
    }
    Ok(sources)
}
