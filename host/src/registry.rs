//! Which tools exist: the built-in components embedded at build time, extra
//! components named with `--component`, and the third-party tools installed in
//! the tools directory, each compiled (or loaded from the compile cache),
//! linked, and described once.

use std::sync::Arc;

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

/// A tool the host serves itself, without a component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostTool {
    /// `upload`: stages content too large for one call (see `staging`).
    Upload,
}

impl HostTool {
    /// Every host tool, in the order `tools/list` shows them.
    pub const ALL: [HostTool; 1] = [HostTool::Upload];

    pub fn name(self) -> &'static str {
        match self {
            HostTool::Upload => crate::staging::UPLOAD_TOOL,
        }
    }

    pub fn manifest(self) -> Manifest {
        match self {
            HostTool::Upload => crate::staging::upload_manifest(),
        }
    }
}

/// A tool the registry offers: a loaded component, or one the host serves.
#[derive(Clone)]
pub enum Entry {
    Component(Arc<Tool>),
    Host { tool: HostTool, manifest: Arc<Manifest> },
}

impl Entry {
    pub fn manifest(&self) -> &Manifest {
        match self {
            Entry::Component(tool) => &tool.manifest,
            Entry::Host { manifest, .. } => manifest,
        }
    }

    /// What tells one version of an entry from another: the component's
    /// digest and origin (a host tool is always the same).
    fn identity(&self) -> (String, Option<(String, Origin)>) {
        match self {
            Entry::Component(t) => (t.manifest.name.clone(), Some((t.digest.clone(), t.origin.clone()))),
            Entry::Host { manifest, .. } => (manifest.name.clone(), None),
        }
    }
}

/// Why the tools cannot be loaded.
#[derive(Debug)]
pub enum LoadError {
    /// A component named on the command line could not be read.
    Read { path: std::path::PathBuf, source: std::io::Error },
    /// A component could not be compiled or linked.
    Component { label: String, source: crate::runtime::RuntimeError },
    /// A component's manifest is not one the host can offer.
    Manifest { label: String, problem: ManifestProblem },
    /// Two tools have the same name.
    Duplicate(String),
}

/// What is wrong with a component's manifest.
#[derive(Debug)]
pub enum ManifestProblem {
    /// The component could not say what it is, or said it malformed.
    Malformed(crate::runtime::DescribeError),
    /// An installed component now gives another name than it was installed as.
    Renamed { now: String, installed_as: String },
    /// The name is a host tool's.
    HostName(String),
    /// The tool declares an argument the host owns.
    Reserved { tool: String, argument: &'static str },
    /// The input schema is not a valid JSON Schema.
    Schema { tool: String, error: String },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Read { path, source } => write!(f, "read component {}: {source}", path.display()),
            LoadError::Component { label, source } => write!(f, "load {label}: {source}"),
            LoadError::Manifest { label, problem } => write!(f, "load {label}: {problem}"),
            LoadError::Duplicate(name) => write!(f, "two tools are named `{name}`"),
        }
    }
}

impl std::fmt::Display for ManifestProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ManifestProblem::Malformed(why) => write!(f, "bad manifest: {why}"),
            ManifestProblem::Renamed { now, installed_as } => {
                write!(f, "the component now calls itself `{now}`, but it was installed as `{installed_as}`")
            }
            ManifestProblem::HostName(name) => write!(f, "the tool name `{name}` is the host's"),
            ManifestProblem::Reserved { tool, argument } => {
                write!(f, "tool `{tool}` declares the argument `{argument}`, which the host reserves for paging")
            }
            ManifestProblem::Schema { tool, error } => {
                write!(f, "the input schema of `{tool}` is not a valid JSON Schema: {error}")
            }
        }
    }
}

impl std::error::Error for LoadError {}

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
    pub fn component(path: &std::path::Path) -> Result<Source, LoadError> {
        let bytes =
            crate::ambient::read_file(path).map_err(|source| LoadError::Read { path: path.to_path_buf(), source })?;
        Ok(Source {
            digest: crate::installed::sha256_hex(&bytes),
            bytes: bytes.into(),
            origin: Origin::Component(path.to_path_buf()),
            label: format!("component {}", path.display()),
            expect_name: None,
        })
    }
}

/// The tools a server offers: the components in name order, then the host's.
pub struct Registry {
    entries: Vec<Entry>,
}

impl Registry {
    /// Loads every built-in tool and then `extra`, in parallel (each is a
    /// compile or a cache load).
    pub fn load(runtime: &Runtime, extra: Vec<Source>) -> Result<Registry, LoadError> {
        let builtins = builtin_names().filter_map(Source::builtin);
        let tools = load_all(runtime, builtins.chain(extra).collect())?;
        Registry::new(tools)
    }

