//! The continuation engine: every tool's chunk stream, paged to the client in
//! bounded, exact, signed, resumable pages.
//!
//! A call without a cursor opens the tool; a call with one takes the parked
//! stream (or reopens the tool at the cursor's resume position when the stream
//! is gone) after checking that what is paged has not changed. The pager pulls
//! chunks until the next one does not fit the page's budget (that chunk waits,
//! parked with the stream, for the next page), or until the page's time is up
//! (`clock`): then it answers at the last chunk or checkpoint it passed.
//! Concatenating every page's payload gives exactly the unpaged output,
//! whatever the budgets and however the pages were cut.

mod ahead;
mod budget;
pub mod clock;
pub mod compact;
pub mod count;
pub mod cursor;
pub mod depth;
pub mod handles;
mod key_file;
pub mod media;
pub mod page;
pub mod parked;
mod pieces;
mod receipt;
mod sealed;
mod shards;
mod stream;
pub mod totals;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};
use sha2::Sha256;
use sha2::digest::common::hazmat::{SerializableState, SerializedState};

use crate::args::{Form, Paging};
use crate::registry::Tool;
use crate::runtime::{CallContext, CallFailure, Reclaim, Runtime};
use crate::tool::{Access, Budget, ErrorCode, Fingerprint, ToolError};
pub use budget::FilePage;
use budget::{budget, numbered, shows_lines};
use clock::PageClock;
use compact::Compact;
use cursor::{Cursor, CursorError, CursorKey, Heading};
use handles::{HandleError, Handles, Mint, Store};
use media::Media;
use page::{Builder, Ended, Page, Piece, View};
use parked::ParkedStreams;
use pieces::next_piece;
use stream::{Opener, Stream};

/// What a first page keeps of its call's time to be answered after counting.
const COUNT_MARGIN: Duration = Duration::from_millis(500);

/// Bytes per estimated token.
pub const BYTES_PER_TOKEN: u32 = 4;

/// The pager's limits and defaults.
#[derive(Debug, Clone, Copy)]
pub struct PageLimits {
    /// Tokens per page when the caller does not say.
    pub default_tokens: u32,
    /// The most tokens a caller may ask for per page.
    pub max_tokens: u32,
    /// The default page of a tool whose text is lines of a file.
    pub file: FilePage,
    /// The most items (lines, for text) per page.
    pub max_items: u32,
    /// JSON items nested deeper are truncated.
    pub max_depth: usize,
    /// How long a cursor stays valid.
    pub cursor_ttl: Duration,
    /// How much the handle store keeps in all.
    pub handles: handles::Caps,
    /// Streams parked between pages, at most.
    pub parked: usize,
    /// The linear memory (and buffered output) parked streams may hold together, in bytes.
    pub parked_bytes: usize,
    /// How long a parked stream waits for its next page.
    pub parked_ttl: Duration,
    /// How much counting the whole result before a first page may spend.
    pub count: count::CountBounds,
    /// Instances a sharded call runs at once (1: none is sharded).
    pub shards: usize,
    /// The most time a page is pulled before it answers with what it has
    /// (`None`: until shortly before the request's deadline; see `clock`).
    pub page_time: Option<Duration>,
    /// The largest image or notebook gathered whole for a model in the text
    /// form, in bytes (see `media`).
    pub max_whole_bytes: u64,
}

/// Why no page came back.
#[derive(Debug)]
pub enum PageError {
    /// The call failed (the tool's error, a trap, a limit).
    Call(CallFailure),
    /// The cursor (or handle) was refused.
    Cursor(CursorError),
    /// The handle store could not be read.
    Store(std::io::Error),
}

impl From<CallFailure> for PageError {
    fn from(f: CallFailure) -> Self {
        PageError::Call(f)
    }
}

impl From<CursorError> for PageError {
    fn from(e: CursorError) -> Self {
        PageError::Cursor(e)
    }
}

/// A stream parked between two pages, with the pieces pulled but not
/// delivered because they did not fit the last page, and the compact renderer that
/// rendered it.
struct Parked {
    call: Stream,
    pending: VecDeque<Piece>,
    view: Option<Compact>,
}

