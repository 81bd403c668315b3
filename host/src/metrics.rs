//! What an operator scrapes: Prometheus metrics in the text exposition
//! format (0.0.4), made with the Prometheus project's own `prometheus-client`.
//!
//! The server counts as things happen (calls and their outcomes, latencies,
//! pages and bytes, audit writes, requests, refusals, reloads); what it holds
//! now (parked streams, slots, calls in flight, compiled tools, memory and
//! file descriptors) is read at each scrape (`Live`). Every label is bounded:
//! tool names the server offers (any other is `(unknown)`), outcomes and codes
//! from fixed sets, forms, transports, eras; never a path, an argument or a
//! principal. (It reads `/proc/self` through `ambient`, the one module that
//! opens paths.)

use std::path::Path;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The tool label of a call of a tool the server does not offer.
pub const UNKNOWN_TOOL: &str = "(unknown)";

/// How a call ended, as the `outcome` label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Answered with a result (a page, a host tool's answer).
    Ok,
    /// The tool answered with an error of its own (`code`: its error code).
    ToolError,
    /// Stopped by its time limit.
    Timeout,
    /// No slot was free in time.
    Busy,
    /// The client cancelled it.
    Cancelled,
    /// Refused before or around the call (`code`: the reason).
    Refused,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::Timeout => "timeout",
            Outcome::Busy => "busy",
            Outcome::Cancelled => "cancelled",
            Outcome::Refused => "refused",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: String,
    outcome: &'static str,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FormLabel {
    form: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    transport: &'static str,
    era: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WayLabel {
    way: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StoreLabels {
    store: &'static str,
    op: &'static str,
    result: &'static str,
}

/// A histogram of seconds, from half a millisecond to half a minute.
fn seconds() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 17))
}

/// The server's metrics.
#[derive(Debug)]
pub struct Metrics {
    /// Off (`--no-metrics`): nothing is counted.
    on: bool,
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    call_seconds: Family<ToolLabel, Histogram, fn() -> Histogram>,
    pages: Family<FormLabel, Counter>,
    page_bytes: Family<FormLabel, Counter>,
    audit: Family<ResultLabel, Counter>,
    requests: Family<RequestLabels, Counter>,
    sessions: Family<RequestLabels, Counter>,
    refusals: Family<ReasonLabel, Counter>,
    reloads: Family<ResultLabel, Counter>,
    handle_store_errors: Counter,
    count_seconds: Family<WayLabel, Histogram, fn() -> Histogram>,
    handle_ops: Family<StoreLabels, Counter>,
    notices: Family<KindLabel, Counter>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new(true)
    }
}

impl Metrics {
    /// The metrics, counted when `on`.
    pub fn new(on: bool) -> Metrics {
        let mut registry = Registry::with_prefix("cordon");
        let calls = Family::default();
        registry.register("calls", "Tool calls (one per page), by tool, outcome and code", calls.clone());
        let call_seconds = Family::<ToolLabel, Histogram, fn() -> Histogram>::new_with_constructor(seconds);
        registry.register(
            "call_duration_seconds",
            "Time to answer a tool call (a page), by tool",
            call_seconds.clone(),
        );
        let pages = Family::default();
        registry.register("pages", "Pages served, by form (text or json)", pages.clone());
        let page_bytes = Family::default();
        registry.register("page_payload_bytes", "Payload bytes served in pages, by form", page_bytes.clone());
        let audit = Family::default();
        registry.register("audit_records", "Audit records, by result (written or failed)", audit.clone());
        let requests = Family::default();
        registry.register("requests", "JSON-RPC requests handled, by transport and protocol era", requests.clone());
        let sessions = Family::default();
        registry.register("sessions", "Legacy sessions initialized, by transport and negotiated era", sessions.clone());
        let refusals = Family::default();
        registry.register(
            "refusals",
            "Requests refused before any session (authentication, Origin, Host), by reason",
            refusals.clone(),
        );
        let reloads = Family::default();
        registry.register("tool_reloads", "Reloads of the installed tools, by result", reloads.clone());
        let handle_store_errors = Counter::default();
        registry.register(
            "handle_store_errors",
            "Calls refused because the handle store failed",
            handle_store_errors.clone(),
        );
        let count_seconds = Family::<WayLabel, Histogram, fn() -> Histogram>::new_with_constructor(seconds);
        registry.register(
            "first_page_count_duration_seconds",
            "Time spent counting a whole result for a model's first page, by way (read_ahead: on the page's own \
             stream, kept for the next pages; run_again: the tool run a second time)",
            count_seconds.clone(),
        );
        let handle_ops = Family::default();
        registry.register(
            "handle_store_operations",
            "Handle store operations, by store (memory, dir, redis), operation (mint, resolve) and result",
            handle_ops.clone(),
        );
        let notices = Family::default();
        registry.register(
            "resource_notifications",
            "Change notifications sent, by kind (updated, resync, list_changed)",
            notices.clone(),
        );
        Metrics {
            on,
            registry,
            calls,
            call_seconds,
            pages,
            page_bytes,
            audit,
            requests,
            sessions,
            refusals,
            reloads,
            handle_store_errors,
            count_seconds,
            handle_ops,
            notices,
        }
    }

