//! The command line: `cordon serve`, `cordon tools`, `cordon call`, and
//! `cordon tool …` (installing third-party tools, in `tool`).

mod template;
mod tool;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use serde_json::{Value, json};
use tracing_subscriber::EnvFilter;

use crate::config::{self, FileConfig, Loaded};
use crate::pager::PageLimits;
use crate::policy::DirSpec;
use crate::protocol::mcp::Version;
use crate::server::{Config, Limits, Server};
use crate::uploads::UploadLimits;

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
    Serve {
        /// Serve over TCP on this address (e.g. 127.0.0.1:7070) instead of stdio;
        /// every connection must first send the token.
        #[arg(long, value_name = "ADDR", conflicts_with = "http")]
        tcp: Option<std::net::SocketAddr>,
        /// Serve Streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:7071) instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// The token: TCP clients send it first; HTTP clients send `Authorization:
        /// Bearer TOKEN` [TCP, and HTTP off loopback: a random one, printed on stderr;
        /// HTTP on loopback: none required unless set].
        #[arg(long, env = "CORDON_TOKEN", value_name = "TOKEN", hide_env_values = true)]
        token: Option<String>,
        #[command(flatten)]
        common: Common,
    },
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
    /// The longest request line accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_line_bytes, value_parser = size::<usize>)]
    max_line_bytes: usize,
    /// The longest response sent, in bytes; a longer one is replaced by a
    /// `payload_too_large` error saying which page size would fit.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_response_bytes, value_parser = size::<usize>)]
    max_response_bytes: usize,
    /// Tool calls one session (connection) runs at once; more wait their turn.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_concurrent_calls)]
    max_concurrent_calls: usize,
    /// Tool calls being answered at once across all sessions and transports;
    /// more wait for one to end until their time limit, then are answered `busy`.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_calls_in_flight)]
    max_calls_in_flight: usize,
    /// Page size, in estimated tokens (4 bytes each), when a call does not ask.
    #[arg(long, value_name = "TOKENS", default_value_t = PageLimits::default().default_tokens)]
    page_tokens: u32,
    /// The largest page a call may ask for, in estimated tokens.
    #[arg(long, value_name = "TOKENS", default_value_t = PageLimits::default().max_tokens)]
    max_page_tokens: u32,
    /// The most items (lines, for text) on one page.
    #[arg(long, value_name = "N", default_value_t = PageLimits::default().max_items)]
    max_page_items: u32,
    /// Streams parked between pages, at most (least recently used given up first).
    #[arg(long, alias = "max-sessions", value_name = "N", default_value_t = PageLimits::default().parked)]
    max_parked_streams: usize,
    /// How long a parked stream waits for its next page before it is dropped, in seconds.
    #[arg(long, alias = "session-ttl-secs", value_name = "SECS", default_value_t = PageLimits::default().parked_ttl.as_secs())]
    parked_ttl_secs: u64,
    /// How long a cursor stays valid, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = PageLimits::default().cursor_ttl.as_secs())]
    cursor_ttl_secs: u64,
    /// The most bytes one staged upload may hold.
    #[arg(long, value_name = "BYTES", default_value_t = UploadLimits::default().max_bytes, value_parser = size::<u64>)]
    max_upload_bytes: u64,
    /// How long an idle staged upload is kept before it is deleted, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = UploadLimits::default().ttl.as_secs())]
    upload_ttl_secs: u64,
    /// JSON items from tools nested deeper than this are truncated.
    #[arg(long, value_name = "N", default_value_t = PageLimits::default().max_depth)]
    max_depth: usize,
    /// The cursor signing key, hex (at least 16 bytes); give replicas the same one
    /// [default: <state-dir>/cursor.key, created on first use].
    #[arg(long, env = "CORDON_CURSOR_KEY", value_name = "HEX", hide_env_values = true)]
    cursor_key: Option<String>,
    /// Linear memory one call may use, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = Limits::default().call.memory_bytes >> 20)]
    memory_mib: usize,
    /// Wall time one call may take, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = Limits::default().call.wall_time.as_secs_f64())]
    timeout_secs: f64,
    /// How long past the wall time the host waits for a tool stuck in a host
    /// call (which cannot be interrupted) before answering without it, in ms.
    #[arg(long, value_name = "MS", default_value_t = Limits::default().call.host_grace.as_millis() as u64)]
    host_grace_ms: u64,
    /// Resources one call may hold at once (open files, directory streams, ...).
    #[arg(long, value_name = "N", default_value_t = Limits::default().call.max_handles)]
    max_handles: usize,
    /// The most payload bytes one chunk from a tool may carry.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().call.max_chunk_bytes, value_parser = size::<usize>)]
    max_output_chunk_bytes: usize,
    /// The most bytes of metadata, a summary or a message a tool may return at once.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().call.max_info_bytes, value_parser = size::<usize>)]
    max_info_bytes: usize,
    /// Table elements one call may use, summed over its tables.
    #[arg(long, value_name = "N", default_value_t = Limits::default().call.table_elements)]
    max_table_elements: usize,
    /// Core and component instances one call may create.
    #[arg(long, value_name = "N", default_value_t = Limits::default().call.instances)]
    max_instances: usize,
    /// Log at debug level (to stderr; RUST_LOG overrides).
    #[arg(long)]
    debug: bool,
}

