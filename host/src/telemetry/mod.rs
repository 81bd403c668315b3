//! What the process tells its operators besides the audit trail and the
//! metrics: log lines on stderr (text for people, JSON for a log pipeline)
//! and, when an OTLP endpoint is configured, OpenTelemetry traces (`traces`).
//! One subscriber carries both; each has its own filter, so the spans traces
//! are made of cost nothing (a disabled callsite) while traces are off.

mod logs;
pub mod traces;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub use traces::{Exporting, RequestSpan, TraceError};

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// One line of text a record, for people.
    #[default]
    Text,
    /// One JSON object a line, with the trace and span ids when there are some.
    Json,
}

/// What is logged, and how.
#[derive(Debug, Clone, Copy)]
pub struct Logs {
    /// Debug level for Cordon's own records (`RUST_LOG` overrides).
    pub debug: bool,
    pub format: LogFormat,
}

/// Installed for the life of the process: dropped (at exit), it sends the
/// spans not exported yet and stops the exporter.
#[must_use = "dropping it stops the trace exporter"]
pub struct Telemetry {
    traces: Option<traces::Exporter>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(traces) = self.traces.take() {
            traces.shutdown();
        }
    }
}

/// Installs the process's subscriber: logs as `logs` says, and traces sent
/// where `exporting` says (none: spans stay disabled). An exporter that
/// cannot be built (a malformed endpoint) is the error; nothing is installed then.
pub fn init(logs: Logs, exporting: Option<Exporting>) -> Result<Telemetry, TraceError> {
    let exporter = exporting.map(traces::Exporter::start).transpose()?;
    let default = if logs.debug { "cordon=debug,info" } else { "cordon=info,warn" };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let lines = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(false);
    let lines = match logs.format {
        LogFormat::Text => lines.with_filter(filter).boxed(),
        LogFormat::Json => lines.event_format(logs::JsonLines).with_filter(filter).boxed(),
    };
    // Two stacks, not an optional layer: an absent `Option` layer takes an
    // interest in every callsite, which would have spans (wasmtime's own, at
    // trace level) made and then filtered at each call even with traces off.
    match &exporter {
        Some(exporter) => tracing_subscriber::registry().with(lines).with(exporter.layer()).init(),
        None => tracing_subscriber::registry().with(lines).init(),
    }
    Ok(Telemetry { traces: exporter })
}
