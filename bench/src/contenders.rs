//! The contenders: where the `cordon` binary, ripgrep, fd, Node and the
//! reference server are, how to install the missing ones, and how to start
//! each server.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::mcp::Launch;

/// The reference server, pinned so that runs compare like with like.
pub const PEER_PACKAGE: &str = "@modelcontextprotocol/server-filesystem@2026.8.31";

/// The programs the harness compares Cordon with; `None` when not found.
#[derive(Clone, Debug, Default)]
pub struct Peers {
    pub rg: Option<PathBuf>,
    pub fd: Option<PathBuf>,
    pub node: Option<PathBuf>,
    /// The reference server's `dist/index.js`.
    pub peer_js: Option<PathBuf>,
    /// For the syscall counts (`strace -f -c`); never installed.
    pub strace: Option<PathBuf>,
}

impl Peers {
    /// Finds each program: an environment variable (`CORDON_BENCH_RG`,
    /// `CORDON_BENCH_FD`, `CORDON_BENCH_NODE`, `CORDON_BENCH_PEER`,
    /// `CORDON_BENCH_STRACE`), then
    /// `target/interop` (where the installs go), then `PATH`.
    pub fn find(workspace: &Path) -> Peers {
        let interop = workspace.join("target/interop");
        let pick = |var: &str, local: PathBuf, name: &str| -> Option<PathBuf> {
            if let Some(path) = std::env::var_os(var) {
                return Some(PathBuf::from(path));
            }
            if local.is_file() {
                return Some(local);
            }
            on_path(name)
        };
        Peers {
            rg: pick("CORDON_BENCH_RG", interop.join("bin/rg"), "rg")
                .or_else(|| std::env::var_os("CORDON_TEST_RG").map(PathBuf::from)),
            fd: pick("CORDON_BENCH_FD", interop.join("bin/fd"), "fd"),
            node: pick("CORDON_BENCH_NODE", PathBuf::new(), "node"),
            peer_js: std::env::var_os("CORDON_BENCH_PEER").map(PathBuf::from).or_else(|| {
                let js = peer_dir(workspace).join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
                js.is_file().then_some(js)
            }),
            strace: pick("CORDON_BENCH_STRACE", PathBuf::new(), "strace"),
        }
    }

