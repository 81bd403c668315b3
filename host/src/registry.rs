//! Which tools exist: the built-in components embedded at build time, each
//! compiled (or loaded from the compile cache), linked, and described once.

use std::sync::Arc;

use anyhow::Context;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::runtime::bindings::CordonToolPre;
use crate::runtime::cache::Outcome;
use crate::runtime::{CallState, Runtime};
use crate::tool::{ErrorCode, Manifest, ToolError};

include!(concat!(env!("OUT_DIR"), "/builtin_tools.rs"));

/// Where a tool came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Built from `tools/` and embedded in the binary.
    Builtin,
    /// Loaded with `--component PATH`: it is granted no filesystem access.
    Component(std::path::PathBuf),
}

/// A loaded tool: its manifest, its linked component and its argument checker.
pub struct Tool {
    pub manifest: Manifest,
    pub origin: Origin,
    /// The SHA-256 of the component, hex.
    pub digest: String,
    /// Whether the compiled code came from the cache.
    pub outcome: Outcome,
    pre: CordonToolPre<CallState>,
    validator: jsonschema::Validator,
}

impl Tool {
    pub fn pre(&self) -> &CordonToolPre<CallState> {
        &self.pre
    }

    /// Checks arguments against the tool's input schema; the error lists every
    /// violation with where it is.
    pub fn validate(&self, args: &Value) -> Result<(), ToolError> {
        let problems: Vec<String> = self
            .validator
            .iter_errors(args)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() { e.to_string() } else { format!("{at}: {e}") }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ToolError::new(
                ErrorCode::InvalidArgument,
                format!("arguments do not match the input schema of `{}`: {}", self.manifest.name, problems.join("; ")),
            ))
        }
    }
}

/// The tools a server offers, in name order.
pub struct Registry {
    tools: Vec<Arc<Tool>>,
}

impl Registry {
    /// Loads every built-in tool (in parallel: each is a compile or a cache
    /// load), then the extra components.
    pub fn load(runtime: &Runtime, components: &[std::path::PathBuf]) -> anyhow::Result<Registry> {
        let builtins: Vec<anyhow::Result<Tool>> = std::thread::scope(|scope| {
            let handles: Vec<_> = BUILTIN_TOOLS
                .iter()
                .map(|(crate_dir, bytes, digest)| {
                    scope.spawn(move || {
                        load(runtime, bytes, digest.to_string(), Origin::Builtin)
                            .with_context(|| format!("load built-in tool `{crate_dir}`"))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("a tool loader panicked")).collect()
        });
        let mut tools = Vec::new();
        for tool in builtins {
            tools.push(Arc::new(tool?));
        }
        for path in components {
            let bytes =
                crate::ambient::read_file(path).with_context(|| format!("read component {}", path.display()))?;
            let digest = hex::encode(Sha256::digest(&bytes));
            let tool = load(runtime, &bytes, digest, Origin::Component(path.clone()))
                .with_context(|| format!("load component {}", path.display()))?;
            tools.push(Arc::new(tool));
        }
        tools.sort_by(|a, b| a.manifest.name.cmp(&b.manifest.name));
        if let Some(pair) = tools.windows(2).find(|w| w[0].manifest.name == w[1].manifest.name) {
            anyhow::bail!("two tools are named `{}`", pair[0].manifest.name);
        }
        Ok(Registry { tools })
    }

    pub fn get(&self, name: &str) -> Option<&Arc<Tool>> {
        self.tools.iter().find(|t| t.manifest.name == name)
    }

    pub fn tools(&self) -> &[Arc<Tool>] {
        &self.tools
    }
}

fn load(runtime: &Runtime, bytes: &[u8], digest: String, origin: Origin) -> anyhow::Result<Tool> {
    let started = std::time::Instant::now();
    let loaded = runtime.load(bytes, &digest)?;
    let compiled = started.elapsed();
    let manifest = runtime.describe(&loaded.pre).map_err(|e| anyhow::anyhow!("bad manifest: {e}"))?;
    tracing::debug!(tool = %manifest.name, ?compiled, described = ?(started.elapsed() - compiled), "load timings");
    if manifest.name == crate::staging::UPLOAD_TOOL {
        anyhow::bail!("the tool name `{}` is the host's", manifest.name);
    }
    if let Some(name) = crate::protocol::results::reserved_argument(&manifest) {
        anyhow::bail!("tool `{}` declares the argument `{name}`, which the host reserves for paging", manifest.name);
    }
    let validator = jsonschema::validator_for(&manifest.input_schema)
        .map_err(|e| anyhow::anyhow!("the input schema of `{}` is not a valid JSON Schema: {e}", manifest.name))?;
    tracing::info!(tool = %manifest.name, version = %manifest.version, cache = ?loaded.outcome, "loaded tool");
    Ok(Tool { manifest, origin, digest, outcome: loaded.outcome, pre: loaded.pre, validator })
}
