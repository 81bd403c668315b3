//! Metadata first: what the whole result holds, counted before the first
//! page is answered, so a model learns its size and where it lies before it
//! decides to page or to narrow.
//!
//! When the first page does not hold the whole result of a tool that changes
//! nothing (read-only, and not asking for write access) and whose own summary
//! is not exact (`read` knows a file's size; `grep` cannot know its matches
//! without searching), the pager reads the page's own stream on to its end,
//! keeping what it pulls for the next pages: a result that fits a share of
//! the parked budget is searched once, and its later pages come from memory.
//! A larger one is counted by running the tool a second time with the same
//! arguments, in instances of its own (as shards when the call is sharded),
//! pulling the whole stream without delivering it. Either way it counts
//! items (or lines), bytes of the form the pages show, and, for items with a
//! `path`, how many per path. Any tool gets this, a third party's too. The
//! count is bounded by time and bytes (the limits `count_ms` and
//! `count_max_bytes`, and the call's own deadline); past a bound it says "at
//! least". It never fails the page: a count that cannot run is a count of
//! nothing, not exact.

use std::time::{Duration, Instant};

// Paths are hashed with foldhash, not SipHash: a glob's count hashes each
// of its paths, and SipHash took a twentieth of the server's time there.
// foldhash is seeded per process, and the count is bounded in time and bytes.
use foldhash::HashMap;

use serde_json::{Value, json};

use super::page::{Ended, Page, Piece};
use super::pending::Pending;
use super::pieces::{Next, TextView, next_piece};
use super::start::{Start, base};
use super::stream::{Opener, Stream};
use super::{BYTES_PER_TOKEN, PageRequest, Pager};
use crate::runtime::CallContext;
use crate::tool::{Access, Budget, Chunk, Payload};

/// How much counting a first page may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountBounds {
    /// Wall time; zero turns counting off.
    pub time: Duration,
    /// Payload bytes; zero turns counting off.
    pub bytes: u64,
}

/// What counting reads of an item: its `path`, if it is an object naming one
/// (the rest is skipped, not built), borrowed from the item's JSON...
#[derive(serde::Deserialize)]
struct Named<'a> {
    path: Option<&'a str>,
}

/// ...or, where the JSON escapes it (a borrowed `&str` cannot be unescaped),
/// made.
#[derive(serde::Deserialize)]
struct NamedEscaped {
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
    /// Items per path, for items that name one: the first [`TOP`] most
    /// first, then by path; the rest in no order.
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

    /// Items per group of paths (`key` of each path), the first [`TOP`]
    /// most first.
    ///
    /// Paths in order come in runs of one group (a directory's files, one
    /// type's), each looked up once.
    fn grouped(&self, key: fn(&str) -> &str) -> Vec<(String, u64)> {
        let mut groups: HashMap<&str, u64> = HashMap::default();
        let mut run: Option<(&str, u64)> = None;
        for (path, items) in &self.paths {
            let group = key(path);
            match &mut run {
                Some((current, n)) if *current == group => *n += items,
                _ => {
                    if let Some((done, n)) = run.replace((group, *items)) {
                        *groups.entry(done).or_default() += n;
                    }
                }
            }
        }
        if let Some((done, n)) = run {
            *groups.entry(done).or_default() += n;
        }
        most_first(groups.into_iter().map(|(group, items)| (group.to_owned(), items)).collect())
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
fn parent(path: &str) -> &str {
    match path.rsplit_once('/') {
        Some(("", _)) => "/",
        Some((dir, _)) => dir,
        None => ".",
    }
}

/// A path's file type: its extension with the dot, or the whole name when it
/// has none (`Makefile`).
fn extension(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => &name[stem.len()..],
        _ => name,
    }
}

/// `counts` with the first [`TOP`] in order, most first, then by name; the
/// rest after them in the order they came (a result's paths in path order
/// stay in runs for `Whole::grouped`). A result of many paths (a glob's, one
/// item each) is not sorted whole for the five it names.
fn most_first(mut counts: Vec<(String, u64)>) -> Vec<(String, u64)> {
    let order = |a: &(String, u64), b: &(String, u64)| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0));
    // The indices of the first `TOP`, in order.
    let mut top: Vec<usize> = Vec::with_capacity(TOP + 1);
    for i in 0..counts.len() {
        if top.len() == TOP && order(&counts[i], &counts[top[TOP - 1]]).is_ge() {
            continue;
        }
        let at = top.partition_point(|&j| order(&counts[j], &counts[i]).is_lt());
        top.insert(at, i);
        top.truncate(TOP);
    }
    let mut out: Vec<(String, u64)> = top.iter().map(|&i| std::mem::take(&mut counts[i])).collect();
    out.extend(counts.into_iter().enumerate().filter(|(i, _)| !top.contains(i)).map(|(_, count)| count));
    out
}