/// A size flag: bytes, or a number with a unit (`8MiB`).
fn size<T: TryFrom<u64>>(text: &str) -> Result<T, String> {
    let bytes = config::parse_bytes(text)?;
    T::try_from(bytes).map_err(|_| format!("`{text}` is too large"))
}

impl Common {
    /// Reads the configuration file, if one is named, and takes from it every
    /// setting the command line (`matches`) did not give.
    fn merge_file(&mut self, matches: &ArgMatches) -> anyhow::Result<Option<Loaded>> {
        let Some(path) = &self.config else { return Ok(None) };
        let loaded = Loaded::read(path)?;
        let given =
            |id: &str| matches!(matches.value_source(id), Some(ValueSource::CommandLine | ValueSource::EnvVariable));
        let FileConfig { roots, deny, read_only, state_dir, no_cache, components, tools_dir, debug, limits, .. } =
            &loaded.file;
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
        self.no_cache = flag("no_cache", self.no_cache, no_cache);
        self.debug = flag("debug", self.debug, debug);
        macro_rules! take {
            ($($field:ident $(as $convert:expr)?),* $(,)?) => {$(
                if let (false, Some(value)) = (given(stringify!($field)), limits.$field) {
                    self.$field = take!(@convert value $(, $convert)?);
                }
            )*};
            (@convert $value:ident) => { $value };
            (@convert $value:ident, $convert:expr) => { $convert($value)? };
        }
        let usize_bytes = |b: config::Bytes| {
            usize::try_from(b.0).map_err(|_| anyhow::anyhow!("{} bytes is too large for this machine", b.0))
        };
        let u64_bytes = |b: config::Bytes| anyhow::Ok(b.0);
        take!(
            max_line_bytes as usize_bytes,
            max_response_bytes as usize_bytes,
            max_upload_bytes as u64_bytes,
            max_concurrent_calls,
            max_calls_in_flight,
            page_tokens,
            max_page_tokens,
            max_page_items,
            max_parked_streams,
            parked_ttl_secs,
            cursor_ttl_secs,
            upload_ttl_secs,
            max_depth,
            memory_mib,
            timeout_secs,
            host_grace_ms,
            max_handles,
            max_output_chunk_bytes as usize_bytes,
            max_info_bytes as usize_bytes,
            max_table_elements,
            max_instances,
        );
        Ok(Some(loaded))
    }

    fn config(&self) -> anyhow::Result<Config> {
        if !(self.timeout_secs > 0.0 && self.timeout_secs.is_finite()) {
            anyhow::bail!("--timeout-secs must be a positive number of seconds");
        }
        let counts = [
            self.memory_mib,
            self.max_line_bytes,
            self.max_response_bytes,
            self.max_concurrent_calls,
            self.max_calls_in_flight,
            self.max_page_items as usize,
            self.page_tokens as usize,
        ];
        if counts.contains(&0) || self.max_page_tokens == 0 || self.cursor_ttl_secs == 0 || self.parked_ttl_secs == 0 {
            anyhow::bail!("limits must be positive: a zero limit would refuse everything");
        }
        if self.page_tokens > self.max_page_tokens {
            anyhow::bail!("--page-tokens ({}) is above --max-page-tokens ({})", self.page_tokens, self.max_page_tokens);
        }
        let pages = PageLimits {
            default_tokens: self.page_tokens,
            max_tokens: self.max_page_tokens,
            max_items: self.max_page_items,
            max_depth: self.max_depth,
            cursor_ttl: Duration::from_secs(self.cursor_ttl_secs),
            parked: self.max_parked_streams,
            parked_ttl: Duration::from_secs(self.parked_ttl_secs),
        };
        if self.max_upload_bytes == 0 || self.upload_ttl_secs == 0 {
            anyhow::bail!("upload limits must be positive");
        }
        let uploads = UploadLimits {
            max_bytes: self.max_upload_bytes,
            ttl: Duration::from_secs(self.upload_ttl_secs),
            ..UploadLimits::default()
        };
        let mut limits = Limits {
            max_line_bytes: self.max_line_bytes,
            max_response_bytes: self.max_response_bytes,
            max_concurrent_calls: self.max_concurrent_calls,
            max_calls_in_flight: self.max_calls_in_flight,
            pages,
            uploads,
            ..Limits::default()
        };
        limits.call.memory_bytes =
            self.memory_mib.checked_mul(1 << 20).ok_or_else(|| anyhow::anyhow!("--memory-mib is too large"))?;
        limits.call.wall_time = Duration::from_secs_f64(self.timeout_secs);
        limits.call.host_grace = Duration::from_millis(self.host_grace_ms);
        limits.call.max_handles = self.max_handles;
        limits.call.max_chunk_bytes = self.max_output_chunk_bytes;
        limits.call.max_info_bytes = self.max_info_bytes;
        limits.call.table_elements = self.max_table_elements;
        limits.call.instances = self.max_instances;
        let state_dir = self.state_dir.clone().or_else(default_state_dir);
        let tools_dir = self.tools_dir.clone().or_else(|| state_dir.as_ref().map(|dir| dir.join("tools")));
        Ok(Config {
            roots: self.roots.clone(),
            state_dir: if self.no_cache { None } else { state_dir },
            cursor_key: self.cursor_key.clone(),
            components: self.components.clone(),
            tools_dir,
            deny: self.deny.clone(),
            read_only: self.read_only,
            limits,
        })
    }
}

