//! Which tools exist: the built-in components embedded at build time, extra
//! components named with `--component`, and the third-party tools installed in
//! the tools directory, each compiled (or loaded from the compile cache),
//! linked, and described once.
//!
//! A built-in tool's manifest is known at build time, so the registry offers
//! it at once and compiles its component later: in the background, in order,
//! or first for the call that needs it (`Tool::compiled`). Once compiled, the
//! component's own `describe` must give the embedded manifest. Other
//! components are compiled and described when they are loaded.

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::installed::Verified;
use crate::policy::{DirSpec, Environment, NetGrants};
use crate::runtime::bindings::CordonToolPre;
use crate::runtime::cache::{Outcome, Precompiled};
use crate::runtime::{CallFailure, CallState, Code, HostFault, Runtime, Shardable, Sockets, Target};
use crate::tool::{ErrorCode, Manifest, ToolError};

/// A built-in tool, as the build script embeds it.
pub struct Builtin {
    /// Its crate directory's name (`tools/<crate_dir>`).
    pub crate_dir: &'static str,
    /// The component.
    pub bytes: &'static [u8],
    /// The component's SHA-256, hex.
    pub digest: &'static str,
    /// The tool's manifest, as JSON.
    pub manifest: &'static str,
    /// The component compiled for this machine, unless the build was for
    /// another target.
    pub precompiled: Option<Precompiled>,
}

include!(concat!(env!("OUT_DIR"), "/builtin_tools.rs"));

/// Where a tool came from, which decides what it may see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Built from `tools/` and embedded in the binary: it sees the roots.
    Builtin,
    /// Loaded with `--component PATH`: it is granted no filesystem access.
    Component(std::path::PathBuf),
    /// Installed with `cordon tool add`: it sees only its grants (canonical
    /// directories, as the lockfile lists them, within the roots; the
    /// variables of the server's environment it was granted; the destinations
    /// it may send HTTP requests to), and its sockets, if it imports them,
    /// are stubbed only when it was installed so.
    Installed { grants: Vec<DirSpec>, env: Environment, net: NetGrants, sockets: Sockets },
}

/// A tool: its manifest, its argument checker and its component, compiled and
/// linked now or on first need.
pub struct Tool {
    pub manifest: Manifest,
    pub origin: Origin,
    /// The SHA-256 of the component, hex.
    pub digest: String,
    /// The id of the trusted key whose signature the component carries.
    pub signer: Option<String>,
    validator: jsonschema::Validator,
    /// The component, compiled once: set when it is loaded, or for a built-in
    /// tool by whichever of the background compile and a call comes first.
    code: OnceLock<Result<Compiled, Arc<LoadError>>>,
    /// A built-in tool's embedded component, loaded on first need.
    embedded: Option<&'static Builtin>,
}

/// A tool's component, compiled and linked.
pub struct Compiled {
    pre: CordonToolPre<CallState>,
    /// Set when the component exports `shards`.
    shards: Option<Shardable>,
    /// The WIT world the component targets, from its imports.
    pub world: &'static str,
    /// Whether the compiled code came from the cache.
    pub outcome: Outcome,
}

impl Compiled {
    pub fn pre(&self) -> &CordonToolPre<CallState> {
        &self.pre
    }
}

impl Tool {
    /// Whether the component is compiled and can run.
    pub fn is_compiled(&self) -> bool {
        self.code.get().is_some_and(Result::is_ok)
    }

    /// Whether the component loads in about a millisecond when first needed:
    /// a built-in tool whose embedded artifact was compiled for this engine.
    pub fn loads_fast(&self, runtime: &Runtime) -> bool {
        let artifact = self.embedded.and_then(|row| row.precompiled);
        self.code.get().is_none() && artifact.is_some_and(|p| p.key == runtime.cache().engine_key())
    }

    /// Whether a call runs the tool without compiling it first: it is
    /// loaded, or it loads fast.
    pub fn is_ready(&self, runtime: &Runtime) -> bool {
        self.is_compiled() || self.loads_fast(runtime)
    }

