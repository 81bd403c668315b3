//! Services of the host that WASI lacks, and randomness.

use std::path::Path;

use crate::Error;

/// Gives `target` the permission bits of `source` (both absolute, inside the
/// granted roots, `target` under a read-write one).
#[cfg(target_arch = "wasm32")]
pub fn copy_permissions(source: &Path, target: &Path) -> Result<(), Error> {
    let text = |p: &Path| {
        p.to_str()
            .map(str::to_owned)
            .ok_or_else(|| Error::new(crate::ErrorCode::InvalidArgument, "a path is not UTF-8"))
    };
    crate::component::cordon::tool::host_files::copy_permissions(&text(source)?, &text(target)?)
        .map_err(crate::component::from_wit)
}

/// Gives `target` the permission bits of `source`.
#[cfg(not(target_arch = "wasm32"))]
pub fn copy_permissions(source: &Path, target: &Path) -> Result<(), Error> {
    let perms = std::fs::metadata(source).map_err(|e| Error::io(&format!("`{}`", source.display()), &e))?.permissions();
    std::fs::set_permissions(target, perms).map_err(|e| Error::io(&format!("`{}`", target.display()), &e))
}

/// A random number (WASI's secure random source in a component).
#[cfg(target_arch = "wasm32")]
pub fn random_u64() -> u64 {
    wasip2::random::random::get_random_u64()
}

/// A random number (hashed time and process id, natively).
#[cfg(not(target_arch = "wasm32"))]
pub fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.write_u32(std::process::id());
    h.finish()
}

/// The linear memory this instance may use, in bytes, as the host tells it
/// ([`MEMORY_ENV`](cordon_contract::MEMORY_ENV): its share of the call's
/// memory); `None` when not told (natively, or under another host).
pub fn memory_bytes() -> Option<u64> {
    std::env::var(cordon_contract::MEMORY_ENV).ok()?.parse().ok()
}