impl Parked {
    /// What the stream holds: its instances' memory and the output pulled
    /// but not delivered.
    fn bytes(&self) -> usize {
        let pending: usize = self
            .pending
            .iter()
            .map(|piece| match piece {
                Piece::Chunk(chunk) => chunk.payload.len() + chunk.resume.len(),
                Piece::Shown(shown) => shown.text.len() + shown.resume.len(),
            })
            .sum();
        let peeked = self.view.as_ref().and_then(|v| v.peeked.as_ref()).map_or(0, |c| c.payload.len() + c.resume.len());
        self.call.memory_bytes() + pending + peeked
    }
}

/// One page asked of a tool: the call it belongs to (grants, deadline,
/// signal), the tool, its own arguments and the host's paging options, and
/// whether a model reads the page (it then continues with a short handle and
/// learns the whole result's size on a first page; a program following the
/// signed cursor gets neither).
pub struct PageRequest {
    pub ctx: CallContext,
    pub tool: Arc<Tool>,
    pub args: Value,
    pub paging: Paging,
    pub for_model: bool,
}

/// The engine: signing key, parked streams, limits.
pub struct Pager {
    key: CursorKey,
    handles: Handles,
    parked: Arc<ParkedStreams<Parked>>,
    limits: PageLimits,
    runtime: Arc<Runtime>,
}

/// Where a page starts.
struct Start {
    call: Stream,
    pending: VecDeque<Piece>,
    /// The compact renderer, for the text form: its heading is the one after
    /// the last item rendered (the pending one included).
    view: Option<Compact>,
    /// The resume position after the last chunk delivered (none on page 0).
    position: Option<String>,
    /// The heading in force after the last item delivered.
    heading: Option<String>,
    /// The result the handle this page was asked with names, so the next
    /// page's handle names it too (none: a first page, or a signed cursor).
    stream: Option<String>,
    index: u64,
    fingerprint: Option<Fingerprint>,
    hasher: Sha256,
    session: u64,
    args: String,
    bytes_before: u64,
    items_before: u64,
}

impl Pager {
    /// A pager pulling from `runtime`, which may give up its parked streams
    /// when it runs short of instance slots (see `Runtime::reclaim_with`).
    /// Cursors are signed with `key`, and handles for them kept in `handles`.
    pub fn new(key: CursorKey, handles: Store, limits: PageLimits, runtime: Arc<Runtime>) -> Pager {
        let bounds = parked::Bounds { count: limits.parked, bytes: limits.parked_bytes, ttl: limits.parked_ttl };
        let parked = Arc::new(ParkedStreams::new(bounds));
        let reclaim: Arc<dyn Reclaim> = parked.clone();
        runtime.reclaim_with(Arc::downgrade(&reclaim));
        let handles = Handles::new(handles, limits.cursor_ttl.as_secs(), limits.handles);
        Pager { key, handles, parked, limits, runtime }
    }

    pub fn limits(&self) -> &PageLimits {
        &self.limits
    }

    /// Streams parked now.
    pub fn parked(&self) -> usize {
        self.parked.len()
    }

    /// Produces one page of the tool's output for `request`: the guest work
    /// runs under the runtime's host timeout (`Runtime::bounded`), so the
    /// answer comes by the deadline plus the grace even from a guest blocked
    /// in a host call.
    pub fn page(self: &Arc<Self>, request: PageRequest) -> Result<Page, PageError> {
        let (pager, signal) = (Arc::clone(self), Arc::clone(&request.ctx.signal));
        let (name, deadline) = (request.tool.manifest.name.clone(), request.ctx.deadline);
        let page = self.runtime.bounded(&name, deadline, &signal, move || pager.pull(&request));
        page.map_err(PageError::Call).and_then(|page| page)
    }

    /// What opens `tool`'s streams for a call with `args` (canonical JSON).
    fn opener(&self, tool: &Arc<Tool>, args: &str) -> Opener {
        Opener {
            runtime: Arc::clone(&self.runtime),
            tool: Arc::clone(tool),
            args: args.to_string(),
            running: self.limits.shards,
        }
    }

