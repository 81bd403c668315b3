//! Where a page starts: a first page opens the tool; a later one checks its
//! cursor (or the handle that names it), takes the parked stream or reopens
//! the tool at the cursor's resume position, and checks that what is paged
//! has not changed since the first page.

use std::time::SystemTime;

use serde_json::Value;

use super::cursor::{Cursor, CursorError};
use super::handles::{self, HandleError};
use super::pending::Pending;
use super::pieces::TextView;
use super::stream::Stream;
use super::{PageError, PageRequest, Pager, parked, sealed};
use crate::args::Form;
use crate::runtime::{CallContext, CallFailure};
use crate::sha256::Sha256;
use crate::telemetry::traces::step;
use crate::tool::{Budget, ErrorCode, Fingerprint, ToolError};

/// A stream parked between two pages, with the pieces pulled but not
/// delivered because they did not fit the last page, and the text view
/// that rendered it.
pub(super) struct Parked {
    pub call: Stream,
    pub pending: Pending,
    pub view: Option<TextView>,
    /// The stream gave its end: `pending` holds the rest of the result.
    pub drained: bool,
}

impl Parked {
    /// What the stream holds: its instances' memory and the output pulled
    /// but not delivered.
    pub fn bytes(&self) -> usize {
        self.call.memory_bytes() + self.pending.bytes() + self.view.as_ref().map_or(0, TextView::bytes)
    }
}

/// A page's stream and where the result stands before it.
pub(super) struct Start {
    pub call: Stream,
    pub pending: Pending,
    /// The text view, for the text form: its printer's heading is the one
    /// after the last item rendered (the pending one included).
    pub view: Option<TextView>,
    /// The stream gave its end (read ahead to count it): `pending` holds
    /// the rest of the result, and the stream is not pulled again.
    pub drained: bool,
    /// The stream failed while read ahead: it is not parked, and the next
    /// page reopens the tool at the cursor.
    pub spent: bool,
    /// The resume position after the last chunk delivered (none on page 0).
    pub position: Option<String>,
    /// The heading in force after the last item delivered.
    pub heading: Option<String>,
    /// The result the handle this page was asked with names, so the next
    /// page's handle names it too (none: a first page, or a signed cursor).
    pub stream: Option<String>,
    pub index: u64,
    pub fingerprint: Option<Fingerprint>,
    pub hasher: Sha256,
    /// The id the stream is parked under between pages.
    pub parked_id: u64,
    /// The tool's arguments, as canonical JSON.
    pub args: String,
    pub bytes_before: u64,
    pub items_before: u64,
}

impl Pager {
    /// A printer for `request`'s call in the text form, continuing under
    /// `heading`; `None` in the JSON form.
    pub(super) fn view(&self, ctx: &CallContext, form: Form, heading: Option<String>) -> Option<TextView> {
        match form {
            Form::Text => Some(TextView::new(self.printers.printer(base(ctx), heading))),
            Form::Json => None,
        }
    }

    /// A first page: the tool opened with the request's arguments, checked
    /// against its schema.
    pub(super) fn first(&self, request: &PageRequest) -> Result<Start, PageError> {
        let PageRequest { ctx, tool, args, paging, .. } = request;
        step("validate").in_scope(|| tool.validate(args)).map_err(CallFailure::Tool)?;
        let args = args.to_string();
        let mut call = step("open").in_scope(|| Stream::open(self.opener(tool, &args), ctx))?;
        let fingerprint = call.fingerprint()?;
        Ok(Start {
            call,
            pending: Pending::default(),
            view: self.view(ctx, paging.format.unwrap_or_default(), None),
            drained: false,
            spent: false,
            position: None,
            heading: None,
            stream: None,
            index: 0,
            fingerprint,
            hasher: Sha256::default(),
            parked_id: parked::new_id(),
            args,
            bytes_before: 0,
            items_before: 0,
        })
    }

    /// A later page: checks the cursor `text` and finds (or reopens) its stream.
    pub(super) fn resume(&self, request: &PageRequest, budget: Budget, text: &str) -> Result<Start, PageError> {
        let PageRequest { ctx, tool, args, paging, .. } = request;
        let behind;
        let stream = handles::stream_of(text).map(str::to_owned);
        let text = match handles::is_handle(text) {
            true => {
                let resolved = self.handles.resolve(text);
                let failed = matches!(resolved, Err(HandleError::Store(_)));
                self.metrics.handle_op(self.handles.kind(), "resolve", !failed);
                behind = resolved.map_err(|e| match e {
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
        // Checked first: another principal learns nothing of the result.
        if cursor.owner != request.owner {
            return Err(CursorError::OtherPrincipal.into());
        }
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
        let hasher = Sha256::deserialize(&state).ok_or(CursorError::Malformed)?;
        let gone = |f: CallFailure| match f {
            CallFailure::Tool(e) => stale(&tool.manifest.name, &format!("can no longer be resumed ({})", e.message)),
            other => other,
        };
        // A parked stream opened with other grants (another session's client roots)
        // is not reused: the stream is reopened with this request's.
        let parked = self.parked.take(cursor.parked_id, &parked_key(&cursor)).filter(|p| p.call.grants() == ctx.grants);
        let heading = cursor.compact.clone().and_then(|h| h.line);
        let (mut call, pending, view, drained) = match parked {
            Some(parked) => (parked.call, parked.pending, parked.view, parked.drained),
            None => {
                tracing::debug!(tool = %tool.manifest.name, page = cursor.page, "stream gone, reopening at the cursor");
                let opener = self.opener(tool, &cursor.args);
                let reopened =
                    step("open").in_scope(|| Stream::reopen(opener, ctx, &cursor.resume, cursor.shard.as_ref()));
                (reopened.map_err(gone)?, Pending::default(), self.view(ctx, form, heading.clone()), false)
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
            return Err(stale(&tool.manifest.name, &what).into());
        }
        Ok(Start {
            pending,
            view,
            drained,
            spent: false,
            position: Some(call.position_of(&cursor.resume, cursor.shard.as_ref())),
            call,
            heading,
            stream,
            index: cursor.page,
            fingerprint: cursor.fingerprint,
            hasher,
            parked_id: cursor.parked_id,
            args: cursor.args,
            bytes_before: cursor.bytes_before,
            items_before: cursor.items_before,
        })
    }
}

/// Where the text form's paths are relative to: the call's first root,
/// where relative arguments go.
pub(super) fn base(ctx: &CallContext) -> Option<String> {
    ctx.grants.first().map(|grant| grant.guest.clone())
}

/// Where a cursor's stream is parked: its resume position, and for a sharded
/// call the shard's end (positions are the shard's own).
pub(super) fn parked_key(cursor: &Cursor) -> String {
    match &cursor.shard {
        None => cursor.resume.clone(),
        Some(shard) => format!("{}\u{0}{}", cursor.resume, shard.end.as_deref().unwrap_or("\u{0}")),
    }
}

/// The failure of a call whose paged result changed (`what`) under `tool`'s cursor.
pub(super) fn stale(tool: &str, what: &str) -> CallFailure {
    CallFailure::Tool(ToolError::new(
        ErrorCode::Stale,
        format!("what this cursor pages {what}; start again: call `{tool}` without `cursor`"),
    ))
}