    /// Whether anything is counted (not `--no-metrics`).
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// A call of `tool` (a name the server offers, else `UNKNOWN_TOOL`)
    /// ended as `outcome` (`code`: the tool's error code or the reason it was
    /// refused; empty when it answered), after `seconds`.
    pub fn call(&self, tool: &str, outcome: Outcome, code: &str, seconds: Option<f64>) {
        if !self.on {
            return;
        }
        let labels = CallLabels { tool: tool.to_string(), outcome: outcome.as_str(), code: code.to_string() };
        self.calls.get_or_create(&labels).inc();
        if let Some(seconds) = seconds {
            self.call_seconds.get_or_create(&ToolLabel { tool: tool.to_string() }).observe(seconds);
        }
    }

    /// A page of `bytes` of payload in `form` (`text` or `json`).
    pub fn page(&self, form: &'static str, bytes: u64) {
        if !self.on {
            return;
        }
        let label = FormLabel { form };
        self.pages.get_or_create(&label).inc();
        self.page_bytes.get_or_create(&label).inc_by(bytes);
    }

    /// An audit record written (`true`) or not.
    pub fn audit(&self, written: bool) {
        if !self.on {
            return;
        }
        let result = if written { "written" } else { "failed" };
        self.audit.get_or_create(&ResultLabel { result }).inc();
    }

    /// A request handled on `transport` in `era`.
    pub fn request(&self, transport: &'static str, era: &'static str) {
        if !self.on {
            return;
        }
        self.requests.get_or_create(&RequestLabels { transport, era }).inc();
    }

    /// A legacy session initialized on `transport`, negotiating `era`.
    pub fn session(&self, transport: &'static str, era: &'static str) {
        if !self.on {
            return;
        }
        self.sessions.get_or_create(&RequestLabels { transport, era }).inc();
    }

    /// A request refused before any session read it, for `reason` (a fixed code).
    pub fn refusal(&self, reason: &str) {
        if !self.on {
            return;
        }
        self.refusals.get_or_create(&ReasonLabel { reason: reason.to_string() }).inc();
    }

    /// A reload of the installed tools: `changed`, `unchanged` or `rejected`.
    pub fn reload(&self, result: &'static str) {
        if !self.on {
            return;
        }
        self.reloads.get_or_create(&ResultLabel { result }).inc();
    }

    /// A handle store read that failed.
    pub fn handle_store_error(&self) {
        if !self.on {
            return;
        }
        self.handle_store_errors.inc();
    }

    /// A first page's count of the whole result took `seconds`, made `way`
    /// (`read_ahead`, `run_again`).
    pub fn counted(&self, way: &'static str, seconds: f64) {
        if !self.on {
            return;
        }
        self.count_seconds.get_or_create(&WayLabel { way }).observe(seconds);
    }

    /// A handle store operation (`mint`, `resolve`) on `store` that worked or not.
    pub fn handle_op(&self, store: &'static str, op: &'static str, ok: bool) {
        if !self.on {
            return;
        }
        let result = if ok { "ok" } else { "error" };
        self.handle_ops.get_or_create(&StoreLabels { store, op, result }).inc();
    }

    /// A change notification sent: `updated`, `resync` or `list_changed`.
    pub fn notice(&self, kind: &'static str) {
        if self.on {
            self.notices.get_or_create(&KindLabel { kind }).inc();
        }
    }

    /// The exposition: every metric, and what `live` says the server holds now.
    pub fn render(&self, live: &Live) -> String {
        let mut text = String::new();
        let now = live.registry();
        for registry in [&self.registry, &now] {
            prometheus_client::encoding::prometheus_text::encode(&mut text, registry)
                .expect("writing to a String cannot fail");
        }
        text
    }
}

