//! A result as it goes on the wire: a JSON tree built and serialized, or JSON
//! text written once by whoever knows its shape (a page of items, which would
//! otherwise be parsed into a tree only to be written out again).

use serde_json::Value;

/// A response's `result`.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// A tree, serialized when the response is.
    Tree(Value),
    /// One JSON object, already written.
    Written(Written),
}

/// A JSON object written as text, and where its `_meta` object ends, so that
/// fields can be added to both without parsing it again (see `modern::stamp`).
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    text: String,
    meta_end: Option<usize>,
}

impl Written {
    /// `text`, which must be one JSON object; `meta_end`, when it has a
    /// top-level `_meta` object, the offset of that object's closing brace.
    pub fn new(text: String, meta_end: Option<usize>) -> Written {
        debug_assert!(meta_end.is_none_or(|at| text.as_bytes().get(at) == Some(&b'}')));
        Written { text, meta_end }
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Adds `"key":value` (`value` already JSON) as the object's last field,
    /// or, with `in_meta`, as the last field of its `_meta` (made when it has none).
    pub fn append(&mut self, key: &str, value: &str, in_meta: bool) {
        let field = format!("{}:{value}", Value::from(key));
        match (in_meta, self.meta_end) {
            (true, Some(at)) => {
                let empty = self.text[..at].trim_end().ends_with('{');
                let insert = if empty { field } else { format!(",{field}") };
                self.text.insert_str(at, &insert);
                self.meta_end = Some(at + insert.len());
            }
            (true, None) => {
                self.append("_meta", "{}", false);
                self.meta_end = Some(self.text.len() - 2);
                self.append(key, value, true);
            }
            (false, _) => {
                let at = self.text.len() - 1;
                let empty = self.text[..at].trim_end().ends_with('{');
                let insert = if empty { field } else { format!(",{field}") };
                self.text.insert_str(at, &insert);
            }
        }
    }
}

impl Body {
    /// The result as a tree (parsed again when it was written as text).
    pub fn into_value(self) -> Value {
        match self {
            Body::Tree(value) => value,
            Body::Written(written) => serde_json::from_str(&written.text).expect("a written body is JSON"),
        }
    }

    /// The result as JSON text.
    pub fn into_json(self) -> String {
        match self {
            Body::Tree(value) => value.to_string(),
            Body::Written(written) => written.text,
        }
    }
}

impl From<Value> for Body {
    fn from(value: Value) -> Body {
        Body::Tree(value)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fields_are_appended_to_the_object_and_to_its_meta() {
        let text = r#"{"a":1,"_meta":{"x":2}}"#.to_string();
        let mut written = Written::new(text.clone(), Some(text.len() - 2));
        written.append("m", r#"{"n":"v"}"#, true);
        written.append("last", "true", false);
        written.append("m2", "3", true);
        let got: Value = serde_json::from_str(written.as_str()).unwrap();
        assert_eq!(got, json!({"a": 1, "_meta": {"x": 2, "m": {"n": "v"}, "m2": 3}, "last": true}));
        let keys: Vec<_> = got.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["a", "_meta", "last"], "fields keep their order");
    }

    #[test]
    fn a_meta_is_made_when_there_is_none_and_empty_objects_take_fields() {
        let mut written = Written::new("{}".into(), None);
        written.append("m", "1", true);
        written.append("k", "\"v\"", false);
        assert_eq!(serde_json::from_str::<Value>(written.as_str()).unwrap(), json!({"_meta": {"m": 1}, "k": "v"}));
        let mut empty_meta = Written::new(r#"{"_meta":{}}"#.into(), Some(10));
        empty_meta.append("m", "1", true);
        assert_eq!(empty_meta.as_str(), r#"{"_meta":{"m":1}}"#);
        assert_eq!(Body::Written(empty_meta).into_value(), json!({"_meta": {"m": 1}}));
    }
}
