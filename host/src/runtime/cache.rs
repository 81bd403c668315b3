//! The on-disk cache of compiled components.
//!
//! Compiling a component with Cranelift takes most of a second; loading the
//! compiled artifact takes well under a millisecond. Artifacts are keyed by the
//! component's SHA-256, the wasmtime version and the engine's settings (its
//! precompile-compatibility hash), so a new build of either never loads a stale
//! artifact. Each file ends with the SHA-256 of what precedes it: a truncated or
//! corrupted artifact is recompiled, never deserialized.

use std::hash::{Hash, Hasher};
use std::io::{Read, Write};

use cap_std::fs::Dir;
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// How a component was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Loaded from a cached artifact.
    Hit,
    /// Compiled, and the artifact stored for next time.
    Compiled,
    /// Compiled; no cache directory is configured.
    Uncached,
}

/// A directory of compiled artifacts for one engine configuration.
pub struct CompileCache {
    dir: Option<Dir>,
    engine_key: String,
}

const TRAILER: usize = 32;

impl CompileCache {
    /// A cache in `dir` (already created) for artifacts of `engine`.
    pub fn new(dir: Option<Dir>, engine: &Engine) -> Self {
        let mut hasher = ShaHasher(Sha256::new());
        env!("CORDON_WASMTIME_VERSION").hash(&mut hasher);
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_key = hex::encode(&hasher.0.finalize()[..8]);
        if let Some(dir) = &dir {
            remove_orphans(dir);
        }
        CompileCache { dir, engine_key }
    }

    /// The file name of the artifact for a component with this digest.
    pub fn artifact_name(&self, digest: &str) -> String {
        format!("{digest}-{}.cwasm", self.engine_key)
    }

    /// Returns the compiled component, from the cache when it holds it.
    pub fn load(&self, engine: &Engine, bytes: &[u8], digest: &str) -> wasmtime::Result<(Component, Outcome)> {
        let Some(dir) = &self.dir else {
            return Ok((Component::new(engine, bytes)?, Outcome::Uncached));
        };
        let name = self.artifact_name(digest);
        if let Some(artifact) = read_checked(dir, &name) {
            // SAFETY: the artifact was written by `Engine::precompile_component`
            // of an engine with the same version and settings (the file name
            // says so) and its checksum matches, so it is that exact output.
            match unsafe { Component::deserialize(engine, &artifact) } {
                Ok(component) => return Ok((component, Outcome::Hit)),
                Err(e) => tracing::warn!(artifact = %name, "cached artifact rejected, recompiling: {e}"),
            }
        }
        let artifact = engine.precompile_component(bytes)?;
        // SAFETY: produced just above by this engine.
        let component = unsafe { Component::deserialize(engine, &artifact)? };
        if let Err(e) = write_atomically(dir, &name, &artifact) {
            tracing::warn!(artifact = %name, "could not store compiled artifact: {e}");
        }
        Ok((component, Outcome::Compiled))
    }
}

/// The artifact without its trailer, if the file exists and its checksum holds.
fn read_checked(dir: &Dir, name: &str) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    dir.open(name).ok()?.read_to_end(&mut bytes).ok()?;
    if bytes.len() < TRAILER {
        return None;
    }
    let body = bytes.len() - TRAILER;
    if Sha256::digest(&bytes[..body])[..] != bytes[body..] {
        tracing::warn!(artifact = %name, "cached artifact is corrupt, recompiling");
        return None;
    }
    bytes.truncate(body);
    Some(bytes)
}

/// Writes `artifact` plus its checksum to a temporary file and renames it into
/// place, so a reader never sees a partial artifact.
/// Removes the temporary artifacts of processes that are gone (killed while
/// writing one); a live process's are left to it.
fn remove_orphans(dir: &Dir) {
    let Ok(entries) = dir.entries() else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = temporary_owner(&name) else { continue };
        if !process_alive(pid) && dir.remove_file(&name).is_ok() {
            tracing::debug!(name, "removed the temporary artifact of a process that is gone");
        }
    }
}

/// The process that writes the temporary artifact `name` (`.<name>.<pid>.tmp`).
fn temporary_owner(name: &str) -> Option<i32> {
    let inner = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (_, pid) = inner.rsplit_once('.')?;
    pid.parse().ok().filter(|&pid| pid > 0)
}

/// Whether a process with this id exists (signal 0 checks without sending).
fn process_alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 sends nothing; it only checks the pid.
    let sent = unsafe { libc::kill(pid, 0) };
    sent == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

fn write_atomically(dir: &Dir, name: &str, artifact: &[u8]) -> std::io::Result<()> {
    let tmp = format!(".{name}.{}.tmp", std::process::id());
    let result = (|| {
        let mut file = dir.open_with(&tmp, crate::private::file_options().write(true).create(true).truncate(true))?;
        file.write_all(artifact)?;
        file.write_all(&Sha256::digest(artifact))?;
        file.sync_all()?;
        dir.rename(&tmp, dir, name)
    })();
    if result.is_err() {
        let _ = dir.remove_file(&tmp);
    }
    result
}

/// Feeds `Hash` output into SHA-256 so the key is stable across processes.
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        0 // unused: the key is the SHA-256 state, read directly
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_artifacts_of_processes_that_are_gone_are_removed_and_others_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        // A pid past the kernel's maximum (4194304) never exists.
        let orphan = ".abc-123.cwasm.99999999.tmp";
        let ours = format!(".abc-123.cwasm.{}.tmp", std::process::id());
        for name in [orphan, &ours, "abc-123.cwasm", ".notes.tmp"] {
            dir.write(name, b"x").unwrap();
        }
        assert_eq!(temporary_owner(orphan), Some(99_999_999));
        assert_eq!(temporary_owner("abc-123.cwasm"), None);
        remove_orphans(&dir);
        assert!(!dir.try_exists(orphan).unwrap(), "the orphan stays");
        for kept in [ours.as_str(), "abc-123.cwasm", ".notes.tmp"] {
            assert!(dir.try_exists(kept).unwrap(), "{kept} was removed");
        }
    }
}
