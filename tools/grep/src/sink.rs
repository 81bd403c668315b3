//! The searcher's sink: turns matches and context lines into items.
//!
//! Content items are complete once their after-context is known: at the next
//! match, once `context_after` lines came, or at the end of the file. A batch
//! of items is bounded; when it is full the sink stops the search just after
//! the last complete item, and the caller searches on from that line later.
//! Restarting there gives exactly what one search would have given: the
//! searcher never reports a line twice, the lines after the stop point hold
//! no part of an earlier match, and a search starts with a fresh line.

use std::collections::VecDeque;
use std::io;

use grep_regex::RegexMatcher;
use grep_searcher::{Searcher, Sink, SinkContext, SinkContextKind, SinkFinish, SinkMatch};

use crate::args::OutputMode;
use crate::render;

/// An item ready to be emitted, with where the search goes on after it.
pub struct Queued {
    /// The item's JSON text.
    pub json: String,
    /// For a content item, the line number and byte offset just after its
    /// last line (match or after-context); `None` for a per-file item.
    pub next: Option<(u64, u64)>,
    /// How many matches the item accounts for.
    pub matches: u64,
}

/// What a search of one file needs to know, besides the file.
pub struct Settings<'a> {
    /// The output mode.
    pub mode: OutputMode,
    /// The regex, to find submatches again.
    pub matcher: &'a RegexMatcher,
    /// Whether the searcher runs in multiline mode.
    pub multiline: bool,
    /// Whether before-context lines were asked for.
    pub before: bool,
    /// How many after-context lines were asked for.
    pub after: usize,
    /// Cut lines longer than this.
    pub max_line: Option<usize>,
    /// Stop once this many items are queued (content mode).
    pub max_items: usize,
    /// Stop once the queued items hold this many bytes (content mode).
    pub max_bytes: usize,
}

/// A content item waiting for its after-context.
struct Open {
    json: String,
    before: String,
    after: String,
    after_lines: usize,
    next: (u64, u64),
}

/// Collects one search run's items.
pub struct Collector<'a> {
    settings: &'a Settings<'a>,
    /// The file's path, for its items.
    name: &'a mut render::Shown,
    /// Added to the searcher's line numbers and byte offsets: the search
    /// started at this line (minus one) and byte.
    line_base: u64,
    byte_base: u64,
    out: &'a mut VecDeque<Queued>,
    /// Rendered before-context lines for the next match.
    before: String,
    open: Option<Open>,
    queued_items: usize,
    queued_bytes: usize,
    /// Set when the sink stopped the search to bound the batch.
    pub paused: Option<(u64, u64)>,
    /// Matches found (count mode: matched lines, or matches in multiline mode).
    pub count: u64,
    scratch: Vec<(usize, usize)>,
}

