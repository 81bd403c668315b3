//! Metadata first: what the whole result holds, counted before the first
//! page is answered, so a model learns its size and where it lies before it
//! decides to page or to narrow.
//!
//! When the first page does not hold the whole result of a tool that changes
//! nothing (read-only, and not asking for write access) and whose own summary
//! is not exact (`read` knows a file's size; `grep` cannot know its matches
//! without searching), the pager runs the tool a second time with the same
//! arguments, in an instance of its own, and pulls the whole stream without
//! delivering it: items (or lines), bytes, and, for items with a `path`, how
//! many per path. Any tool gets this, a
//! third party's too. The count is bounded by time and bytes (the limits
//! `count_ms` and `count_max_bytes`, and the call's own deadline); past a
//! bound it says "at least". It never fails the page: a count that cannot
//! run is a count of nothing, not exact.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::BYTES_PER_TOKEN;
use crate::registry::Tool;
use crate::runtime::{CallContext, Runtime};
use crate::tool::{Budget, Payload};

/// How much counting a first page may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountBounds {
    /// Wall time; zero turns counting off.
    pub time: Duration,
    /// Payload bytes; zero turns counting off.
    pub bytes: u64,
}

/// The paths `top` lists, at most.
const TOP: usize = 5;

/// What the whole result holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Whole {
    /// Items (lines, for text).
    pub items: u64,
    /// Payload bytes.
    pub bytes: u64,
    /// Whether the stream was counted to its end (else these are lower bounds).
    pub exact: bool,
    /// Items per path, for items that name one (most first, then by path).
    pub paths: Vec<(String, u64)>,
}

impl Whole {
    /// The count as a model reads it: totals, estimated tokens, the top
    /// paths and, past a bound, that they are lower bounds.
    pub fn to_json(&self) -> Value {
        let mut out = json!({
            "items": self.items,
            "bytes": self.bytes,
            "estimated_tokens": self.bytes.div_ceil(u64::from(BYTES_PER_TOKEN)),
            "exact": self.exact,
        });
        if !self.paths.is_empty() {
            out["paths"] = self.paths.len().into();
            let top: Vec<Value> =
                self.paths.iter().take(TOP).map(|(path, items)| json!({ "path": path, "items": items })).collect();
            out["top_paths"] = Value::Array(top);
        }
        out
    }

    /// "12,345 items (~80,000 tokens)" or "at least …".
    pub fn sentence(&self) -> String {
        let tokens = self.bytes.div_ceil(u64::from(BYTES_PER_TOKEN));
        let at_least = if self.exact { "" } else { "at least " };
        let mut said = format!("{at_least}{} items (~{tokens} tokens) in all", self.items);
        if !self.paths.is_empty() {
            said.push_str(&format!(" in {at_least}{} files", self.paths.len()));
        }
        said
    }
}

/// Counts the whole output of `tool` called with `args` (its canonical JSON),
/// within `bounds` and before `ctx`'s deadline (keeping `margin` of it to
/// answer the page). `None` when counting is off.
pub fn count(
    runtime: &Runtime,
    ctx: &CallContext,
    tool: &Tool,
    args: &str,
    bounds: CountBounds,
    margin: Duration,
) -> Option<Whole> {
    if bounds.time.is_zero() || bounds.bytes == 0 {
        return None;
    }
    let started = Instant::now();
    let deadline = (started + bounds.time).min(ctx.deadline.checked_sub(margin)?);
    if deadline <= started {
        return None;
    }
    let counting = CallContext { grants: ctx.grants.clone(), signal: ctx.signal.clone(), deadline };
    let mut whole = Whole { items: 0, bytes: 0, exact: false, paths: Vec::new() };
    let mut paths: HashMap<String, u64> = HashMap::new();
    let Ok(mut call) = runtime.open(tool.target(), &counting, args, None) else { return Some(whole) };
    let budget = Budget { bytes: 1 << 20, items: 100_000 };
    loop {
        if whole.bytes >= bounds.bytes || Instant::now() >= deadline || ctx.signal.is_cancelled() {
            break;
        }
        match call.next(budget) {
            Ok(Some(chunk)) => {
                whole.bytes += chunk.payload.len() as u64;
                match &chunk.payload {
                    Payload::Item(text) if !chunk.continued => {
                        whole.items += 1;
                        let path = serde_json::from_str::<Value>(text)
                            .ok()
                            .and_then(|item| item.get("path").and_then(Value::as_str).map(str::to_string));
                        if let Some(path) = path {
                            *paths.entry(path).or_default() += 1;
                        }
                    }
                    Payload::Item(_) => {}
                    _ => whole.items += u64::from(chunk.budget_items()),
                }
            }
            Ok(None) => {
                whole.exact = true;
                break;
            }
            // A timeout, a limit, the tool's own error: what was counted stands, as a lower bound.
            Err(_) => break,
        }
    }
    let mut paths: Vec<(String, u64)> = paths.into_iter().collect();
    paths.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    whole.paths = paths;
    Some(whole)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_says_its_totals_and_whether_they_are_exact() {
        let paths = vec![("b".to_string(), 3), ("a".to_string(), 1)];
        let whole = Whole { items: 4, bytes: 400, exact: true, paths };
        assert_eq!(whole.sentence(), "4 items (~100 tokens) in all in 2 files");
        let shown = whole.to_json();
        assert_eq!(shown["top_paths"][0], json!({"path": "b", "items": 3}));
        assert_eq!((shown["estimated_tokens"].as_u64(), shown["exact"].as_bool()), (Some(100), Some(true)));
        let partial = Whole { exact: false, paths: Vec::new(), ..whole };
        assert_eq!(partial.sentence(), "at least 4 items (~100 tokens) in all");
        assert!(partial.to_json().get("top_paths").is_none());
    }
}
