//! The `host-files` interface: file services WASI lacks, done by the host
//! through capability handles on the call's own grants.

use crate::policy::Mode;
use cap_std::fs::Dir;

use super::bindings::{HostFiles, WitError, WitErrorCode};
use super::call::CallState;

impl HostFiles for CallState {
    fn copy_permissions(&mut self, from: String, to: String) -> Result<(), WitError> {
        let (from_root, from_rel) = self.locate(&from, false)?;
        let (to_root, to_rel) = self.locate(&to, true)?;
        let from_dir = self.root(from_root, &from)?;
        let perms = from_dir.metadata(&from_rel).map_err(|e| io_error(&from, &e))?.permissions();
        self.root(to_root, &to)?.set_permissions(&to_rel, perms).map_err(|e| io_error(&to, &e))
    }
}

impl super::bindings::cordon::tool::types::Host for CallState {}

impl CallState {
    /// The grant holding `path` (its index), and `path` relative to it. `write`
    /// asks for a read-write grant.
    pub(super) fn locate(&self, path: &str, write: bool) -> Result<(usize, String), WitError> {
        let denied = |why: &str| WitError { code: WitErrorCode::PermissionDenied, message: format!("`{path}` {why}") };
        // Plain string work: the scan services call this once per file.
        if !path.starts_with('/') || path.split('/').any(|c| c == "." || c == "..") {
            return Err(WitError {
                code: WitErrorCode::InvalidArgument,
                message: format!("`{path}` must be an absolute, normalized path"),
            });
        }
        let (index, grant, rel) = self
            .grants()
            .iter()
            .enumerate()
            .filter_map(|(i, g)| under(path, &g.guest).map(|rel| (i, g, rel)))
            .max_by_key(|(_, g, _)| g.guest.len())
            .ok_or_else(|| denied("is outside every root granted to this call"))?;
        if write && grant.mode != Mode::ReadWrite {
            return Err(denied("is under a read-only root"));
        }
        let rel = rel.trim_matches('/');
        Ok((index, if rel.is_empty() { ".".to_string() } else { rel.to_string() }))
    }

    /// The capability of grant `index`, opened once per call; `path` names the
    /// request in an error.
    pub(super) fn root(&mut self, index: usize, path: &str) -> Result<&Dir, WitError> {
        let host = self.grants()[index].host.clone();
        self.open_roots().get(index, &host).map_err(|e| io_error(path, &e))
    }
}

/// `path` relative to `root` when it lies inside it (whole components: the
/// sibling `/a/root_evil` is not inside `/a/root`).
fn under<'a>(path: &'a str, root: &str) -> Option<&'a str> {
    let rest = path.strip_prefix(root.trim_end_matches('/'))?;
    (rest.is_empty() || rest.starts_with('/')).then_some(rest)
}

/// A filesystem error as the contract's, naming `path`.
pub(super) fn io_error(path: &str, err: &std::io::Error) -> WitError {
    let code = match err.kind() {
        std::io::ErrorKind::NotFound => WitErrorCode::NotFound,
        std::io::ErrorKind::PermissionDenied => WitErrorCode::PermissionDenied,
        _ => WitErrorCode::Io,
    };
    WitError { code, message: format!("`{path}`: {err}") }
}
