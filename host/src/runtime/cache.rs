//! Compiled components: the built-in tools' artifacts, compiled by the build
//! script and embedded in the binary, and the on-disk cache of the others.
//!
//! Compiling a component with Cranelift takes most of a second; loading the
//! compiled artifact takes well under a millisecond. An embedded artifact is
//! used when the engine's key (`engine::key`: the wasmtime version and the
//! engine's settings) is the one it was compiled with; else (the binary runs
//! on a CPU without a feature the build machine had, or the engine's settings
//! changed) it is refused and the component compiled as any other. Cached
//! artifacts are keyed by the component's SHA-256 and the engine's key, so a
//! new build of either never loads a stale artifact. Each file ends with the
//! SHA-256 of what precedes it: a truncated or corrupted artifact is
//! recompiled, never deserialized.

use std::io::{Read, Write};

use cap_std::fs::Dir;
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use super::Code;

/// How a component was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Loaded from the artifact compiled with the binary.
    Precompiled,
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

/// A component compiled by the build script, and the key of the engine
/// settings it was compiled with.
#[derive(Debug, Clone, Copy)]
pub struct Precompiled {
    pub artifact: &'static [u8],
    pub key: &'static str,
}

const TRAILER: usize = 32;

impl CompileCache {
    /// A cache in `dir` (already created) for artifacts of `engine`.
    pub fn new(dir: Option<Dir>, engine: &Engine) -> Self {
        let engine_key = super::engine::key(engine, env!("CORDON_WASMTIME_VERSION"));
        if let Some(dir) = &dir {
            remove_orphans(dir);
        }
        CompileCache { dir, engine_key }
    }

    /// The file name of the artifact for a component with this digest.
    pub fn artifact_name(&self, digest: &str) -> String {
        format!("{digest}-{}.cwasm", self.engine_key)
    }

    /// The key of this engine's compile settings (see `engine::key`).
    pub fn engine_key(&self) -> &str {
        &self.engine_key
    }

    /// Returns the compiled component: the embedded artifact when there is
    /// one for this engine, else from the cache when it holds it, else
    /// compiled now.
    pub fn load(&self, engine: &Engine, code: &Code<'_>) -> wasmtime::Result<(Component, Outcome)> {
        if let Some(component) = code.precompiled.and_then(|p| self.embedded(engine, p)) {
            return Ok((component, Outcome::Precompiled));
        }
        let Code { bytes, digest, .. } = *code;
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

    /// The embedded artifact, unless it was compiled for other settings.
    fn embedded(&self, engine: &Engine, precompiled: Precompiled) -> Option<Component> {
        if precompiled.key != self.engine_key {
            tracing::info!(
                built = precompiled.key,
                running = %self.engine_key,
                "the embedded artifact was compiled for other engine settings; compiling"
            );
            return None;
        }
        // SAFETY: the artifact was written by `Engine::precompile_component`
        // in the build script, of an engine with this version and settings
        // (its key says so), and is part of this binary; wasmtime checks the
        // settings again and refuses an artifact that does not match.
        match unsafe { Component::deserialize(engine, precompiled.artifact) } {
            Ok(component) => Some(component),
            Err(e) => {
                tracing::warn!("the embedded artifact was refused, compiling: {e}");
                None
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{Sockets, engine};

    /// The smallest component: the preamble of an empty one.
    const EMPTY_COMPONENT: &[u8] = b"\0asm\x0d\x00\x01\x00";

    fn leaked(artifact: Vec<u8>, key: String) -> Precompiled {
        Precompiled { artifact: Box::leak(artifact.into_boxed_slice()), key: Box::leak(key.into_boxed_str()) }
    }

    #[test]
    fn an_artifact_precompiled_for_other_engine_settings_is_refused_and_the_component_compiled() {
        let running = Engine::new(&engine::compiling()).unwrap();
        let cache = CompileCache::new(None, &running);
        let mut other = engine::compiling();
        other.memory_guard_size(engine::MEMORY_GUARD * 2);
        let other = Engine::new(&other).unwrap();
        let version = env!("CORDON_WASMTIME_VERSION");
        assert_ne!(engine::key(&other, version), cache.engine_key(), "other settings, another key");
        assert_eq!(engine::key(&running, version), cache.engine_key());
        let code =
            |precompiled| Code { bytes: EMPTY_COMPONENT, digest: "empty", sockets: Sockets::Refuse, precompiled };

        let ours = leaked(running.precompile_component(EMPTY_COMPONENT).unwrap(), cache.engine_key().into());
        assert_eq!(cache.load(&running, &code(Some(ours))).unwrap().1, Outcome::Precompiled);

        let theirs = other.precompile_component(EMPTY_COMPONENT).unwrap();
        let labelled = leaked(theirs.clone(), engine::key(&other, version));
        assert_eq!(cache.load(&running, &code(Some(labelled))).unwrap().1, Outcome::Uncached, "refused by its key");
        // An artifact whose key lies is refused by wasmtime's own check.
        let forged = leaked(theirs, cache.engine_key().into());
        assert_eq!(cache.load(&running, &code(Some(forged))).unwrap().1, Outcome::Uncached, "refused by wasmtime");
    }

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
