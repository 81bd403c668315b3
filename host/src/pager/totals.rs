//! The counts of a sharded call's earlier shards, and how they make the whole
//! call's: each shard's `info` and `summary.totals` count its own range, so
//! the call's are the head shard's with every top-level non-negative integer
//! raised by the same field's sum over the shards before it. Pure: no I/O.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tool::Summary;

/// Sums of top-level non-negative integer fields, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Counts(BTreeMap<String, u64>);

impl Counts {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds `object`'s top-level non-negative integers (anything else, and a
    /// value that is not an object, adds nothing).
    pub fn add(&mut self, object: &Value) {
        let Some(object) = object.as_object() else { return };
        for (name, value) in object {
            if let Some(n) = value.as_u64() {
                let sum = self.0.entry(name.clone()).or_default();
                *sum = sum.saturating_add(n);
            }
        }
    }

    /// `object` with each top-level non-negative integer raised by this
    /// field's sum; its other fields as they are.
    pub fn apply(&self, mut object: Value) -> Value {
        if let Some(fields) = object.as_object_mut() {
            for (name, value) in fields.iter_mut() {
                if let (Some(n), Some(base)) = (value.as_u64(), self.0.get(name)) {
                    *value = n.saturating_add(*base).into();
                }
            }
        }
        object
    }
}

/// The counts of the shards before one: what its `info` and summary totals
/// are raised by.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Base {
    /// Sums over the earlier shards' final `info`.
    #[serde(rename = "i", default, skip_serializing_if = "Counts::is_empty")]
    pub info: Counts,
    /// Sums over the earlier shards' final `summary.totals`.
    #[serde(rename = "t", default, skip_serializing_if = "Counts::is_empty")]
    pub totals: Counts,
}

/// What a shard said about its range once it had given all of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Final {
    pub info: Value,
    pub summary: Summary,
}

impl Base {
    /// The base of the shard after one that started at `self` and ended
    /// with `last`.
    pub fn after(&self, last: &Final) -> Base {
        let mut next = self.clone();
        next.info.add(&last.info);
        next.totals.add(&last.summary.totals);
        next
    }

    /// The whole call's summary from the head shard's: totals raised, exact
    /// only when the head is the `last` shard and its own summary is exact.
    pub fn summary(&self, head: Summary, last: bool) -> Summary {
        Summary { totals: self.totals.apply(head.totals), exact: last && head.exact, suggestions: head.suggestions }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn summary(totals: Value, exact: bool) -> Summary {
        Summary { totals, exact, suggestions: vec!["narrow".into()] }
    }

    #[test]
    fn a_heads_integers_are_raised_by_the_earlier_shards_sums_and_the_rest_kept() {
        let shards = [
            json!({"root": "/r", "files_searched": 3, "matches": 10, "errors": 0}),
            json!({"root": "/r", "files_searched": 2, "matches": 5, "errors": 1, "extra": 7}),
        ];
        let mut base = Base::default();
        for info in &shards {
            base = base.after(&Final { info: info.clone(), summary: summary(json!({"matches": 1}), true) });
        }
        let head = json!({"root": "/r", "files_searched": 1, "matches": 0, "errors": 0, "ratio": 0.5, "neg": -2});
        assert_eq!(
            base.info.apply(head),
            json!({"root": "/r", "files_searched": 6, "matches": 15, "errors": 1, "ratio": 0.5, "neg": -2}),
            "only the head's own fields, integers summed; `extra` is not the head's"
        );
        assert_eq!(base.info.apply(json!("not an object")), json!("not an object"));
    }

    #[test]
    fn the_summary_is_exact_only_at_the_last_shard_when_the_heads_is() {
        let mut base = Base::default();
        base.totals.add(&json!({"matches": 4, "files": 2}));
        let whole = base.summary(summary(json!({"matches": 1, "files": 1}), true), false);
        assert_eq!((whole.totals, whole.exact), (json!({"matches": 5, "files": 3}), false));
        assert!(base.summary(summary(json!({}), true), true).exact);
        assert!(!base.summary(summary(json!({}), false), true).exact);
        assert_eq!(base.summary(summary(json!({}), true), true).suggestions, ["narrow"]);
    }

    #[test]
    fn sums_saturate_and_a_base_round_trips_compactly() {
        let mut counts = Counts::default();
        counts.add(&json!({"n": u64::MAX}));
        counts.add(&json!({"n": 1}));
        assert_eq!(counts.apply(json!({"n": 1})), json!({"n": u64::MAX}));
        let base = Base { info: counts, totals: Counts::default() };
        let text = serde_json::to_string(&base).unwrap();
        assert_eq!(text, format!(r#"{{"i":{{"n":{}}}}}"#, u64::MAX), "empty sums are left out");
        assert_eq!(serde_json::from_str::<Base>(&text).unwrap(), base);
        assert_eq!(serde_json::from_str::<Base>("{}").unwrap(), Base::default());
    }
}