    /// Whether compiling the component failed.
    pub fn failed_to_compile(&self) -> bool {
        self.code.get().is_some_and(Result::is_err)
    }

    /// The compiled component: compiles it now if no one has (a caller that
    /// comes while another thread compiles it waits for that one). A built-in
    /// component that cannot be compiled, or whose `describe` does not give the
    /// manifest built with the server, fails every call with the reason.
    pub fn compiled(&self, runtime: &Runtime) -> Result<&Compiled, CallFailure> {
        let code = self.code.get_or_init(|| {
            let row = self.embedded.expect("a tool without an embedded component was compiled when loaded");
            let label = format!("built-in tool `{}`", self.manifest.name);
            let code =
                Code { bytes: row.bytes, digest: row.digest, sockets: Sockets::Refuse, precompiled: row.precompiled };
            let compiled = compile(runtime, code, &label).and_then(|(compiled, described)| {
                match first_difference(&self.manifest, &described) {
                    None => Ok(compiled),
                    Some(field) => {
                        Err(LoadError::Manifest { label: label.clone(), problem: ManifestProblem::Differs { field } })
                    }
                }
            });
            match &compiled {
                Ok(code) => tracing::info!(tool = %self.manifest.name, version = %self.manifest.version,
                    cache = ?code.outcome, "loaded tool"),
                Err(e) => tracing::error!("cannot load a built-in tool: {e}"),
            }
            compiled.map_err(Arc::new)
        });
        code.as_ref().map_err(|e| {
            CallFailure::Host(HostFault::Unloadable { tool: self.manifest.name.clone(), reason: e.to_string() })
        })
    }

    /// What the runtime runs for a call of this tool (compiled on first need).
    pub fn target(&self, runtime: &Runtime) -> Result<Target<'_>, CallFailure> {
        let compiled = self.compiled(runtime)?;
        Ok(Target { name: &self.manifest.name, pre: &compiled.pre, shards: compiled.shards.as_ref() })
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

/// Compiles (or loads from the cache) and links a component, and asks it
/// what it is.
fn compile(runtime: &Runtime, code: Code<'_>, label: &str) -> Result<(Compiled, Manifest), LoadError> {
    let started = std::time::Instant::now();
    let loaded = runtime
        .load(code)
        .map_err(|source| LoadError::Component { label: label.to_string(), source })?;
    let compiled = started.elapsed();
    let manifest = runtime
        .describe(&loaded.pre)
        .map_err(|e| LoadError::Manifest { label: label.to_string(), problem: ManifestProblem::Malformed(e) })?;
    tracing::debug!(tool = %manifest.name, ?compiled, described = ?(started.elapsed() - compiled), "load timings");
    let world = runtime.world(&loaded.pre);
    Ok((Compiled { pre: loaded.pre, shards: loaded.shards, world, outcome: loaded.outcome }, manifest))
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
    /// Whether the tool is one of Cordon's own (built into the binary, or served
    /// by the host), not a third party's.
    pub fn is_built_in(&self) -> bool {
        match self {
            Entry::Component(tool) => matches!(tool.origin, Origin::Builtin),
            Entry::Host { .. } => true,
        }
    }

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
    /// A built-in component's `describe` differs from the manifest built with
    /// the server, first in `field`.
    Differs { field: &'static str },
    /// A built-in tool's manifest, embedded at build time, is not a manifest.
    Embedded(String),
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
            ManifestProblem::Differs { field } => write!(
                f,
                "the component describes itself otherwise than the manifest built with the server (first in \
                 `{field}`); rebuild the server"
            ),
            ManifestProblem::Embedded(error) => write!(f, "the manifest embedded at build time is malformed: {error}"),
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
    /// The id of the trusted key whose signature it carries, checked.
    pub signer: Option<String>,
}

impl Source {
    /// An installed tool, checked against its pin, with its resolved grants
    /// (`origin`, an `Origin::Installed`).
    pub fn installed(verified: Verified, origin: Origin, signer: Option<String>) -> Source {
        let Verified { entry, bytes } = verified;
        Source {
            bytes: bytes.into(),
            digest: entry.sha256.to_ascii_lowercase(),
            origin,
            label: format!("installed tool `{}`", entry.name),
            expect_name: Some(entry.name),
            signer,
        }
    }

    /// The built-in tool whose crate is `name`, if there is one, to load
    /// now (`cordon tool info`).
    pub fn builtin(name: &str) -> Option<Source> {
        let row = BUILTIN_TOOLS.iter().find(|row| row.crate_dir == name)?;
        Some(Source {
            bytes: row.bytes.into(),
            digest: row.digest.to_string(),
            origin: Origin::Builtin,
            label: format!("built-in tool `{}`", row.crate_dir),
            expect_name: None,
            signer: None,
        })
    }

    /// A component pulled from a registry (`label`: its reference).
    pub fn pulled(bytes: Vec<u8>, label: String) -> Source {
        Source {
            digest: crate::installed::sha256_hex(&bytes),
            bytes: bytes.into(),
            origin: Origin::Installed {
                grants: Vec::new(),
                env: Environment::default(),
                net: NetGrants::default(),
                sockets: Sockets::Refuse,
            },
            label,
            expect_name: None,
            signer: None,
        }
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
            signer: None,
        })
    }
}

