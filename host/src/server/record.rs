//! What the server tells the audit trail: each call (or its refusal), its
//! start and stop. A call's record is written before its answer leaves:
//! failing closed, an answer whose record cannot be written is withheld.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use serde_json::{Value, json};

use super::{CallRequest, Config, Server};
use crate::audit::{AuditError, CallRecord, Event, ToolRef, Who};
use crate::metrics::Outcome;
use crate::registry::Tool;
use crate::results::{self, Answer, Fault};
use crate::runtime::Ledger;

/// What a call ran, for its record.
#[derive(Default, Clone)]
pub(super) struct Seen {
    pub tool: Option<ToolRef>,
    pub grants: Vec<Value>,
    /// The call's HTTP requests (a tool with network grants): each gets a
    /// `request` record after the call's.
    pub network: Option<Arc<Ledger>>,
}

impl Server {
    /// Records a call (a `call` line, or a `refused` one for a request the
    /// server refused: an unknown tool, a bad cursor or handle, …) and
    /// returns its answer; failing closed, an answer
    /// whose record cannot be written is withheld.
    pub(super) fn record(
        &self,
        request: &CallRequest<'_>,
        seen: Seen,
        answer: Result<Answer, Fault>,
        started: Instant,
    ) -> Result<Answer, Fault> {
        if !self.metrics.is_on() && !self.audit.is_on() {
            return answer;
        }
        // What the call came to, once, for the metrics and the record.
        let outcome = results::outcome::outcome(&answer);
        self.count(request.name(), &answer, &outcome, started.elapsed().as_secs_f64());
        if !self.audit.is_on() {
            return answer;
        }
        let _audit = crate::telemetry::traces::step("audit").entered();
        let written = match (&answer, seen.tool) {
            (Err(fault), _) => self.write(&Event::Refused {
                who: &request.caller.who,
                reason: &results::outcome::reason(fault),
                tool: Some(request.name()),
                detail: fault.to_string(),
            }),
            (Ok(_), tool) => {
                let tool = tool.unwrap_or_else(|| ToolRef {
                    name: request.name().to_string(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    sha256: "host".into(),
                    signer: None,
                });
                let record = CallRecord {
                    who: request.caller.who.clone(),
                    tool: tool.clone(),
                    arguments: self.audit.redact(request.arguments),
                    grants: Value::Array(seen.grants),
                    outcome,
                    duration_ms: (started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
                };
                let written = self.write(&Event::Call(&record));
                let exchanges = seen.network.as_ref().map(|ledger| ledger.exchanges()).unwrap_or_default();
                exchanges.iter().fold(written, |written, exchange| {
                    let request = Event::Request { who: &request.caller.who, tool: &tool, exchange };
                    written.and(self.write(&request))
                })
            }
        };
        self.recorded.fetch_add(1, Ordering::Relaxed);
        match written {
            Err(e) if self.audit.fails_closed() => Err(Fault::AuditUnavailable { reason: e.to_string() }),
            _ => answer,
        }
    }

    /// Records a refusal that happens before the server runs anything (a
    /// bad token, a foreign Origin, an unknown tool seen by a session); failing
    /// closed changes nothing, as nothing ran.
    pub fn refused(&self, who: &Who, reason: &str, tool: Option<&str>, detail: String) {
        match tool {
            Some(name) => self.metrics.call(&self.tool_label(name), Outcome::Refused, reason, None),
            None => self.metrics.refusal(reason),
        }
        let _ = self.write(&Event::Refused { who, reason, tool, detail });
    }

    /// Records the server's start: what it serves, its configuration's
    /// digest, its roots and its tools.
    pub fn record_start(&self, serving: &str, config: &Config) -> Result<(), AuditError> {
        let roots: Vec<Value> =
            (self.policy.roots().iter()).map(|r| json!({ "path": r.path, "mode": r.mode.as_str() })).collect();
        let tools = self.registry().components().map(|t| tool_ref(t)).collect();
        let config_sha256 = config.digest();
        self.write(&Event::Start { config_sha256, roots: Value::Array(roots), tools, serving: serving.into() })
    }

    /// Records the server's stop.
    pub fn record_stop(&self) {
        let _ = self.write(&Event::Stop { calls: self.recorded.load(Ordering::Relaxed) });
    }
}

/// A loaded tool as a record names it.
pub(super) fn tool_ref(tool: &Tool) -> ToolRef {
    ToolRef {
        name: tool.manifest.name.clone(),
        version: tool.manifest.version.clone(),
        sha256: tool.digest.clone(),
        signer: tool.signer.clone(),
    }
}
