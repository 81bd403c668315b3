//! The command line: `cordon serve`, `cordon tools`, `cordon call`, and
//! `cordon tool …` (installing third-party tools, in `tool`).

mod audit;
mod oci;
mod serve;
mod template;
mod tool;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use serde_json::{Value, json};

use crate::audit::{AuditSettings, OnFailure};
use crate::config::{FileConfig, Loaded};
use crate::limits::Settings;
use crate::policy::DirSpec;
use crate::protocol::jsonrpc::ErrorObject;
use crate::protocol::mcp::Version;
use crate::results::Answer;
use crate::server::{CallRequest, Config, Server};
use crate::telemetry::{self, Exporting, LogFormat, Logs};

/// Cordon: an MCP file server whose tools run sandboxed in WebAssembly.
#[derive(Parser, Debug)]
#[command(name = "cordon", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve MCP over stdio (newline-delimited JSON-RPC), over TCP with --tcp,
    /// or over Streamable HTTP with --http.
    Serve(serve::ServeArgs),
    /// List the tools with their schemas.
    Tools {
        #[command(flatten)]
        common: Common,
        /// Print the tools/list result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run one tool call through the same engine and print its MCP result.
    Call {
        /// The tool's name.
        tool: String,
        /// The arguments, a JSON object (paging options such as `cursor` included).
        #[arg(long, value_name = "JSON", default_value = "{}")]
        json: String,
        /// Follow every cursor to the end, streaming the whole payload to stdout
        /// (raw bytes, exactly), page by page, in bounded memory.
        #[arg(long)]
        all: bool,
        /// With --all: print each page's full MCP result as one JSON line instead.
        #[arg(long, requires = "all")]
        jsonl: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Check the audit trail.
    Audit {
        #[command(subcommand)]
        command: audit::AuditCommand,
    },
    /// Write, install, inspect and remove third-party tools.
    Tool {
        #[command(subcommand)]
        command: tool::ToolCommand,
    },
}

#[derive(Args, Debug)]
struct Common {
    /// The configuration file (see cordon.example.toml); flags override it.
    #[arg(long, env = "CORDON_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// A directory the tools may use: DIR (read-write), DIR:rw or DIR:ro. Repeatable.
    #[arg(long = "root", value_name = "DIR[:ro|:rw]")]
    roots: Vec<DirSpec>,
    /// A path no tool may open, list or search, as a glob relative to each root
    /// (read like a .gitignore line, e.g. `.git/**`, `*.pem`). Repeatable.
    #[arg(long = "deny", value_name = "GLOB")]
    deny: Vec<String>,
    /// Offer no tool that writes, and treat every root as read-only.
    #[arg(long)]
    read_only: bool,
    /// Mark no tool to be loaded up front (`_meta["anthropic/alwaysLoad"]`): a client
    /// that defers tools (Claude Code's tool search) then defers Cordon's too.
    #[arg(long)]
    defer_tools: bool,
    /// Offer no resources: the files under the roots are not listed, read or
    /// watched as MCP resources, and the `resources` capability is not declared
    /// (Claude Code then adds no resource tools of its own to the conversation).
    #[arg(long)]
    no_resources: bool,
    /// An extra tool component to load (repeatable); it is granted no filesystem access.
    #[arg(long = "component", value_name = "PATH.wasm")]
    components: Vec<PathBuf>,
    /// Where `cordon tool add` installs tools, with their lockfile [default: <state-dir>/tools].
    #[arg(long, env = "CORDON_TOOLS_DIR", value_name = "DIR")]
    tools_dir: Option<PathBuf>,
    /// Where compiled tools are cached [default: $XDG_STATE_HOME/cordon or ~/.local/state/cordon].
    #[arg(long, env = "CORDON_STATE_DIR", value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Compile the tools at every start instead of caching them.
    #[arg(long)]
    no_cache: bool,
    #[command(flatten)]
    limits: Settings,
    /// The cursor signing key, hex (at least 16 bytes); give replicas the same one
    /// [default: <state-dir>/cursor.key, created on first use].
    #[arg(long, env = "CORDON_CURSOR_KEY", value_name = "HEX", hide_env_values = true)]
    cursor_key: Option<String>,
    /// Keep continuation handles in this Redis server (`redis://[:PASSWORD@]HOST:PORT/DB`), shared by
    /// replicas; like the cursor key, not read from the configuration file
    /// [default: <state-dir>/handles].
    #[arg(long, env = "CORDON_HANDLE_STORE", value_name = "URL", hide_env_values = true)]
    handle_store: Option<String>,
    /// The audit trail, chained JSON lines, one per call, page, refusal and tool change
    /// [default: <state-dir>/audit/audit.log].
    #[arg(long, env = "CORDON_AUDIT_LOG", value_name = "FILE")]
    audit_log: Option<PathBuf>,
    /// Keep no audit trail.
    #[arg(long, conflicts_with = "audit_log")]
    no_audit: bool,
    /// When the audit log cannot be written: refuse calls (closed) or go on and say so on stderr (open).
    #[arg(long, value_enum, value_name = "WHAT", default_value_t = OnFailure::Closed)]
    audit_on_failure: OnFailure,
    /// Rotate the audit log once it holds this many bytes (units allowed: 16MiB).
    #[arg(long, value_name = "N", default_value = "16MiB", value_parser = crate::limits::parse_bytes)]
    audit_max_bytes: u64,
    /// Rotated audit files kept (audit.log.1 … audit.log.N).
    #[arg(long, value_name = "N", default_value_t = 5)]
    audit_keep: usize,
    /// A public key (PEM, P-256: cosign.pub, `openssl ec -pubout`) whose signatures on
    /// installed tools are trusted. Repeatable.
    #[arg(long = "trusted-key", value_name = "PEM")]
    trusted_keys: Vec<PathBuf>,
    /// Refuse any installed tool without a valid signature from a trusted key (at
    /// `tool add`, at start and on reload).
    #[arg(long)]
    require_signatures: bool,
    /// Log at debug level (to stderr; RUST_LOG overrides).
    #[arg(long)]
    debug: bool,
    /// How log lines on stderr are written: `text` for people, `json` (one object a
    /// line) for a log pipeline.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Count no metrics (`/metrics` then shows only what the server holds now).
    #[arg(long)]
    no_metrics: bool,
    /// The configuration file's `[clients.NAME]` tables (no flag).
    #[arg(skip)]
    clients: std::collections::BTreeMap<String, crate::clients::ClientTable>,
    /// The configuration file's `[auth]` (flags of `serve` override it).
    #[arg(skip)]
    oauth: Option<crate::auth::OauthSettings>,
    /// The configuration file's `[[tokens]]`, their files taken from its directory.
    #[arg(skip)]
    tokens: Vec<crate::auth::TokenSpec>,
    /// The configuration file's `[[access]]`, their roots taken from its directory.
    #[arg(skip)]
    access: Vec<crate::policy::AccessSpec>,
}

impl Common {
    /// Reads the configuration file, if one is named, and takes from it every
    /// setting the command line (`matches`) did not give.
    fn merge_file(&mut self, matches: &ArgMatches) -> anyhow::Result<Option<Loaded>> {
        let Some(path) = &self.config else { return Ok(None) };
        let loaded = Loaded::read(path)?;
        let given =
            |id: &str| matches!(matches.value_source(id), Some(ValueSource::CommandLine | ValueSource::EnvVariable));
        let FileConfig {
            roots,
            deny,
            read_only,
            defer_tools,
            no_resources,
            state_dir,
            no_cache,
            components,
            tools_dir,
            debug,
            limits,
            audit_log,
            no_audit,
            audit_on_failure,
            audit_max_bytes,
            audit_keep,
            trusted_keys,
            require_signatures,
            clients,
            auth,
            tokens,
            access,
            ..
        } = &loaded.file;
        self.clients = clients.clone();
        self.oauth = auth.clone();
        self.tokens = tokens.clone();
        for token in &mut self.tokens {
            token.file = token.file.as_ref().map(|f| loaded.path(f));
        }
        self.access = access.clone();
        for root in self.access.iter_mut().flat_map(|a| a.roots.iter_mut().flatten()) {
            root.path = loaded.path(&root.path);
        }
        if let (false, Some(roots)) = (given("roots"), roots) {
            self.roots = roots.iter().map(|r| r.resolve(&loaded.base)).collect();
        }
        if let (false, Some(deny)) = (given("deny"), deny) {
            self.deny = deny.clone();
        }
        if let (false, Some(dir)) = (given("state_dir"), state_dir) {
            self.state_dir = Some(loaded.path(dir));
        }
        if let (false, Some(dir)) = (given("tools_dir"), tools_dir) {
            self.tools_dir = Some(loaded.path(dir));
        }
        if let (false, Some(components)) = (given("components"), components) {
            self.components = components.iter().map(|c| loaded.path(c)).collect();
        }
        let flag =
            |id: &str, current: bool, file: &Option<bool>| if given(id) { current } else { file.unwrap_or(current) };
        self.read_only = flag("read_only", self.read_only, read_only);
        self.defer_tools = flag("defer_tools", self.defer_tools, defer_tools);
        self.no_resources = flag("no_resources", self.no_resources, no_resources);
        self.no_cache = flag("no_cache", self.no_cache, no_cache);
        self.debug = flag("debug", self.debug, debug);
        self.no_audit = flag("no_audit", self.no_audit, no_audit);
        self.require_signatures = flag("require_signatures", self.require_signatures, require_signatures);
        if let (false, Some(keys)) = (given("trusted_keys"), trusted_keys) {
            self.trusted_keys = keys.iter().map(|k| loaded.path(k)).collect();
        }
        if let (false, Some(path)) = (given("audit_log"), audit_log) {
            self.audit_log = Some(loaded.path(path));
        }
        if let (false, Some(on_failure)) = (given("audit_on_failure"), audit_on_failure) {
            self.audit_on_failure = *on_failure;
        }
        if let (false, Some(bytes)) = (given("audit_max_bytes"), audit_max_bytes) {
            self.audit_max_bytes = bytes.0;
        }
        if let (false, Some(keep)) = (given("audit_keep"), audit_keep) {
            self.audit_keep = *keep;
        }
        self.limits.merge(limits, given);
        Ok(Some(loaded))
    }

    fn config(&self) -> anyhow::Result<Config> {
        let limits = self.limits.limits()?;
        let state_dir = self.state_dir.clone().or_else(default_state_dir);
        let tools_dir = self.tools_dir.clone().or_else(|| state_dir.as_ref().map(|dir| dir.join("tools")));
        Ok(Config {
            roots: self.roots.clone(),
            state_dir: if self.no_cache { None } else { state_dir.clone() },
            cursor_key: self.cursor_key.clone(),
            handle_store: self.handle_store.clone(),
            components: self.components.clone(),
            tools_dir,
            deny: self.deny.clone(),
            read_only: self.read_only,
            limits,
            trusted_keys: self.trusted_keys.clone(),
            require_signatures: self.require_signatures,
            defer_tools: self.defer_tools,
            resources: !self.no_resources,
            clients: crate::clients::Clients::new(&self.clients),
            access: self.access.clone(),
            metrics: !self.no_metrics,
            scope_names: self.oauth.as_ref().map(|o| o.scopes.clone()).unwrap_or_default(),
            audit: AuditSettings {
                path: match self.no_audit {
                    true => None,
                    // `--no-cache` writes nothing: no default audit file either.
                    false => self
                        .audit_log
                        .clone()
                        .or_else(|| state_dir.as_ref().filter(|_| !self.no_cache).map(|d| d.join("audit/audit.log"))),
                },
                on_failure: self.audit_on_failure,
                max_bytes: self.audit_max_bytes,
                keep: self.audit_keep,
            },
        })
    }
}

fn default_state_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/state")))?;
    Some(base.join("cordon"))
}