impl<'a> Collector<'a> {
    /// A sink for a search that starts at line `line_base + 1`, byte `byte_base`.
    pub fn new(
        settings: &'a Settings<'a>,
        name: &'a mut render::Shown,
        line_base: u64,
        byte_base: u64,
        out: &'a mut VecDeque<Queued>,
    ) -> Collector<'a> {
        Collector {
            settings,
            name,
            line_base,
            byte_base,
            out,
            before: String::new(),
            open: None,
            queued_items: 0,
            queued_bytes: 0,
            paused: None,
            count: 0,
            scratch: Vec::new(),
        }
    }

    /// Completes the item waiting for after-context; says whether the batch
    /// is now full (and if so stops there).
    fn close(&mut self) -> bool {
        let Some(open) = self.open.take() else { return false };
        let mut json = open.json;
        if self.settings.before {
            json.push_str(",\"before\":[");
            json.push_str(&open.before);
            json.push(']');
        }
        if self.settings.after > 0 {
            json.push_str(",\"after\":[");
            json.push_str(&open.after);
            json.push(']');
        }
        json.push('}');
        self.queued_items += 1;
        self.queued_bytes += json.len();
        self.out.push_back(Queued { json, next: Some(open.next), matches: 1 });
        if self.queued_items >= self.settings.max_items || self.queued_bytes >= self.settings.max_bytes {
            self.paused = Some(open.next);
            return true;
        }
        false
    }

    /// Completes the last item at the end of the search, unless the search
    /// was stopped to bound the batch (then it is searched again later).
    pub fn flush(&mut self) {
        if self.paused.is_none() {
            self.close();
        }
    }

    /// Starts the content item for `mat`.
    fn open(&mut self, mat: &SinkMatch<'_>) {
        let s = self.settings;
        let line = self.line_base + mat.line_number().unwrap_or(0);
        let offset = self.byte_base + mat.absolute_byte_offset();
        let bytes = mat.bytes();
        let text = render::strip_terminator(bytes);
        let shown = render::cut(text, s.max_line);
        render::submatches(s.matcher, mat.buffer(), mat.bytes_range_in_buffer(), s.multiline, &mut self.scratch);
        let lines = mat.lines().count().max(1) as u64;

        let path_json = self.name.json();
        let mut json = String::with_capacity(shown + path_json.len() + 96);
        json.push_str("{\"path\":");
        json.push_str(path_json);
        render::push_num(&mut json, "line", line);
        if lines > 1 {
            render::push_num(&mut json, "end_line", line + lines - 1);
        }
        render::push_num(&mut json, "byte_offset", offset);
        render::push_text(&mut json, text, shown);
        let split = self.scratch.iter().position(|&(start, _)| start >= shown && shown < text.len());
        let (visible, hidden) = self.scratch.split_at(split.unwrap_or(self.scratch.len()));
        if shown < text.len() {
            render::push_truncated(&mut json, offset, shown, text.len(), hidden);
        }
        json.push_str(",\"submatches\":[");
        for (i, (start, end)) in visible.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            json.push_str("{\"start\":");
            render::push_u64(&mut json, *start as u64);
            json.push_str(",\"end\":");
            render::push_u64(&mut json, *end as u64);
            json.push('}');
        }
        json.push(']');
        // The before-context gathered since the last item belongs to this one.
        let before = std::mem::take(&mut self.before);
        let next = (line + lines, offset + bytes.len() as u64);
        self.open = Some(Open { json, before, after: String::new(), after_lines: 0, next });
    }
}

impl Sink for Collector<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        match self.settings.mode {
            OutputMode::FilesWithMatches => {
                self.count = 1;
                Ok(false)
            }
            OutputMode::Count => {
                if self.settings.multiline {
                    let range = mat.bytes_range_in_buffer();
                    render::submatches(self.settings.matcher, mat.buffer(), range, true, &mut self.scratch);
                    self.count += self.scratch.len().max(1) as u64;
                } else {
                    self.count += 1;
                }
                Ok(true)
            }
            OutputMode::Content => {
                if self.close() {
                    return Ok(false);
                }
                self.count += 1;
                self.open(mat);
                if self.settings.after == 0 && self.close() {
                    return Ok(false);
                }
                Ok(true)
            }
        }
    }

    fn context(&mut self, _searcher: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        let line = self.line_base + ctx.line_number().unwrap_or(0);
        let offset = self.byte_base + ctx.absolute_byte_offset();
        let max = self.settings.max_line;
        match ctx.kind() {
            SinkContextKind::After if self.open.is_some() => {
                let open = self.open.as_mut().expect("an open item");
                render::push_context_line(&mut open.after, open.after_lines == 0, line, offset, ctx.bytes(), max);
                open.after_lines += 1;
                open.next = (line + 1, offset + ctx.bytes().len() as u64);
                if open.after_lines >= self.settings.after && self.close() {
                    return Ok(false);
                }
            }
            SinkContextKind::After => {}
            _ => {
                if self.close() {
                    return Ok(false);
                }
                let first = self.before.is_empty();
                render::push_context_line(&mut self.before, first, line, offset, ctx.bytes(), max);
            }
        }
        Ok(true)
    }

    fn finish(&mut self, _searcher: &Searcher, _finish: &SinkFinish) -> Result<(), io::Error> {
        self.flush();
        Ok(())
    }
}
