//! Depth truncation for JSON items: a third-party tool's deeply nested item is
//! cut at a configurable depth, each cut container replaced by a marker saying
//! how many entries it held.

use serde_json::Value;

/// Returns `value` with every array or object nested deeper than `max_depth`
/// replaced by `"[… N items truncated]"`; `None` when nothing was cut.
pub fn truncate(value: &Value, max_depth: usize) -> Option<Value> {
    fn walk(value: &Value, depth: usize, max: usize, cut: &mut bool) -> Value {
        match value {
            Value::Array(items) if depth >= max => {
                *cut = true;
                Value::String(format!("[… {} items truncated]", items.len()))
            }
            Value::Object(map) if depth >= max => {
                *cut = true;
                Value::String(format!("[… {} items truncated]", map.len()))
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| walk(v, depth + 1, max, cut)).collect()),
            Value::Object(map) => {
                Value::Object(map.iter().map(|(k, v)| (k.clone(), walk(v, depth + 1, max, cut))).collect())
            }
            other => other.clone(),
        }
    }
    let mut cut = false;
    let out = walk(value, 0, max_depth, &mut cut);
    cut.then_some(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn shallow_items_are_left_alone() {
        assert_eq!(truncate(&json!({"a": [1, 2, {"b": 3}]}), 3), None);
    }

    #[test]
    fn deep_containers_become_markers_with_their_size() {
        let deep = json!({"a": {"b": {"c": [1, 2, 3]}}, "top": 1});
        assert_eq!(truncate(&deep, 2), Some(json!({"a": {"b": "[… 1 items truncated]"}, "top": 1})));
        assert_eq!(truncate(&json!([[1, 2], 3]), 1), Some(json!(["[… 2 items truncated]", 3])));
    }

    #[test]
    fn depth_zero_cuts_the_item_itself() {
        assert_eq!(truncate(&json!([1, 2, 3]), 0), Some(json!("[… 3 items truncated]")));
    }
}