/// The tools a server offers: the components in name order, then the host's.
pub struct Registry {
    entries: Vec<Entry>,
}

impl Registry {
    /// The built-in tools, offered at once with the manifests built with the
    /// server and compiled on first need (see `compile_in_background`), and
    /// `extra`, loaded now in parallel (each is a compile or a cache load).
    pub fn load(runtime: &Runtime, extra: Vec<Source>) -> Result<Registry, LoadError> {
        let mut tools = BUILTIN_TOOLS.iter().map(builtin).collect::<Result<Vec<_>, _>>()?;
        tools.extend(load_all(runtime, extra)?);
        Registry::new(tools)
    }

    /// Compiles the components not compiled yet on a thread of its own, one
    /// after another (each compile uses every core), the tools that only read
    /// first; a call that needs one before compiles it itself. A built-in
    /// tool whose embedded artifact fits the engine is left to its first
    /// call: loading it then takes about a millisecond, and a server keeps in
    /// memory only the tools it is asked for.
    pub fn compile_in_background(&self, runtime: Arc<Runtime>) {
        let waiting = self.components().filter(|t| t.code.get().is_none() && !t.loads_fast(&runtime));
        let mut tools: Vec<Arc<Tool>> = waiting.cloned().collect();
        if tools.is_empty() {
            return;
        }
        tools.sort_by_key(|t| t.manifest.access != crate::tool::Access::Read);
        let spawned = std::thread::Builder::new().name("cordon-compile".into()).spawn(move || {
            for tool in tools {
                // A failure is logged, and answered to each call of the tool.
                let _ = tool.compiled(&runtime);
            }
        });
        if let Err(e) = spawned {
            tracing::warn!("no thread to compile the tools in the background ({e}): each compiles on first call");
        }
    }