    /// This registry with its installed tools replaced by `installed`: the
    /// others are kept, and so is an installed tool whose component and grants
    /// did not change (it is not loaded again).
    pub fn with_installed(&self, runtime: &Runtime, installed: Vec<Source>) -> Result<Registry, LoadError> {
        let mut tools: Vec<Arc<Tool>> =
            self.components().filter(|t| !matches!(t.origin, Origin::Installed { .. })).cloned().collect();
        let mut fresh = Vec::new();
        for source in installed {
            let same = self.components().find(|t| t.digest == source.digest && t.origin == source.origin);
            match same {
                Some(tool) => tools.push(Arc::clone(tool)),
                None => fresh.push(source),
            }
        }
        tools.extend(load_all(runtime, fresh)?);
        Registry::new(tools)
    }

    fn new(mut tools: Vec<Arc<Tool>>) -> Result<Registry, LoadError> {
        tools.sort_by(|a, b| a.manifest.name.cmp(&b.manifest.name));
        if let Some(pair) = tools.windows(2).find(|w| w[0].manifest.name == w[1].manifest.name) {
            return Err(LoadError::Duplicate(pair[0].manifest.name.clone()));
        }
        let host = HostTool::ALL.into_iter().map(|tool| Entry::Host { tool, manifest: Arc::new(tool.manifest()) });
        Ok(Registry { entries: tools.into_iter().map(Entry::Component).chain(host).collect() })
    }

    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.manifest().name == name)
    }

    /// Every tool, components first.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The loaded components.
    pub fn components(&self) -> impl Iterator<Item = &Arc<Tool>> {
        self.entries.iter().filter_map(|e| match e {
            Entry::Component(tool) => Some(tool),
            Entry::Host { .. } => None,
        })
    }

    /// Whether `other` offers the same tools, from the same components.
    pub fn same_tools(&self, other: &Registry) -> bool {
        self.entries.iter().map(Entry::identity).eq(other.entries.iter().map(Entry::identity))
    }
}

/// Loads `sources` on a thread each; the first failure fails them all.
fn load_all(runtime: &Runtime, sources: Vec<Source>) -> Result<Vec<Arc<Tool>>, LoadError> {
    let loaded: Vec<Result<Tool, LoadError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = sources.into_iter().map(|source| scope.spawn(move || load(runtime, source))).collect();
        handles.into_iter().map(|h| h.join().expect("a tool loader panicked")).collect()
    });
    loaded.into_iter().map(|tool| tool.map(Arc::new)).collect()
}

/// Compiles (or loads from the cache), links and describes one component.
pub fn load(runtime: &Runtime, source: Source) -> Result<Tool, LoadError> {
    let label = source.label.clone();
    let refused = |problem| LoadError::Manifest { label: label.clone(), problem };
    let started = std::time::Instant::now();
    let loaded = runtime
        .load(&source.bytes, &source.digest)
        .map_err(|source| LoadError::Component { label: label.clone(), source })?;
    let compiled = started.elapsed();
    let manifest = runtime.describe(&loaded.pre).map_err(|e| refused(ManifestProblem::Malformed(e)))?;
    tracing::debug!(tool = %manifest.name, ?compiled, described = ?(started.elapsed() - compiled), "load timings");
    if let Some(expected) = &source.expect_name
        && *expected != manifest.name
    {
        return Err(refused(ManifestProblem::Renamed { now: manifest.name, installed_as: expected.clone() }));
    }
    if HostTool::ALL.iter().any(|host| host.name() == manifest.name) {
        return Err(refused(ManifestProblem::HostName(manifest.name)));
    }
    if let Some(argument) = crate::args::reserved_argument(&manifest) {
        return Err(refused(ManifestProblem::Reserved { tool: manifest.name, argument }));
    }
    let validator = jsonschema::validator_for(&manifest.input_schema)
        .map_err(|e| refused(ManifestProblem::Schema { tool: manifest.name.clone(), error: e.to_string() }))?;
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

/// The names of the built-in tools' crates (a built-in's name is its crate's).
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    BUILTIN_TOOLS.iter().map(|(crate_dir, _, _)| *crate_dir)
}

/// The names installed tools may not take: the built-in tools' and the host's.
pub fn taken_names() -> impl Iterator<Item = &'static str> {
    builtin_names().chain(HostTool::ALL.iter().map(|t| t.name()))
}
