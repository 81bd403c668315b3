//! How a page that is not the last continues: the signed cursor (what the
//! result is, where the next page starts, the hash so far, sealed), for a
//! model its short handle, the arguments to continue with, and the stream
//! parked for the next page.

use std::time::SystemTime;

use super::cursor::{Cursor, Heading};
use super::handles::{self, HandleError, Mint};
use super::page::Page;
use super::start::{Parked, Start, parked_key};
use super::{PageRequest, Pager, parked, sealed};

impl Pager {
    /// Gives `page` (pulled from `start`, which moved past where it
    /// started) its cursor, its handle when a model reads it, and the
    /// arguments to continue with, and parks the stream for the next page.
    pub(super) fn continuation(&self, request: &PageRequest, mut start: Start, page: &mut Page) {
        let PageRequest { tool, paging, for_model, .. } = request;
        let position = start.position.clone().expect("an incomplete page moved past its start");
        let (resume, shard) = start.call.locate(&position);
        let cursor = Cursor {
            key_id: Cursor::key_id(&self.key),
            tool: tool.manifest.name.clone(),
            tool_version: tool.identity(),
            owner: request.owner.clone(),
            args: start.args.clone(),
            resume,
            fingerprint: start.fingerprint,
            page: start.index + 1,
            parked_id: start.parked_id,
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
        // cursor itself); a program with the signed cursor.
        let handle = match for_model {
            true => {
                let position = handles::position(&key);
                let page = start.index + 1;
                let mint =
                    Mint { stream: start.stream.as_deref(), page, cursor: &cursor, position: &position, expires };
                let minted = self.handles.mint(mint);
                self.metrics.handle_op(self.handles.kind(), "mint", !matches!(minted, Err(HandleError::Store(_))));
                match minted {
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
        page.continue_with = Some(paging.continue_with(handle.clone().unwrap_or_else(|| cursor.clone())));
        page.handle = handle;
        page.next_cursor = Some(cursor);
        start.call.disarm();
        if start.spent {
            return;
        }
        let parked = Parked { call: start.call, pending: start.pending, view: start.view, drained: start.drained };
        let bytes = parked.bytes();
        let place = parked::Place { position: key, owner: request.owner.clone() };
        self.parked.park(start.parked_id, place, parked, bytes);
    }
}