/// What to count and how far.
pub struct Counting {
    /// Opens the call again (the call's arguments, its tool, its shards).
    pub opener: Opener,
    /// For the compact text form: a view from the start, so the bytes
    /// counted are the ones the model's pages would hold.
    pub view: Option<TextView>,
    pub bounds: CountBounds,
    /// When counting stops (within the call's time, its answer's margin kept).
    pub deadline: Instant,
}

/// What a count has seen so far: items (lines, for text), payload bytes of
/// the form the pages show, and items per path.
pub struct Tally {
    items: u64,
    bytes: u64,
    /// Items per path, in runs: the items of one path in a row are one
    /// entry. A result in path order (every built-in tool's: by components,
    /// `before_in_path_order`) names each path in one run, counted without
    /// hashing it.
    paths: Vec<(String, u64)>,
    /// Whether each run's path came strictly after the run before it in path
    /// order: then no path has two runs.
    ordered: bool,
    /// The pieces of an item split across chunks, gathered to count it whole.
    gathered: String,
}

impl Default for Tally {
    fn default() -> Tally {
        Tally { items: 0, bytes: 0, paths: Vec::new(), ordered: true, gathered: String::new() }
    }
}

impl Tally {
    /// Counts a piece as a page holds it: an item rendered, or a chunk.
    pub fn piece(&mut self, piece: &Piece) {
        match piece {
            Piece::Shown(shown) => self.item(shown.text.len(), shown.path.as_deref()),
            Piece::Chunk(chunk) => self.chunk(chunk),
        }
    }

    /// Counts a chunk: an item (gathered whole when it came in pieces) as
    /// its JSON line, anything else as its bytes.
    fn chunk(&mut self, chunk: &Chunk) {
        if chunk.is_checkpoint() {
            return;
        }
        match &chunk.payload {
            Payload::Item(piece) if chunk.continued => self.gathered.push_str(piece),
            Payload::Item(last) => {
                let whole;
                let item = match self.gathered.is_empty() {
                    true => last.as_str(),
                    false => {
                        self.gathered.push_str(last);
                        whole = std::mem::take(&mut self.gathered);
                        whole.as_str()
                    }
                };
                match serde_json::from_str::<Named>(item) {
                    Ok(named) => self.item(item.len(), named.path),
                    Err(_) => {
                        let named = serde_json::from_str::<NamedEscaped>(item).ok();
                        self.item(item.len(), named.as_ref().and_then(|n| n.path.as_deref()))
                    }
                }
            }
            _ => {
                self.bytes += chunk.payload.len() as u64;
                self.items += u64::from(chunk.budget_items());
            }
        }
    }

    fn item(&mut self, bytes: usize, path: Option<&str>) {
        self.items += 1;
        self.bytes += bytes as u64;
        let Some(path) = path else { return };
        match self.paths.last_mut() {
            Some((last, items)) if last == path => *items += 1,
            last => {
                if last.is_some_and(|(last, _)| !before_in_path_order(last, path)) {
                    self.ordered = false;
                }
                self.paths.push((path.to_owned(), 1));
            }
        }
    }

