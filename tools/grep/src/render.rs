//! Writing items as JSON text directly into a string, without building a
//! `serde_json::Value` per line: lines are searched by the million.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::rc::Rc;

use grep_matcher::Matcher;
use grep_regex::RegexMatcher;

/// How far past a multiline match the regex may look to find its submatches
/// again (ripgrep's printer uses the same bound).
const MAX_LOOK_AHEAD: usize = 128;

/// Appends `s` as a JSON string literal.
pub fn push_str(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// A file's path, with how positions show it and items' JSON holds it, each
/// made when first asked for: most files a search reads hold no match and
/// need neither.
pub struct Shown {
    pub path: PathBuf,
    text: Option<Rc<str>>,
    json: Option<String>,
}

impl Shown {
    pub fn new(path: PathBuf) -> Shown {
        Shown { path, text: None, json: None }
    }

    /// The path as positions show it.
    pub fn text(&mut self) -> Rc<str> {
        self.text.get_or_insert_with(|| self.path.to_string_lossy().into()).clone()
    }

    /// The path as a JSON string literal.
    pub fn json(&mut self) -> &str {
        if self.json.is_none() {
            let text = self.text();
            let mut json = String::with_capacity(text.len() + 2);
            push_str(&mut json, &text);
            self.json = Some(json);
        }
        self.json.as_deref().expect("made above")
    }
}

/// The item naming what was left out, and why: `{"path":…,"<key>":"why"}`
/// (`not_searched`: a file, or its rest; `not_applied`: an ignore file).
pub fn notice(path_json: &str, key: &str, why: &str) -> String {
    let mut json = String::with_capacity(path_json.len() + why.len() + 32);
    json.push_str("{\"path\":");
    json.push_str(path_json);
    json.push_str(",\"");
    json.push_str(key);
    json.push_str("\":");
    push_str(&mut json, why);
    json.push('}');
    json
}

/// Appends `,"key":value` for an unsigned number.
pub fn push_num(out: &mut String, key: &str, value: u64) {
    out.push_str(",\"");
    out.push_str(key);
    out.push_str("\":");
    push_u64(out, value);
}

/// Appends an unsigned number in decimal, without `core::fmt` (a content
/// item holds several, and lines are rendered by the million).
pub fn push_u64(out: &mut String, value: u64) {
    out.push_str(itoa::Buffer::new().format(value));
}

/// The bytes of a line (or block of lines) without its final `\n`.
pub fn strip_terminator(bytes: &[u8]) -> &[u8] {
    bytes.strip_suffix(b"\n").unwrap_or(bytes)
}

/// Where `text` (a line without its terminator) is cut to fit `max` bytes: on a
/// UTF-8 character boundary, never inside a character.
pub fn cut(text: &[u8], max: Option<usize>) -> usize {
    let Some(max) = max else { return text.len() };
    if text.len() <= max {
        return text.len();
    }
    let mut end = max;
    while end > 0 && (text[end] & 0xC0) == 0x80 && max - end < 3 {
        end -= 1;
    }
    if (text[end] & 0xC0) == 0x80 { max } else { end }
}

/// Appends `,"text":…` for the first `shown` bytes of `text`, and
/// `,"lossy":true` when bytes that are not UTF-8 were replaced by U+FFFD.
pub fn push_text(out: &mut String, text: &[u8], shown: usize) {
    out.push_str(",\"text\":");
    let lossy = String::from_utf8_lossy(&text[..shown]);
    push_str(out, &lossy);
    if matches!(lossy, std::borrow::Cow::Owned(_)) {
        out.push_str(",\"lossy\":true");
    }
}

/// Appends `,"truncated":{…}` for a line of `line_bytes` bytes starting at
/// file offset `start` of which `shown` are shown: the byte range to pass to
/// `read` for the rest, and, for a match line, how many submatches start past
/// the cut and where the first of them is.
pub fn push_truncated(out: &mut String, start: u64, shown: usize, line_bytes: usize, hidden: &[(usize, usize)]) {
    let _ = write!(out, ",\"truncated\":{{\"shown_bytes\":{shown},\"line_bytes\":{line_bytes}");
    if let Some(&(s, e)) = hidden.first() {
        let _ = write!(out, ",\"submatches_beyond\":{},\"next_submatch\":{{\"start\":{s},\"end\":{e}}}", hidden.len());
    }
    let (from, to) = (start + shown as u64, start + line_bytes as u64);
    let _ = write!(out, ",\"read\":{{\"start_byte\":{from},\"end_byte\":{to}}}}}");
}

/// Appends a context line as `{"line":n,"text":…}` (with `lossy` and
/// `truncated` when they apply), preceded by a comma unless `first`.
pub fn push_context_line(out: &mut String, first: bool, line: u64, offset: u64, bytes: &[u8], max: Option<usize>) {
    if !first {
        out.push(',');
    }
    let text = strip_terminator(bytes);
    let shown = cut(text, max);
    out.push_str("{\"line\":");
    push_u64(out, line);
    push_text(out, text, shown);
    if shown < text.len() {
        push_truncated(out, offset, shown, text.len(), &[]);
    }
    out.push('}');
}

/// Finds the submatches of a match reported by the searcher, the way ripgrep's
/// JSON printer does: `buf[range]` is the matched line (or lines); offsets are
/// relative to `range.start`. In line mode the regex sees the line without its
/// terminator; in multiline mode up to `MAX_LOOK_AHEAD` bytes past it.
pub fn submatches(
    matcher: &RegexMatcher,
    buf: &[u8],
    range: std::ops::Range<usize>,
    multiline: bool,
    out: &mut Vec<(usize, usize)>,
) {
    out.clear();
    let haystack = if multiline {
        &buf[..buf.len().min(range.end + MAX_LOOK_AHEAD)]
    } else if range.end > range.start && buf[range.end - 1] == b'\n' {
        &buf[..range.end - 1]
    } else {
        &buf[..range.end]
    };
    let found = matcher.find_iter_at(haystack, range.start, |m| {
        if m.start() >= range.end {
            return false;
        }
        out.push((m.start() - range.start, m.end() - range.start));
        true
    });
    // A regex matcher has no errors (its error type is `NoError`).
    let _ = found;
    if out.last().is_some_and(|&(s, e)| s == e && s >= range.len()) {
        out.pop();
    }
}
