//! The pieces a page is made of, pulled from a stream: its chunks as they
//! come, or, in the compact text form, its items gathered whole and rendered.
//! A checkpoint (an empty chunk, see WIT `chunk`) passes through as a chunk:
//! the pager takes its position and puts nothing on the page.

use super::pending::Pending;

use super::page::{Piece, Shown};
use super::printer::{Fields, Printer};
use super::stream::Stream;
use crate::runtime::CallFailure;
use crate::tool::{Budget, Chunk, Payload};
use serde_json::Value;

/// The text form of a stream: its printer, and the chunk pulled to see
/// whether a match is its file's only one, to be taken next.
pub struct TextView {
    pub printer: Box<dyn Printer>,
    pub peeked: Option<Chunk>,
}

impl TextView {
    pub fn new(printer: Box<dyn Printer>) -> TextView {
        TextView { printer, peeked: None }
    }

    /// The bytes the view holds besides its printer's state.
    pub fn bytes(&self) -> usize {
        self.peeked.as_ref().map_or(0, |c| c.payload.len() + c.resume.len())
    }
}

/// How many bytes a pull asks for while gathering the pieces of an item too
/// large for the page, to render it whole.
const GATHER: u32 = 1 << 20;

/// What a page takes next from a stream.
pub enum Next {
    /// A piece to put on the page.
    Piece(Piece),
    /// The output ended.
    End,
    /// A match that opens a file, held back in the view: whether it is the
    /// file's only one takes one more pull, which `time_left` said not to
    /// make. It is taken first next time, so the page ends before it.
    Held,
}

/// The next piece of `call`'s output: its next chunk, or, in the text form
/// (`view`), its next item gathered whole and rendered. An item without a
/// compact shape stays JSON: when it came in pieces, the first is returned
/// and the rest (pulled at a larger budget, so the page takes it again at
/// its own) queued in `rest`. A match that opens a file is shown on one line
/// when it is the file's only one: the chunk after it is pulled to see, and
/// kept in the view to be taken next. When the page's time is up
/// (`time_left` false: one more pull could take the page past it), that
/// pull is not made and the match is held back instead (`Next::Held`), so
/// the rendering never depends on time: the next page shows it.
pub fn next_piece(
    call: &mut Stream,
    mut view: Option<&mut TextView>,
    budget: Budget,
    rest: &mut Pending,
    time_left: impl Fn() -> bool,
) -> Result<Next, CallFailure> {
    let peeked = view.as_mut().and_then(|v| v.peeked.take());
    let Some(first) = peeked.map_or_else(|| call.next(budget), |chunk| Ok(Some(chunk)))? else { return Ok(Next::End) };
    let Some(view) = view.filter(|_| !first.is_checkpoint()) else { return Ok(Next::Piece(Piece::Chunk(first))) };
    let Payload::Item(text) = &first.payload else { return Ok(Next::Piece(Piece::Chunk(first))) };
    let shown = |text: String, resume: String, item: &Value, printer: &dyn Printer| {
        let path = Fields::of(item).and_then(|f| f.text("path")).map(|path| printer.shown_path(path));
        Piece::Shown(Shown { text, resume, heading: printer.heading().map(str::to_owned), path })
    };
    if !first.continued {
        let Ok(item) = serde_json::from_str::<Value>(text) else { return Ok(Next::Piece(Piece::Chunk(first))) };
        let printer = view.printer.as_mut();
        let more_in_file = match printer.opening_match(&item) {
            Some(_) if !time_left() => {
                view.peeked = Some(first);
                return Ok(Next::Held);
            }
            Some(path) => {
                let next = call.next(budget)?;
                let same = next.as_ref().is_some_and(|n| same_file(printer, n, path));
                view.peeked = next;
                same
            }
            None => false,
        };
        return Ok(Next::Piece(match printer.render(&item, more_in_file) {
            Some(text) => shown(text, first.resume, &item, printer),
            None => Piece::Chunk(first),
        }));
    }
    let mut whole = text.clone();
    let mut pieces = vec![first];
    while pieces.last().is_some_and(|p| p.continued) {
        let Some(next) = call.next(Budget { bytes: GATHER, items: 1 })? else { break };
        if let Payload::Item(piece) = &next.payload {
            whole.push_str(piece);
        }
        pieces.push(next);
    }
    // An item this large is shown under its file's heading.
    let printer = view.printer.as_mut();
    if let Some(item) = serde_json::from_str::<Value>(&whole).ok()
        && let Some(text) = printer.render(&item, true)
    {
        let resume = pieces.pop().map(|p| p.resume).unwrap_or_default();
        return Ok(Next::Piece(shown(text, resume, &item, printer)));
    }
    let mut pieces = pieces.into_iter();
    let first = pieces.next().map(Piece::Chunk);
    if let Some(last) = pieces.next_back() {
        // The pieces after the first, as one: the page takes them again at its budget.
        let skip = first.as_ref().map_or(0, |f| f.bytes().len());
        let payload = Payload::Item(whole[skip..].to_string());
        rest.push_back(Piece::Chunk(Chunk { payload, ..last }));
    }
    Ok(first.map_or(Next::End, Next::Piece))
}

/// Whether `chunk` is a whole match item in the file `path`.
fn same_file(printer: &dyn Printer, chunk: &Chunk, path: &str) -> bool {
    let Payload::Item(text) = &chunk.payload else { return false };
    !chunk.continued && serde_json::from_str::<Value>(text).ok().as_ref().and_then(|i| printer.file_of(i)) == Some(path)
}