    /// Pulls one page's chunks from the tool.
    fn pull(&self, request: &PageRequest) -> Result<Page, PageError> {
        let PageRequest { ctx, tool, args, paging, for_model } = request;
        let for_model = *for_model;
        let lines = shows_lines(tool);
        let budget = budget(&self.limits, paging, for_model, lines);
        let mut start = match &paging.cursor {
            None => {
                tool.validate(args).map_err(CallFailure::Tool)?;
                let args = args.to_string();
                let mut call = Stream::open(self.opener(tool, &args), ctx)?;
                let fingerprint = call.fingerprint()?;
                let view = match paging.format.unwrap_or_default() {
                    Form::Text => Some(Compact::new(base(ctx), None)),
                    Form::Json => None,
                };
                Start {
                    call,
                    pending: VecDeque::new(),
                    view,
                    position: None,
                    heading: None,
                    stream: None,
                    index: 0,
                    fingerprint,
                    hasher: Sha256::default(),
                    session: parked::new_id(),
                    args,
                    bytes_before: 0,
                    items_before: 0,
                }
            }
            Some(text) => self.resume(request, budget, text)?,
        };
        start.call.arm(ctx, budget);
        let media = if for_model { self.media(&mut start, budget)? } else { None };
        let budget = match media.as_ref().map(|media| media.budget(budget)) {
            Some(own) if own != budget => {
                start.call.arm(ctx, own);
                own
            }
            _ => budget,
        };
        let signal = &ctx.signal;
        let clock = PageClock::start(ctx.deadline, self.limits.page_time);
        let mut builder = Builder::new(budget, self.limits.max_depth);
        let mut ended = Ended::Size;
        let mut delivered = 0u64;
        // Only a page that moved past where it started (data, or a checkpoint
        // elsewhere than its start) can end on time with a continuation that
        // goes further.
        let started_at = start.position.clone();
        loop {
            if signal.is_cancelled() {
                return Err(CallFailure::Cancelled.into());
            }
            if clock.is_due() && start.position != started_at {
                ended = Ended::Time;
                break;
            }
            if media.as_ref().is_some_and(Media::shows_nothing) {
                ended = Ended::Complete;
                break;
            }
            let mut piece = match start.pending.pop_front() {
                Some(piece) => piece,
                None => match next_piece(&mut start.call, start.view.as_mut(), budget, &mut start.pending, || {
                    clock.in_first_half()
                })? {
                    Some(piece) => piece,
                    None => {
                        ended = Ended::Complete;
                        break;
                    }
                },
            };
            if let Piece::Chunk(chunk) = &piece
                && chunk.is_checkpoint()
            {
                start.position = Some(chunk.resume.clone());
                continue;
            }
            if !builder.fits(&piece) {
                match piece {
                    // An item shown compactly that a whole page cannot hold
                    // is cut to the page (the JSON form has it whole).
                    Piece::Shown(shown) if builder.is_empty() => {
                        piece = Piece::Shown(shown.cut_to(budget.bytes as usize));
                    }
                    Piece::Chunk(_) if builder.is_empty() => {
                        // Pulled for an earlier, larger page: take it again at this
                        // budget, in the instance slot the old stream gives back
                        // (a sharded call, the shard the last piece came from).
                        start.pending.clear();
                        let opener = self.opener(tool, &start.args);
                        start.call = start.call.rewind(&opener, ctx, start.position.as_deref())?;
                        start.call.arm(ctx, budget);
                        start.view = start.view.map(|_| Compact::new(base(ctx), start.heading.clone()));
                        continue;
                    }
                    piece => {
                        start.pending.push_front(piece);
                        break;
                    }
                }
            }
            sha2::Digest::update(&mut start.hasher, piece.bytes());
            delivered += piece.bytes().len() as u64;
            signal.host_report(delivered, Some(u64::from(budget.bytes)), Some("bytes of this page"));
            start.position = Some(piece.resume().to_string());
            if let Piece::Shown(shown) = &piece {
                start.heading = shown.heading.clone();
            }
            builder.push(piece);
        }
        if start.fingerprint.is_some() && start.call.fingerprint()? != start.fingerprint {
            return Err(stale(tool, "changed while this page was read").into());
        }
        let info = start.call.info()?;
        let info = match &start.view {
            Some(view) => view.slim(info, &tool.manifest.output_schema),
            None => info,
        };
        let mut page = builder.finish(&tool.manifest.name, start.index, info);
        page.view = match &start.view {
            None => View::Json,
            Some(_) if lines && numbered(&start.args) => View::Numbered,
            Some(_) => View::Text,
        };
        page.bytes_before = start.bytes_before;
        page.items_before = start.items_before;
        page.ended = ended;
        page.media = media;
        if ended == Ended::Time {
            tracing::debug!(tool = %tool.manifest.name, page = start.index, elapsed = ?clock.elapsed(), "page ended on time");
        }
        if ended == Ended::Complete {
            page.sha256 = Some(hex::encode(sha2::Digest::finalize(start.hasher)));
            return Ok(page);
        }
        let summary = start.call.summary()?;
        // Counting runs the tool a second time: only for a model deciding
        // whether to page (a program following every cursor reads it all
        // anyway), for a tool that changes nothing, whose own totals are not
        // exact already, and when the page did not end for want of time.
        let changes_nothing = tool.manifest.read_only && tool.manifest.access != Access::Write;
        if for_model && start.index == 0 && changes_nothing && !summary.exact && ended != Ended::Time {
            // The page is pulled: its shards ahead stop before counting runs its own.
            start.call.disarm();
            let view = start.view.as_ref().map(|_| Compact::new(base(ctx), None));
            let opener = self.opener(tool, &start.args);
            let counting = count::Counting { opener, view, bounds: self.limits.count, margin: COUNT_MARGIN };
            page.whole = count::count(ctx, counting);
        }
        page.summary = Some(summary);
        let position = start.position.clone().expect("an incomplete page moved past its start");
        let (resume, shard) = start.call.locate(&position);
        let cursor = Cursor {
            key_id: Cursor::key_id(&self.key),
            tool: tool.manifest.name.clone(),
            tool_version: tool.identity(),
            args: start.args.clone(),
            resume,
            fingerprint: start.fingerprint,
            page: start.index + 1,
            session: start.session,
            bytes_before: start.bytes_before + page.bytes,
            items_before: start.items_before + page.items,
            hash_state: sealed::seal(&self.key, &start.hasher.serialize()),
            compact: start.view.as_ref().map(|_| Heading { line: start.heading.clone() }),
            expires: Cursor::expiry(SystemTime::now(), self.limits.cursor_ttl),
            shard,
        };
        let key = parked_key(&cursor);
        let expires = cursor.expires;
        let cursor = cursor.encode(&self.key);
        // The model continues with the handle (or, if the store failed, the
        // cursor itself) and the page size it asked for; the cursor holds the rest.
        let handle = match for_model {
            true => {
                let position = handles::position(&key);
                let page = start.index + 1;
                let mint =
                    Mint { stream: start.stream.as_deref(), page, cursor: &cursor, position: &position, expires };
                match self.handles.mint(mint) {
                    Ok(handle) => Some(handle),
                    Err(HandleError::Full) => None,
                    Err(e) => {
                        tracing::warn!("no handle for a cursor: {e}");
                        None
                    }
                }
            }
            false => None,
        };
        let mut continue_with = Map::new();
        continue_with.insert("cursor".into(), Value::String(handle.clone().unwrap_or_else(|| cursor.clone())));
        let asked = [("max_tokens", paging.max_tokens), ("page_size", paging.page_size)];
        for (name, value) in asked {
            if let Some(value) = value {
                continue_with.insert(name.into(), value.into());
            }
        }
        page.continue_with = Some(Value::Object(continue_with));
        page.handle = handle;
        page.next_cursor = Some(cursor);
        start.call.disarm();
        let parked = Parked { call: start.call, pending: start.pending, view: start.view };
        let bytes = parked.bytes();
        self.parked.park(start.session, key, parked, bytes);
        Ok(page)
    }

