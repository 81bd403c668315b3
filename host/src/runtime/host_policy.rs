//! The `policy` interface: the server's deny rules, answered for the call.

use std::path::Path;

use super::bindings::cordon::tool::policy::Host;
use super::call::CallState;

impl Host for CallState {
    fn rules(&mut self) -> Vec<String> {
        self.deny().rules().to_vec()
    }

    fn check(&mut self, path: String, follow: bool) -> Option<String> {
        let rule = self.deny().check(Path::new(&path), follow).map(str::to_string);
        if let Some(rule) = &rule {
            tracing::debug!(path, rule, "denied by a rule");
        }
        rule
    }
}
