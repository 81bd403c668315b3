//! Paging a sequence of JSON items: one item per chunk, an item larger than the
//! budget split on character boundaries into `continued` pieces, and resume
//! positions that work at item boundaries and inside items alike.
//!
//! A tool supplies an `ItemSource`: items in a deterministic order, each with
//! the source's own position after it, and a way to reopen at such a position.
//! Its call implements `ItemStream` (the pager, `info`, `summary`), which makes
//! it a [`Stream`].
//!
//! A source that can work long between items (a search that finds little)
//! also says, through [`ItemSource::next_step`], how far its work has come
//! after a bounded amount of it ([`Pace`] counts it): `Items` turns that into
//! a checkpoint chunk (WIT `chunk`), at which the host may end a page on time
//! and from which a reopened stream goes on without repeating the work.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::{Budget, Chunk, Error, ErrorCode, Fingerprint, Payload, Stream, Summary};

/// What a source gives next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// An item as JSON text, and the source position just after it.
    Item(String, String),
    /// No item yet, but the work reached this source position: reopening at
    /// it goes on from there (a position like the ones after items).
    Checkpoint(String),
}

/// Items in a deterministic order.
pub trait ItemSource {
    /// The next item as JSON text and the source position just after it, or
    /// `None` at the end.
    fn next_item(&mut self) -> Result<Option<(String, String)>, Error>;

    /// The next item, or a checkpoint after a bounded amount of work that
    /// found none (see [`Pace`]); `None` at the end. By default every step is
    /// an item: a source that may work long between items overrides it (and
    /// then its `next_item` is [`without_checkpoints`]).
    fn next_step(&mut self) -> Result<Option<Step>, Error> {
        Ok(self.next_item()?.map(|(item, after)| Step::Item(item, after)))
    }
}

/// The next item of a source that implements [`ItemSource::next_step`], its
/// checkpoints passed over: what such a source's `next_item` returns.
pub fn without_checkpoints(source: &mut impl ItemSource) -> Result<Option<(String, String)>, Error> {
    loop {
        match source.next_step()? {
            Some(Step::Item(item, after)) => return Ok(Some((item, after))),
            Some(Step::Checkpoint(_)) => {}
            None => return Ok(None),
        }
    }
}

/// An item's JSON text: `value` serialized, a value that does not serialize
/// (a map with keys that are not strings) an internal error.
pub fn to_item(value: &impl Serialize) -> Result<String, Error> {
    serde_json::to_string(value).map_err(|e| Error::new(ErrorCode::Internal, e.to_string()))
}

/// The most time a source's work without an item should take before a
/// checkpoint, where the work runs slower than its counts assume: well
/// under the least margin a page keeps to answer (50 ms).
pub const CHECKPOINT_TIME: Duration = Duration::from_millis(10);

/// Counts a source's work since its last step, to say when a checkpoint is
/// due: after `files` units of work (files searched, entries visited),
/// `bytes` read or `time` spent, whichever comes first. The time bound keeps
/// checkpoints close together where the work runs slower than its counts
/// assume (a slow or busy machine, a debug build), so that a page can still
/// end on time within its margin; on a fast machine the counts come first.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    files: u32,
    bytes: u64,
    time: Duration,
    done_files: u32,
    done_bytes: u64,
    /// When the first check since the last reset was made (`None`: none
    /// yet; the work before it is counted only by its units and bytes).
    since: Option<Instant>,
}

impl Pace {
    /// A checkpoint every `files` units, `bytes` bytes or `time` of work.
    pub const fn every(files: u32, bytes: u64, time: Duration) -> Pace {
        Pace { files, bytes, time, done_files: 0, done_bytes: 0, since: None }
    }

    /// Counts work done.
    pub fn add(&mut self, files: u32, bytes: u64) {
        self.done_files = self.done_files.saturating_add(files);
        self.done_bytes = self.done_bytes.saturating_add(bytes);
    }

    /// Whether a checkpoint is due; if so, starts counting afresh.
    pub fn due(&mut self) -> bool {
        let since = *self.since.get_or_insert_with(Instant::now);
        let due = self.done_files >= self.files || self.done_bytes >= self.bytes || since.elapsed() >= self.time;
        if due {
            self.reset();
        }
        due
    }

