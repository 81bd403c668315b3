//! The audit trail: one chained JSON line per event (see `chain`), for "who
//! read what" — every tool call and page, refusals before a call, changes to
//! the installed tools, and the server's start and stop.
//!
//! Secrets never appear: no token (a record names the principal: an access
//! token's issuer, subject and client, or a static token's name), no cursor key, and no argument value that is not on the
//! allow-list of `redact` (paths, counts, flags, small enums, a handle):
//! everything else is replaced by its size and an HMAC keyed with a server
//! secret.
//!
//! When an event cannot be written, `OnFailure` decides: `Closed` (the
//! default) answers the call whose record failed with an error instead of its
//! result, and refuses calls until a write works again (tried again after
//! `RETRY`); `Open` lets calls go on and says so on stderr.

pub mod anchor;
pub mod chain;
mod group;
pub mod redact;
pub mod verify;

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::runtime::Exchange;
use chain::Chain;
pub use redact::DigestKey;

/// While failing closed, how long calls are refused before a write is tried.
const RETRY: Duration = Duration::from_secs(1);

/// What happens to calls when the audit file cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum OnFailure {
    /// Answer the call whose record failed with an error, and refuse calls
    /// until the file can be written again.
    #[default]
    Closed,
    /// Let calls go on; each failure is reported on stderr.
    Open,
}

/// Where the audit trail goes and how it rotates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSettings {
    /// `None`: no audit trail.
    pub path: Option<PathBuf>,
    pub on_failure: OnFailure,
    /// Rotate the file once it holds this many bytes.
    pub max_bytes: u64,
    /// Rotated files kept.
    pub keep: usize,
}

/// Who made a request: what a record says about the client, no secret.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Who {
    /// `stdio`, `tcp`, `http` or `cli`.
    pub transport: &'static str,
    /// The peer's address (TCP, HTTP), or the parent process (stdio).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// The principal: its issuer, subject and client, or the static
    /// token's name (never a token or a part of one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<crate::auth::Named>,
    /// The client's name and version, as it gave them at `initialize`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The protocol revision of the request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub era: Option<&'static str>,
}

impl Who {
    pub fn new(transport: &'static str) -> Who {
        Who { transport, ..Who::default() }
    }
}

/// A tool as a record names it.
#[derive(Debug, Clone, Serialize)]
pub struct ToolRef {
    pub name: String,
    pub version: String,
    pub sha256: String,
    /// The id of the key whose signature the tool carries, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
}

/// One call (one page) as the record keeps it.
#[derive(Debug, Clone, Serialize)]
pub struct CallRecord {
    pub who: Who,
    pub tool: ToolRef,
    /// The arguments as `Audit::redact` leaves them.
    pub arguments: Value,
    /// The call's grants: `{ "path", "mode" }`.
    pub grants: Value,
    /// `{"result": "page", "page": …, "bytes": …, "last": …}`, `{"tool_error": CODE}`,
    /// `{"limit": NAME}`, `{"error": KIND}`.
    pub outcome: Value,
    pub duration_ms: f64,
}

