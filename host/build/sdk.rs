//! The guest SDK as `cordon tool new` vendors it into a new tool crate, so
//! that the crate builds with only the `cordon` binary, cargo and the wasm
//! target: the SDK (`tools/sdk`), the contract (`contract`) and the WIT
//! (`wit/tool.wit`) keep their places relative to each other under
//! `vendor/cordon/`, their manifests made standalone (every
//! `workspace = true` replaced by what the workspace says), with the
//! workspace's lockfile, so the crate builds with the dependency versions
//! Cordon was built and tested with.

use std::fs;
use std::path::{Path, PathBuf};

use toml::{Table, Value};

/// The crates vendored, by their folder in the workspace.
const CRATES: [&str; 2] = ["tools/sdk", "contract"];

/// Writes `sdk_files.rs` into `out_dir`: `SDK_FILES`, every vendored file as
/// (path under `vendor/cordon/`, bytes), and `SDK_LOCK`, the lockfile.
pub fn write(workspace: &Path, out_dir: &Path) {
    let root: Table = read_toml(&workspace.join("Cargo.toml"));
    let inherited = root.get("workspace").and_then(Value::as_table).expect("the workspace's [workspace]");
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for krate in CRATES {
        let dir = workspace.join(krate);
        let manifest = standalone(read_toml(&dir.join("Cargo.toml")), inherited);
        let written = out_dir.join("vendored").join(krate).join("Cargo.toml");
        fs::create_dir_all(written.parent().unwrap()).unwrap();
        fs::write(&written, toml::to_string(&manifest).expect("a manifest is TOML")).unwrap();
        files.push((format!("{krate}/Cargo.toml"), written));
        for source in files_ending(&dir.join("src"), "rs") {
            let relative = source.strip_prefix(workspace).unwrap().to_str().expect("UTF-8 paths").to_string();
            files.push((relative, source));
        }
    }
    files.push(("wit/tool.wit".into(), workspace.join("wit/tool.wit")));
    let mut code = String::from(
        "/// The vendored SDK: (path under `vendor/cordon/`, bytes).\n\
         pub const SDK_FILES: &[(&str, &[u8])] = &[\n",
    );
    for (path, source) in &files {
        code.push_str(&format!("    ({path:?}, include_bytes!({:?})),\n", source.display().to_string()));
    }
    code.push_str("];\n");
    let lock = workspace.join("Cargo.lock").display().to_string();
    code.push_str(&format!(
        "/// The workspace's lockfile: the versions Cordon was built with.\npub const SDK_LOCK: &str = include_str!({lock:?});\n"
    ));
    fs::write(out_dir.join("sdk_files.rs"), code).unwrap();
}

fn read_toml(path: &Path) -> Table {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    text.parse().unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

/// Every file under `dir` whose extension is `extension`, sorted.
pub fn files_ending(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries.map(Result::unwrap) {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_ending(&path, extension));
        } else if path.extension().is_some_and(|e| e == extension) {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// `manifest` with what it inherits from the workspace (`inherited`, its
/// `[workspace]` table) written out.
fn standalone(mut manifest: Table, inherited: &Table) -> Table {
    let package = inherited.get("package").and_then(Value::as_table);
    if let Some(Value::Table(own)) = manifest.get_mut("package") {
        for (key, value) in own.iter_mut() {
            if is_inherited(value) {
                *value = package.and_then(|p| p.get(key)).cloned().unwrap_or_else(|| panic!("workspace.package.{key}"));
            }
        }
    }
    let dependencies = inherited.get("dependencies").and_then(Value::as_table);
    let resolve = |table: &mut Value| {
        for (name, spec) in table.as_table_mut().into_iter().flatten() {
            if is_inherited(spec) {
                let base =
                    dependencies.and_then(|d| d.get(name)).unwrap_or_else(|| panic!("workspace dependency {name}"));
                *spec = merged(base, spec);
            }
        }
    };
    for key in ["dependencies", "dev-dependencies", "build-dependencies"] {
        if let Some(table) = manifest.get_mut(key) {
            resolve(table);
        }
    }
    if let Some(Value::Table(targets)) = manifest.get_mut("target") {
        for (_, target) in targets.iter_mut() {
            let Some(target) = target.as_table_mut() else { continue };
            for key in ["dependencies", "dev-dependencies", "build-dependencies"] {
                if let Some(table) = target.get_mut(key) {
                    resolve(table);
                }
            }
        }
    }
    manifest
}

fn is_inherited(value: &Value) -> bool {
    value.as_table().and_then(|t| t.get("workspace")).and_then(Value::as_bool) == Some(true)
}

/// A workspace dependency (`base`: a version or a table) with a member's own
/// keys added (`features` extended, `optional`, …).
fn merged(base: &Value, own: &Value) -> Value {
    let mut spec = match base {
        Value::String(version) => Table::from_iter([("version".to_string(), Value::String(version.clone()))]),
        Value::Table(table) => table.clone(),
        other => panic!("a workspace dependency must be a version or a table, not {other}"),
    };
    for (key, value) in own.as_table().into_iter().flatten().filter(|(k, _)| k.as_str() != "workspace") {
        match (key.as_str(), spec.get_mut(key), value) {
            ("features", Some(Value::Array(features)), Value::Array(more)) => features.extend(more.iter().cloned()),
            _ => {
                spec.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Table(spec)
}
