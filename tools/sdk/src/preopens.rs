//! The roots the host preopened for this instance, asked of it once.
//!
//! Each ask (WASI's `get-directories`) makes a new handle of every root, each
//! dropped again by a host call; an instance's roots never change, so every
//! module that needs them shares one list.

use wasip2::filesystem::types::Descriptor;

thread_local! {
    static PREOPENS: Vec<(Descriptor, String)> = wasip2::filesystem::preopens::get_directories();
}

/// Runs `f` on the preopened roots: each root's descriptor and path.
pub(crate) fn with<T>(f: impl FnOnce(&[(Descriptor, String)]) -> T) -> T {
    PREOPENS.with(|dirs| f(dirs))
}
