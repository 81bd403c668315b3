//! Builds the built-in tools (`tools/*`) for `wasm32-wasip2` and embeds them.
//!
//! A user runs only `cargo build`/`cargo run`: this script runs a nested
//! `cargo build --release --target wasm32-wasip2` for every tool crate into its
//! own target directory (`<target>/guests`), copies the components into
//! `OUT_DIR` and writes `builtin_tools.rs`, which `include_bytes!`s them with
//! their manifests. A manifest comes from the tool crate itself, built natively
//! as a build dependency (as for its unit tests), so the server lists its tools
//! before compiling any component; the host checks each component's own
//! `describe` against it once compiled. Each component is also precompiled
//! for this machine with the server's engine settings (`src/runtime/engine.rs`)
//! and embedded with the key of those settings, so that a cold start loads
//! rather than compiles it (the server compiles it when the key differs). It
//! also records the wasmtime version from `Cargo.lock`, a part of that key,
//! and packs the guest SDK
//! for `cordon tool new` (`build/sdk.rs`) and what its Python and JavaScript
//! projects take from the example tools (`build/projects.rs`).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use cordon_sdk::{Manifest, Tool};

#[path = "src/runtime/engine.rs"]
mod engine;
#[path = "build/projects.rs"]
mod projects;
#[path = "build/sdk.rs"]
mod sdk;

type ManifestFn = fn() -> Manifest;

/// Every built-in tool crate (`tools/<name>`) with its manifest; a tool crate
/// missing here fails the build, which says to add it.
const MANIFESTS: &[(&str, ManifestFn)] = &[
    ("edit", <cordon_tool_edit::EditTool as Tool>::manifest),
    ("glob", <cordon_tool_glob::GlobTool as Tool>::manifest),
    ("grep", <cordon_tool_grep::GrepTool as Tool>::manifest),
    ("list", <cordon_tool_list::ListTool as Tool>::manifest),
    ("mkdir", <cordon_tool_mkdir::MkdirTool as Tool>::manifest),
    ("move", <cordon_tool_move::MoveTool as Tool>::manifest),
    ("read", <cordon_tool_read::ReadTool as Tool>::manifest),
    ("stat", <cordon_tool_stat::StatTool as Tool>::manifest),
    ("write", <cordon_tool_write::WriteTool as Tool>::manifest),
];

const GUEST_TARGET: &str = "wasm32-wasip2";

/// The example third-party tools in Rust (`tools/examples/rust`,
/// `tools/examples/http-get`), with the variable that gives the tests each
/// component's path.
const EXAMPLE_PACKAGES: &[(&str, &str)] = &[
    ("cordon-example-todos", "CORDON_EXAMPLE_RUST_COMPONENT"),
    ("cordon-example-http-get", "CORDON_EXAMPLE_HTTP_GET_COMPONENT"),
];

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest_dir.parent().unwrap().to_path_buf();
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    for watched in ["contract", "tools", "tests/tools", "wit", "Cargo.lock", "Cargo.toml", ".cargo/config.toml"] {
        println!("cargo:rerun-if-changed={}", workspace.join(watched).display());
    }

    let tools = tool_crates(&workspace.join("tools"));
    let test_tools = tool_crates(&workspace.join("tests/tools"));
    check_target_installed();
    // OUT_DIR is <target>[/<triple>]/<profile>/build/<pkg>-<hash>/out.
    let guest_target_dir = out_dir.ancestors().nth(4).unwrap().join("guests");
    let packages: Vec<String> = tools
        .iter()
        .map(|t| format!("cordon-tool-{t}"))
        .chain(test_tools.iter().map(|t| format!("cordon-test-{t}")))
        .chain(EXAMPLE_PACKAGES.iter().map(|(package, _)| package.to_string()))
        .collect();
    build_guests(&workspace, &guest_target_dir, &packages);
    let artifacts = guest_target_dir.join(GUEST_TARGET).join("release");

    // Test components are not embedded: the end-to-end suite loads them with
    // `--component`, from the paths given here.
    for tool in &test_tools {
        let path = artifacts.join(format!("cordon_test_{}.wasm", tool.replace('-', "_")));
        let var = format!("CORDON_{}_COMPONENT", tool.to_uppercase().replace('-', "_"));
        println!("cargo:rustc-env={var}={}", path.display());
    }

    // The Rust example tools are installed by the end-to-end suite like any
    // third-party tool, from these paths.
    for (package, var) in EXAMPLE_PACKAGES {
        let example = artifacts.join(format!("{}.wasm", package.replace('-', "_")));
        println!("cargo:rustc-env={var}={}", example.display());
    }

    let wasmtime = locked_version(&workspace.join("Cargo.lock"), "wasmtime");
    println!("cargo:rustc-env=CORDON_WASMTIME_VERSION={wasmtime}");
    let precompiler = Precompiler::for_this_machine(&wasmtime);
    let mut table = String::from("/// The built-in tools.\npub static BUILTIN_TOOLS: &[Builtin] = &[\n");
    for tool in &tools {
        let artifact = artifacts.join(format!("cordon_tool_{}.wasm", tool.replace('-', "_")));
        let embedded = out_dir.join(format!("{tool}.wasm"));
        fs::copy(&artifact, &embedded).unwrap_or_else(|e| panic!("copy {}: {e}", artifact.display()));
        let digest = sha256_hex(&fs::read(&embedded).unwrap());
        let manifest = out_dir.join(format!("{tool}.manifest.json"));
        fs::write(&manifest, manifest_json(tool)).unwrap();
        let precompiled = match &precompiler {
            Some(precompiler) => precompiler.write(&embedded, &out_dir.join(format!("{tool}.cwasm"))),
            None => "None".to_string(),
        };
        table.push_str(&format!(
            "    Builtin {{ crate_dir: {tool:?}, bytes: include_bytes!({:?}), digest: {digest:?}, \
             manifest: include_str!({:?}), precompiled: {precompiled} }},\n",
            embedded.display().to_string(),
            manifest.display().to_string()
        ));
    }
    table.push_str("];\n");
    fs::write(out_dir.join("builtin_tools.rs"), table).unwrap();

    // The SDK `cordon tool new` vendors into a new crate.
    sdk::write(&workspace, &out_dir);
    // What its Python and JavaScript projects take from the examples.
    projects::write(&workspace, &out_dir);
}

