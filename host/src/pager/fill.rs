//! The pull loop: pieces taken from a page's stream until the next one does
//! not fit the page's budget (it waits, pending, for the next page), the
//! output ends, or the page's time is up (then the page answers at the last
//! chunk or checkpoint it passed).

use super::aside::{ASIDE_MIN, Aside, Running};
use super::clock::PageClock;
use super::count::Tally;
use super::page::{Builder, Ended, Piece};
use super::pieces::{Next, next_piece};
use super::start::Start;
use super::{PageError, PageRequest, Pager};
use crate::runtime::{CallFailure, HostFault};
use crate::tool::{Budget, Payload};

/// Pieces taken from those kept between pages before the page's clock is
/// read again (reading it for each took a fortieth of a later page's time).
const PENDING_BETWEEN_LOOKS: u32 = 64;

/// The running hash's state was lost with the thread that had it.
const LOST: CallFailure = CallFailure::Host(HostFault::NoAnswer);

/// A page filled: its pieces, why it ended, and its stream, moved along.
pub(super) struct Filled {
    pub start: Start,
    pub builder: Builder,
    pub ended: Ended,
    /// What the page took, counted, when asked (`Fill::tally`).
    pub tally: Option<Tally>,
}

/// What a page is filled to.
#[derive(Debug, Clone, Copy)]
pub(super) struct Fill {
    pub budget: Budget,
    /// The page shows nothing of the stream (a file shown otherwise, see
    /// `media`): it ends, complete, before pulling.
    pub shows_nothing: bool,
    /// Count what the page takes (a first page whose whole result may be
    /// counted, see `count`).
    pub tally: bool,
}

impl Pager {
    /// Fills one page from `start`'s stream, moving its position, heading
    /// and hash along with what the page takes; says why the page ended.
    pub(super) fn fill(&self, request: &PageRequest, mut start: Start, fill: Fill) -> Result<Filled, PageError> {
        let (ctx, budget) = (&request.ctx, fill.budget);
        let signal = &ctx.signal;
        let clock = PageClock::start(ctx.deadline, self.limits.page_time);
        let mut builder = Builder::new(budget, self.limits.max_depth);
        let mut delivered = 0u64;
        let mut tally = fill.tally.then(Tally::default);
        // Only a page that moved past where it started (data, or a checkpoint
        // elsewhere than its start) can end on time with a continuation that
        // goes further.
        let started_at = start.position.clone();
        let mut taken = 0u32;
        let mut running = Running::new(std::mem::take(&mut start.hasher));
        let ended = loop {
            if signal.is_cancelled() {
                return Err(CallFailure::Cancelled.into());
            }
            // Pieces kept from an earlier pull come without work: the clock
            // is read before each pull, and only now and then between them.
            taken = taken.wrapping_add(1);
            let look = start.pending.is_empty() || taken.is_multiple_of(PENDING_BETWEEN_LOOKS);
            if look && clock.is_due() && start.position != started_at {
                break Ended::Time;
            }
            if fill.shows_nothing {
                break Ended::Complete;
            }
            let mut piece = match start.pending.pop_front() {
                Some(piece) => piece,
                // The stream gave its end while counting: what it held is all pending.
                None if start.drained => break Ended::Complete,
                None => {
                    // A page that has not moved takes what it pulls whatever the time.
                    let moved = start.position != started_at;
                    let pulled = next_piece(&mut start.call, start.view.as_mut(), budget, &mut start.pending, || {
                        !moved || !clock.is_due()
                    })?;
                    match pulled {
                        Next::Piece(piece) => piece,
                        Next::End => break Ended::Complete,
                        Next::Held => break Ended::Time,
                    }
                }
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
                    Piece::Shown(mut shown) if builder.is_empty() => {
                        if let Some(view) = &start.view {
                            shown.text = view.printer.cut(shown.text, budget.bytes as usize);
                        }
                        piece = Piece::Shown(shown);
                    }
                    Piece::Chunk(_) if builder.is_empty() => {
                        // Pulled for an earlier, larger page: take it again at this
                        // budget, in the instance slot the old stream gives back
                        // (a sharded call, the shard the last piece came from).
                        start.pending.clear();
                        start.drained = false;
                        let opener = self.opener(&request.tool, &start.args);
                        start.call = start.call.rewind(&opener, ctx, start.position.as_deref())?;
                        start.call.arm(ctx, budget);
                        if start.view.is_some() {
                            start.view = self.view(ctx, crate::args::Form::Text, start.heading.clone());
                        }
                        continue;
                    }
                    piece => {
                        start.pending.push_front(piece);
                        break Ended::Size;
                    }
                }
            }
            // Pages read in this process (`cordon call`) have no client
            // beside them to leave a core to: their large pieces are hashed
            // aside while the next is pulled. A session's page hashes them
            // itself: its client parses pages on the other core (over MCP
            // stdio at the largest page, 180 MB/s with them aside against
            // 292–310 without, same session).
            let hashed = match request.in_process {
                false => running.update_here(piece.bytes()),
                true => running.update(piece.bytes(), |job| self.runtime.offer(job)),
            };
            hashed.ok_or(LOST)?;
            delivered += piece.bytes().len() as u64;
            signal.host_report(delivered, Some(u64::from(budget.bytes)), Some("bytes of this page"));
            start.position = Some(piece.take_resume());
            if let Piece::Shown(shown) = &piece {
                start.heading = shown.heading.clone();
            }
            if let Some(tally) = tally.as_mut() {
                tally.piece(&piece);
            }
            let aside = self.hash_aside(request, &start, &piece);
            builder.push_hashed(piece, aside);
        };
        start.hasher = running.finish().ok_or(LOST)?;
        if ended == Ended::Time {
            tracing::debug!(tool = %request.tool.manifest.name, page = start.index, elapsed = ?clock.elapsed(), "page ended on time");
        }
        Ok(Filled { start, builder, ended, tally })
    }

    /// Starts hashing a large text or bytes chunk of a page that a program
    /// reads through a session (the JSON form, whose metadata gives each
    /// chunk's SHA-256) on an idle thread of the call pool (see `aside`); the
    /// page is then made while it is hashed. A model's text form shows no
    /// digests; `cordon call --all` hashes its running hash aside instead.
    fn hash_aside(&self, request: &PageRequest, start: &Start, piece: &Piece) -> Option<Aside> {
        let Piece::Chunk(chunk) = piece else { return None };
        let (Payload::Text(_) | Payload::Bytes(_)) = &chunk.payload else { return None };
        let bytes = chunk.payload.as_bytes();
        if !request.for_model || start.view.is_some() || bytes.len() < ASIDE_MIN {
            return None;
        }
        Aside::start(bytes, |job| self.runtime.offer(job))
    }
}
