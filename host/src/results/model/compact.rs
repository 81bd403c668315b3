//! The compact text form of a tool's items: what a model reads instead of
//! JSON lines, in the spirit of `rg --heading -n` and `ls -RF`.
//!
//! A tool emits exact JSON items (what programs read with `format: "json"`);
//! the host renders each item for a model by its shape, so any tool whose
//! items follow these shapes, a third party's too, gets the form for free:
//!
//! - **a match** (`path`, `line`, `text`; optional `before` and
//!   `after` lists of context lines `{line, text}`): grouped under its file, as
//!   `rg --heading -n` prints it: a blank line and the path when the file
//!   changes, then `12:text` for matching lines and `11-text` for context.
//!   A line longer than [`MAX_COLUMNS`] bytes is cut, with the byte range to
//!   `read` for the rest when the item says where the line starts
//!   (`byte_offset`), as is a line the tool cut itself (`truncated.read`).
//! - **a count** (`path`, `count`): `path:count`, as `rg -c`.
//! - **a notice** (`path` and only `not_searched` or `not_applied`, a reason):
//!   what a tool could not do and why, on a line of its own, as `rg` prints
//!   an error in the flow of its output: `big.log: not searched: a line
//!   longer than 32 MiB, …` (`grep` names so a file it could not search, or
//!   not past a line; `grep` and `glob` an ignore file too large to apply).
//! - **an entry** (`path`, and only `type`, `size`, `mtime_ns`, `depth`):
//!   grouped under its directory, as `ls -RF` prints it: `dir:` when the
//!   directory changes, then the name, with `/` after a directory and `@`
//!   after a symlink.
//!
//! Paths are shown relative to the base (the call's first root, which is
//! where relative arguments go), absolute outside it. Offsets, sizes, times
//! and submatch positions are left to the JSON form. Any other item (a
//! `stat` answer, a `write` receipt) keeps its JSON line.
//!
//! Rendering depends only on the item and on the heading in force before it
//! (the `group`), which the pager keeps with a parked stream and in the
//! cursor, so the model's pages concatenate to exactly the whole rendering.
//! The pager reaches it as its `Printer` (see `pager::printer`).

use std::fmt::Write as _;

use serde_json::Value;

use super::receipt;
use crate::pager::printer::{Fields, Printer, Printers};

/// The longest line shown, in bytes; longer ones are cut with a note.
pub const MAX_COLUMNS: usize = 300;

/// The fields an entry may carry besides `path` and still be shown by name.
const ENTRY_FIELDS: [&str; 4] = ["type", "size", "mtime_ns", "depth"];

/// The fields of a notice, each with what the model reads before its reason.
const NOTICES: [(&str, &str); 2] = [("not_searched", "not searched"), ("not_applied", "not applied")];

/// Renders items compactly, one after another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compact {
    /// Paths under it are shown relative to it.
    base: Option<String>,
    /// The heading in force: the last heading line written, if any.
    group: Option<String>,
}

/// Said in place of the rest of an item too large for a whole page.
const CUT_NOTE: &str = "[…item cut to fit the page: ask with a larger max_tokens, or format \"json\"]\n";

/// Makes a [`Compact`] renderer for each call.
pub struct CompactPrinters;

impl Printers for CompactPrinters {
    fn printer(&self, base: Option<String>, heading: Option<String>) -> Box<dyn Printer> {
        Box::new(Compact::new(base, heading))
    }
}

impl Printer for Compact {
    fn render(&mut self, item: &Value, more_in_file: bool) -> Option<String> {
        Compact::render(self, item, more_in_file)
    }

    fn opening_match<'a>(&self, item: &'a Value) -> Option<&'a str> {
        Compact::opening_match(self, item)
    }

    fn file_of<'a>(&self, item: &'a Value) -> Option<&'a str> {
        match_file(item)
    }

    fn heading(&self) -> Option<&str> {
        self.group.as_deref()
    }

    fn cut(&self, text: String, limit: usize) -> String {
        cut_to(text, limit)
    }

    fn slim(&self, info: Value, schema: &Value) -> Value {
        Compact::slim(self, info, schema)
    }

    fn shown_path(&self, path: &str) -> String {
        self.relative(path)
    }
}