    /// Starts counting afresh (an item was given: the source moved).
    pub fn reset(&mut self) {
        (self.done_files, self.done_bytes, self.since) = (0, 0, None);
    }
}

/// The resume position of the boundary after source position `pos`
/// (`b<pos>`), made without `core::fmt`: every item carries one.
fn boundary(pos: &str) -> String {
    let mut text = String::with_capacity(pos.len() + 1);
    text.push('b');
    text.push_str(pos);
    text
}

/// Pages an `ItemSource`.
///
/// Resume positions: `b<pos>` is the boundary after the item that ended at
/// source position `pos` (`b` alone: the start); `m<offset>:<pos>` is `offset`
/// bytes into the item that follows source position `pos`.
pub struct Items<S> {
    source: S,
    /// The source position before the next item (empty: the start).
    before: String,
    /// An item being emitted in pieces: its text, the position after it, and
    /// how much of it was emitted.
    partial: Option<(String, String, usize)>,
}

/// Where an `Items` stream starts, decoded from a resume position.
pub struct Start<'a> {
    /// The source position to reopen at (`None`: the beginning).
    pub source: Option<&'a str>,
    offset: usize,
}

impl<'a> Start<'a> {
    /// Decodes a resume position written by `Items`.
    pub fn decode(resume: Option<&'a str>) -> Result<Start<'a>, Error> {
        let Some(resume) = resume else { return Ok(Start { source: None, offset: 0 }) };
        let bad = || Error::new(ErrorCode::InvalidArgument, format!("malformed resume position `{resume}`"));
        let (pos, offset) = if let Some(pos) = resume.strip_prefix('b') {
            (pos, 0)
        } else if let Some(rest) = resume.strip_prefix('m') {
            let (offset, pos) = rest.split_once(':').ok_or_else(bad)?;
            let offset: usize = offset.parse().map_err(|_| bad())?;
            if offset == 0 {
                return Err(bad());
            }
            (pos, offset)
        } else {
            return Err(bad());
        };
        Ok(Start { source: (!pos.is_empty()).then_some(pos), offset })
    }
}

impl Start<'_> {
    /// Whether the position is inside an item (a piece of it was emitted).
    pub fn inside_item(&self) -> bool {
        self.offset > 0
    }
}

impl<S: ItemSource> Items<S> {
    /// Starts paging `source`, which was opened at `start.source`; skips into the
    /// first item when the start is inside one.
    pub fn new(mut source: S, start: Start<'_>) -> Result<Items<S>, Error> {
        let before = start.source.unwrap_or_default().to_string();
        let mut partial = None;
        if start.offset > 0 {
            let Some((item, after)) = source.next_item()? else {
                return Err(Error::new(
                    ErrorCode::Stale,
                    "the resume position is past the end of the output; start again",
                ));
            };
            if start.offset >= item.len() || !item.is_char_boundary(start.offset) {
                return Err(Error::new(
                    ErrorCode::Stale,
                    "the resume position no longer falls inside its item; start again",
                ));
            }
            partial = Some((item, after, start.offset));
        }
        Ok(Items { source, before, partial })
    }

    /// The source, for tools that report on it.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// The next chunk: one whole item, the next piece of a large one, or a
    /// checkpoint (`b<pos>`, like the position after an item).
    pub fn next(&mut self, budget: Budget) -> Result<Option<Chunk>, Error> {
        let limit = (budget.bytes as usize).max(4);
        let (item, after, done) = match self.partial.take() {
            Some(partial) => partial,
            None => match self.source.next_step()? {
                Some(Step::Checkpoint(at)) => {
                    let resume = boundary(&at);
                    self.before = at;
                    return Ok(Some(Chunk::checkpoint(resume)));
                }
                Some(Step::Item(item, after)) if item.len() <= limit => {
                    let resume = boundary(&after);
                    self.before = after;
                    return Ok(Some(Chunk { payload: Payload::Item(item), span: None, continued: false, resume }));
                }
                Some(Step::Item(item, after)) => (item, after, 0),
                None => return Ok(None),
            },
        };
        let mut end = (done + limit).min(item.len());
        while !item.is_char_boundary(end) {
            end -= 1;
        }
        let piece = item[done..end].to_string();
        if end == item.len() {
            let resume = boundary(&after);
            self.before = after;
            return Ok(Some(Chunk { payload: Payload::Item(piece), span: None, continued: false, resume }));
        }
        let resume = format!("m{end}:{}", self.before);
        self.partial = Some((item, after, end));
        Ok(Some(Chunk { payload: Payload::Item(piece), span: None, continued: true, resume }))
    }
}

