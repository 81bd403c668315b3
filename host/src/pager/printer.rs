//! The seam between paging and rendering, as ripgrep's printer is apart from
//! its searcher: the pager owns budgets, cursors, parked streams and handles,
//! and asks a [`Printer`] to render each item of the text form a model reads
//! and to carry the state that rendering depends on (the heading in force).
//! What the text says is the printer's (see `results::model`); where a page
//! ends, how it continues and what it hashes is the pager's.
//!
//! A printer's output depends only on the items it rendered and the heading
//! it started under, which the pager keeps with a parked stream and in the
//! cursor, so a model's pages concatenate to exactly the whole rendering.

use serde_json::{Map, Value};

/// Renders a tool's items for a model, one after another.
pub trait Printer: Send {
    /// `item` rendered, ending with a newline, or `None` when it has no shape
    /// the printer knows (the page then shows its JSON line).
    /// `more_in_file`: the next item is a match in the same file (see
    /// `opening_match`).
    fn render(&mut self, item: &Value, more_in_file: bool) -> Option<String>;

    /// The file of `item` when it is a match whose rendering depends on
    /// whether the next item is a match in the same file: the pager then
    /// looks one item ahead (see `file_of`) before rendering it.
    fn opening_match<'a>(&self, item: &'a Value) -> Option<&'a str>;

    /// The file `item` is a match in, if it is a match.
    fn file_of<'a>(&self, item: &'a Value) -> Option<&'a str>;

    /// The heading in force after the items rendered so far (what a
    /// continuation carries, to start the next page's printer under).
    fn heading(&self) -> Option<&str>;

    /// A rendered item cut to `limit` bytes, for a page too small for it
    /// whole, with a note saying so when one fits.
    fn cut(&self, text: String, limit: usize) -> String;

    /// The tool's own fields (`info`) as a model reads them beside rendered
    /// items, given the tool's output schema (`schema`).
    fn slim(&self, info: Value, schema: &Value) -> Value;

    /// `path` as the printer shows it.
    fn shown_path(&self, path: &str) -> String;
}

/// Makes the printers of a server's calls.
pub trait Printers: Send + Sync {
    /// A printer showing paths relative to `base` (the call's first root),
    /// continuing under `heading` (`None` at the start of a result).
    fn printer(&self, base: Option<String>, heading: Option<String>) -> Box<dyn Printer>;
}

/// An item's fields, looked up by name. An item is a small object (a glob
/// match has two fields, a grep match five or six) and a printer asks it
/// for a score of names to tell its shape, so a small one is searched in
/// order: `serde_json`'s map hashes every name looked up with SipHash, which
/// took a tenth of a glob's samples.
#[derive(Clone, Copy)]
pub struct Fields<'a>(&'a Map<String, Value>);

impl<'a> Fields<'a> {
    /// The most fields searched in order; a larger object is asked by hash.
    const IN_ORDER: usize = 12;

    /// The fields of `item`, when it is an object.
    pub fn of(item: &'a Value) -> Option<Fields<'a>> {
        item.as_object().map(Fields)
    }

    /// The value named `key`.
    pub fn get(self, key: &str) -> Option<&'a Value> {
        match self.0.len() <= Self::IN_ORDER {
            true => self.0.iter().find_map(|(name, value)| (name == key).then_some(value)),
            false => self.0.get(key),
        }
    }

    /// The string named `key`.
    pub fn text(self, key: &str) -> Option<&'a str> {
        self.get(key).and_then(Value::as_str)
    }

    /// The unsigned number named `key`.
    pub fn number(self, key: &str) -> Option<u64> {
        self.get(key).and_then(Value::as_u64)
    }

    /// The boolean named `key`.
    pub fn flag(self, key: &str) -> Option<bool> {
        self.get(key).and_then(Value::as_bool)
    }

    /// Whether a field is named `key`.
    pub fn has(self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// How many fields there are.
    pub fn count(self) -> usize {
        self.0.len()
    }

    /// The fields' names, in the item's order.
    pub fn names(self) -> impl Iterator<Item = &'a str> {
        self.0.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fields_are_found_in_small_and_large_objects() {
        let small = json!({"path": "a", "line": 3, "text": "x", "lossy": true});
        let fields = Fields::of(&small).unwrap();
        assert_eq!(fields.text("path"), Some("a"));
        assert_eq!(fields.number("line"), Some(3));
        assert_eq!(fields.flag("lossy"), Some(true));
        assert!(fields.has("text") && !fields.has("pat") && !fields.has("paths"));
        assert_eq!(fields.text("line"), None);
        assert_eq!(fields.names().collect::<Vec<_>>(), ["path", "line", "text", "lossy"]);
        let large = Value::Object((0..40).map(|i| (format!("k{i}"), json!(i))).collect());
        let fields = Fields::of(&large).unwrap();
        assert_eq!((fields.count(), fields.number("k0"), fields.number("k39")), (40, Some(0), Some(39)));
        assert_eq!(fields.get("k40"), None);
        assert!(Fields::of(&json!([1])).is_none());
    }
}