    /// Compiles every component not compiled yet, in parallel; the first
    /// failure is the answer (`cordon tools`, which checks every tool).
    pub fn compile_all(&self, runtime: &Runtime) -> Result<(), CallFailure> {
        std::thread::scope(|scope| {
            let handles: Vec<_> = self.components().map(|t| scope.spawn(|| t.compiled(runtime).map(drop))).collect();
            handles.into_iter().try_for_each(|h| h.join().expect("a tool compiler panicked"))
        })
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

/// The first field in which two manifests differ, if they do.
fn first_difference(built: &Manifest, described: &Manifest) -> Option<&'static str> {
    let fields: [(&'static str, bool); 10] = [
        ("name", built.name == described.name),
        ("version", built.version == described.version),
        ("title", built.title == described.title),
        ("description", built.description == described.description),
        ("input_schema", built.input_schema == described.input_schema),
        ("output_schema", built.output_schema == described.output_schema),
        ("access", built.access == described.access),
        ("read_only", built.read_only == described.read_only),
        ("destructive", built.destructive == described.destructive),
        ("idempotent", built.idempotent == described.idempotent),
    ];
    fields.into_iter().find(|(_, same)| !same).map(|(field, _)| field)
}

/// A built-in tool from its row in `BUILTIN_TOOLS`, with its embedded
/// manifest, not compiled yet.
fn builtin(row: &'static Builtin) -> Result<Arc<Tool>, LoadError> {
    let label = format!("built-in tool `{}`", row.crate_dir);
    let manifest: Manifest = serde_json::from_str(row.manifest)
        .map_err(|e| LoadError::Manifest { label: label.clone(), problem: ManifestProblem::Embedded(e.to_string()) })?;
    let validator = checked(&manifest).map_err(|problem| LoadError::Manifest { label, problem })?;
    Ok(Arc::new(Tool {
        manifest,
        origin: Origin::Builtin,
        digest: row.digest.to_string(),
        signer: None,
        validator,
        code: OnceLock::new(),
        embedded: Some(row),
    }))
}

/// Compiles (or loads from the cache), links and describes one component.
pub fn load(runtime: &Runtime, source: Source) -> Result<Tool, LoadError> {
    let label = source.label.clone();
    let refused = |problem| LoadError::Manifest { label: label.clone(), problem };
    let sockets = match &source.origin {
        Origin::Installed { sockets, .. } => *sockets,
        _ => Sockets::Refuse,
    };
    let code = Code { bytes: &source.bytes, digest: &source.digest, sockets, precompiled: None };
    let (compiled, manifest) = compile(runtime, code, &label)?;
    if let Some(expected) = &source.expect_name
        && *expected != manifest.name
    {
        return Err(refused(ManifestProblem::Renamed { now: manifest.name, installed_as: expected.clone() }));
    }
    let validator = checked(&manifest).map_err(refused)?;
    tracing::info!(tool = %manifest.name, version = %manifest.version, cache = ?compiled.outcome, "loaded tool");
    let code = OnceLock::from(Ok(compiled));
    let (origin, digest, signer) = (source.origin, source.digest, source.signer);
    Ok(Tool { manifest, origin, digest, signer, validator, code, embedded: None })
}

/// The argument checker of a manifest the host can offer: not a host tool's
/// name, no argument the host owns, an input schema that is a JSON Schema.
fn checked(manifest: &Manifest) -> Result<jsonschema::Validator, ManifestProblem> {
    if HostTool::ALL.iter().any(|host| host.name() == manifest.name) {
        return Err(ManifestProblem::HostName(manifest.name.clone()));
    }
    if let Some(argument) = crate::args::reserved_argument(manifest) {
        return Err(ManifestProblem::Reserved { tool: manifest.name.clone(), argument });
    }
    jsonschema::validator_for(&manifest.input_schema)
        .map_err(|e| ManifestProblem::Schema { tool: manifest.name.clone(), error: e.to_string() })
}

/// The names of the built-in tools' crates (a built-in's name is its crate's).
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    BUILTIN_TOOLS.iter().map(|row| row.crate_dir)
}

/// The names installed tools may not take: the built-in tools' and the host's.
pub fn taken_names() -> impl Iterator<Item = &'static str> {
    builtin_names().chain(HostTool::ALL.iter().map(|t| t.name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> Runtime {
        let limits = crate::limits::Limits::default();
        let capacity = crate::runtime::Capacity { parked: 0, in_flight: 2, shards: 1, memory: usize::MAX };
        Runtime::new(limits.call, capacity, None, Arc::new(crate::policy::Judge::none())).unwrap()
    }

    fn row(name: &str) -> &'static Builtin {
        BUILTIN_TOOLS.iter().find(|row| row.crate_dir == name).unwrap()
    }

    #[test]
    fn built_in_tools_are_offered_before_any_is_compiled_and_a_call_compiles_only_its_own() {
        let runtime = runtime();
        let registry = Registry::load(&runtime, Vec::new()).unwrap();
        let names: Vec<&str> = registry.components().map(|t| t.manifest.name.as_str()).collect();
        assert_eq!(names, builtin_names().collect::<Vec<_>>(), "every built-in tool, by its crate's name");
        assert!(registry.components().all(|t| t.code.get().is_none()), "nothing compiled to list the tools");

        let Some(Entry::Component(read)) = registry.get("read") else { panic!("read is offered") };
        let compiled = read.compiled(&runtime).expect("the component describes itself as built");
        assert!(runtime.imports(compiled.pre()).iter().any(|i| i.starts_with("wasi:filesystem")), "linked");
        let waiting: Vec<&str> =
            registry.components().filter(|t| t.code.get().is_none()).map(|t| t.manifest.name.as_str()).collect();
        assert_eq!(waiting.len(), names.len() - 1, "only `read` was compiled: {waiting:?}");
    }

    #[test]
    fn built_in_tools_load_from_the_artifacts_compiled_with_the_binary() {
        let runtime = runtime();
        assert!(BUILTIN_TOOLS.iter().all(|row| row.precompiled.is_some()), "a native build precompiles them");
        let registry = Registry::load(&runtime, Vec::new()).unwrap();
        let read = registry.components().find(|t| t.manifest.name == "read").unwrap();
        assert_eq!(read.compiled(&runtime).map(|c| c.outcome).ok(), Some(Outcome::Precompiled));
    }

    #[test]
    fn a_built_in_tool_whose_artifact_does_not_fit_the_engine_is_not_ready_until_compiled() {
        let runtime = runtime();
        let stat = row("stat");
        let other = Precompiled { key: "0123456789abcdef", ..stat.precompiled.unwrap() };
        let foreign = Box::leak(Box::new(Builtin { precompiled: Some(other), ..*stat }));
        let (fits, misfit) = (builtin(stat).unwrap(), builtin(foreign).unwrap());
        assert!(fits.loads_fast(&runtime) && fits.is_ready(&runtime) && !fits.is_compiled());
        assert!(!misfit.loads_fast(&runtime) && !misfit.is_ready(&runtime), "it must be compiled first");
        assert_eq!(misfit.compiled(&runtime).map(|c| c.outcome).ok(), Some(Outcome::Uncached));
        assert!(misfit.is_ready(&runtime));
    }

    #[test]
    fn a_component_that_describes_itself_otherwise_than_built_fails_each_call_with_the_reason() {
        let runtime = runtime();
        let tool = builtin(row("stat")).unwrap();
        let mut manifest = tool.manifest.clone();
        manifest.version = "9.9.9".into();
        let drifted = Tool {
            manifest,
            origin: Origin::Builtin,
            digest: tool.digest.clone(),
            signer: None,
            validator: checked(&tool.manifest).unwrap(),
            code: OnceLock::new(),
            embedded: tool.embedded,
        };
        for _ in 0..2 {
            let Err(CallFailure::Host(HostFault::Unloadable { tool, reason })) = drifted.compiled(&runtime) else {
                panic!("a drifted component is not served")
            };
            assert_eq!(tool, "stat");
            assert!(reason.contains("(first in `version`)"), "{reason}");
            assert!(reason.contains("rebuild the server"), "{reason}");
        }
    }

    #[test]
    fn an_embedded_manifest_that_is_not_one_is_a_load_error() {
        let broken = Box::leak(Box::new(Builtin { manifest: r#"{"name":"read"}"#, ..*row("read") }));
        let Err(LoadError::Manifest { label, problem: ManifestProblem::Embedded(why) }) = builtin(broken) else {
            panic!("a malformed embedded manifest is refused")
        };
        assert_eq!(label, "built-in tool `read`");
        assert!(why.contains("missing field"), "{why}");
    }
}
