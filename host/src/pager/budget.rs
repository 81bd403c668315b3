//! How large a page is: the budget a call asks for, clamped by the server's
//! limits, with a file's page for a tool whose text is lines of a file, and
//! the large pages of a program that follows every cursor.

use std::time::Duration;

use serde_json::Value;

use super::{count, handles};
use crate::args::Paging;
use crate::registry::Tool;
use crate::tool::Budget;

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

/// The default page of a tool whose text is lines of a file (`read`): as
/// much as an agent's own file reader shows at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilePage {
    /// Estimated tokens.
    pub tokens: u32,
    /// Lines.
    pub lines: u32,
}

/// The page a program following every cursor gets when it does not ask for
/// one (`cordon call --all`): its pages never cross the wire, so they may be
/// larger than any MCP page, which cuts the cost per page (the cursor, the
/// hand-off to the guest's thread) to almost nothing per byte.
pub(super) const STREAM_PAGE: Budget = Budget { bytes: 2 << 20, items: u32::MAX };

/// The page budget for these options, clamped by the server's limits; for a
/// program that asked for no size, `STREAM_PAGE`. A tool whose text is
/// lines of a file (`lines`) defaults to a file's page.
pub(super) fn budget(limits: &PageLimits, paging: &Paging, for_model: bool, lines: bool) -> Budget {
    if !for_model && paging.max_tokens.is_none() && paging.page_size.is_none() {
        return STREAM_PAGE;
    }
    let (default_tokens, default_items) = match lines {
        true => (limits.file.tokens, limits.file.lines.min(limits.max_items)),
        false => (limits.default_tokens, limits.max_items),
    };
    let tokens = paging.max_tokens.map_or(default_tokens, |t| t.min(u64::from(limits.max_tokens)) as u32);
    let items = paging.page_size.map_or(default_items, |n| n.min(u64::from(limits.max_items)) as u32);
    Budget { bytes: tokens.saturating_mul(BYTES_PER_TOKEN).max(4), items: items.max(1) }
}

/// Whether `tool`'s text is lines of a file: it declares `line_numbers`
/// (which the host honours: `View::Numbered`), and its pages default to a
/// file's page (`FilePage`).
pub(super) fn shows_lines(tool: &Tool) -> bool {
    tool.manifest.input_schema["properties"].get("line_numbers").is_some()
}

/// Whether the call `args` (canonical JSON) leaves line numbers on.
pub(super) fn numbered(args: &str) -> bool {
    serde_json::from_str::<Value>(args).ok().and_then(|a| a.get("line_numbers")?.as_bool()) != Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_default_and_clamp_to_the_server_limits() {
        let limits = crate::limits::Limits::default().pages;
        let default = budget(&limits, &Paging::default(), true, false);
        assert_eq!(default, Budget { bytes: limits.default_tokens * BYTES_PER_TOKEN, items: limits.max_items });
        let file = budget(&limits, &Paging::default(), true, true);
        assert_eq!(
            file,
            Budget { bytes: 15_000 * BYTES_PER_TOKEN, items: 2_000 },
            "a file's lines: as Read shows them"
        );
        let huge = budget(
            &limits,
            &Paging { max_tokens: Some(u64::MAX), page_size: Some(u64::MAX), ..Paging::default() },
            true,
            true,
        );
        assert_eq!(huge, Budget { bytes: limits.max_tokens * BYTES_PER_TOKEN, items: limits.max_items });
        let tiny =
            budget(&limits, &Paging { max_tokens: Some(1), page_size: Some(1), ..Paging::default() }, false, false);
        assert_eq!(tiny, Budget { bytes: 4, items: 1 }, "a program that asks gets what it asks");
        assert_eq!(
            budget(&limits, &Paging::default(), false, true),
            STREAM_PAGE,
            "a program that does not: large pages"
        );
    }
}
