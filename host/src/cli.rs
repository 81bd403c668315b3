//! The command line: `cordon serve`, `cordon tools`, `cordon call`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use serde_json::{Value, json};
use tracing_subscriber::EnvFilter;

use crate::policy::RootSpec;
use crate::protocol::mcp::{self, Version};
use crate::server::{Config, Limits, Server};

/// Cordon: an MCP file server whose tools run sandboxed in WebAssembly.
#[derive(Parser, Debug)]
#[command(name = "cordon", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve MCP over stdio (newline-delimited JSON-RPC).
    Serve {
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
        /// The arguments, a JSON object.
        #[arg(long, value_name = "JSON", default_value = "{}")]
        json: String,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Args, Debug)]
struct Common {
    /// A directory the tools may use: DIR (read-write), DIR:rw or DIR:ro. Repeatable.
    #[arg(long = "root", value_name = "DIR[:ro|:rw]")]
    roots: Vec<RootSpec>,
    /// Where compiled tools are cached [default: $XDG_STATE_HOME/cordon or ~/.local/state/cordon].
    #[arg(long, env = "CORDON_STATE_DIR", value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Compile the tools at every start instead of caching them.
    #[arg(long)]
    no_cache: bool,
    /// The longest request line accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_line_bytes)]
    max_line_bytes: usize,
    /// The most payload bytes one call may return.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_result_bytes)]
    max_result_bytes: usize,
    /// Linear memory one call may use, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = Limits::default().call.memory_bytes >> 20)]
    memory_mib: usize,
    /// Wall time one call may take, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = Limits::default().call.wall_time.as_secs_f64())]
    timeout_secs: f64,
    /// Log at debug level (to stderr; RUST_LOG overrides).
    #[arg(long)]
    debug: bool,
}

impl Common {
    fn config(&self) -> anyhow::Result<Config> {
        if !(self.timeout_secs > 0.0 && self.timeout_secs.is_finite()) {
            anyhow::bail!("--timeout-secs must be a positive number of seconds");
        }
        if self.memory_mib == 0 || self.max_line_bytes == 0 || self.max_result_bytes == 0 {
            anyhow::bail!("limits must be positive: a zero limit would refuse everything");
        }
        let mut limits = Limits {
            max_line_bytes: self.max_line_bytes,
            max_result_bytes: self.max_result_bytes,
            ..Limits::default()
        };
        limits.call.memory_bytes =
            self.memory_mib.checked_mul(1 << 20).ok_or_else(|| anyhow::anyhow!("--memory-mib is too large"))?;
        limits.call.wall_time = Duration::from_secs_f64(self.timeout_secs);
        let state_dir = if self.no_cache { None } else { self.state_dir.clone().or_else(default_state_dir) };
        Ok(Config { roots: self.roots.clone(), state_dir, limits })
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
    let cli = Cli::parse();
    let common = match &cli.command {
        Command::Serve { common } | Command::Tools { common, .. } | Command::Call { common, .. } => common,
    };
    init_logging(common.debug);
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
        Command::Serve { common } => {
            let config = common.config()?;
            if config.roots.is_empty() {
                anyhow::bail!("no roots: give at least one directory with --root DIR (or DIR:ro)");
            }
            let server = Server::start(&config)?;
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            runtime.block_on(crate::transport::stdio::serve(server));
            Ok(ExitCode::SUCCESS)
        }
        Command::Tools { common, json } => {
            let server = Server::start(&common.config()?)?;
            let listed = mcp::list_tools_result(server.registry().tools().iter().map(|t| &**t), Version::LATEST);
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
        Command::Call { tool, json, common } => {
            let arguments: Value =
                serde_json::from_str(&json).map_err(|e| anyhow::anyhow!("--json is not valid JSON: {e}"))?;
            if !arguments.is_object() {
                anyhow::bail!("--json must be a JSON object");
            }
            let server = Server::start(&common.config()?)?;
            match server.call_tool(&tool, &arguments, Version::LATEST) {
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
