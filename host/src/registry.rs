//! Which tools exist: the built-in components embedded at build time, extra
//! components named with `--component`, and the third-party tools installed in
//! the tools directory, each compiled (or loaded from the compile cache),
//! linked, and described once.

use std::sync::Arc;

use anyhow::Context;
use serde_json::Value;

use crate::installed::Verified;
use crate::policy::DirSpec;
use crate::runtime::bindings::CordonToolPre;
use crate::runtime::cache::Outcome;
use crate::runtime::{CallState, Runtime, Target};
use crate::tool::{ErrorCode, Manifest, ToolError};

include!(concat!(env!("OUT_DIR"), "/builtin_tools.rs"));

/// Where a tool came from, which decides what it may see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Built from `tools/` and embedded in the binary: it sees the roots.
    Builtin,
    /// Loaded with `--component PATH`: it is granted no filesystem access.
    Component(std::path::PathBuf),
    /// Installed with `cordon tool add`: it sees only its grants (canonical
    /// directories, as the lockfile lists them), within the roots.
    Installed { grants: Vec<DirSpec> },
}

/// A loaded tool: its manifest, its linked component and its argument checker.
pub struct Tool {
    pub manifest: Manifest,
    pub origin: Origin,
    /// The SHA-256 of the component, hex.
    pub digest: String,
    /// The WIT world the component targets, from its imports.
    pub world: &'static str,
    /// Whether the compiled code came from the cache.
    pub outcome: Outcome,
    pre: CordonToolPre<CallState>,
    validator: jsonschema::Validator,
}

impl Tool {
    pub fn pre(&self) -> &CordonToolPre<CallState> {
        &self.pre
    }

    /// What the runtime runs for a call of this tool.
    pub fn target(&self) -> Target<'_> {
        Target { name: &self.manifest.name, pre: &self.pre }
    }

    /// What cursors bind: the version and the component, so a cursor never
    /// resumes in other code, even one that kept the version number.
    pub fn identity(&self) -> String {
        format!("{} ({})", self.manifest.version, &self.digest[..self.digest.len().min(12)])
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

/// A component to load and where it came from.
pub struct Source {
    pub bytes: std::borrow::Cow<'static, [u8]>,
    pub digest: String,
    pub origin: Origin,
    /// What to call it in an error.
    pub label: String,
    /// The name its manifest must give (installed tools are pinned by name).
    pub expect_name: Option<String>,
}

impl Source {
    /// An installed tool, checked against its pin, with its resolved grants.
    pub fn installed(verified: Verified, grants: Vec<DirSpec>) -> Source {
        let Verified { entry, bytes } = verified;
        Source {
            bytes: bytes.into(),
            digest: entry.sha256.to_ascii_lowercase(),
            origin: Origin::Installed { grants },
            label: format!("installed tool `{}`", entry.name),
            expect_name: Some(entry.name),
        }
    }

    /// The built-in tool whose crate is `name`, if there is one.
    pub fn builtin(name: &str) -> Option<Source> {
        BUILTIN_TOOLS.iter().find(|(crate_dir, _, _)| *crate_dir == name).map(|(crate_dir, bytes, digest)| Source {
            bytes: (*bytes).into(),
            digest: digest.to_string(),
            origin: Origin::Builtin,
            label: format!("built-in tool `{crate_dir}`"),
            expect_name: None,
        })
    }

    /// A component named on the command line.
    pub fn component(path: &std::path::Path) -> anyhow::Result<Source> {
        let bytes = crate::ambient::read_file(path).with_context(|| format!("read component {}", path.display()))?;
        Ok(Source {
            digest: crate::installed::sha256_hex(&bytes),
            bytes: bytes.into(),
            origin: Origin::Component(path.to_path_buf()),
            label: format!("component {}", path.display()),
            expect_name: None,
        })
    }
}

/// The tools a server offers, in name order.
pub struct Registry {
    tools: Vec<Arc<Tool>>,
}

impl Registry {
    /// Loads every built-in tool and then `extra`, in parallel (each is a
    /// compile or a cache load).
    pub fn load(runtime: &Runtime, extra: Vec<Source>) -> anyhow::Result<Registry> {
        let builtins = builtin_names().filter_map(Source::builtin);
        let tools = load_all(runtime, builtins.chain(extra).collect())?;
        Registry::new(tools)
    }

    /// This registry with its installed tools replaced by `installed`: the
    /// others are kept, and so is an installed tool whose component and grants
    /// did not change (it is not loaded again).
    pub fn with_installed(&self, runtime: &Runtime, installed: Vec<Source>) -> anyhow::Result<Registry> {
        let mut tools: Vec<Arc<Tool>> =
            self.tools.iter().filter(|t| !matches!(t.origin, Origin::Installed { .. })).cloned().collect();
        let mut fresh = Vec::new();
        for source in installed {
            let same = self.tools.iter().find(|t| t.digest == source.digest && t.origin == source.origin);
            match same {
                Some(tool) => tools.push(Arc::clone(tool)),
                None => fresh.push(source),
            }
        }
        tools.extend(load_all(runtime, fresh)?);
        Registry::new(tools)
    }

    fn new(mut tools: Vec<Arc<Tool>>) -> anyhow::Result<Registry> {
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

/// Loads `sources` on a thread each; the first failure fails them all.
fn load_all(runtime: &Runtime, sources: Vec<Source>) -> anyhow::Result<Vec<Arc<Tool>>> {
    let loaded: Vec<anyhow::Result<Tool>> = std::thread::scope(|scope| {
        let handles: Vec<_> = sources
            .into_iter()
            .map(|source| {
                scope.spawn(move || {
                    let label = source.label.clone();
                    load(runtime, source).with_context(|| format!("load {label}"))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a tool loader panicked")).collect()
    });
    loaded.into_iter().map(|tool| tool.map(Arc::new)).collect()
}

/// Compiles (or loads from the cache), links and describes one component.
pub fn load(runtime: &Runtime, source: Source) -> anyhow::Result<Tool> {
    let started = std::time::Instant::now();
    let loaded = runtime.load(&source.bytes, &source.digest)?;
    let compiled = started.elapsed();
    let manifest = runtime.describe(&loaded.pre).map_err(|e| anyhow::anyhow!("bad manifest: {e}"))?;
    tracing::debug!(tool = %manifest.name, ?compiled, described = ?(started.elapsed() - compiled), "load timings");
    if let Some(expected) = &source.expect_name
        && *expected != manifest.name
    {
        anyhow::bail!("the component now calls itself `{}`, but it was installed as `{expected}`", manifest.name);
    }
    if manifest.name == crate::staging::UPLOAD_TOOL {
        anyhow::bail!("the tool name `{}` is the host's", manifest.name);
    }
    if let Some(name) = manifest.reserved_argument() {
        anyhow::bail!("tool `{}` declares the argument `{name}`, which the host reserves for paging", manifest.name);
    }
    let validator = jsonschema::validator_for(&manifest.input_schema)
        .map_err(|e| anyhow::anyhow!("the input schema of `{}` is not a valid JSON Schema: {e}", manifest.name))?;
    let world = runtime.world(&loaded.pre);
    tracing::info!(tool = %manifest.name, version = %manifest.version, cache = ?loaded.outcome, "loaded tool");
    Ok(Tool {
        manifest,
        origin: source.origin,
        digest: source.digest,
        world,
        outcome: loaded.outcome,
        pre: loaded.pre,
        validator,
    })
}

/// The names of the built-in tools' crates, which installed tools may not take
/// (a built-in's name is its crate's).
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    BUILTIN_TOOLS.iter().map(|(crate_dir, _, _)| *crate_dir)
}