    /// The count, `exact` when the stream was counted to its end.
    fn whole(self, exact: bool) -> Whole {
        let paths = match self.ordered {
            true => self.paths,
            // Out of order, a path may have come in several runs.
            false => {
                let mut merged: HashMap<String, u64> = HashMap::default();
                for (path, items) in self.paths {
                    *merged.entry(path).or_default() += items;
                }
                merged.into_iter().collect()
            }
        };
        Whole { items: self.items, bytes: self.bytes, exact, paths: most_first(paths) }
    }
}

/// Whether `a` comes strictly before `b` in path order, as the walks give it:
/// by components (`a/b.rs` before `a.rs`), which for their normalized paths
/// is bytewise with `/` before every other byte. Runs of paths strictly in
/// this order are of distinct paths (a path is counted in one run), whatever
/// the paths: any strict order would tell that, this one keeps the walks'
/// output in one pass. Compared by bytes: by `Path` components it was a
/// percent of a glob's first page.
fn before_in_path_order(a: &str, b: &str) -> bool {
    let key = |byte: u8| if byte == b'/' { 0 } else { byte };
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let same = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    match (a.get(same), b.get(same)) {
        (Some(&x), Some(&y)) => key(x) < key(y),
        (None, Some(_)) => true,
        _ => false,
    }
}

/// Counts the whole output of a call, opened again, within its bounds.
pub fn count(ctx: &CallContext, counting: Counting) -> Whole {
    let Counting { opener, mut view, bounds, deadline } = counting;
    let mut tally = Tally::default();
    let counting = CallContext { deadline, ..ctx.clone() };
    // Sharded like the call itself, when it is: counting keeps pace with it.
    let Ok(mut call) = Stream::open(opener, &counting) else {
        return tally.whole(false);
    };
    let budget = Budget { bytes: 1 << 20, items: 100_000 };
    call.arm(&counting, budget);
    let mut rest = Pending::default();
    loop {
        if tally.bytes >= bounds.bytes || Instant::now() >= deadline || ctx.signal.is_cancelled() {
            return tally.whole(false);
        }
        // Pieces as the pages take them: in the text form, rendered as the pages render them.
        match next_piece(&mut call, view.as_mut(), budget, &mut rest, || Instant::now() < deadline) {
            Ok(Next::Piece(piece)) => {
                std::iter::once(piece).chain(std::mem::take(&mut rest)).for_each(|piece| tally.piece(&piece))
            }
            Ok(Next::End) => return tally.whole(true),
            // The count's time is up.
            Ok(Next::Held) => return tally.whole(false),
            // A timeout, a limit, the tool's own error: what was counted stands, as a lower bound.
            Err(_) => return tally.whole(false),
        }
    }
}

/// What a first page keeps of its call's time to be answered after counting.
const COUNT_MARGIN: Duration = Duration::from_millis(500);

/// The share of the parked streams' budget (`max_parked_mib`) one result
/// may hold read ahead while it is counted.
const AHEAD_SHARE: usize = 16;

/// How far a count reads ahead: until when, and the page's budget (each
/// piece kept fits a page like it).
#[derive(Clone, Copy)]
struct Reach {
    deadline: Instant,
    budget: Budget,
}

/// How a count read ahead on the page's own stream ended.
enum Ahead {
    /// The stream gave its end, or the count's time or bytes ran out: the count.
    Counted(Whole),
    /// What it may hold is held: the tool is run again to count the rest.
    Full,
}

