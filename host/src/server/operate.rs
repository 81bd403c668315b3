//! What an operator sees of the server: its metrics (counted where calls,
//! refusals, audit writes and reloads happen; what it holds read at each
//! scrape) and whether it is ready to take calls.

use serde_json::Value;

use super::Server;
use crate::audit::{AuditError, Event};
use crate::metrics::{Live, Metrics, Outcome, UNKNOWN_TOOL};
use crate::results::{Answer, Fault};

/// Why the server is not ready to take calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotReady {
    /// Tools are still being compiled (`compiled` of `tools`).
    Compiling { compiled: usize, tools: usize },
    /// A tool could not be compiled.
    Unloadable { tool: String },
    /// The handle store does not answer.
    HandleStore { reason: String },
    /// The audit log cannot be written and the server fails closed.
    Audit,
}

impl NotReady {
    /// A short code, for the JSON a load balancer or an operator reads.
    pub fn code(&self) -> &'static str {
        match self {
            NotReady::Compiling { .. } => "compiling",
            NotReady::Unloadable { .. } => "tool_unloadable",
            NotReady::HandleStore { .. } => "handle_store_unreachable",
            NotReady::Audit => "audit_unavailable",
        }
    }
}

impl std::fmt::Display for NotReady {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotReady::Compiling { compiled, tools } => write!(f, "{compiled} of {tools} tools compiled"),
            NotReady::Unloadable { tool } => write!(f, "the tool `{tool}` cannot be compiled"),
            NotReady::HandleStore { reason } => write!(f, "the handle store does not answer: {reason}"),
            NotReady::Audit => f.write_str("the audit log cannot be written and calls are refused (fail closed)"),
        }
    }
}

impl Server {
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The exposition, with what the server holds now.
    pub fn render_metrics(&self) -> String {
        self.metrics.render(&self.live())
    }

    /// What the server holds now.
    pub fn live(&self) -> Live {
        let (parked, parked_bytes, given_up) = self.pager.parked_stats();
        let (used, slots, waiting) = self.runtime.slot_usage();
        let (in_flight, _, _) = self.calls.usage();
        let registry = self.registry();
        let tools = registry.components().count();
        let compiled = registry.components().filter(|t| t.is_ready(&self.runtime)).count();
        let (resident_bytes, open_fds) = Live::process();
        Live {
            parked_streams: parked as u64,
            parked_bytes: parked_bytes as u64,
            parked_given_up: given_up,
            instance_slots_used: used as u64,
            instance_slots: slots as u64,
            instance_slots_waiting: waiting as u64,
            calls_in_flight: in_flight as u64,
            tools: tools as u64,
            tools_compiled: compiled as u64,
            resident_bytes,
            open_fds,
            resource_listeners: self.notices.listeners() as u64,
            resource_watches: self.notices.watches() as u64,
        }
    }

    /// Whether the server is ready to take calls: every tool compiled, the
    /// handle store answering, the audit log writable when calls wait for it.
    pub fn ready(&self) -> Result<(), NotReady> {
        let registry = self.registry();
        if let Some(tool) = registry.components().find(|t| t.failed_to_compile()) {
            return Err(NotReady::Unloadable { tool: tool.manifest.name.clone() });
        }
        let tools = registry.components().count();
        let compiled = registry.components().filter(|t| t.is_ready(&self.runtime)).count();
        if compiled < tools {
            return Err(NotReady::Compiling { compiled, tools });
        }
        self.pager.handles_reachable().map_err(|reason| NotReady::HandleStore { reason })?;
        if !self.audit.ready() {
            return Err(NotReady::Audit);
        }
        Ok(())
    }

    /// Writes `event` to the audit trail, counting the write.
    pub(super) fn write(&self, event: &Event<'_>) -> Result<(), AuditError> {
        let written = self.audit.record(event);
        if self.audit.is_on() {
            self.metrics.audit(written.is_ok());
        }
        written
    }

    /// Counts a call of `tool` that came to `answer` (`outcome`, as the audit
    /// trail says it) after `seconds`.
    pub(super) fn count(&self, tool: &str, answer: &Result<Answer, Fault>, outcome: &Value, seconds: f64) {
        if !self.metrics.is_on() {
            return;
        }
        if let Ok(Answer::Page(page)) = answer {
            let form = if matches!(page.view, crate::pager::page::View::Json) { "json" } else { "text" };
            self.metrics.page(form, page.bytes);
        }
        if let Err(Fault::HandleStore { .. }) = answer {
            self.metrics.handle_store_error();
        }
        // A recorded call is of a tool the server offered: its name is a label.
        let (outcome, code) = classify(outcome);
        self.metrics.call(tool, outcome, &code, Some(seconds));
    }

    /// The label a tool name gets: its name when the server offers it, else
    /// `(unknown)` (a client's made-up name is never a label).
    pub(super) fn tool_label(&self, name: &str) -> String {
        match self.registry().get(name) {
            Some(_) => name.to_string(),
            None => UNKNOWN_TOOL.to_string(),
        }
    }
}

/// The outcome and code of a call's audit outcome (`results::outcome`).
fn classify(outcome: &Value) -> (Outcome, String) {
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    if let Some(code) = outcome.get("tool_error") {
        let code = text(code);
        let outcome = match code.as_str() {
            "timeout" => Outcome::Timeout,
            "busy" => Outcome::Busy,
            "cancelled" => Outcome::Cancelled,
            _ => Outcome::ToolError,
        };
        return (outcome, code);
    }
    match outcome.get("error") {
        Some(kind) => (Outcome::Refused, text(kind)),
        None => (Outcome::Ok, String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outcomes_are_classified_by_their_code() {
        assert_eq!(classify(&json!({"result": "page", "page": 1})), (Outcome::Ok, String::new()));
        assert_eq!(classify(&json!({"tool_error": "timeout", "limit": "wall_time"})).0, Outcome::Timeout);
        assert_eq!(classify(&json!({"tool_error": "busy"})).0, Outcome::Busy);
        assert_eq!(classify(&json!({"tool_error": "not_found"})), (Outcome::ToolError, "not_found".into()));
        assert_eq!(classify(&json!({"error": "invalid_cursor"})), (Outcome::Refused, "invalid_cursor".into()));
        assert_eq!(classify(&json!({"error": -32603})), (Outcome::Refused, "-32603".into()));
    }
}
