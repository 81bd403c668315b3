//! OpenTelemetry traces, exported over OTLP/HTTP (protobuf) by a batch
//! processor on a thread of its own, when `--otlp-endpoint` or the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `…_TRACES_ENDPOINT`) names a collector.
//!
//! Every request gets one server span, named and attributed as the
//! OpenTelemetry MCP semantic conventions say (`tools/call read`,
//! `mcp.method.name`, `gen_ai.tool.name`, `mcp.protocol.version`,
//! `jsonrpc.request.id`, `error.type`, …), a child of the client's trace when
//! the request's `_meta.traceparent` (else the HTTP `traceparent` header)
//! names one. A call's steps are its children (`step`): `validate`, `open`
//! (the guest's), `page`, `count` (a first page's whole-result count) and
//! `audit`. Spans are made under their own target, which only the exporter's
//! layer enables: with traces off, each is a disabled callsite and costs a
//! load and a branch.

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{Status, TraceContextExt, TracerProvider as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracerProvider, Tracer};
use serde_json::Value;
use tracing::field::Empty;
use tracing::{Level, Span, Subscriber};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

use crate::protocol::jsonrpc::{ErrorObject, Id};
use crate::protocol::modern::Headers;

/// The target every span is made under; only the exporter's layer enables it
/// (a target that does not start with `cordon`, so `RUST_LOG=cordon=debug`
/// does not turn spans into log lines).
pub const TARGET: &str = "otel.cordon";

/// Whether traces are exported (set once, when the exporter starts).
static ON: AtomicBool = AtomicBool::new(false);

/// Whether traces are exported.
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Where spans go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exporting {
    /// The traces URL (`…/v1/traces`); `None`: the exporter reads the
    /// standard environment variables.
    endpoint: Option<String>,
}

