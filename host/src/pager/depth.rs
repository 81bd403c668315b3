//! Depth truncation for JSON items: a third-party tool's deeply nested item is
//! cut at a configurable depth, each cut container replaced by a marker saying
//! how many entries it held.

use serde_json::Value;

/// How deeply arrays and objects nest in a JSON text, found by one pass over
/// its bytes (brackets inside strings do not count): the cheap test that spares
/// parsing the items that need no truncation.
pub fn nesting(json: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in json.as_bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Whether a JSON text nests deeper than `max`. Its opening brackets, counted
/// anywhere (a count the compiler vectorizes), bound its depth from above:
/// only a text with more of them than `max` is scanned (`nesting`).
pub fn deeper_than(json: &str, max: usize) -> bool {
    let opening = json.bytes().filter(|b| matches!(b, b'[' | b'{')).count();
    opening > max && nesting(json) > max
}

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
    fn nesting_counts_brackets_outside_strings() {
        assert_eq!(nesting(r#"{"a":[1,{"b":2}]}"#), 3);
        assert_eq!(nesting(r#"{"a":"[[[{{{\"]]]"}"#), 1);
        assert_eq!(nesting("42"), 0);
        for text in [r#"{"a":{"b":{"c":[1,2,3]}},"top":1}"#, r#"[[1,2],3]"#, r#"{"s":"\\"}"#] {
            let value: Value = serde_json::from_str(text).unwrap();
            let parsed_depth = |v: &Value| -> usize {
                fn d(v: &Value) -> usize {
                    match v {
                        Value::Array(a) => 1 + a.iter().map(d).max().unwrap_or(0),
                        Value::Object(m) => 1 + m.values().map(d).max().unwrap_or(0),
                        _ => 0,
                    }
                }
                d(v)
            };
            assert_eq!(nesting(text), parsed_depth(&value), "{text}");
        }
    }

    #[test]
    fn deeper_than_agrees_with_the_scan() {
        let texts = [r#"{"a":[1,{"b":2}]}"#, r#"{"a":"[[[{{{\"]]]"}"#, "[[[]]]", "1", r#"{"p":"x"}"#, "[[],[],[]]"];
        for text in texts {
            for max in 0..5 {
                assert_eq!(deeper_than(text, max), nesting(text) > max, "{text} {max}");
            }
        }
    }

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
