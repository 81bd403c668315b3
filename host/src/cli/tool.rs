//! `cordon tool …`: start a tool project (Rust, Python or JavaScript),
//! install a component pinned by its digest with the directories it is
//! granted, list, inspect and remove installed tools.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use serde_json::{Value, json};

use super::Common;
use super::template::Lang;
use crate::audit::{Audit, DigestKey, Event, ToolRef};
use crate::installed::lock::{self, Entry};
use crate::installed::signature::{SignatureError, Signing};
use crate::installed::{ToolsDir, sha256_hex};
use crate::policy::{DirSpec, Environment, Mode, NetGrants, ToolGrant};
use crate::registry::{self, Origin, Source, Tool};
use crate::runtime::Sockets;
use crate::server::{Config, Server};
use crate::tool::Access;

#[derive(Subcommand, Debug)]
pub enum ToolCommand {
    /// Create a ready-to-build tool project in ./NAME: a Rust crate on the Cordon
    /// SDK (the default), or a Python or JavaScript project built with
    /// componentize-py or componentize-js.
    New {
        /// The tool's name: lowercase letters, digits, `_` and `-`.
        name: String,
        /// The language the tool is written in.
        #[arg(long, value_enum, default_value_t = Lang::Rust)]
        lang: Lang,
        /// The directory to create [default: ./NAME].
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// The Cordon SDK crate (`tools/sdk` of a Cordon checkout) the new crate
        /// depends on [default: the SDK inside this binary, vendored into the crate].
        /// Rust only.
        #[arg(long, value_name = "DIR")]
        sdk: Option<PathBuf>,
    },
    /// Install a tool component into the tools directory, pinned by its SHA-256,
    /// with the directories, environment variables and network destinations it
    /// may use. Replaces an installed tool of the same name.
    Add {
        /// The component (a wasm32-wasip2 component exporting `cordon:tool/tool`): a
        /// file, or oci://REGISTRY/REPOSITORY:TAG (or @sha256:DIGEST) to pull it from
        /// a registry (its manifest digest is pinned; its cosign signature checked).
        component: PathBuf,
        /// What the tool may use: a directory, ro:DIR (read-only) or rw:DIR
        /// (read-write); a variable of the server's environment, env:NAME (its
        /// value read when the server loads the tool, never written anywhere);
        /// or where it may send HTTP requests, net:https://HOST[:PORT] (HOST may
        /// be `*.DOMAIN`; an internal address only when named literally).
        /// Repeatable. Without any, the tool gets no filesystem access, an empty
        /// environment and no network.
        #[arg(long = "grant", value_name = "ro:DIR|rw:DIR|env:NAME|net:URL", value_parser = ToolGrant::parse)]
        grants: Vec<ToolGrant>,
        /// Load a component that imports wasi:sockets (a language runtime such as
        /// componentize-py's imports them whether used or not) with those imports
        /// stubbed: every socket and name lookup it tries fails. Without it, such a
        /// component is refused.
        #[arg(long)]
        stub_sockets: bool,
        /// The component's signature (`cosign sign-blob --key K TOOL.wasm`, or `openssl dgst
        /// -sha256 -sign K TOOL.wasm`, base64 or DER), checked against the trusted keys.
        #[arg(long, value_name = "FILE")]
        signature: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Push a tool component to an OCI registry as a Wasm artifact (one
    /// `application/wasm` layer), signed there with cosign's convention when a key
    /// is given; `cordon tool add oci://…` installs it.
    Publish {
        /// The component to publish.
        component: PathBuf,
        /// Where: oci://REGISTRY/REPOSITORY:TAG.
        target: String,
        /// A P-256 private key (PEM: `openssl ecparam -name prime256v1 -genkey`) to
        /// sign it with; the signature goes to the tag `sha256-<digest>.sig`.
        #[arg(long, value_name = "KEY.pem")]
        key: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// List the installed tools, their grants, and whether each component still
    /// has its pinned digest.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Show a tool (installed or built-in): its WIT world and imports, manifest,
    /// schemas, digest and grants.
    Inspect {
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Uninstall a tool: its lockfile entry and its component.
    Remove {
        name: String,
        #[command(flatten)]
        common: Common,
    },
}

impl ToolCommand {
    /// The shared options, for the subcommands that take them.
    pub(super) fn common(&mut self) -> Option<&mut Common> {
        match self {
            ToolCommand::New { .. } => None,
            ToolCommand::Add { common, .. }
            | ToolCommand::Publish { common, .. }
            | ToolCommand::List { common, .. }
            | ToolCommand::Inspect { common, .. }
            | ToolCommand::Remove { common, .. } => Some(common),
        }
    }

    pub(super) fn run(self) -> anyhow::Result<ExitCode> {
        match self {
            ToolCommand::New { name, lang, dir, sdk } => super::template::create(&name, lang, dir, sdk),
            ToolCommand::Add { component, grants, signature, stub_sockets, common } => {
                let sockets = if stub_sockets { Sockets::Stub } else { Sockets::Refuse };
                add(Install { component: &component, grants, signature: signature.as_deref(), sockets }, &common)
            }
            ToolCommand::Publish { component, target, key, common } => {
                super::oci::publish(&component, &target, key.as_deref(), &common)
            }
            ToolCommand::List { json, common } => list(json, &common),
            ToolCommand::Inspect { name, json, common } => inspect(&name, json, &common),
            ToolCommand::Remove { name, common } => {
                let config = common.config()?;
                // Opened first: failing closed, an audit log that cannot be opened stops the change.
                // A tool change records no call arguments: its digest key is its own.
                let audit = Audit::open(&config.audit, DigestKey::random())?;
                let entry = tools_dir(&config)?.uninstall(&name)?;
                println!("removed `{}` {}; a running server drops it within a second", entry.name, entry.version);
                recorded(&audit, &Event::ToolRemoved { tool: tool_ref(&entry) })?;
                Ok(ExitCode::SUCCESS)
            }
        }
    }
}

/// The tools directory the options name, created if needed.
fn tools_dir(config: &Config) -> anyhow::Result<ToolsDir> {
    let path = config.tools_dir.as_deref().context("no tools directory: give --tools-dir DIR (or set HOME)")?;
    Ok(ToolsDir::create(path)?)
}

/// What `cordon tool add` installs: the component, what it is granted, its
/// signature, and whether its sockets are stubbed.
struct Install<'a> {
    component: &'a std::path::Path,
    grants: Vec<ToolGrant>,
    signature: Option<&'a std::path::Path>,
    sockets: Sockets,
}

fn add(install: Install<'_>, common: &Common) -> anyhow::Result<ExitCode> {
    let Install { component, grants, signature, sockets } = install;
    let (mut dirs, mut env, mut net) = (Vec::new(), Vec::new(), Vec::new());
    for grant in grants {
        match grant {
            ToolGrant::Dir(dir) => dirs.push(dir),
            ToolGrant::Env(name) => env.push(name),
            ToolGrant::Net(grant) => net.push(grant),
        }
    }
    env.sort();
    env.dedup();
    net.sort();
    net.dedup();
    let config = common.config()?;
    let dir = tools_dir(&config)?;
    // Opened first: failing closed, an audit log that cannot be opened stops the install.
    // A tool change records no call arguments: its digest key is its own.
    let audit = Audit::open(&config.audit, DigestKey::random())?;
    let runtime = Server::runtime_only(&config)?;
    let signing = Signing::load(&config.trusted_keys, config.require_signatures)?;
    let (mut source, pin) = match component.to_str().filter(|text| text.starts_with("oci://")) {
        Some(text) => {
            if signature.is_some() {
                anyhow::bail!("a component from a registry is signed in its registry (cosign), not with --signature");
            }
            let fetched = super::oci::fetch(text, &signing)?;
            (fetched.source, Some(fetched.pin))
        }
        None => (Source::component(component)?, None),
    };
    source.origin =
        Origin::Installed { grants: Vec::new(), env: Environment::default(), net: NetGrants::new(&net), sockets };
    let bytes = source.bytes.to_vec();
    let signed = match signature {
        Some(path) => {
            let text = crate::ambient::read_file(path).with_context(|| format!("read {}", path.display()))?;
            let signed = signing.keys.verify(&bytes, &text);
            Some(signed.with_context(|| format!("{} is refused", component.display()))?)
        }
        None if signing.required && pin.is_none() => {
            let why = SignatureError::Missing;
            anyhow::bail!("{} is refused: {why}", component.display());
        }
        None => None,
    };
    let tool =
        registry::load(&runtime, source).with_context(|| format!("{} is not a usable tool", component.display()))?;
    let name = tool.manifest.name.clone();
    if !lock::valid_name(&name) {
        anyhow::bail!("the tool's name `{name}` cannot be installed: use 1-64 of [a-z0-9_-], not starting with `-`");
    }
    if registry::taken_names().any(|taken| taken == name) {
        anyhow::bail!("`{name}` is the name of a built-in tool; give the tool another name in its manifest");
    }
    let imports = runtime.imports(tool.compiled(&runtime)?.pre());
    if sockets == Sockets::Stub && !imports.iter().any(|i| i.starts_with("wasi:sockets/")) {
        anyhow::bail!("`{name}` imports no wasi:sockets interface: add it without --stub-sockets");
    }
    if !net.is_empty() && !imports.iter().any(|i| i.starts_with("wasi:http/outgoing-handler")) {
        println!("note: `{name}` does not import wasi:http/outgoing-handler, so its net: grants have no use");
    }
    let mut resolved = Vec::new();
    for grant in dirs {
        let (canonical, is_dir) = crate::ambient::canonical_dir(&grant.path)
            .with_context(|| format!("grant `{grant}`: the directory cannot be used"))?;
        if !is_dir {
            anyhow::bail!("grant `{grant}`: not a directory");
        }
        match (tool.manifest.access, grant.mode) {
            (Access::None, _) => anyhow::bail!(
                "`{name}` needs no files (its manifest asks for access `none`), so it takes no grants; add it without --grant"
            ),
            (Access::Read, Mode::ReadWrite) => anyhow::bail!(
                "`{name}` only reads (its manifest asks for access `read`); grant ro:{} instead of rw:",
                grant.path.display()
            ),
            _ => {}
        }
        let canonical = canonical.to_str().context("a granted directory must be valid UTF-8")?.into();
        resolved.push(DirSpec { mode: grant.mode, path: canonical });
    }
    let entry = Entry {
        name: name.clone(),
        version: tool.manifest.version.clone(),
        file: lock::file_name(&name),
        sha256: sha256_hex(&bytes),
        world: tool.compiled(&runtime)?.world.to_string(),
        grants: resolved,
        env,
        net,
        stub_sockets: sockets == Sockets::Stub,
        oci: pin,
        signature: signed,
    };
    let shown_grants = grants_text(&entry);
    let replaced = dir.install(entry.clone(), &bytes)?;
    let installed = Event::ToolInstalled {
        tool: tool_ref(&entry),
        grants: json!(grant_texts(&entry)),
        replaced: replaced.as_ref().map(|old| old.version.clone()),
    };
    let verb = match replaced {
        Some(old) => format!("replaced `{name}` {} with", old.version),
        None => "installed".to_string(),
    };
    println!("{verb} `{name}` {} (sha256 {}) in {}", entry.version, entry.sha256, dir.path().display());
    println!("grants: {shown_grants}");
    match entry.signer_id() {
        Some(key_id) => println!("signed by the trusted key {key_id}"),
        None => println!("unsigned"),
    }
    if let Some(pin) = &entry.oci {
        println!("from {} (manifest {})", pin.reference, pin.manifest_digest);
    }
    if tool.manifest.access != Access::None && entry.grants.is_empty() {
        println!(
            "note: `{name}` asks for {:?} access but has no grant; it will be refused every path",
            tool.manifest.access
        );
    }
    println!("a running server offers it within a second; `cordon tool inspect {name}` shows it");
    recorded(&audit, &installed)?;
    Ok(ExitCode::SUCCESS)
}

/// An installed tool as an audit record names it.
fn tool_ref(entry: &Entry) -> ToolRef {
    ToolRef {
        name: entry.name.clone(),
        version: entry.version.clone(),
        sha256: entry.sha256.clone(),
        signer: entry.signer_id().map(str::to_string),
    }
}

/// Records a change already made; failing closed, a record that cannot be
/// written is an error (exit 2) that says the change was made.
fn recorded(audit: &Audit, event: &Event<'_>) -> anyhow::Result<()> {
    match audit.record(event) {
        Err(e) if audit.fails_closed() => Err(anyhow::anyhow!("the change was made, but not recorded: {e}")),
        _ => Ok(()),
    }
}

/// An installed tool's grants as they are written: its directories, its
/// variables (`env:NAME`; never a value), then its destinations (`net:URL`).
fn grant_texts(entry: &Entry) -> Vec<String> {
    let dirs = entry.grants.iter().map(DirSpec::to_string);
    let env = entry.env.iter().map(|name| format!("env:{name}"));
    dirs.chain(env).chain(entry.net.iter().map(|grant| grant.to_string())).collect()
}

fn grants_text(entry: &Entry) -> String {
    let texts = grant_texts(entry);
    let shown = match texts.is_empty() {
        true => "none (no filesystem access, an empty environment, no network)".into(),
        false => texts.join(", "),
    };
    match entry.stub_sockets {
        true => format!("{shown}; its wasi:sockets imports stubbed (every use fails)"),
        false => shown,
    }
}

fn list(as_json: bool, common: &Common) -> anyhow::Result<ExitCode> {
    let config = common.config()?;
    let dir = tools_dir(&config)?;
    let signing = Signing::load(&config.trusted_keys, config.require_signatures)?;
    let lock = dir.lock()?;
    let rows: Vec<Value> = lock
        .tools
        .iter()
        .map(|entry| {
            let (status, signer) = match dir.verify(entry) {
                Ok(verified) => match signing.signer(entry, &verified.bytes) {
                    Ok(signer) => ("ok".to_string(), signer),
                    Err(why) => (format!("refused: {why}"), None),
                },
                Err(e) => (e.to_string(), None),
            };
            json!({
                "name": entry.name, "version": entry.version, "world": entry.world, "sha256": entry.sha256,
                "grants": grant_texts(entry), "file": dir.path().join(&entry.file), "status": status, "signer": signer,
            })
        })
        .collect();
    if as_json {
        println!("{}", serde_json::to_string_pretty(&json!({ "tools_dir": dir.path(), "tools": rows }))?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("tools directory: {} ({} installed)", dir.path().display(), rows.len());
    for (entry, row) in lock.tools.iter().zip(&rows) {
        println!("{} {}  sha256 {}…  {}", entry.name, entry.version, &entry.sha256[..16], entry.world);
        println!("  grants: {}", grants_text(entry));
        match row["signer"].as_str() {
            Some(key) => println!("  signer: the trusted key {key}"),
            None => println!("  signer: none (unsigned, or its signature does not hold)"),
        }
        println!("  status: {}", row["status"].as_str().unwrap_or_default());
    }
    let bad = rows.iter().filter(|r| r["status"] != "ok").count();
    Ok(if bad == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn inspect(name: &str, as_json: bool, common: &Common) -> anyhow::Result<ExitCode> {
    let config = common.config()?;
    let runtime = Server::runtime_only(&config)?;
    let installed = match &config.tools_dir {
        Some(path) => match ToolsDir::open(path)? {
            Some(dir) => {
                dir.lock()?.get(name).cloned().map(|entry| dir.verify(&entry).map(|v| (entry, v))).transpose()?
            }
            None => None,
        },
        None => None,
    };
    let (source, file, grants) = match installed {
        Some((entry, verified)) => {
            let file = config.tools_dir.as_ref().map(|d| d.join(&entry.file));
            let signer = entry.signer_id().map(str::to_string);
            let shown = json!(grant_texts(&entry));
            // Shown by name only: the values are not even read.
            let sockets = if entry.stub_sockets { Sockets::Stub } else { Sockets::Refuse };
            let net = NetGrants::new(&entry.net);
            let origin = Origin::Installed { grants: entry.grants, env: Environment::default(), net, sockets };
            (Source::installed(verified, origin, signer), file, shown)
        }
        None => match Source::builtin(name) {
            Some(source) => (source, None, json!("every configured root (built-in)")),
            None => {
                anyhow::bail!("no installed or built-in tool is named `{name}` (`cordon tool list`, `cordon tools`)")
            }
        },
    };
    let size = source.bytes.len();
    let tool: Tool = registry::load(&runtime, source)?;
    let compiled = tool.compiled(&runtime)?;
    let imports = runtime.imports(compiled.pre());
    let m = &tool.manifest;
    let report = json!({
        "name": m.name, "version": m.version, "title": m.title, "description": m.description,
        "origin": if file.is_some() { "installed" } else { "built-in" },
        "file": file, "bytes": size, "sha256": tool.digest, "world": compiled.world, "imports": imports,
        "access": format!("{:?}", m.access).to_lowercase(), "grants": grants, "signer": tool.signer,
        "hints": { "readOnly": m.read_only, "destructive": m.destructive, "idempotent": m.idempotent },
        "input_schema": m.input_schema, "output_schema": m.output_schema,
    });
    if as_json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("{} {} — {}", m.name, m.version, m.title);
    println!("  {}", m.description);
    println!(
        "origin:  {}{}",
        report["origin"].as_str().unwrap_or_default(),
        file.map(|f| format!(" ({})", f.display())).unwrap_or_default()
    );
    println!("sha256:  {} ({size} bytes)", tool.digest);
    println!("world:   cordon:tool/{}@0.1.0", compiled.world);
    println!(
        "access:  {}; grants: {}",
        report["access"].as_str().unwrap_or_default(),
        match &grants {
            Value::Array(list) if list.is_empty() => "none (no filesystem access, an empty environment)".to_string(),
            Value::Array(list) => list.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "),
            other => other.as_str().unwrap_or_default().to_string(),
        }
    );
    println!("imports:");
    for import in &imports {
        println!("  {import}");
    }
    println!("input schema:  {}", serde_json::to_string_pretty(&m.input_schema)?);
    println!("output schema: {}", serde_json::to_string_pretty(&m.output_schema)?);
    Ok(ExitCode::SUCCESS)
}