/// What the server holds at a scrape.
#[derive(Debug, Clone, Copy, Default)]
pub struct Live {
    pub parked_streams: u64,
    pub parked_bytes: u64,
    /// Parked streams given up (evicted, expired or reclaimed) since start.
    pub parked_given_up: u64,
    pub instance_slots_used: u64,
    pub instance_slots: u64,
    /// Calls waiting for an instance slot now.
    pub instance_slots_waiting: u64,
    pub calls_in_flight: u64,
    pub tools: u64,
    pub tools_compiled: u64,
    pub resident_bytes: u64,
    pub open_fds: u64,
    /// Listeners of resource changes (legacy sessions that subscribed, listen streams).
    pub resource_listeners: u64,
    /// Directories the operating system is asked to watch for them.
    pub resource_watches: u64,
}

impl Live {
    /// The process's resident memory and open file descriptors, from `/proc`.
    pub fn process() -> (u64, u64) {
        let status = crate::ambient::read_file(Path::new("/proc/self/status")).unwrap_or_default();
        let status = String::from_utf8_lossy(&status);
        let rss_kib = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0);
        let fds = crate::ambient::entries_in(Path::new("/proc/self/fd")).map_or(0, |n| n as u64);
        (rss_kib * 1024, fds)
    }

    fn registry(&self) -> Registry {
        let mut registry = Registry::with_prefix("cordon");
        let gauge = |registry: &mut Registry, name: &str, help: &str, value: u64| {
            let g: Gauge = Gauge::default();
            g.set(i64::try_from(value).unwrap_or(i64::MAX));
            registry.register(name, help, g);
        };
        gauge(&mut registry, "parked_streams", "Streams parked between pages", self.parked_streams);
        gauge(&mut registry, "parked_stream_bytes", "Bytes the parked streams hold", self.parked_bytes);
        let given_up = ConstCounter::new(self.parked_given_up);
        registry.register("parked_streams_given_up", "Parked streams evicted, expired or reclaimed", given_up);
        gauge(
            &mut registry,
            "instance_slots_in_use",
            "Instance slots held by calls and parked streams",
            self.instance_slots_used,
        );
        gauge(&mut registry, "instance_slots", "Instance slots in all", self.instance_slots);
        gauge(
            &mut registry,
            "instance_slots_waiting",
            "Calls waiting for an instance slot",
            self.instance_slots_waiting,
        );
        gauge(&mut registry, "calls_in_flight", "Tool calls being answered", self.calls_in_flight);
        gauge(&mut registry, "tools", "Tools offered", self.tools);
        gauge(&mut registry, "tools_compiled", "Tools compiled and ready to run", self.tools_compiled);
        gauge(&mut registry, "process_resident_memory_bytes", "Resident memory of the process", self.resident_bytes);
        gauge(&mut registry, "process_open_fds", "Open file descriptors of the process", self.open_fds);
        gauge(&mut registry, "resource_listeners", "Listeners of resource changes", self.resource_listeners);
        gauge(&mut registry, "resource_watches", "Directories watched for resource changes", self.resource_watches);
        registry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_is_prometheus_text_with_bounded_labels() {
        let metrics = Metrics::new(true);
        metrics.call("grep", Outcome::Ok, "", Some(0.002));
        metrics.call("read", Outcome::ToolError, "not_found", Some(0.001));
        metrics.call(UNKNOWN_TOOL, Outcome::Refused, "not_found", None);
        metrics.page("text", 120);
        metrics.refusal("expired");
        metrics.notice("resync");
        let text = metrics.render(&Live { parked_streams: 2, open_fds: 9, resource_watches: 3, ..Live::default() });
        assert!(text.contains("# TYPE cordon_calls_total counter"), "{text}");
        assert!(text.contains(r#"cordon_calls_total{tool="grep",outcome="ok",code=""} 1"#), "{text}");
        assert!(text.contains(r#"cordon_calls_total{tool="(unknown)",outcome="refused",code="not_found"} 1"#));
        assert!(text.contains(r#"cordon_call_duration_seconds_bucket{tool="grep",le="0.002"} 1"#), "{text}");
        assert!(text.contains(r#"cordon_page_payload_bytes_total{form="text"} 120"#), "{text}");
        assert!(text.contains("cordon_parked_streams 2\n") && text.contains("cordon_process_open_fds 9\n"), "{text}");
        assert!(text.contains(r#"cordon_refusals_total{reason="expired"} 1"#), "{text}");
        assert!(text.contains(r#"cordon_resource_notifications_total{kind="resync"} 1"#), "{text}");
        assert!(
            text.contains("cordon_resource_watches 3\n") && text.contains("cordon_resource_listeners 0\n"),
            "{text}"
        );
        assert!(!text.contains("# EOF"), "0.0.4 text, not OpenMetrics");
    }

    #[test]
    fn the_process_reads_its_own_memory_and_descriptors() {
        let (rss, fds) = Live::process();
        assert!(rss > 0 && fds > 0, "{rss} {fds}");
    }
}