/// `text` cut to `limit` bytes, on a character boundary, with a note saying
/// so when the note fits: an item too large for a whole page.
fn cut_to(mut text: String, limit: usize) -> String {
    if text.len() <= limit {
        return text;
    }
    let note = if limit >= 2 * CUT_NOTE.len() { CUT_NOTE } else { "" };
    let mut end = limit - note.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(note);
    text
}

impl Compact {
    /// A renderer relative to `base`, continuing after `group` (the heading
    /// in force after the last item shown; `None` at the start).
    pub fn new(base: Option<String>, group: Option<String>) -> Compact {
        Compact { base: base.map(|b| b.trim_end_matches('/').to_string()), group }
    }

    /// The file of a match item that opens a file (no heading for it is in
    /// force): the item whose rendering depends on what follows it.
    pub fn opening_match<'a>(&self, item: &'a Value) -> Option<&'a str> {
        let path = match_file(item)?;
        (self.group.as_deref() != Some(self.relative(path).as_str())).then_some(path)
    }

    /// `item` in the compact form, ending with a newline, or `None` when the
    /// item has none of the shapes above (it is shown as JSON).
    /// `more_in_file`: the next item is a match in the same file (see
    /// `opening_match`), so a match opening a file goes under a heading.
    pub fn render(&mut self, item: &Value, more_in_file: bool) -> Option<String> {
        if let Some(receipt) = receipt::render(item, |path| self.relative(path)) {
            self.group = None;
            return Some(receipt);
        }
        let item = Fields::of(item)?;
        let path = item.text("path")?;
        let shown = self.relative(path);
        if let (Some(line), Some(text)) = (item.number("line"), item.get("text")) {
            let text = text.as_str()?;
            let plain = !text.contains('\n') && !item.has("before") && !item.has("after");
            let under = self.group.as_deref() == Some(shown.as_str());
            if plain && !under && !more_in_file {
                // The one match of its file: on one line, as `rg -n` prints it.
                let lead = if self.group.as_deref().is_some_and(|g| !g.is_empty()) { "\n" } else { "" };
                self.group = Some(String::new());
                let mut out = format!("{lead}{shown}:{line}:");
                write_line(&mut out, text, Cut::of(item, item.number("byte_offset")));
                return Some(out);
            }
            let mut out = self.open_heading(shown, "\n");
            render_match(&mut out, item, line, text);
            return Some(out);
        }
        if item.count() == 2
            && let Some((why, said)) = NOTICES.iter().find_map(|(key, said)| Some((item.text(key)?, *said)))
        {
            return Some(self.open_heading(format!("{shown}: {said}: {why}"), "\n"));
        }
        if let Some(count) = item.number("count") {
            self.group = None;
            return Some(format!("{shown}:{count}\n"));
        }
        if item.names().all(|k| k == "path" || ENTRY_FIELDS.contains(&k)) {
            let mark = match item.text("type") {
                Some("dir") => "/",
                Some("symlink") => "@",
                _ => "",
            };
            self.group = None;
            let mut out = shown;
            out.push_str(mark);
            out.push('\n');
            return Some(out);
        }
        None
    }

    /// The heading line `line` (with `between` ahead of it when another
    /// group came first) when it is not the one in force, and makes it so.
    /// A heading of "" stands for lines that carry their own path.
    fn open_heading(&mut self, line: String, between: &str) -> String {
        if self.group.as_deref() == Some(line.as_str()) {
            return String::new();
        }
        let lead = if self.group.is_some() { between } else { "" };
        let out = format!("{lead}{line}\n");
        self.group = Some(line);
        out
    }

    /// A tool's own fields (`info`) as a model reads them beside compact
    /// items: paths relative to the base, and no zero counts or false flags
    /// (absent says as much, in fewer tokens) unless the tool's output schema
    /// requires them (`schema`, whose `required` list clients check).
    pub fn slim(&self, info: Value, schema: &Value) -> Value {
        let Value::Object(fields) = info else { return info };
        let required = |key: &str| schema["required"].as_array().is_some_and(|r| r.iter().any(|k| k == key));
        let kept = fields.into_iter().filter_map(|(key, value)| match value {
            Value::Number(n) if n.as_u64() == Some(0) && !required(&key) => None,
            Value::Bool(false) | Value::Null if !required(&key) => None,
            Value::String(s) if s.starts_with('/') => Some((key, Value::String(self.relative(&s)))),
            other => Some((key, other)),
        });
        Value::Object(kept.collect())
    }

    /// `path` relative to the base when inside it (`.` for the base itself).
    pub fn relative(&self, path: &str) -> String {
        let Some(base) = &self.base else { return path.into() };
        // A base of "" is the root directory, `/`.
        if path == base || (base.is_empty() && path == "/") {
            return ".".into();
        }
        match path.strip_prefix(base.as_str()).and_then(|rest| rest.strip_prefix('/')) {
            Some(rest) => rest.into(),
            None => path.into(),
        }
    }
}