impl Exporting {
    /// Where traces go: `--otlp-endpoint` (a collector's base URL, as
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` is: traces go to `/v1/traces` under it),
    /// else the standard environment variables; `None` when neither names
    /// one, or when `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`.
    pub fn configured(flag: Option<&str>) -> Option<Exporting> {
        let env = |name: &str| std::env::var(name).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let disabled = env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            || env("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"));
        if disabled {
            return None;
        }
        match flag.map(str::trim).filter(|f| !f.is_empty()) {
            Some(base) => {
                let base = base.trim_end_matches('/');
                let endpoint = match base.ends_with("/v1/traces") {
                    true => base.to_string(),
                    false => format!("{base}/v1/traces"),
                };
                Some(Exporting { endpoint: Some(endpoint) })
            }
            None if env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or(env("OTEL_EXPORTER_OTLP_ENDPOINT")).is_some() => {
                Some(Exporting { endpoint: None })
            }
            None => None,
        }
    }
}

/// Why traces could not be set up.
#[derive(Debug)]
pub struct TraceError(opentelemetry_otlp::ExporterBuildError);

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the OTLP trace exporter could not be set up: {}", self.0)
    }
}

impl std::error::Error for TraceError {}

/// The tracer provider and its batch exporter.
pub(super) struct Exporter {
    provider: SdkTracerProvider,
    tracer: Tracer,
}

impl Exporter {
    /// Builds the exporter (HTTP, protobuf) and its batch processor; the
    /// service is `cordon` unless `OTEL_SERVICE_NAME` names it.
    pub(super) fn start(exporting: Exporting) -> Result<Exporter, TraceError> {
        // reqwest is built without a default crypto provider (an https collector).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = opentelemetry_otlp::SpanExporter::builder().with_http().with_protocol(Protocol::HttpBinary);
        if let Some(endpoint) = exporting.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        let exporter = builder.build().map_err(TraceError)?;
        let mut resource = Resource::builder();
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name("cordon");
        }
        let resource = resource.with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION"))).build();
        let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
        let tracer = provider.tracer("cordon");
        ON.store(true, Ordering::Relaxed);
        Ok(Exporter { provider, tracer })
    }

    /// The layer that turns Cordon's spans (and warnings inside them) into
    /// OpenTelemetry spans; nothing else reaches it.
    pub(super) fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: Subscriber + for<'span> LookupSpan<'span>,
    {
        let only = Targets::new().with_target(TARGET, Level::INFO).with_target("cordon", Level::WARN);
        tracing_opentelemetry::layer()
            .with_tracer(self.tracer.clone())
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_level(false)
            .with_tracked_inactivity(false)
            // Nothing here reads OpenTelemetry's ambient context: entering a span
            // need not attach it (a thread-local push and a clone per enter).
            .with_context_activation(false)
            .with_filter(only)
    }

    /// Exports what is left and stops.
    pub(super) fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("cordon: the last spans were not exported: {e}");
        }
    }
}

/// A request's server span (disabled when traces are off).
pub struct RequestSpan(Span);

/// What a request's span starts from.
pub struct Start<'a> {
    pub method: &'a str,
    pub id: &'a Id,
    pub params: Option<&'a Value>,
    /// `stdio`, `tcp` or `http`.
    pub transport: &'static str,
    /// An HTTP request's headers (none on stdio and TCP).
    pub headers: Option<&'a Headers>,
}

impl RequestSpan {
    /// The span of a request, its parent the trace the client's
    /// `_meta.traceparent` names, else the one its HTTP `traceparent` header
    /// names (linked, when both do and differ), else a new trace.
    pub fn start(start: Start<'_>) -> RequestSpan {
        if !on() {
            return RequestSpan(Span::none());
        }
        let id = match start.id {
            Id::Number(n) => n.to_string(),
            Id::String(s) => s.clone(),
        };
        let (network, protocol) = match start.transport {
            "stdio" => ("pipe", None),
            "http" => ("tcp", Some("http")),
            _ => ("tcp", None),
        };
        let span = tracing::info_span!(
            target: TARGET,
            "request",
            otel.name = start.method,
            otel.kind = "server",
            mcp.method.name = start.method,
            jsonrpc.request.id = id,
            network.transport = network,
            network.protocol.name = protocol,
            mcp.protocol.version = Empty,
            mcp.session.id = start.headers.and_then(|h| h.session.as_deref()),
            gen_ai.tool.name = Empty,
            gen_ai.operation.name = Empty,
            enduser.id = Empty,
            error.type = Empty,
            rpc.response.status_code = Empty,
        );
        let meta = start.params.and_then(|p| p.get("_meta"));
        let text = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_str);
        let from_meta = parent(text("traceparent"), text("tracestate"));
        let from_header = start.headers.and_then(|h| parent(h.traceparent.as_deref(), h.tracestate.as_deref()));
        match (from_meta, from_header) {
            (Some(cx), header) => {
                if let Some(header) = header.filter(|h| h.span().span_context() != cx.span().span_context()) {
                    span.add_link(header.span().span_context().clone());
                }
                let _ = span.set_parent(cx);
            }
            (None, Some(cx)) => {
                let _ = span.set_parent(cx);
            }
            (None, None) => {}
        }
        RequestSpan(span)
    }

    /// Whether the span is recorded (traces are on).
    pub fn is_recording(&self) -> bool {
        !self.0.is_disabled()
    }

    /// The span, to enter or to carry to another task or thread.
    pub fn span(&self) -> &Span {
        &self.0
    }

    /// The protocol revision the request is served in.
    pub fn era(&self, version: &'static str) {
        self.0.record("mcp.protocol.version", version);
    }

    /// Who asked (`auth::Named::label`).
    pub fn principal(&self, id: &str) {
        self.0.record("enduser.id", id);
    }

    /// A `tools/call` of an offered tool: the span is named after it.
    pub fn tool(&self, name: &str) {
        if self.0.is_disabled() {
            return;
        }
        self.0.record("otel.name", format!("tools/call {name}"));
        self.0.record("gen_ai.tool.name", name);
        self.0.record("gen_ai.operation.name", "execute_tool");
    }

    /// A call answered with the tool's error (`isError`), of this code.
    pub fn tool_error(&self, code: &str) {
        if self.0.is_disabled() {
            return;
        }
        self.0.record("error.type", "tool_error");
        self.0.set_attribute("cordon.tool_error.code", code.to_string());
        self.0.set_status(Status::error(code.to_string()));
    }

    /// How the request was answered: a JSON-RPC error's code is the span's
    /// `error.type` and its message the status.
    pub fn finish<T>(&self, result: &Result<T, ErrorObject>) {
        if self.0.is_disabled() {
            return;
        }
        if let Err(error) = result {
            let code = error.code.value().to_string();
            self.0.record("error.type", code.as_str());
            self.0.record("rpc.response.status_code", code.as_str());
            self.0.set_status(Status::error(error.message.clone()));
        }
    }
}

/// The context a W3C `traceparent` (and `tracestate`) names, when valid.
fn parent(traceparent: Option<&str>, tracestate: Option<&str>) -> Option<Context> {
    let carrier = Carrier { traceparent: traceparent?, tracestate };
    let cx = TraceContextPropagator::new().extract(&carrier);
    cx.span().span_context().is_valid().then_some(cx)
}

/// The W3C trace context fields, from `_meta` or HTTP headers.
struct Carrier<'a> {
    traceparent: &'a str,
    tracestate: Option<&'a str>,
}

impl Extractor for Carrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(self.traceparent),
            "tracestate" => self.tracestate,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

/// One step of a request (`validate`, `open`, `page`, `count`, `audit`): a
/// child of the current span, to run something in (`Span::in_scope`).
pub fn step(name: &'static str) -> Span {
    tracing::info_span!(target: TARGET, "step", otel.name = name)
}

/// The current span, to carry to another thread (`Span::in_scope`); none
/// when traces are off.
pub fn current() -> Span {
    if on() { Span::current() } else { Span::none() }
}

/// A trace's and a span's ids, in hex.
pub(super) struct Ids {
    pub trace: String,
    pub span: String,
}

/// The ids of the traced span the current thread is in, if any.
pub(super) fn current_ids() -> Option<Ids> {
    if !on() {
        return None;
    }
    let span = Span::current();
    if span.is_disabled() {
        return None;
    }
    let cx = span.context();
    let context = cx.span().span_context().clone();
    context.is_valid().then(|| Ids { trace: context.trace_id().to_string(), span: context.span_id().to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_traceparent_is_a_parent_and_a_malformed_one_is_none() {
        let cx = parent(Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), Some("rojo=1")).unwrap();
        let context = cx.span().span_context().clone();
        assert_eq!(context.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(context.span_id().to_string(), "00f067aa0ba902b7");
        assert!(context.is_remote() && context.is_sampled());
        for bad in ["", "00-xyz", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "ff-4bf9-00f0-01"] {
            assert!(parent(Some(bad), None).is_none(), "{bad}");
        }
        assert!(parent(None, Some("rojo=1")).is_none());
    }

    #[test]
    fn the_flag_is_a_base_url_and_traces_go_under_it() {
        let at = |flag| Exporting::configured(Some(flag)).and_then(|e| e.endpoint);
        // Unless the environment disables the SDK (not set in tests).
        if std::env::var_os("OTEL_SDK_DISABLED").is_none() && std::env::var_os("OTEL_TRACES_EXPORTER").is_none() {
            assert_eq!(at("http://127.0.0.1:4318").as_deref(), Some("http://127.0.0.1:4318/v1/traces"));
            assert_eq!(at("http://127.0.0.1:4318/").as_deref(), Some("http://127.0.0.1:4318/v1/traces"));
            assert_eq!(at("http://c:4318/v1/traces").as_deref(), Some("http://c:4318/v1/traces"));
        }
    }
}
