//! What `cordon tool new --lang python|js` takes from the repository's example
//! tools, packed into the binary as the SDK is (`sdk.rs`), so a new project
//! needs no Cordon checkout: the WASI WIT packages componentize-py needs beside
//! Cordon's `tool.wit` (`tools/examples/python/wit/deps`, unchanged), the
//! componentize-py version the Python example pins (from its `build.sh`), and
//! the JavaScript example's `package.json` and `package-lock.json`, whose pins
//! a new JavaScript project copies.

use std::fs;
use std::path::Path;

/// Writes `project_files.rs` into `out_dir`: `PYTHON_WIT_DEPS` (every file
/// under the Python example's `wit/deps`, by its path there),
/// `COMPONENTIZE_PY_VERSION`, `JS_PACKAGE` and `JS_LOCK`.
pub fn write(workspace: &Path, out_dir: &Path) {
    let python = workspace.join("tools/examples/python");
    let javascript = workspace.join("tools/examples/javascript");
    let deps_dir = python.join("wit/deps");
    let deps = crate::sdk::files_ending(&deps_dir, "wit");
    assert!(!deps.is_empty(), "no WIT files under {}", deps_dir.display());
    let mut code = String::from(
        "/// The WASI WIT packages the Python example's world uses: (path under `wit/deps/`, bytes).\n\
         pub const PYTHON_WIT_DEPS: &[(&str, &[u8])] = &[\n",
    );
    for file in &deps {
        let relative = file.strip_prefix(&deps_dir).unwrap().to_str().expect("UTF-8 paths");
        code.push_str(&format!("    ({relative:?}, include_bytes!({:?})),\n", file.display().to_string()));
    }
    code.push_str("];\n");
    let version = pinned(&python.join("build.sh"), "COMPONENTIZE_PY_VERSION=");
    code.push_str(&format!(
        "/// The componentize-py version the Python example builds with.\n\
         pub const COMPONENTIZE_PY_VERSION: &str = {version:?};\n"
    ));
    for (constant, file, what) in
        [("JS_PACKAGE", "package.json", "`package.json`"), ("JS_LOCK", "package-lock.json", "`package-lock.json`")]
    {
        let path = javascript.join(file).display().to_string();
        code.push_str(&format!(
            "/// The JavaScript example's {what}.\npub const {constant}: &str = include_str!({path:?});\n"
        ));
    }
    fs::write(out_dir.join("project_files.rs"), code).unwrap();
}

/// The value a shell script assigns with the line `assignment` (such as
/// `NAME=`): the build fails if the script no longer has that line.
fn pinned(script: &Path, assignment: &str) -> String {
    let text = fs::read_to_string(script).unwrap_or_else(|e| panic!("read {}: {e}", script.display()));
    let line = text.lines().find_map(|line| line.strip_prefix(assignment));
    let value = line.unwrap_or_else(|| panic!("{} has no line `{assignment}…`", script.display()));
    value.trim().trim_matches('"').to_string()
}
