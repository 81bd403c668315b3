//! The compile cache, observed on disk: a second start loads what the first
//! compiled, and a damaged artifact is recompiled rather than loaded. The
//! built-in tools load from the artifacts compiled with the binary and leave
//! the cache alone; a component given with `--component` goes through it.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::cordon_bin;

/// A component that is not built in.
const FIXTURE: &str = env!("CORDON_FIXTURE_COMPONENT");

fn start(state: &Path, extra: &[&str]) -> Output {
    let out = Command::new(cordon_bin())
        .args(["tools", "--json", "--component", FIXTURE, "--state-dir"])
        .arg(state)
        .args(extra)
        .env("RUST_LOG", "cordon=info")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

fn artifacts(state: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(state.join("compiled"))
        .map(|dir| dir.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_second_start_loads_compiled_tools_from_the_cache() {
    let state = tempfile::tempdir().unwrap();
    let first = start(state.path(), &[]);
    assert!(stderr(&first).contains("cache=Compiled"), "{}", stderr(&first));
    let precompiled = stderr(&first).matches("cache=Precompiled").count();
    assert_eq!(precompiled, 9, "every built-in tool from its embedded artifact: {}", stderr(&first));
    let files = artifacts(state.path());
    assert_eq!(files.len(), 1, "the first start stores the component's artifact, and only it: {files:?}");
    assert!(files.iter().all(|f| f.extension().is_some_and(|e| e == "cwasm")), "no temporary files remain: {files:?}");
    let before: Vec<(u64, i64, i64)> =
        files.iter().map(|f| std::fs::metadata(f).unwrap()).map(|m| (m.ino(), m.mtime(), m.mtime_nsec())).collect();

    let second = start(state.path(), &[]);
    assert!(stderr(&second).contains("cache=Hit"), "{}", stderr(&second));
    assert!(!stderr(&second).contains("cache=Compiled"), "{}", stderr(&second));
    assert_eq!(artifacts(state.path()), files, "nothing new was written");
    let after: Vec<(u64, i64, i64)> =
        files.iter().map(|f| std::fs::metadata(f).unwrap()).map(|m| (m.ino(), m.mtime(), m.mtime_nsec())).collect();
    assert_eq!(before, after, "the artifacts were read, not rewritten");
    assert_eq!(first.stdout, second.stdout, "the same tools either way");
}

#[test]
fn a_corrupt_artifact_is_recompiled_not_loaded() {
    let state = tempfile::tempdir().unwrap();
    start(state.path(), &[]);
    let artifact = artifacts(state.path()).remove(0);
    let mut bytes = std::fs::read(&artifact).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&artifact, &bytes).unwrap();
    let again = start(state.path(), &[]);
    assert!(stderr(&again).contains("corrupt"), "{}", stderr(&again));
    assert!(stderr(&again).contains("cache=Compiled"), "{}", stderr(&again));
    let third = start(state.path(), &[]);
    assert!(stderr(&third).contains("cache=Hit"), "the rewritten artifact is good: {}", stderr(&third));
}

#[test]
fn no_cache_writes_nothing() {
    let state = tempfile::tempdir().unwrap();
    let out = start(state.path(), &["--no-cache"]);
    assert!(stderr(&out).contains("cache=Uncached"), "{}", stderr(&out));
    assert!(artifacts(state.path()).is_empty());
}