    /// In the text form, how the page is shown to a model when the tool
    /// pages one file (it has a fingerprint; see `media`); `None` in the JSON
    /// form, and without asking the tool for its `info` for any other call.
    fn media(&self, start: &mut Start, budget: Budget) -> Result<Option<Media>, CallFailure> {
        let (Some(view), Some(_)) = (&start.view, &start.fingerprint) else { return Ok(None) };
        let info = start.call.info()?;
        let limits = (budget, self.limits.max_whole_bytes);
        Ok(Media::of(&info, start.index, limits, |path| view.relative(path)))
    }

    /// Checks the cursor `text` and finds (or reopens) its stream.
    fn resume(&self, request: &PageRequest, budget: Budget, text: &str) -> Result<Start, PageError> {
        let PageRequest { ctx, tool, args, paging, .. } = request;
        let behind;
        let stream = handles::stream_of(text).map(str::to_owned);
        let text = match handles::is_handle(text) {
            true => {
                behind = self.handles.resolve(text).map_err(|e| match e {
                    // Only minting fills a result: a handle that was never minted is unknown.
                    HandleError::Unknown | HandleError::Full => PageError::Cursor(CursorError::UnknownHandle),
                    HandleError::Expired => PageError::Cursor(CursorError::Expired),
                    HandleError::Store(e) => PageError::Store(e),
                })?;
                behind.as_str()
            }
            false => text,
        };
        let cursor = Cursor::decode(text, &self.key, SystemTime::now())?;
        if cursor.tool != tool.manifest.name {
            return Err(CursorError::OtherTool { made_by: cursor.tool }.into());
        }
        if cursor.tool_version != tool.identity() {
            return Err(CursorError::OtherVersion { made_by: cursor.tool_version }.into());
        }
        let given = args.as_object().is_some_and(|a| !a.is_empty());
        if given && serde_json::from_str::<Value>(&cursor.args).ok().as_ref() != Some(args) {
            return Err(CursorError::ArgumentsChanged.into());
        }
        let form = if cursor.compact.is_some() { Form::Text } else { Form::Json };
        if paging.format.is_some_and(|asked| asked != form) {
            return Err(CursorError::ArgumentsChanged.into());
        }
        let state = sealed::open(&self.key, &cursor.hash_state).ok_or(CursorError::Malformed)?;
        let state = SerializedState::<Sha256>::try_from(&state[..]).map_err(|_| CursorError::Malformed)?;
        let hasher = Sha256::deserialize(&state).map_err(|_| CursorError::Malformed)?;
        let gone = |f: CallFailure| match f {
            CallFailure::Tool(e) => stale(tool, &format!("can no longer be resumed ({})", e.message)),
            other => other,
        };
        // A parked stream opened with other grants (another session's client roots)
        // is not reused: the stream is reopened with this request's.
        let parked = self.parked.take(cursor.session, &parked_key(&cursor)).filter(|p| p.call.grants() == ctx.grants);
        let heading = cursor.compact.clone().and_then(|h| h.line);
        let (mut call, pending, view) = match parked {
            Some(parked) => (parked.call, parked.pending, parked.view),
            None => {
                tracing::debug!(tool = %tool.manifest.name, page = cursor.page, "stream gone, reopening at the cursor");
                let opener = self.opener(tool, &cursor.args);
                let call = Stream::reopen(opener, ctx, &cursor.resume, cursor.shard.as_ref());
                let view = cursor.compact.as_ref().map(|_| Compact::new(base(ctx), heading.clone()));
                (call.map_err(gone)?, VecDeque::new(), view)
            }
        };
        // A parked store still holds its last request's deadline and signal.
        call.arm(ctx, budget);
        let now = call.fingerprint().map_err(gone)?;
        if now != cursor.fingerprint {
            let what = match (cursor.fingerprint, now) {
                (Some(then), Some(now)) if then.size != now.size => {
                    format!("changed since the first page (size {} → {} bytes)", then.size, now.size)
                }
                _ => "changed since the first page (it was modified or replaced)".to_string(),
            };
            return Err(stale(tool, &what).into());
        }
        Ok(Start {
            pending,
            view,
            position: Some(call.position_of(&cursor.resume, cursor.shard.as_ref())),
            call,
            heading,
            stream,
            index: cursor.page,
            fingerprint: cursor.fingerprint,
            hasher,
            session: cursor.session,
            args: cursor.args,
            bytes_before: cursor.bytes_before,
            items_before: cursor.items_before,
        })
    }
}

/// Where the compact form's paths are relative to: the call's first root,
/// where relative arguments go.
fn base(ctx: &CallContext) -> Option<String> {
    ctx.grants.first().map(|grant| grant.guest.clone())
}

/// Where a cursor's stream is parked: its resume position, and for a sharded
/// call the shard's end (positions are the shard's own).
fn parked_key(cursor: &Cursor) -> String {
    match &cursor.shard {
        None => cursor.resume.clone(),
        Some(shard) => format!("{}\u{0}{}", cursor.resume, shard.end.as_deref().unwrap_or("\u{0}")),
    }
}

fn stale(tool: &Tool, what: &str) -> CallFailure {
    CallFailure::Tool(ToolError::new(
        ErrorCode::Stale,
        format!("what this cursor pages {what}; start again: call `{}` without `cursor`", tool.manifest.name),
    ))
}