/// The file a match item is in: an item with `path`, `line` and `text`.
fn match_file(item: &Value) -> Option<&str> {
    let item = Fields::of(item)?;
    (item.get("line")?.is_u64() && item.get("text")?.is_string()).then_some(())?;
    item.text("path")
}

/// Writes a match's lines: context before (`n-`), the match (`n:`, one per
/// line of a multiline block), context after.
fn render_match(out: &mut String, item: Fields, line: u64, text: &str) {
    let write_context = |out: &mut String, key: &str| {
        for entry in item.get(key).and_then(Value::as_array).into_iter().flatten() {
            let Some(entry) = Fields::of(entry) else { continue };
            let (Some(n), Some(text)) = (entry.number("line"), entry.text("text")) else {
                continue;
            };
            let _ = write!(out, "{n}-");
            write_line(out, text, Cut::of(entry, None));
        }
    };
    write_context(out, "before");
    if text.contains('\n') {
        for (i, piece) in text.split('\n').enumerate() {
            let _ = write!(out, "{}:", line + i as u64);
            write_line(out, piece, Cut::default());
        }
    } else {
        let _ = write!(out, "{line}:");
        write_line(out, text, Cut::of(item, item.number("byte_offset")));
    }
    write_context(out, "after");
}

/// What is known about where a line lies, to say how to read what is cut.
#[derive(Debug, Default, Clone, Copy)]
struct Cut {
    /// The byte range the tool itself left out (`truncated.read`).
    tool_cut: Option<(u64, u64)>,
    /// The file offset of the line's first byte, when the text is its bytes
    /// (not when bytes that are not UTF-8 were replaced).
    start: Option<u64>,
}

impl Cut {
    fn of(fields: Fields, start: Option<u64>) -> Cut {
        let read = fields.get("truncated").and_then(Fields::of).and_then(|t| t.get("read")).and_then(Fields::of);
        let bound = |key: &str| read.and_then(|r| r.number(key));
        let tool_cut = bound("start_byte").zip(bound("end_byte"));
        let lossy = fields.flag("lossy").unwrap_or(false);
        Cut { tool_cut, start: start.filter(|_| !lossy) }
    }
}