/// A call whose output is the items of one [`Items`] pager: implement this
/// rather than [`Stream`]; every `ItemStream` is a `Stream` whose `next` pages
/// [`ItemStream::items`] and whose other methods are these. A call that holds
/// its pager in a field writes `Source` and `items` with
/// [`item_pager!`](crate::item_pager).
pub trait ItemStream {
    /// Where the items come from.
    type Source: ItemSource;

    /// The call's pager.
    fn items(&mut self) -> &mut Items<Self::Source>;

    /// What the tool says about the output ([`Stream::info`]).
    fn info(&self) -> Value;

    /// Cheap totals and suggestions ([`Stream::summary`]); by default nothing
    /// is known.
    fn summary(&self) -> Summary {
        Summary::default()
    }

    /// The fingerprint of the file paged, read afresh ([`Stream::fingerprint`]);
    /// by default none.
    fn fingerprint(&self) -> Result<Option<Fingerprint>, Error> {
        Ok(None)
    }
}

/// Writes an [`ItemStream`]'s pager, inside its `impl` block:
/// `item_pager!(items: S)` is `type Source = S;` and an `items` method that
/// returns the field `items`, an `Items<S>`.
///
/// ```
/// use cordon_sdk::items::{ItemSource, ItemStream, Items, Start};
/// use cordon_sdk::{Budget, Error, Stream};
///
/// /// No items at all.
/// struct Nothing;
///
/// impl ItemSource for Nothing {
///     fn next_item(&mut self) -> Result<Option<(String, String)>, Error> {
///         Ok(None)
///     }
/// }
///
/// struct Call {
///     items: Items<Nothing>,
/// }
///
/// impl ItemStream for Call {
///     cordon_sdk::item_pager!(items: Nothing);
///
///     fn info(&self) -> serde_json::Value {
///         serde_json::json!({})
///     }
/// }
///
/// let mut call = Call { items: Items::new(Nothing, Start::decode(None)?)? };
/// assert!(call.next(Budget { bytes: 64, items: 1 })?.is_none());
/// # Ok::<(), Error>(())
/// ```
#[macro_export]
macro_rules! item_pager {
    ($field:ident: $source:ty) => {
        type Source = $source;

        fn items(&mut self) -> &mut $crate::items::Items<$source> {
            &mut self.$field
        }
    };
}

/// An [`ItemStream`] pages its items.
impl<T: ItemStream> Stream for T {
    fn next(&mut self, budget: Budget) -> Result<Option<Chunk>, Error> {
        self.items().next(budget)
    }

    fn info(&self) -> Value {
        ItemStream::info(self)
    }

    fn summary(&self) -> Summary {
        ItemStream::summary(self)
    }