/// Runs the command line; the exit code says how it went.
pub fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // The matches of the innermost subcommand, where the flags are.
    let mut sub = matches.subcommand().map(|(_, sub)| sub).expect("a subcommand is required");
    while let Some((_, inner)) = sub.subcommand() {
        sub = inner;
    }
    if !matches!(cli.command, Command::Serve(_)) {
        // A command that prints its answer ends quietly, as other Unix tools
        // do, when its reader goes away (`cordon call … | head`), rather than
        // panicking on the failed write. `serve` keeps SIGPIPE ignored: a
        // client that leaves ends its session, never the server.
        // SAFETY: setting a signal's disposition, before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    let common = match &mut cli.command {
        Command::Serve(serve::ServeArgs { common, .. })
        | Command::Tools { common, .. }
        | Command::Call { common, .. } => Some(common),
        Command::Tool { command } => command.common(),
        Command::Audit { .. } => None,
    };
    let (debug, format, file_serve) = match common {
        Some(common) => match common.merge_file(sub) {
            Ok(loaded) => (common.debug, common.log_format, loaded.map(|l| l.file.serve)),
            Err(e) => {
                eprintln!("cordon: {e:#}");
                return ExitCode::from(2);
            }
        },
        None => (false, LogFormat::Text, None),
    };
    if let (Command::Serve(serve::ServeArgs { tcp, http, metrics, otlp_endpoint, .. }), Some(serve)) =
        (&mut cli.command, file_serve)
    {
        if tcp.is_none() && http.is_none() {
            (*tcp, *http) = (serve.tcp, serve.http);
        }
        if metrics.is_none() {
            *metrics = serve.metrics;
        }
        if otlp_endpoint.is_none() {
            *otlp_endpoint = serve.otlp_endpoint;
        }
    }
    // Traces only for a server (the standard environment variables may say where).
    let exporting = match &cli.command {
        Command::Serve(args) => Exporting::configured(args.otlp_endpoint.as_deref()),
        _ => None,
    };
    let _telemetry = match telemetry::init(Logs { debug, format }, exporting) {
        Ok(telemetry) => telemetry,
        Err(e) => {
            eprintln!("cordon: {e}");
            return ExitCode::from(2);
        }
    };
    match run(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("cordon: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Serve(args) => serve::run(args),
        Command::Tools { common, json } => {
            let server = Server::start(&common.config()?)?;
            // Listing checks every tool: each is compiled (or loaded from the cache).
            server.compile_all()?;
            if json {
                // What clients are shown, and beside it the schema of each
                // tool's JSON form (`format: "json"`), which `tools/list` leaves out.
                let mut listed = server.list_tools(Version::LATEST);
                for entry in server.tools() {
                    let name = entry.manifest().name.clone();
                    let tools = listed["tools"].as_array_mut().into_iter().flatten();
                    if let Some(tool) = tools.into_iter().find(|t| t["name"] == name.as_str()) {
                        tool["outputSchema"] = crate::results::schemas(&entry).1;
                    }
                }
                println!("{}", serde_json::to_string_pretty(&listed)?);
            } else {
                for entry in server.tools() {
                    let (input, output) = crate::results::schemas(&entry);
                    println!("{}\n  {}", entry.manifest().name, entry.manifest().description);
                    println!("  input:  {input}");
                    println!("  output: {output}\n");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Tool { command } => command.run(),
        Command::Audit { command } => command.run(),
        Command::Call { tool, json, all, jsonl, common } => {
            let arguments: Value =
                serde_json::from_str(&json).map_err(|e| anyhow::anyhow!("--json is not valid JSON: {e}"))?;
            if !arguments.is_object() {
                anyhow::bail!("--json must be a JSON object");
            }
            let server = Server::start(&common.config()?)?;
            if all {
                return Ok(crate::follow::follow(&server, &tool, arguments, jsonl)?);
            }
            let signal = std::sync::Arc::new(crate::runtime::CallSignal::new());
            let caller = server.local("cli");
            let answer = server.called(&tool, &caller).and_then(|tool| {
                let request = CallRequest {
                    tool,
                    arguments: &arguments,
                    client_roots: None,
                    signal: &signal,
                    for_model: true,
                    caller,
                    client: crate::clients::Client::default(),
                    watch: None,
                };
                server.call(request)
            });
            let answer = answer.map_err(ErrorObject::from);
            let failed = matches!(answer, Ok(Answer::Failed(_)));
            match answer.and_then(|answer| {
                crate::results::answer(answer, Version::LATEST, crate::args::Form::asked(&arguments))
            }) {
                Ok(result) => {
                    println!("{}", serde_json::to_string_pretty(&result.into_value())?);
                    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
                }
                Err(error) => {
                    println!("{}", serde_json::to_string_pretty(&json!({ "error": error }))?);
                    Ok(ExitCode::from(2))
                }
            }
        }
    }
}
