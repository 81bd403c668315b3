//! Who asks, as the server sees it: a call's `Caller` (the principal, its
//! rights and what the audit trail says of it), and what a principal's
//! rights make of the tools offered, the tool called and the instructions.

use std::sync::Arc;

use serde_json::Value;

use super::Server;
use crate::audit::Who;
use crate::auth::Principal;
use crate::policy::{Rights, Root, Within};
use crate::protocol::mcp::Version;
use crate::registry::Entry;
use crate::results::{self, Fault};
use crate::tool::Access;

/// Who makes a call: what the audit trail says of them, their rights, and
/// the id their results are bound to.
#[derive(Debug, Clone)]
pub struct Caller {
    pub who: Who,
    pub rights: Arc<Rights>,
    /// `Principal::id`: cursors and handles are continued only by it.
    pub owner: String,
}

impl Server {
    /// The rights of `principal` under the access rules.
    pub fn rights(&self, principal: &Principal) -> Arc<Rights> {
        self.access.rights(principal, &self.policy)
    }

    /// A caller: `who` (whose principal it names) with `principal`'s rights.
    pub fn caller(&self, principal: &Principal, who: Who) -> Caller {
        Caller {
            who: Who { principal: Some(principal.named()), ..who },
            rights: self.rights(principal),
            owner: principal.id(),
        }
    }

    /// The local user (stdio, `cordon call`), with the server's full rights.
    pub fn local(&self, transport: &'static str) -> Caller {
        self.caller(&Principal::Local, Who::new(transport))
    }

    /// The tools `rights` let a principal call: those offered, that its rules
    /// list and its scopes allow.
    pub fn tools_for(&self, rights: &Rights) -> Vec<Entry> {
        self.tools().into_iter().filter(|e| self.may(rights, e).is_ok()).collect()
    }

    /// The `tools/list` result for a principal with `rights`.
    pub fn list_tools_for(&self, version: Version, rights: &Rights) -> Value {
        results::list_tools_result(self.tools_for(rights).iter(), version, self.loading)
    }

    /// The tool `name` as `caller` may call it; a call of a tool not
    /// offered, or not to this caller, is recorded as refused.
    pub fn called(&self, name: &str, caller: &Caller) -> Result<Entry, Fault> {
        self.offered(name).and_then(|entry| self.may(&caller.rights, &entry).map(|_| entry)).inspect_err(|fault| {
            self.refused(&caller.who, &results::outcome::reason(fault), Some(name), fault.to_string());
        })
    }

    /// What `initialize` and `server/discover` tell a model with `rights`
    /// about the server: the roots it may use, with its modes.
    pub fn instructions_for(&self, rights: &Rights) -> String {
        if rights.roots.is_none() && rights.scopes.write {
            return self.instructions.clone();
        }
        let within = Within { principal: rights.roots.as_deref(), ..Within::default() };
        let access = if rights.scopes.write { Access::Write } else { Access::Read };
        let roots: Vec<Root> =
            (self.policy.narrowed(access, within).into_iter()).map(|g| Root { path: g.guest, mode: g.mode }).collect();
        results::instructions(&roots)
    }

    /// Whether `rights` let a principal call `entry`: its rules list it, then
    /// its token has the scope (a tool that writes needs the write scope, any
    /// other the read scope).
    fn may(&self, rights: &Rights, entry: &Entry) -> Result<(), Fault> {
        let manifest = entry.manifest();
        let name = manifest.name.clone();
        if !rights.allows_tool(&name) {
            return Err(Fault::NoAccess { name, by: rights.by.clone() });
        }
        let (needed, held) = match manifest.access {
            Access::Write => (&self.scope_names.write, rights.scopes.write),
            Access::Read | Access::None => (&self.scope_names.read, rights.scopes.read),
        };
        if held {
            return Ok(());
        }
        Err(Fault::InsufficientScope { name, scope: needed.clone() })
    }
}