    fn fingerprint(&self) -> Result<Option<Fingerprint>, Error> {
        ItemStream::fingerprint(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Items "0".."n" as JSON strings of growing length; position = index.
    struct Numbers {
        next: usize,
        n: usize,
    }

    impl ItemSource for Numbers {
        fn next_item(&mut self) -> Result<Option<(String, String)>, Error> {
            if self.next == self.n {
                return Ok(None);
            }
            let i = self.next;
            self.next += 1;
            Ok(Some((format!("\"{}{}\"", i, "é".repeat(i * 7)), self.next.to_string())))
        }
    }

    fn open(resume: Option<&str>) -> Items<Numbers> {
        let start = Start::decode(resume).unwrap();
        let next = start.source.map_or(0, |p| p.parse().unwrap());
        Items::new(Numbers { next, n: 30 }, start).unwrap()
    }

    fn drain(items: &mut Items<Numbers>, bytes: u32) -> Vec<Chunk> {
        std::iter::from_fn(|| items.next(Budget { bytes, items: 1 }).unwrap()).collect()
    }

    fn joined(chunks: &[Chunk]) -> String {
        chunks.iter().map(|c| std::str::from_utf8(c.payload.as_bytes()).unwrap()).collect()
    }

    #[test]
    fn items_split_into_pieces_and_resume_anywhere_with_the_same_bytes() {
        let whole = joined(&drain(&mut open(None), u32::MAX));
        for bytes in [4, 5, 9, 64, 300] {
            let chunks = drain(&mut open(None), bytes);
            assert_eq!(joined(&chunks), whole);
            for (i, c) in chunks.iter().enumerate() {
                assert!(c.payload.as_bytes().len() <= bytes as usize);
                let rest = joined(&drain(&mut open(Some(&c.resume)), 50));
                assert_eq!(rest, joined(&chunks[i + 1..]), "resume at {}", c.resume);
            }
        }
    }

    #[test]
    fn only_the_last_piece_of_an_item_is_not_continued() {
        let chunks = drain(&mut open(None), 8);
        let mut text = String::new();
        for c in chunks {
            text.push_str(std::str::from_utf8(c.payload.as_bytes()).unwrap());
            if !c.continued {
                assert!(serde_json::from_str::<String>(&text).is_ok(), "{text}");
                text.clear();
            }
        }
    }

    /// Numbers again, with a checkpoint before every third item (none just
    /// after reopening: the work done before it was done before).
    struct Sparse {
        numbers: Numbers,
        paused: bool,
    }

    impl ItemSource for Sparse {
        fn next_item(&mut self) -> Result<Option<(String, String)>, Error> {
            self.numbers.next_item()
        }

        fn next_step(&mut self) -> Result<Option<Step>, Error> {
            let at = self.numbers.next;
            if at.is_multiple_of(3) && at < self.numbers.n && !self.paused {
                self.paused = true;
                return Ok(Some(Step::Checkpoint(at.to_string())));
            }
            self.paused = false;
            Ok(self.next_item()?.map(|(item, after)| Step::Item(item, after)))
        }
    }

    fn open_sparse(resume: Option<&str>) -> Items<Sparse> {
        let start = Start::decode(resume).unwrap();
        let next = start.source.map_or(0, |p| p.parse().unwrap());
        Items::new(Sparse { numbers: Numbers { next, n: 30 }, paused: resume.is_some() }, start).unwrap()
    }

    #[test]
    fn checkpoints_are_empty_chunks_that_resume_exactly_where_the_work_stood() {
        let data = |chunks: &[Chunk]| joined(chunks);
        let mut items = open_sparse(None);
        let chunks: Vec<Chunk> = std::iter::from_fn(|| items.next(Budget { bytes: 9, items: 1 }).unwrap()).collect();
        let first = &chunks[0];
        assert!(first.is_checkpoint() && first.resume == "b0" && first.budget_items() == 0, "{first:?}");
        assert_eq!(chunks.iter().filter(|c| c.is_checkpoint()).count(), 10);
        assert_eq!(data(&chunks), joined(&drain(&mut open(None), u32::MAX)), "checkpoints add nothing");
        for (i, c) in chunks.iter().enumerate() {
            let mut rest = open_sparse(Some(&c.resume));
            let rest: Vec<Chunk> = std::iter::from_fn(|| rest.next(Budget { bytes: 9, items: 1 }).unwrap()).collect();
            assert_eq!(data(&rest), data(&chunks[i + 1..]), "resume at {}", c.resume);
        }
        let mut pace = Pace::every(3, 100, Duration::from_secs(3600));
        pace.add(2, 10);
        assert!(!pace.due());
        pace.add(1, 0);
        assert!(pace.due() && !pace.due(), "due once, then counted afresh");
        pace.add(0, 100);
        assert!(pace.due(), "bytes count too");
        // Time counts from the first check after a reset.
        let mut slow = Pace::every(1000, 1 << 30, Duration::from_millis(20));
        slow.add(1, 10);
        assert!(!slow.due(), "the first check starts the clock");
        std::thread::sleep(Duration::from_millis(25));
        slow.add(1, 10);
        assert!(slow.due(), "time spent counts too");
        slow.add(1, 10);
        assert!(!slow.due(), "counted afresh");
    }

    #[test]
    fn malformed_and_stale_positions_are_refused() {
        for bad in ["x", "m0:1", "mz:1", "m3"] {
            assert_eq!(Start::decode(Some(bad)).err().unwrap().code, ErrorCode::InvalidArgument, "{bad}");
        }
        let start = Start::decode(Some("m999:2")).unwrap();
        assert_eq!(Items::new(Numbers { next: 2, n: 30 }, start).err().unwrap().code, ErrorCode::Stale);
    }
}