fn default_state_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/state")))?;
    Some(base.join("cordon"))
}

fn init_logging(debug: bool) {
    let default = if debug { "cordon=debug,info" } else { "cordon=info,warn" };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(false).init();
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
    let common = match &mut cli.command {
        Command::Serve { common, .. } | Command::Tools { common, .. } | Command::Call { common, .. } => Some(common),
        Command::Tool { command } => command.common(),
    };
    let (debug, file_serve) = match common {
        Some(common) => match common.merge_file(sub) {
            Ok(loaded) => (common.debug, loaded.map(|l| l.file.serve)),
            Err(e) => {
                eprintln!("cordon: {e:#}");
                return ExitCode::from(2);
            }
        },
        None => (false, None),
    };
    init_logging(debug);
    if let (Command::Serve { tcp, http, .. }, Some(serve)) = (&mut cli.command, file_serve)
        && tcp.is_none()
        && http.is_none()
    {
        (*tcp, *http) = (serve.tcp, serve.http);
    }
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
        Command::Serve { tcp, http, token, common } => {
            if tcp.is_some() && http.is_some() {
                anyhow::bail!("the configuration names both [serve] tcp and http; choose one");
            }
            let config = common.config()?;
            if config.roots.is_empty() {
                anyhow::bail!("no roots: give at least one directory with --root DIR (or DIR:ro)");
            }
            let server = Server::start(&config)?;
            server.watch_installed();
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            if token.as_ref().is_some_and(|t| t.len() < 16) {
                anyhow::bail!("--token must be at least 16 characters");
            }
            let random_token = || {
                let random = crate::pager::parked::new_id;
                format!("{:016x}{:016x}", random(), random())
            };
            match (tcp, http) {
                (None, None) => runtime.block_on(crate::transport::stdio::serve(server)),
                (None, Some(addr)) => {
                    let token = match token {
                        None if !addr.ip().is_loopback() => {
                            let token = random_token();
                            eprintln!("cordon: HTTP bearer token (send `Authorization: Bearer TOKEN`): {token}");
                            Some(token)
                        }
                        token => token,
                    };
                    let options = crate::transport::http::HttpOptions { addr, token };
                    runtime.block_on(crate::transport::http::serve(server, options))?;
                }
                (Some(addr), _) => {
                    let token = token.unwrap_or_else(|| {
                        let token = random_token();
                        eprintln!("cordon: TCP token (send it alone on the first line): {token}");
                        token
                    });
                    if !addr.ip().is_loopback() {
                        tracing::warn!(
                            "serving TCP on a non-loopback address ({addr}); anyone who can reach it and knows the token can use the roots"
                        );
                    }
                    runtime.block_on(crate::transport::tcp::serve(server, addr, token))?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Tools { common, json } => {
            let server = Server::start(&common.config()?)?;
            let listed = server.list_tools(Version::LATEST);
            if json {
                println!("{}", serde_json::to_string_pretty(&listed)?);
            } else {
                for tool in listed["tools"].as_array().into_iter().flatten() {
                    println!(
                        "{}\n  {}",
                        tool["name"].as_str().unwrap_or_default(),
                        tool["description"].as_str().unwrap_or_default()
                    );
                    println!("  input:  {}", tool["inputSchema"]);
                    println!("  output: {}\n", tool["outputSchema"]);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Tool { command } => command.run(),
        Command::Call { tool, json, all, jsonl, common } => {
            let arguments: Value =
                serde_json::from_str(&json).map_err(|e| anyhow::anyhow!("--json is not valid JSON: {e}"))?;
            if !arguments.is_object() {
                anyhow::bail!("--json must be a JSON object");
            }
            let server = Server::start(&common.config()?)?;
            if all {
                return crate::follow::follow(&server, &tool, arguments, jsonl);
            }
            match server.call_tool(
                &tool,
                &arguments,
                Version::LATEST,
                None,
                &std::sync::Arc::new(crate::runtime::CallSignal::new()),
            ) {
                Ok(result) => {
                    println!("{}", serde_json::to_string_pretty(&result)?);
                    Ok(if result["isError"] == json!(true) { ExitCode::from(1) } else { ExitCode::SUCCESS })
                }
                Err(error) => {
                    println!("{}", serde_json::to_string_pretty(&json!({ "error": error }))?);
                    Ok(ExitCode::from(2))
                }
            }
        }
    }
}
