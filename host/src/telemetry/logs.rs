//! `--log-format json`: one JSON object a line — `timestamp` (RFC 3339),
//! `level`, `message` and the record's own fields, `target`, and, inside a
//! traced request, its `trace_id` and `span_id`, so a log pipeline can join
//! a line to its trace.

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The JSON line format.
pub(super) struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'span> LookupSpan<'span>,
    N: for<'writer> FormatFields<'writer> + 'static,
{
    fn format_event(&self, _ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let meta = event.metadata();
        let mut object = Map::new();
        let now = humantime::format_rfc3339_micros(std::time::SystemTime::now());
        object.insert("timestamp".into(), now.to_string().into());
        object.insert("level".into(), meta.level().as_str().into());
        event.record(&mut Fields(&mut object));
        object.insert("target".into(), meta.target().into());
        if let Some(ids) = super::traces::current_ids() {
            object.insert("trace_id".into(), ids.trace.into());
            object.insert("span_id".into(), ids.span.into());
        }
        writeln!(writer, "{}", Value::Object(object))
    }
}

/// Puts a record's fields into the line's object, numbers and booleans as such.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().into(), format!("{value:?}").into());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0.insert(field.name().into(), value.to_string().into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::fmt::MakeWriter;

    /// What the subscriber wrote, shared with the test.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Captured;
        fn make_writer(&'a self) -> Captured {
            self.clone()
        }
    }

    #[test]
    fn a_record_is_one_object_with_its_fields_typed() {
        let captured = Captured::default();
        let subscriber = tracing_subscriber::fmt().event_format(JsonLines).with_writer(captured.clone()).finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(calls = 3u64, ok = true, who = "ci", "slow {}", "read");
        });
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        let line: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(line["level"], "WARN");
        assert_eq!(line["message"], "slow read");
        assert_eq!(
            (line["calls"].as_u64(), line["ok"].as_bool(), line["who"].as_str()),
            (Some(3), Some(true), Some("ci"))
        );
        assert!(line["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')), "{line}");
        assert!(line.get("trace_id").is_none(), "no trace outside a traced request: {line}");
    }
}