/// An engine with the server's compile settings, for this machine.
struct Precompiler {
    engine: wasmtime::Engine,
    key: String,
}

impl Precompiler {
    /// `None` when the build is for another target than the machine it runs
    /// on: the server then compiles the tools when it first needs them.
    fn for_this_machine(wasmtime_version: &str) -> Option<Precompiler> {
        if env::var("TARGET").ok() != env::var("HOST").ok() {
            println!("cargo:warning=cross-compiling: the built-in tools are compiled when the server first needs them");
            return None;
        }
        let engine = wasmtime::Engine::new(&engine::compiling()).expect("an engine with the server's settings");
        let key = engine::key(&engine, wasmtime_version);
        Some(Precompiler { engine, key })
    }

    /// Precompiles the component at `component` into `artifact`, and returns
    /// the `Precompiled` expression that embeds it.
    fn write(&self, component: &Path, artifact: &Path) -> String {
        let bytes = fs::read(component).unwrap();
        let compiled = self
            .engine
            .precompile_component(&bytes)
            .unwrap_or_else(|e| panic!("precompile {}: {e:?}", component.display()));
        fs::write(artifact, compiled).unwrap();
        format!("Some(Precompiled {{ artifact: include_bytes!({:?}), key: {:?} }})", artifact.display().to_string(), self.key)
    }
}

/// The manifest of the built-in tool `tool`, as JSON.
fn manifest_json(tool: &str) -> String {
    let Some((_, manifest)) = MANIFESTS.iter().find(|(name, _)| *name == tool) else {
        panic!(
            "the tool crate tools/{tool} is not in host/build.rs's MANIFESTS: add it there and as a \
             build dependency in host/Cargo.toml, so its manifest is known at build time"
        )
    };
    serde_json::to_string(&manifest()).expect("a manifest is JSON")
}

/// The tool crates: every directory under `dir` with a Cargo.toml, except the
/// guest SDK, in name order.
fn tool_crates(dir: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "sdk")
        .collect();
    names.sort();
    names
}

fn check_target_installed() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc).args(["--print", "sysroot"]).output().expect("run rustc --print sysroot");
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    if !sysroot.join("lib/rustlib").join(GUEST_TARGET).is_dir() {
        panic!(
            "\n\nCordon's built-in tools are WebAssembly components and need the `{GUEST_TARGET}` \
             Rust target, which is not installed.\nRun:  rustup target add {GUEST_TARGET}\n\n"
        );
    }
}

fn build_guests(workspace: &Path, target_dir: &Path, packages: &[String]) {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace).args(["build", "--release", "--target", GUEST_TARGET, "--target-dir"]).arg(target_dir);
    for package in packages {
        cmd.args(["-p", package]);
    }
    // The outer build's flags are for the host, not for wasm.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_BUILD_RUSTFLAGS",
        "RUSTC_WORKSPACE_WRAPPER",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("run cargo for the guest tools");
    if !status.success() {
        panic!("building the built-in tools for {GUEST_TARGET} failed (see the output above)");
    }
}

/// SHA-256 of `bytes`, hex: computed here so start-up does not hash the embedded tools.
fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The version of `package` recorded in Cargo.lock.
fn locked_version(lock: &Path, package: &str) -> String {
    let text = fs::read_to_string(lock).expect("Cargo.lock exists");
    let needle = format!("name = \"{package}\"\nversion = \"");
    let at = text.find(&needle).unwrap_or_else(|| panic!("{package} is not in Cargo.lock")) + needle.len();
    text[at..].split('"').next().unwrap().to_string()
}
