//! The engine settings that decide how a component is compiled, shared by the
//! server and by the build script, which precompiles the built-in tools with
//! them (`host/build.rs` includes this file by path, so it uses only
//! `wasmtime` and `sha2`).
//!
//! An artifact loads only into an engine whose wasmtime version and settings
//! (its precompile-compatibility hash: the compiler's flags, the tunables,
//! the WebAssembly features) are those it was compiled with; `key` names that
//! pair, and the compile cache and the embedded artifacts both carry it.

use std::hash::{Hash, Hasher};

use sha2::{Digest, Sha256};
use wasmtime::Config;

/// Address space reserved for each linear memory: 4 GiB, so that a 32-bit
/// memory needs no bounds checks (wasmtime's default on 64-bit hosts).
pub const MEMORY_RESERVATION: u64 = 4 << 30;

/// The guard region after each linear memory (wasmtime's default).
pub const MEMORY_GUARD: u64 = 32 << 20;

/// The settings that shape compiled code; the server adds how instances are
/// allocated and profiled, which do not.
pub fn compiling() -> Config {
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .concurrency_support(false)
        .memory_reservation(MEMORY_RESERVATION)
        .memory_guard_size(MEMORY_GUARD);
    config
}

/// The name of an engine's compile settings: 16 hex digits of the SHA-256 of
/// the wasmtime version and the engine's precompile-compatibility hash.
pub fn key(engine: &wasmtime::Engine, wasmtime_version: &str) -> String {
    let mut hasher = ShaHasher(Sha256::new());
    wasmtime_version.hash(&mut hasher);
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hasher.0.finalize()[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Feeds `Hash` output into SHA-256, so that the key is the same in every
/// process (and in the build script) built from the same sources.
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        0 // unused: the key is the SHA-256 state, read directly
    }
}