    /// Installs what is missing: ripgrep and fd (`cargo install --locked
    /// --root target/interop`) and the reference server (`npm install` into
    /// `target/interop/peer`). Node itself must be there already.
    pub fn install_missing(&mut self, workspace: &Path) -> Result<()> {
        let interop = workspace.join("target/interop");
        for (slot, krate, bin) in [(&mut self.rg, "ripgrep", "rg"), (&mut self.fd, "fd-find", "fd")] {
            if slot.is_none() {
                eprintln!("cordon-bench: installing {krate} into {}", interop.display());
                let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
                let status = Command::new(cargo)
                    .args(["install", "--quiet", "--locked", krate, "--root"])
                    .arg(&interop)
                    .status()
                    .with_context(|| format!("running cargo install {krate}"))?;
                if !status.success() {
                    bail!("cargo install {krate} failed");
                }
                *slot = Some(interop.join("bin").join(bin));
            }
        }
        if self.peer_js.is_none() {
            if self.node.is_none() {
                bail!("the reference server needs Node (`node` on PATH, or CORDON_BENCH_NODE)");
            }
            let dir = peer_dir(workspace);
            std::fs::create_dir_all(&dir)?;
            if !dir.join("package.json").is_file() {
                std::fs::write(dir.join("package.json"), "{\"private\":true}\n")?;
            }
            eprintln!("cordon-bench: installing {PEER_PACKAGE} into {}", dir.display());
            let status = Command::new("npm")
                .args(["install", "--silent", "--no-audit", "--no-fund", PEER_PACKAGE])
                .current_dir(&dir)
                .status()
                .context("running npm install")?;
            if !status.success() {
                bail!("npm install {PEER_PACKAGE} failed");
            }
            self.peer_js = Some(dir.join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"));
        }
        Ok(())
    }

    /// How to start the reference server on `roots`, when it and Node are here.
    pub fn peer(&self, roots: &[&Path]) -> Option<Launch> {
        let (node, js) = (self.node.as_ref()?, self.peer_js.as_ref()?);
        let mut args: Vec<OsString> = vec![js.clone().into()];
        args.extend(roots.iter().map(|r| r.as_os_str().to_owned()));
        Some(Launch { name: "peer".into(), program: node.clone(), args })
    }

    /// Each contender's version line, for the report.
    pub fn versions(&self, cordon: &Path, workspace: &Path) -> Vec<(String, String)> {
        let mut out = vec![("cordon".to_string(), cordon_version(cordon, workspace))];
        let line = |program: &Option<PathBuf>, arg: &str| {
            program.as_ref().map_or("not found".to_string(), |p| first_line(Command::new(p).arg(arg)))
        };
        out.push(("ripgrep".into(), line(&self.rg, "--version")));
        out.push(("fd".into(), line(&self.fd, "--version")));
        out.push(("node".into(), line(&self.node, "--version")));
        let peer = self.peer_js.as_ref().map_or("not found".to_string(), |js| {
            let package = js.parent().and_then(Path::parent).map(|d| d.join("package.json"));
            let version = package
                .and_then(|p| std::fs::read_to_string(p).ok())
                .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
                .and_then(|v| v["version"].as_str().map(str::to_string))
                .unwrap_or_else(|| "unknown version".into());
            format!("@modelcontextprotocol/server-filesystem {version}")
        });
        out.push(("reference server".into(), peer));
        out.push(("strace".into(), line(&self.strace, "-V")));
        out
    }
}

/// Where the reference server is installed.
pub fn peer_dir(workspace: &Path) -> PathBuf {
    workspace.join("target/interop/peer")
}

/// `cordon serve` over stdio on read-only `roots`, with `state` as its state
/// directory and `extra` flags.
pub fn cordon_serve(cordon: &Path, roots: &[&Path], state: &Path, extra: &[&str]) -> Launch {
    let mut args: Vec<OsString> = vec!["serve".into()];
    for root in roots {
        args.push("--root".into());
        let mut spec = root.as_os_str().to_owned();
        spec.push(":ro");
        args.push(spec);
    }
    args.push("--state-dir".into());
    args.push(state.as_os_str().to_owned());
    args.extend(extra.iter().map(OsString::from));
    Launch { name: "cordon".into(), program: cordon.to_path_buf(), args }
}

/// `cordon call TOOL --all --json ARGS` on a read-only `root` (a read-write
/// root would also start the background cleanup walk of the tree), with
/// `extra` flags.
pub fn cordon_call(
    cordon: &Path,
    tool: &str,
    args: &serde_json::Value,
    root: &Path,
    state: &Path,
    extra: &[&str],
) -> Command {
    let mut cmd = Command::new(cordon);
    cmd.args(["call", tool, "--all", "--json", &args.to_string(), "--root"]);
    let mut spec = root.as_os_str().to_owned();
    spec.push(":ro");
    cmd.arg(spec).arg("--state-dir").arg(state).args(extra);
    cmd
}

/// Whether this `cordon` build takes `--shards N` (`cordon call --help`
/// lists it); older builds run every call in one instance.
pub fn cordon_has_shards(cordon: &Path) -> bool {
    Command::new(cordon)
        .args(["call", "--help"])
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("--shards"))
}

/// The default `cordon` binary: `target/release/cordon`, else (for a smoke
/// run) `target/debug/cordon`.
pub fn default_cordon(workspace: &Path, smoke: bool) -> PathBuf {
    let release = workspace.join("target/release/cordon");
    let debug = workspace.join("target/debug/cordon");
    if release.is_file() || !smoke || !debug.is_file() { release } else { debug }
}

/// `cordon --version` and the git revision of the working tree (`+dirty`
/// when it has changes).
fn cordon_version(cordon: &Path, workspace: &Path) -> String {
    let version = first_line(Command::new(cordon).arg("--version"));
    let rev = first_line(Command::new("git").arg("-C").arg(workspace).args(["rev-parse", "--short", "HEAD"]));
    let dirty = Command::new("git")
        .arg("-C")
        .arg(workspace)
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .is_ok_and(|o| !o.stdout.is_empty());
    format!("{version} (git {rev}{}, {})", if dirty { "+dirty" } else { "" }, cordon.display())
}

fn first_line(cmd: &mut Command) -> String {
    match cmd.output() {
        Ok(out) => String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").trim().to_string(),
        Err(e) => format!("unavailable ({e})"),
    }
}

/// The first executable called `name` on `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}
