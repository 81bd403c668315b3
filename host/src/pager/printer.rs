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

use serde_json::Value;

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
