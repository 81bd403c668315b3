//! The `policy` interface: the server's deny rules and roots, answered for
//! the call by the one judge of paths (`policy::Judge`).

use std::path::Path;

use super::bindings::cordon::tool::policy::{Host, Intent as WitIntent};
use super::bindings::{WitError, WitErrorCode};
use super::call::CallState;
use crate::policy::{Intent, Refusal};

impl Host for CallState {
    fn rules(&mut self) -> Vec<String> {
        self.policy().rules().to_vec()
    }

    fn check(&mut self, path: String, follow: bool) -> Option<String> {
        let rule = self.policy().check(Path::new(&path), follow).map(str::to_string);
        if let Some(rule) = &rule {
            tracing::debug!(path, rule, "denied by a rule");
        }
        rule
    }

    fn judge(&mut self, path: String, intent: WitIntent) -> Result<(), WitError> {
        // The scan services' rule: absolute and normalized, so that what is
        // judged is what the guest opens.
        self.locate(&path, false)?;
        if let WitIntent::MoveTo(to) = &intent {
            self.locate(to, false)?;
        }
        let intent = match &intent {
            WitIntent::Read => Intent::Read,
            WitIntent::Change => Intent::Change,
            WitIntent::MoveTo(to) => Intent::MoveTo(Path::new(to)),
        };
        self.policy().judge(self.grants(), Path::new(&path), intent).map_err(|refusal| {
            tracing::debug!(path, "refused: {refusal}");
            WitError { code: code(&refusal), message: refusal.to_string() }
        })
    }
}

/// The contract's code for a refusal.
fn code(refusal: &Refusal) -> WitErrorCode {
    match refusal {
        Refusal::TooMany { .. } => WitErrorCode::TooLarge,
        Refusal::Unreadable { .. } => WitErrorCode::Io,
        _ => WitErrorCode::PermissionDenied,
    }
}
