//! Metadata first: what the whole result holds, counted before the first
//! page is answered, so a model learns its size and where it lies before it
//! decides to page or to narrow.
//!
//! When the first page does not hold the whole result of a tool that changes
//! nothing (read-only, and not asking for write access) and whose own summary
//! is not exact (`read` knows a file's size; `grep` cannot know its matches
//! without searching), the pager runs the tool a second time with the same
//! arguments, in instances of its own (as shards when the call is sharded),
//! and pulls the whole stream without
//! delivering it: items (or lines), bytes, and, for items with a `path`, how
//! many per path. Any tool gets this, a
//! third party's too. The count is bounded by time and bytes (the limits
//! `count_ms` and `count_max_bytes`, and the call's own deadline); past a
//! bound it says "at least". It never fails the page: a count that cannot
//! run is a count of nothing, not exact.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::page::{Ended, Page};
use super::printer::Printer;
use super::start::{Start, base};
use super::stream::{Opener, Stream};
use super::{BYTES_PER_TOKEN, PageRequest, Pager};
use crate::runtime::CallContext;
use crate::tool::{Access, Budget, Payload};

/// How much counting a first page may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountBounds {
    /// Wall time; zero turns counting off.
    pub time: Duration,
    /// Payload bytes; zero turns counting off.
    pub bytes: u64,
}

/// What counting reads of an item: its `path`, if it is an object naming one
/// (the rest is skipped, not built).
#[derive(serde::Deserialize)]
struct Named {
    path: Option<String>,
}

/// The share of the result (percent) a directory must hold to be suggested.
const MIN_SHARE: u64 = 10;

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
            // The top paths say something only where a path holds several items (a file's matches).
            if self.paths.first().is_some_and(|(_, items)| *items > 1) {
                let top = self.paths.iter().take(TOP).map(|(path, items)| json!({ "path": path, "items": items }));
                out["top_paths"] = Value::Array(top.collect());
            }
            let (dirs, types) = (self.grouped(parent), self.grouped(extension));
            let listed = |groups: &[(String, u64)], key: &str| -> Value {
                groups.iter().take(TOP).map(|(name, items)| json!({ key: name, "items": items })).collect()
            };
            out["top_dirs"] = listed(&dirs, "dir");
            out["top_types"] = listed(&types, "type");
            out["suggestions"] = self.suggestions(&dirs, &types).into();
        }
        out
    }

    /// Items per group of paths (`key` of each path), most first.
    fn grouped(&self, key: fn(&str) -> String) -> Vec<(String, u64)> {
        let mut groups: HashMap<String, u64> = HashMap::new();
        for (path, items) in &self.paths {
            *groups.entry(key(path)).or_default() += items;
        }
        let mut groups: Vec<(String, u64)> = groups.into_iter().collect();
        groups.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        groups
    }

    /// Ways to narrow drawn from where the result lies: the directory and the
    /// file types holding the most of it.
    fn suggestions(&self, dirs: &[(String, u64)], types: &[(String, u64)]) -> Vec<String> {
        let at_least = if self.exact { "" } else { "at least " };
        let share = |items: u64| items * 100 / self.items.max(1);
        let mut said = Vec::new();
        // A directory is worth naming when it holds several items and a fair share of the result.
        let worth = |items: u64| items > 1 && share(items) >= MIN_SHARE;
        if let (Some((dir, items)), true) = (dirs.first(), dirs.len() > 1 && worth(dirs[0].1)) {
            said.push(format!(
                "{items} of {at_least}{} items ({}%) are in {dir}: narrow with `path` \"{dir}\".",
                self.items,
                share(*items)
            ));
        }
        if types.len() > 1 {
            let by_type: Vec<String> = types.iter().take(TOP).map(|(t, n)| format!("{t} {n}")).collect();
            said.push(format!(
                "By file type: {}; narrow to one type with a glob such as `*{}`.",
                by_type.join(", "),
                types[0].0
            ));
        }
        said
    }

    /// The whole result in the footer's words, after "shows N":
    /// "of 12345 items in 53 files (~80000 tokens in all)", or "of at least …".
    pub fn sentence(&self) -> String {
        let tokens = self.bytes.div_ceil(u64::from(BYTES_PER_TOKEN));
        let at_least = if self.exact { "" } else { "at least " };
        let mut said = format!("of {at_least}{} items", self.items);
        if !self.paths.is_empty() {
            let files = self.paths.len();
            said.push_str(&format!(" in {at_least}{files} file{}", if files == 1 { "" } else { "s" }));
        }
        let all = if self.exact { "in all" } else { "counted so far" };
        said.push_str(&format!(" (~{tokens} tokens {all})"));
        said
    }
}