/// Writes `text` cut at [`MAX_COLUMNS`] (on a character boundary) with a note
/// of what is left out and, where known, the bytes to `read` for it; then a
/// newline.
fn write_line(out: &mut String, text: &str, cut: Cut) {
    let mut end = text.len().min(MAX_COLUMNS);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    out.push_str(&text[..end]);
    let line_end = cut.start.map(|start| cut.tool_cut.map_or(start + text.len() as u64, |(_, to)| to));
    match (end < text.len(), cut.start.zip(line_end), cut.tool_cut) {
        (true, Some((start, to)), _) => {
            let _ = write!(out, " […read bytes {}–{to} for the rest]", start + end as u64);
        }
        (true, None, _) => {
            let _ = write!(out, " […{} more bytes]", text.len() - end);
        }
        (false, _, Some((from, to))) => {
            let _ = write!(out, " […read bytes {from}–{to} for the rest]");
        }
        (false, _, None) => {}
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `items` rendered as the pager renders them, through its `Printer`
    /// seam, looking one item ahead.
    fn all(printer: &mut dyn Printer, items: &[Value]) -> String {
        let mut out = String::new();
        for (i, item) in items.iter().enumerate() {
            let next = items.get(i + 1).and_then(|next| printer.file_of(next));
            let more = printer.opening_match(item).is_some_and(|path| next == Some(path));
            out.push_str(&printer.render(item, more).unwrap_or_else(|| format!("{item}\n")));
        }
        out
    }

    #[test]
    fn a_files_matches_go_under_its_heading_and_a_lone_match_on_one_line_as_rg_prints_them() {
        let items = [
            json!({"path": "/r/src/a.rs", "line": 3, "byte_offset": 20, "text": "fn a() {}", "submatches": [{"start": 0, "end": 2}]}),
            json!({"path": "/r/src/a.rs", "line": 9, "byte_offset": 90, "text": "fn b() {}",
                   "before": [{"line": 8, "text": "// b"}], "after": [{"line": 10, "text": "}"}]}),
            json!({"path": "/r/b.rs", "line": 4, "text": "fn c() {}"}),
            json!({"path": "/r/c.rs", "line": 5, "text": "fn d() {}"}),
            json!({"path": "/elsewhere/c.rs", "line": 1, "byte_offset": 0, "text": "x\ny"}),
        ];
        let shown = all(&mut Compact::new(Some("/r/".into()), None), &items);
        assert_eq!(
            shown,
            "src/a.rs\n3:fn a() {}\n8-// b\n9:fn b() {}\n10-}\n\nb.rs:4:fn c() {}\nc.rs:5:fn d() {}\n\n\
             /elsewhere/c.rs\n1:x\n2:y\n"
        );
        let context = [json!({"path": "/r/a", "line": 2, "text": "x", "before": [{"line": 1, "text": "w"}]})];
        assert_eq!(all(&mut Compact::new(Some("/r".into()), None), &context), "a\n1-w\n2:x\n", "context: a heading");
    }

    #[test]
    fn a_renderer_continues_under_the_heading_in_force() {
        let base = || Some("/r".to_string());
        let mut first = CompactPrinters.printer(base(), None);
        let item = json!({"path": "/r/a", "line": 1, "text": "x"});
        assert_eq!(first.render(&item, true).unwrap(), "a\n1:x\n");
        let mut resumed = CompactPrinters.printer(base(), first.heading().map(str::to_owned));
        assert_eq!(resumed.render(&item, false).unwrap(), "1:x\n", "no heading twice");
        let mut lone = CompactPrinters.printer(base(), resumed.heading().map(str::to_owned));
        let other = json!({"path": "/r/b", "line": 7, "text": "y"});
        assert_eq!(lone.render(&other, false).unwrap(), "\nb:7:y\n", "a lone match after a heading");
    }

    #[test]
    fn long_lines_are_cut_with_the_bytes_to_read() {
        let long = "é".repeat(200);
        let item = json!({"path": "/r/a", "line": 2, "byte_offset": 1000, "text": long});
        let shown = Compact::new(Some("/r".into()), None).render(&item, true).unwrap();
        assert_eq!(shown, format!("a\n2:{} […read bytes 1300–1400 for the rest]\n", "é".repeat(150)));
        let lossy = json!({"path": "/r/a", "line": 2, "byte_offset": 1000, "text": long, "lossy": true});
        assert!(Compact::new(None, None).render(&lossy, false).unwrap().ends_with(" […100 more bytes]\n"));
        let tool_cut =
            json!({"path": "/r/a", "line": 1, "text": "abc", "truncated": {"read": {"start_byte": 3, "end_byte": 90}}});
        let shown = Compact::new(Some("/r".into()), None).render(&tool_cut, false).unwrap();
        assert_eq!(shown, "a:1:abc […read bytes 3–90 for the rest]\n");
    }

    #[test]
    fn counts_and_entries_are_shown_as_rg_c_and_rg_files() {
        let items = [
            json!({"path": "/r/a.rs", "count": 4}),
            json!({"path": "/r/src", "type": "dir", "size": 4096, "mtime_ns": 1, "depth": 1}),
            json!({"path": "/r/src/lib.rs", "type": "file", "size": 10, "mtime_ns": 1}),
            json!({"path": "/r/src/link", "type": "symlink", "size": 3, "mtime_ns": 1}),
            json!({"path": "/r/docs/x.md"}),
            json!({"path": "/r/src/b.rs"}),
        ];
        let shown = all(&mut Compact::new(Some("/r".into()), None), &items);
        assert_eq!(shown, "a.rs:4\nsrc/\nsrc/lib.rs\nsrc/link@\ndocs/x.md\nsrc/b.rs\n", "no heading, none repeated");
    }

    #[test]
    fn a_tools_fields_are_slimmed_for_a_model() {
        let info = json!({"root": "/r", "path": "/r/src/a.rs", "other": "/x/y", "matches": 3, "errors": 0, "cut": false,
                          "files": 0, "crlf": false});
        let schema = json!({"required": ["files", "crlf"]});
        let slim = Compact::new(Some("/r".into()), None).slim(info, &schema);
        assert_eq!(
            slim,
            json!({"root": ".", "path": "src/a.rs", "other": "/x/y", "matches": 3, "files": 0, "crlf": false})
        );
    }

    #[test]
    fn notices_say_what_was_not_done_and_why_on_a_line_of_their_own() {
        let items = [
            json!({"path": "/r/.gitignore", "not_applied": "an ignore file larger than 1 MiB"}),
            json!({"path": "/r/a.rs", "line": 1, "text": "x"}),
            json!({"path": "/r/big.log", "not_searched": "a line longer than 32 MiB"}),
            json!({"path": "/r/z.rs", "line": 2, "text": "y"}),
            json!({"path": "/r/z.rs", "line": 3, "text": "z"}),
        ];
        let shown = all(&mut Compact::new(Some("/r".into()), None), &items);
        assert_eq!(
            shown,
            ".gitignore: not applied: an ignore file larger than 1 MiB\n\na.rs:1:x\n\n\
             big.log: not searched: a line longer than 32 MiB\n\nz.rs\n2:y\n3:z\n"
        );
        let entries = [json!({"path": "/r/.ignore", "not_applied": "too large"}), json!({"path": "/r/a.rs"})];
        assert_eq!(
            all(&mut Compact::new(Some("/r".into()), None), &entries),
            ".ignore: not applied: too large\na.rs\n"
        );
        let more = json!({"path": "/r/a", "not_searched": "why", "other": 1});
        assert_eq!(Compact::new(None, None).render(&more, false), None, "a notice is its path and reason only");
    }

    #[test]
    fn other_items_keep_their_json() {
        let stat = json!({"path": "/r/a", "type": "file", "size": 1, "permissions": {"readonly": false}});
        assert_eq!(Compact::new(None, None).render(&stat, false), None);
        assert_eq!(Compact::new(None, None).render(&json!([1, 2]), false), None);
        assert_eq!(Compact::new(None, None).render(&json!({"line": 1, "text": "no path"}), false), None);
    }

    #[test]
    fn an_item_larger_than_a_whole_page_is_cut_to_it_on_a_character_boundary() {
        let small = cut_to("a\n".into(), 100);
        assert_eq!(small, "a\n", "an item that fits is left whole");
        let long = cut_to("é".repeat(500), 400);
        assert!(long.len() <= 400 && long.ends_with(CUT_NOTE), "{long}");
        assert!(long.starts_with("éé"));
        let tiny = cut_to("é".repeat(10), 5);
        assert_eq!(tiny, "éé", "no room for the note: the text alone, whole characters");
    }
}