/// What the trail records.
#[derive(Debug)]
pub enum Event<'a> {
    /// The server started: its version, process, configuration digest, roots
    /// and tools.
    Start { config_sha256: String, roots: Value, tools: Vec<ToolRef>, serving: String },
    /// The server is stopping.
    Stop { calls: u64 },
    /// A tool call, or one page of it.
    Call(&'a CallRecord),
    /// One HTTP request a call's tool sent, or the host refused: its method,
    /// scheme, host, port, the address connected to, status and body bytes;
    /// never a path, header or body.
    Request { who: &'a Who, tool: &'a ToolRef, exchange: &'a Exchange },
    /// A request refused before any tool ran: `reason` is a short code
    /// (`unknown_tool`, `read_only`, `invalid_cursor`, `bad_token`,
    /// `bad_origin`, `audit_unavailable`, …), `detail` its sentence.
    Refused { who: &'a Who, reason: &'a str, tool: Option<&'a str>, detail: String },
    /// `cordon tool add` installed a tool, with its grants (`replaced`: the
    /// version of the tool of that name it replaced).
    ToolInstalled { tool: ToolRef, grants: Value, replaced: Option<String> },
    /// `cordon tool remove` removed a tool.
    ToolRemoved { tool: ToolRef },
    /// A running server's installed tools changed (it reloaded them).
    ToolsChanged { added: Vec<ToolRef>, removed: Vec<String> },
    /// An installed tool could not be loaded (a digest mismatch, a bad
    /// signature, a broken component): the tools stayed as they were.
    ToolsRejected { reason: String },
}

impl Event<'_> {
    fn name(&self) -> &'static str {
        match self {
            Event::Start { .. } => "start",
            Event::Stop { .. } => "stop",
            Event::Call(_) => "call",
            Event::Request { .. } => "request",
            Event::Refused { .. } => "refused",
            Event::ToolInstalled { .. } => "tool_installed",
            Event::ToolRemoved { .. } => "tool_removed",
            Event::ToolsChanged { .. } => "tools_changed",
            Event::ToolsRejected { .. } => "tools_rejected",
        }
    }

    /// The event's fields as a line holds them between its `seq` and its
    /// `prev` (`chain::fields_text`): a call's (the event made most often)
    /// serialized straight from its record, the others through `fields`.
    fn text(&self) -> String {
        let Event::Call(record) = self else { return chain::fields_text(self.fields()) };
        let mut text = Vec::with_capacity(768);
        let time = humantime::format_rfc3339_micros(SystemTime::now());
        write!(text, r#","time":"{time}","event":"{}","pid":{}"#, self.name(), pid()).expect("to memory");
        let at = text.len();
        serde_json::to_writer(&mut text, record).expect("a record is JSON");
        // The record's own braces go: its fields follow the others.
        text[at] = b',';
        text.pop();
        String::from_utf8(text).expect("JSON is UTF-8")
    }

    /// The event's fields, `time`, `event` and `pid` first.
    fn fields(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("time".into(), humantime::format_rfc3339_micros(SystemTime::now()).to_string().into());
        m.insert("event".into(), self.name().into());
        m.insert("pid".into(), pid().into());
        let more = match self {
            Event::Start { config_sha256, roots, tools, serving } => json!({
                "version": env!("CARGO_PKG_VERSION"), "serving": serving, "config_sha256": config_sha256,
                "roots": roots, "tools": tools,
            }),
            Event::Stop { calls } => json!({ "calls": calls }),
            Event::Call(record) => serde_json::to_value(record).expect("a record is JSON"),
            Event::Request { who, tool, exchange } => {
                let target = exchange.destination.as_ref();
                json!({
                    "who": who, "tool": tool, "method": exchange.method,
                    "scheme": target.map(|d| d.scheme.as_str()), "host": target.map(|d| d.host.to_string()),
                    "port": target.map(|d| d.port), "address": exchange.address.map(|a| a.to_string()),
                    "status": exchange.status, "bytes_out": exchange.bytes_out, "bytes_in": exchange.bytes_in,
                    "refused": exchange.refused.as_ref().map(|r| r.code()),
                    "detail": exchange.refused.as_ref().map(|r| r.to_string()), "failed": exchange.failed,
                })
            }
            Event::Refused { who, reason, tool, detail } => {
                json!({ "who": who, "reason": reason, "tool": tool, "detail": detail })
            }
            Event::ToolInstalled { tool, grants, replaced } => {
                json!({ "tool": tool, "grants": grants, "replaced": replaced })
            }
            Event::ToolRemoved { tool } => json!({ "tool": tool }),
            Event::ToolsChanged { added, removed } => json!({ "added": added, "removed": removed }),
            Event::ToolsRejected { reason } => json!({ "reason": reason }),
        };
        if let Value::Object(more) = more {
            m.extend(more.into_iter().filter(|(_, v)| !v.is_null()));
        }
        m
    }
}

/// Why an event could not be recorded.
#[derive(Debug)]
pub struct AuditError {
    path: PathBuf,
    source: std::io::Error,
}

impl std::fmt::Display for AuditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the audit log {} cannot be written: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for AuditError {}

/// The audit trail of one process.
pub struct Audit {
    chain: Option<Chain>,
    on_failure: OnFailure,
    /// Since when writes fail, if they do.
    failing: Mutex<Option<Instant>>,
    /// The key of the digests that replace argument values.
    digests: DigestKey,
}

impl Audit {
    /// The trail `settings` describe (none without a path), whose digests of
    /// argument values are keyed with `digests`. A file that cannot be opened
    /// stops the start when failing closed.
    pub fn open(settings: &AuditSettings, digests: DigestKey) -> Result<Audit, AuditError> {
        let Some(path) = &settings.path else { return Ok(Audit::off()) };
        let chain = match Chain::open(path, settings.max_bytes, settings.keep) {
            Ok(chain) => Some(chain),
            Err(source) if settings.on_failure == OnFailure::Closed => {
                return Err(AuditError { path: path.clone(), source });
            }
            Err(source) => {
                tracing::error!(
                    "{}; going on without an audit trail (audit-on-failure = open)",
                    AuditError { path: path.clone(), source }
                );
                None
            }
        };
        Ok(Audit { chain, on_failure: settings.on_failure, failing: Mutex::new(None), digests })
    }

    /// No audit trail.
    pub fn off() -> Audit {
        Audit { chain: None, on_failure: OnFailure::Open, failing: Mutex::new(None), digests: DigestKey::random() }
    }

    /// A call's arguments as its record keeps them (see `redact`).
    pub fn redact(&self, arguments: &Value) -> Value {
        self.digests.redact(arguments)
    }

    pub fn is_on(&self) -> bool {
        self.chain.is_some()
    }

    /// Records `event`. A failure is logged; it is the caller's to act on
    /// when failing closed (see `fails_closed`).
    pub fn record(&self, event: &Event<'_>) -> Result<(), AuditError> {
        let Some(chain) = &self.chain else { return Ok(()) };
        let written = chain.append_text(event.text());
        let mut failing = self.failing.lock().expect("failing lock");
        match written {
            Ok(()) => {
                if failing.take().is_some() {
                    tracing::warn!(path = %chain.path().display(), "the audit log is written again");
                }
                Ok(())
            }
            Err(source) => {
                let error = AuditError { path: chain.path().to_path_buf(), source };
                let policy = match self.on_failure {
                    OnFailure::Closed => "calls are refused until it can be (audit-on-failure = closed)",
                    OnFailure::Open => "calls go on without it (audit-on-failure = open)",
                };
                tracing::error!("{error}; {policy}");
                failing.get_or_insert_with(Instant::now);
                Err(error)
            }
        }
    }

    /// Whether the trail lets calls be answered, for readiness: failing
    /// closed after a failed record, not until its file can be opened for
    /// appending again (checked here, without writing a record or using up
    /// the calls' retry, so a server no call reaches can become ready again).
    pub fn ready(&self) -> bool {
        let Some(chain) = &self.chain else { return true };
        if self.on_failure == OnFailure::Open || self.failing.lock().expect("failing lock").is_none() {
            return true;
        }
        chain.writable().is_ok()
    }

    /// Whether a failed record must fail its call.
    pub fn fails_closed(&self) -> bool {
        self.on_failure == OnFailure::Closed
    }

    /// Whether calls may start: not while failing closed, except once every
    /// `RETRY`, to try the file again.
    pub fn admits_calls(&self) -> bool {
        if self.on_failure == OnFailure::Open {
            return true;
        }
        let mut failing = self.failing.lock().expect("failing lock");
        match *failing {
            None => true,
            Some(since) if since.elapsed() >= RETRY => {
                *failing = Some(Instant::now());
                true
            }
            Some(_) => false,
        }
    }
}

/// This process's id, asked of the kernel once (`std::process::id` is a
/// system call each time, and every record names its process).
fn pid() -> u32 {
    static PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *PID.get_or_init(std::process::id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_written_as_its_fields_would_be() {
        let record = CallRecord {
            who: Who { peer: Some("pid 1".into()), client: Some("c \"quoted\" 1.0".into()), ..Who::new("stdio") },
            tool: ToolRef { name: "read".into(), version: "1".into(), sha256: "ab".into(), signer: None },
            arguments: json!({"path": "a.txt", "limit": 3}),
            grants: json!([{"path": "/r", "mode": "ro"}]),
            outcome: json!({"result": "page", "page": 1, "last": true}),
            duration_ms: 0.125,
        };
        let event = Event::Call(&record);
        // Past the time, which differs between the two.
        let after_time = |text: String| text[text.find(r#","event""#).unwrap()..].to_string();
        assert_eq!(after_time(event.text()), after_time(chain::fields_text(event.fields())));
        assert!(event.text().starts_with(r#","time":""#), "{}", event.text());
    }

    #[test]
    fn failing_closed_refuses_calls_until_a_retry_and_open_never_does() {
        for on_failure in [OnFailure::Closed, OnFailure::Open] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("audit.log");
            let settings = AuditSettings { path: Some(path.clone()), on_failure, max_bytes: 1 << 20, keep: 1 };
            let audit = Audit::open(&settings, DigestKey::random()).unwrap();
            let stop = Event::Stop { calls: 0 };
            audit.record(&stop).unwrap();
            // The file can no longer be opened for appending (as a full disk
            // or a revoked permission would refuse writes).
            std::fs::remove_file(&path).unwrap();
            std::fs::create_dir(&path).unwrap();
            assert!(audit.record(&stop).is_err());
            match on_failure {
                OnFailure::Closed => {
                    assert!(audit.fails_closed());
                    assert!(!audit.admits_calls(), "refused while failing");
                    *audit.failing.lock().unwrap() = Some(Instant::now() - RETRY);
                    assert!(audit.admits_calls(), "one call tries again");
                    assert!(!audit.admits_calls(), "and the next waits for the retry");
                }
                OnFailure::Open => assert!(audit.admits_calls() && !audit.fails_closed()),
            }
            std::fs::remove_dir(&path).unwrap();
            audit.record(&stop).unwrap();
            assert!(audit.admits_calls(), "writable again");
        }
    }
}