/// A path's directory.
fn parent(path: &str) -> String {
    match path.rsplit_once('/') {
        Some(("", _)) => "/".into(),
        Some((dir, _)) => dir.into(),
        None => ".".into(),
    }
}

/// A path's file type: its extension with the dot, or the whole name when it
/// has none (`Makefile`).
fn extension(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => format!(".{ext}"),
        _ => name.to_string(),
    }
}

/// What to count and how far.
pub struct Counting {
    /// Opens the call again (the call's arguments, its tool, its shards).
    pub opener: Opener,
    /// For the compact text form: a renderer from the start, so the bytes
    /// counted are the ones the model's pages would hold.
    pub view: Option<Box<dyn Printer>>,
    pub bounds: CountBounds,
    /// What to keep of the call's time to answer the page.
    pub margin: Duration,
}

/// Counts the whole output of a call within its bounds and before `ctx`'s
/// deadline. `None` when counting is off.
pub fn count(ctx: &CallContext, counting: Counting) -> Option<Whole> {
    let Counting { opener, mut view, bounds, margin } = counting;
    if bounds.time.is_zero() || bounds.bytes == 0 {
        return None;
    }
    let started = Instant::now();
    let deadline = (started + bounds.time).min(ctx.deadline.checked_sub(margin)?);
    // The pieces of an item split across chunks, gathered to count it whole.
    let mut gathered = String::new();
    if deadline <= started {
        return None;
    }
    let counting = CallContext { deadline, ..ctx.clone() };
    let mut whole = Whole { items: 0, bytes: 0, exact: false, paths: Vec::new() };
    let mut paths: HashMap<String, u64> = HashMap::new();
    // Sharded like the call itself, when it is: counting keeps pace with it.
    let Ok(mut call) = Stream::open(opener, &counting) else {
        return Some(whole);
    };
    let budget = Budget { bytes: 1 << 20, items: 100_000 };
    call.arm(&counting, budget);
    loop {
        if whole.bytes >= bounds.bytes || Instant::now() >= deadline || ctx.signal.is_cancelled() {
            break;
        }
        match call.next(budget) {
            // A checkpoint holds nothing to count; it says the work goes on.
            Ok(Some(chunk)) if chunk.is_checkpoint() => {}
            Ok(Some(chunk)) => match &chunk.payload {
                Payload::Item(piece) if chunk.continued => gathered.push_str(piece),
                Payload::Item(last) => {
                    let item = match gathered.is_empty() {
                        true => last.as_str(),
                        false => {
                            gathered.push_str(last);
                            gathered.as_str()
                        }
                    };
                    whole.items += 1;
                    // The text form parses the item once, to render it and to read its path.
                    let (bytes, path) = match view.as_mut() {
                        Some(view) => {
                            let value = serde_json::from_str::<Value>(item).ok();
                            let path = value.as_ref().and_then(|v| v.get("path")?.as_str()).map(|p| view.shown_path(p));
                            let shown = value.as_ref().and_then(|v| view.render(v, false));
                            (shown.map_or(item.len(), |text| text.len()), path)
                        }
                        None => (item.len(), serde_json::from_str::<Named>(item).ok().and_then(|n| n.path)),
                    };
                    whole.bytes += bytes as u64;
                    if let Some(path) = path {
                        *paths.entry(path).or_default() += 1;
                    }
                    gathered.clear();
                }
                _ => {
                    whole.bytes += chunk.payload.len() as u64;
                    whole.items += u64::from(chunk.budget_items());
                }
            },
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

/// What a first page keeps of its call's time to be answered after counting.
const COUNT_MARGIN: Duration = Duration::from_millis(500);

impl Pager {
    /// On a model's first page, what the whole result holds, counted by
    /// running the tool a second time: only for a model deciding whether to
    /// page (a program following every cursor reads it all anyway), for a
    /// tool that changes nothing, whose own totals are not exact already,
    /// and when the page did not end for want of time.
    pub(super) fn whole(&self, request: &PageRequest, start: &mut Start, page: &Page) -> Option<Whole> {
        let PageRequest { ctx, tool, for_model, .. } = request;
        let changes_nothing = tool.manifest.read_only && tool.manifest.access != Access::Write;
        let exact = page.summary.as_ref().is_some_and(|s| s.exact);
        if !*for_model || start.index != 0 || !changes_nothing || exact || page.ended == Ended::Time {
            return None;
        }
        // The page is pulled: its shards ahead stop before counting runs its own.
        start.call.disarm();
        let view = start.view.as_ref().map(|_| self.printers.printer(base(ctx), None));
        let opener = self.opener(tool, &start.args);
        let counting = Counting { opener, view, bounds: self.limits.count, margin: COUNT_MARGIN };
        let started = Instant::now();
        let whole = crate::telemetry::traces::step("count").in_scope(|| count(ctx, counting));
        self.metrics.counted(started.elapsed().as_secs_f64());
        whole
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_says_its_totals_and_whether_they_are_exact() {
        let paths = vec![("b".to_string(), 3), ("a".to_string(), 1)];
        let whole = Whole { items: 4, bytes: 400, exact: true, paths };
        assert_eq!(whole.sentence(), "of 4 items in 2 files (~100 tokens in all)");
        let shown = whole.to_json();
        assert_eq!(shown["top_paths"][0], json!({"path": "b", "items": 3}));
        assert_eq!((shown["estimated_tokens"].as_u64(), shown["exact"].as_bool()), (Some(100), Some(true)));
        assert_eq!(shown["top_dirs"][0], json!({"dir": ".", "items": 4}));
        let partial = Whole { exact: false, paths: Vec::new(), ..whole };
        assert_eq!(partial.sentence(), "of at least 4 items (~100 tokens counted so far)");
        assert!(partial.to_json().get("top_paths").is_none());
    }

    #[test]
    fn one_item_per_path_names_no_top_paths_and_no_small_directory() {
        let paths: Vec<(String, u64)> = (0..10).map(|i| (format!("d{i}/Cargo.toml"), 1)).collect();
        let shown = Whole { items: 10, bytes: 230, exact: true, paths }.to_json();
        assert!(shown.get("top_paths").is_none(), "{shown}");
        let said = shown["suggestions"].as_array().unwrap();
        assert!(said.iter().all(|s| !s.as_str().unwrap().contains("narrow with `path`")), "{shown}");
    }

    #[test]
    fn suggestions_come_from_where_the_result_lies() {
        let paths = vec![
            ("/r/src/a.rs".to_string(), 6),
            ("/r/src/b.rs".to_string(), 2),
            ("/r/docs/x.md".to_string(), 1),
            ("/r/Makefile".to_string(), 1),
        ];
        let whole = Whole { items: 10, bytes: 1000, exact: true, paths };
        let shown = whole.to_json();
        assert_eq!(shown["top_dirs"][0], json!({"dir": "/r/src", "items": 8}));
        assert_eq!(shown["top_types"][0], json!({"type": ".rs", "items": 8}));
        let said: Vec<&str> = shown["suggestions"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
        assert_eq!(said[0], "8 of 10 items (80%) are in /r/src: narrow with `path` \"/r/src\".");
        assert!(said[1].starts_with("By file type: .rs 8, .md 1, Makefile 1;"), "{}", said[1]);
        assert_eq!((parent("/a"), parent("a"), extension("/r/.hidden")), ("/".into(), ".".into(), ".hidden".into()));
    }
}