impl Pager {
    /// On a model's first page, what the whole result holds: only for a
    /// model deciding whether to page (a program following every cursor
    /// reads it all anyway), for a tool that changes nothing, whose own
    /// totals are not exact already, and when the page did not end for want
    /// of time. `tally` is what the page itself took.
    ///
    /// The page's own stream is read on first, its pieces kept for the next
    /// pages: a result that fits `AHEAD_SHARE` of the parked budget is
    /// searched once, not twice. Past that, the tool runs a second time, in
    /// instances of its own, and that stream is counted and dropped.
    pub(super) fn whole(
        &self,
        request: &PageRequest,
        start: &mut Start,
        page: &Page,
        tally: Option<Tally>,
    ) -> Option<Whole> {
        let PageRequest { ctx, tool, for_model, .. } = request;
        let changes_nothing = tool.manifest.read_only && tool.manifest.access != Access::Write;
        let exact = page.summary.as_ref().is_some_and(|s| s.exact);
        if !*for_model || start.index != 0 || !changes_nothing || exact || page.ended == Ended::Time {
            return None;
        }
        // A model's first page was tallied as it was filled.
        let tally = tally?;
        let bounds = self.limits.count;
        if bounds.time.is_zero() || bounds.bytes == 0 {
            return None;
        }
        let started = Instant::now();
        let deadline = (started + bounds.time).min(ctx.deadline.checked_sub(COUNT_MARGIN)?);
        if deadline <= started {
            return None;
        }
        let reach = Reach { deadline, budget: page.budget };
        let counted = crate::telemetry::traces::step("count").in_scope(|| self.ahead(request, start, tally, reach));
        let (way, whole) = match counted {
            Ahead::Counted(whole) => ("read_ahead", whole),
            Ahead::Full => {
                // The page is pulled: its shards ahead stop before counting runs its own.
                start.call.disarm();
                let view = start.view.as_ref().map(|_| TextView::new(self.printers.printer(base(ctx), None)));
                let opener = self.opener(tool, &start.args);
                let counting = Counting { opener, view, bounds, deadline };
                ("run_again", crate::telemetry::traces::step("count").in_scope(|| count(ctx, counting)))
            }
        };
        self.metrics.counted(way, started.elapsed().as_secs_f64());
        Some(whole)
    }

    /// Reads the page's stream on, to its end, keeping each piece for the
    /// next pages (`start.pending`) and counting it after what the page took
    /// (`tally`), until the share of the parked budget, or the count's bytes
    /// or time (a lower bound then), runs out. The stream runs
    /// under the count's deadline, so the page is answered in time whatever
    /// the tool does; if it fails meanwhile, what was read ahead is dropped
    /// and the stream is not parked (`Start::spent`): the next page reopens
    /// the tool where this one ended, and says why if it fails again. What
    /// was counted stands, as a lower bound.
    fn ahead(&self, request: &PageRequest, start: &mut Start, mut tally: Tally, reach: Reach) -> Ahead {
        let Reach { deadline, budget } = reach;
        let ctx = &request.ctx;
        let cap = self.limits.parked_bytes / AHEAD_SHARE;
        start.pending.iter().for_each(|piece| tally.piece(piece));
        start.call.arm(&CallContext { deadline, ..ctx.clone() }, budget);
        loop {
            if start.pending.bytes() >= cap {
                return Ahead::Full;
            }
            // Past the count's own bounds a second run would stop there too: a lower bound.
            if tally.bytes >= self.limits.count.bytes || Instant::now() >= deadline || ctx.signal.is_cancelled() {
                return Ahead::Counted(tally.whole(false));
            }
            let mut rest = Pending::default();
            let pulled =
                next_piece(&mut start.call, start.view.as_mut(), budget, &mut rest, || Instant::now() < deadline);
            match pulled {
                Ok(Next::Piece(piece)) => {
                    for piece in std::iter::once(piece).chain(rest) {
                        tally.piece(&piece);
                        start.pending.push_back(piece);
                    }
                }
                Ok(Next::End) => {
                    start.drained = true;
                    return Ahead::Counted(tally.whole(true));
                }
                // The count's time is up; the match held back stays in the view, for the next page.
                Ok(Next::Held) => return Ahead::Counted(tally.whole(false)),
                Err(_) => {
                    start.pending.clear();
                    start.spent = true;
                    return Ahead::Counted(tally.whole(false));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
