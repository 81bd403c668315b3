//! What a model reads when more remains: the footer, one sentence saying
//! what the page shows, of how much, why it ended (its size or its time) and
//! the call that continues; and what remains, as far as the tool's totals tell.

use serde_json::{Map, Value};

use crate::pager::BYTES_PER_TOKEN;
use crate::pager::page::{Ended, Page};

/// What remains after a page that is not the last, as far as the tool's
/// totals tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remaining {
    bytes: Option<u64>,
    items: Option<u64>,
}

impl Remaining {
    pub fn to_json(self) -> Value {
        let mut out = Map::new();
        if let Some(bytes) = self.bytes {
            out.insert("bytes".into(), bytes.into());
            out.insert("estimated_tokens".into(), bytes.div_ceil(u64::from(BYTES_PER_TOKEN)).into());
        }
        if let Some(items) = self.items {
            out.insert("items".into(), items.into());
        }
        Value::Object(out)
    }
}

pub fn remaining(page: &Page) -> Option<Remaining> {
    page.next_cursor.as_ref()?;
    let totals = &page.summary.as_ref()?.totals;
    let delivered_bytes = page.span.map_or(page.bytes_before + page.bytes, |s| s.end_byte);
    let total_bytes = totals.get("range_end").or_else(|| totals.get("bytes")).and_then(Value::as_u64);
    let bytes = total_bytes.and_then(|t| t.checked_sub(delivered_bytes));
    let items = totals.get("items").and_then(Value::as_u64).map(|t| t.saturating_sub(page.items_before + page.items));
    (bytes.is_some() || items.is_some()).then_some(Remaining { bytes, items })
}

/// The line the model reads when more remains: one sentence saying what the
/// page shows, of how much (exact or "at least"), and the call that continues.
pub fn footer(page: &Page) -> Option<String> {
    let args = page.continue_with.as_ref()?;
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    let shows = match (page.span, &page.whole) {
        (Some(crate::tool::Span { lines: Some((a, b)), start_byte, end_byte }), _) => {
            format!("lines {a}–{b} (bytes {start_byte}–{end_byte})")
        }
        (Some(span), _) => format!("bytes {}–{}", span.start_byte, span.end_byte),
        (None, Some(whole)) => format!("{} {}", page.items, whole.sentence()),
        (None, None) if page.items == 0 => "no item".to_string(),
        (None, None) if page.items_before == 0 => format!("{} item{}", page.items, plural(page.items)),
        (None, None) => format!("items {}–{}", page.items_before + 1, page.items_before + page.items),
    };
    let mut left = Vec::new();
    if let Some(Remaining { bytes, items }) = remaining(page) {
        if let Some(bytes) = bytes {
            left.push(format!("about {bytes} more bytes (~{} tokens)", bytes.div_ceil(u64::from(BYTES_PER_TOKEN))));
        }
        if let (Some(items), None) = (items, &page.whole) {
            left.push(format!("{items} more item{}", plural(items)));
        }
    }
    let left = match left.is_empty() {
        true => String::new(),
        false => format!(", {} remain", left.join(" and ")),
    };
    if page.ended == Ended::Time {
        let so_far = so_far(&page.info).map_or(String::new(), |counts| format!(" (so far: {counts})"));
        return Some(format!(
            "[Page {} ended at its time limit, not its size: it shows {shows}{so_far}; \
             the work goes on from there: continue with `{}` {args}]",
            page.index + 1,
            page.tool
        ));
    }
    Some(format!("[Page {} shows {shows}{left}; continue with `{}` {args}]", page.index + 1, page.tool))
}

/// How far a call got, as its tool's `info` counts it: its top-level
/// counts, "files_searched 48210, matches 0" (none: it counts nothing).
fn so_far(info: &Value) -> Option<String> {
    let counts: Vec<String> =
        info.as_object()?.iter().filter_map(|(name, value)| Some(format!("{name} {}", value.as_u64()?))).collect();
    (!counts.is_empty()).then(|| counts.join(", "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::results::tests::page;
    use crate::tool::Payload;

    #[test]
    fn the_footer_is_one_sentence_saying_what_is_shown_of_how_much_and_how_to_go_on() {
        let mut first = page(vec![(Payload::Item(r#"{"path":"a"}"#.into()), false)], json!({}));
        first.continue_with = Some(json!({"cursor": "h1_x.1"}));
        let paths = vec![("a".to_string(), 1)];
        first.whole = Some(crate::pager::count::Whole { items: 13, bytes: 400, exact: true, paths });
        let said = footer(&first).unwrap();
        assert_eq!(
            said,
            r#"[Page 1 shows 1 of 13 items in 1 file (~100 tokens in all); continue with `t` {"cursor":"h1_x.1"}]"#
        );
        let mut later =
            page(vec![(Payload::Item("[1]".into()), false), (Payload::Item("[2]".into()), false)], json!({}));
        (later.index, later.items_before) = (1, 5);
        later.continue_with = Some(json!({"cursor": "h1_x.2"}));
        let said = footer(&later).unwrap();
        assert_eq!(said, r#"[Page 2 shows items 6–7; continue with `t` {"cursor":"h1_x.2"}]"#);
        assert_eq!(said.matches(". ").count(), 0, "one sentence");
    }

    #[test]
    fn a_page_that_ended_on_time_says_so_and_how_far_the_work_got() {
        let info = json!({"root": "/r", "files_searched": 48210, "matches": 0});
        let mut empty = page(Vec::new(), info);
        (empty.index, empty.items_before, empty.ended) = (2, 4, Ended::Time);
        empty.continue_with = Some(json!({"cursor": "h1_x.3"}));
        assert_eq!(
            footer(&empty).unwrap(),
            "[Page 3 ended at its time limit, not its size: it shows no item (so far: files_searched 48210, \
             matches 0); the work goes on from there: continue with `t` {\"cursor\":\"h1_x.3\"}]"
        );
        assert_eq!(so_far(&json!({"root": "/r"})), None, "no counts, nothing said");
    }
}
