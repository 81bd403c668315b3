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
mod aside;
mod budget;
pub mod clock;
mod continuation;
pub mod count;
pub mod cursor;
pub mod depth;
mod error;
mod fill;
pub mod handles;
mod key_file;
pub mod media;
pub mod page;
pub mod parked;
mod pending;
mod pieces;
pub mod printer;
mod sealed;
mod shards;
mod start;
mod stream;
pub mod totals;

use std::sync::Arc;

use serde_json::Value;

use crate::args::Paging;
use crate::registry::Tool;
use crate::runtime::{CallContext, Reclaim, Runtime};
use crate::telemetry::traces::step;
pub use budget::{BYTES_PER_TOKEN, FilePage, PageLimits};
use budget::{budget, numbered, shows_lines};
use cursor::CursorKey;
pub use error::PageError;
use fill::{Fill, Filled};
use handles::{Handles, Store};
use media::Media;
use page::{Ended, Page, View};
use parked::ParkedStreams;
use printer::Printers;
use start::{Parked, stale};
use stream::Opener;

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
    /// The pages are read in this process (`cordon call`): no client
    /// process beside it parses them on another core.
    pub in_process: bool,
    /// The id of the principal asking (`auth::Principal::id`): a result is
    /// continued only by whoever started it.
    pub owner: String,
}

/// The engine: signing key, parked streams, limits, and the printers that
/// render the text form.
pub struct Pager {
    key: CursorKey,
    handles: Handles,
    parked: Arc<ParkedStreams<Parked>>,
    limits: PageLimits,
    runtime: Arc<Runtime>,
    printers: Arc<dyn Printers>,
    metrics: Arc<crate::metrics::Metrics>,
}

/// What a pager is made of besides its runtime.
pub struct PagerParts {
    /// Signs cursors.
    pub key: CursorKey,
    /// Keeps the handles that name cursors.
    pub handles: Store,
    pub limits: PageLimits,
    /// Render the text form (see `printer`).
    pub printers: Arc<dyn Printers>,
    /// Where counts and handle store operations are counted.
    pub metrics: Arc<crate::metrics::Metrics>,
}

impl Pager {
    /// A pager pulling from `runtime`, which may give up its parked streams
    /// when it runs short of instance slots (see `Runtime::reclaim_with`).
    /// Cursors are signed with the parts' key, and handles for them kept
    /// in their store.
    pub fn new(parts: PagerParts, runtime: Arc<Runtime>) -> Pager {
        let PagerParts { key, handles, limits, printers, metrics } = parts;
        let bounds = parked::Bounds { count: limits.parked, bytes: limits.parked_bytes, ttl: limits.parked_ttl };
        let parked = Arc::new(ParkedStreams::new(bounds));
        let reclaim: Arc<dyn Reclaim> = parked.clone();
        runtime.reclaim_with(Arc::downgrade(&reclaim));
        let handles = Handles::new(handles, limits.cursor_ttl.as_secs(), limits.handles);
        Pager { key, handles, parked, limits, runtime, printers, metrics }
    }

    pub fn limits(&self) -> &PageLimits {
        &self.limits
    }

    /// Whether the handle store answers; else why not.
    pub fn handles_reachable(&self) -> Result<(), String> {
        self.handles.reachable().map_err(|e| e.to_string())
    }

    /// The streams parked now, the bytes they hold, and how many were given
    /// up since start.
    pub fn parked_stats(&self) -> (usize, usize, u64) {
        (self.parked.len(), self.parked.bytes(), self.parked.given_up())
    }

    /// Produces one page of the tool's output for `request`: the guest work
    /// runs under the runtime's host timeout (`Runtime::bounded`), so the
    /// answer comes by the deadline plus the grace even from a guest blocked
    /// in a host call.
    pub fn page(self: &Arc<Self>, request: PageRequest) -> Result<Page, PageError> {
        let (pager, signal) = (Arc::clone(self), Arc::clone(&request.ctx.signal));
        let (name, deadline) = (request.tool.manifest.name.clone(), request.ctx.deadline);
        let span = crate::telemetry::traces::current();
        let page = self.runtime.bounded(&name, deadline, &signal, move || {
            span.in_scope(|| {
                let _page = step("page").entered();
                pager.pull(&request)
            })
        });
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

    /// Pulls one page from the tool: where it starts, how it is shown (a
    /// file to a model, see `media`), the pull loop, and how it continues.
    fn pull(&self, request: &PageRequest) -> Result<Page, PageError> {
        let PageRequest { ctx, tool, paging, for_model, .. } = request;
        let lines = shows_lines(tool);
        let budget = budget(&self.limits, paging, *for_model, lines);
        let mut start = match &paging.cursor {
            None => self.first(request)?,
            Some(text) => self.resume(request, budget, text)?,
        };
        start.call.arm(ctx, budget);
        let media = if *for_model { self.media(&mut start, budget)? } else { None };
        let budget = match media.as_ref().map(|media| media.budget(budget)) {
            Some(own) if own != budget => {
                start.call.arm(ctx, own);
                own
            }
            _ => budget,
        };
        let shows_nothing = media.as_ref().is_some_and(Media::shows_nothing);
        let fill = Fill { budget, shows_nothing, tally: *for_model && start.index == 0 };
        let Filled { mut start, builder, ended, tally } = self.fill(request, start, fill)?;
        if start.fingerprint.is_some() && start.call.fingerprint()? != start.fingerprint {
            return Err(stale(&tool.manifest.name, "changed while this page was read").into());
        }
        let info = start.call.info()?;
        let info = match &start.view {
            Some(view) => view.printer.slim(info, &tool.manifest.output_schema),
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
        if ended == Ended::Complete {
            page.sha256 = Some(crate::sha256::hex(&start.hasher.finalize()));
            return Ok(page);
        }
        page.summary = Some(start.call.summary()?);
        page.whole = self.whole(request, &mut start, &page, tally);
        self.continuation(request, start, &mut page);
        Ok(page)
    }
}
