//! What a page of a file holds for a model, in the text form, told by the
//! tool's `info` before the first chunk: a file that reads as text, a whole
//! image or Jupyter notebook (gathered onto one page, past the page's usual
//! budget, up to the image limit), a binary file described instead of shown,
//! or a byte range of a binary file. Any tool whose `info` carries `media_type` and `binary`
//! (as `read`'s does) gets this; others are paged as they come.
//!
//! The JSON form never comes here, nor a program following every cursor
//! (`cordon call --all`): they get every byte exactly.

use serde_json::Value;

use super::Pager;
use super::start::Start;
use crate::runtime::CallFailure;
use crate::tool::Budget;

/// The media type of a Jupyter notebook (as `read` reports it).
pub const NOTEBOOK: &str = "application/x-ipynb+json";

/// The image types a model is shown as images (as Claude's API takes them).
pub const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The largest image the API takes: 5 MB of base64 (Anthropic's limit per
/// image), that is 3.75 MiB of the file's bytes.
pub const API_IMAGE_BYTES: u64 = (5 << 20) / 4 * 3;

/// What the rest of a response takes beside an image's base64: the JSON-RPC
/// envelope, the line beside it, the page's metadata.
const RESPONSE_MARGIN: u64 = 64 << 10;

/// The largest image shown whole, for a server whose responses may be at
/// most `max_response_bytes` long: the API's limit, or less when the image's
/// base64 (4 bytes for 3) and the rest of the response would not fit.
pub fn image_limit(max_response_bytes: usize) -> u64 {
    let fits = (max_response_bytes as u64).saturating_sub(RESPONSE_MARGIN) / 4 * 3;
    API_IMAGE_BYTES.min(fits)
}

/// How a page of a file is shown to a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Media {
    /// A file that reads as text: any bytes that are not UTF-8 are shown as
    /// U+FFFD, with a note of where they are.
    Text,
    /// A whole image, on one page, shown as an image.
    Image(File),
    /// A whole Jupyter notebook, on one page, shown as its cells with their
    /// outputs in at most `shown_bytes` (the page's own budget).
    Notebook { file: File, shown_bytes: u32 },
    /// A binary file, or an image too large to show: one sentence, and
    /// nothing of the file (`limit`: the image limit it is over).
    Described { file: File, limit: Option<u64> },
    /// A byte range of a binary file: its bytes as a hex dump.
    Range,
}

/// The file a page is of, as the model is told about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// The path, relative to the call's first root when inside it.
    pub path: String,
    /// The size in bytes.
    pub size: u64,
    /// The media type, e.g. `image/png`.
    pub media_type: String,
}

impl Media {
    /// How page `index` of the call whose tool said `info` is shown, at a
    /// page `budget`, for a server gathering images and notebooks up to
    /// `whole_limit` bytes, with paths made relative by `relative`; `None`
    /// when `info` does not say what the file is (a tool that pages no file).
    pub fn of(
        info: &Value,
        index: u64,
        (budget, whole_limit): (Budget, u64),
        relative: impl Fn(&str) -> String,
    ) -> Option<Media> {
        let media_type = info.get("media_type")?.as_str()?;
        let binary = info.get("binary").and_then(Value::as_bool).unwrap_or(false);
        let file = File {
            path: relative(info.get("path").and_then(Value::as_str).unwrap_or_default()),
            size: info.get("size").and_then(Value::as_u64).unwrap_or_default(),
            media_type: media_type.to_string(),
        };
        // A range asks for the file's own lines or bytes; so does a later
        // page (a first page shows a whole file or describes it, and is the last).
        let whole = index == 0 && info.get("byte_range").is_none() && info.get("line_range").is_none();
        if !binary {
            return Some(match media_type == NOTEBOOK && whole && file.size <= whole_limit {
                true => Media::Notebook { file, shown_bytes: budget.bytes },
                false => Media::Text,
            });
        }
        if info.get("byte_range").is_some() || index > 0 {
            return Some(Media::Range);
        }
        Some(match IMAGE_TYPES.contains(&media_type) {
            true if file.size <= whole_limit => Media::Image(file),
            true => Media::Described { file, limit: Some(whole_limit) },
            false => Media::Described { file, limit: None },
        })
    }

    /// The page's budget: an image's or a notebook's whole size (it comes on
    /// one page, whatever the page's usual budget), the bytes whose hex dump
    /// fits `budget` for a range (each byte takes about 4¼ characters), else
    /// `budget`.
    pub fn budget(&self, budget: Budget) -> Budget {
        match self {
            Media::Image(file) | Media::Notebook { file, .. } => {
                Budget { bytes: file.size.clamp(4, u64::from(u32::MAX)) as u32, items: u32::MAX }
            }
            Media::Range => Budget { bytes: (budget.bytes / 17 * 4).max(16), ..budget },
            Media::Text | Media::Described { .. } => budget,
        }
    }

    /// Whether the page shows nothing of the file (so nothing is pulled).
    pub fn shows_nothing(&self) -> bool {
        matches!(self, Media::Described { .. })
    }
}

impl Pager {
    /// In the text form, how the page is shown to a model when the tool
    /// pages one file (it has a fingerprint; see `media`); `None` in the JSON
    /// form, and without asking the tool for its `info` for any other call.
    pub(super) fn media(&self, start: &mut Start, budget: Budget) -> Result<Option<Media>, CallFailure> {
        let (Some(view), Some(_)) = (&start.view, &start.fingerprint) else { return Ok(None) };
        let info = start.call.info()?;
        let limits = (budget, self.limits.max_whole_bytes);
        Ok(Media::of(&info, start.index, limits, |path| view.printer.shown_path(path)))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const PAGE: Budget = Budget { bytes: 400, items: 10 };

    fn of(info: Value, index: u64) -> Option<Media> {
        Media::of(&info, index, (PAGE, 1000), |p| p.trim_start_matches("/r/").to_string())
    }

    #[test]
    fn the_tools_info_tells_how_a_page_is_shown() {
        let png = json!({"path": "/r/a.png", "size": 10, "media_type": "image/png", "binary": true});
        let file = File { path: "a.png".into(), size: 10, media_type: "image/png".into() };
        assert_eq!(of(png.clone(), 0), Some(Media::Image(file.clone())));
        assert_eq!(of(png.clone(), 1), Some(Media::Range), "a later page is bytes");
        let mut big = png.clone();
        big["size"] = 1001.into();
        let limit = Some(1000);
        assert_eq!(of(big, 0), Some(Media::Described { file: File { size: 1001, ..file.clone() }, limit }));
        let mut range = png;
        range["byte_range"] = json!([0, 4]);
        assert_eq!(of(range, 0), Some(Media::Range));
        let zip = json!({"path": "/r/z", "size": 3, "media_type": "application/zip", "binary": true});
        assert!(matches!(of(zip, 0), Some(Media::Described { limit: None, .. })));
        assert_eq!(of(json!({"media_type": "text/plain"}), 0), Some(Media::Text));
        let nb = json!({"path": "/r/n.ipynb", "size": 900, "media_type": NOTEBOOK, "binary": false});
        let file = File { path: "n.ipynb".into(), size: 900, media_type: NOTEBOOK.into() };
        assert_eq!(of(nb.clone(), 0), Some(Media::Notebook { file, shown_bytes: 400 }));
        let mut lines = nb.clone();
        lines["line_range"] = json!([1, null]);
        assert_eq!(of(lines, 0), Some(Media::Text), "a range of its lines is its JSON text");
        let mut big = nb;
        big["size"] = 1001.into();
        assert_eq!(of(big, 0), Some(Media::Text), "too large to gather: its JSON text, paged");
        assert_eq!(of(json!({"path": "/r/x", "matches": 2}), 0), None, "a tool that pages no file");
    }

    #[test]
    fn an_image_comes_whole_and_a_range_in_what_its_dump_fits() {
        let page = Budget { bytes: 17_000, items: 100 };
        let file = File { path: "a".into(), size: 5000, media_type: "image/gif".into() };
        assert_eq!(Media::Image(file).budget(page), Budget { bytes: 5000, items: u32::MAX });
        assert_eq!(Media::Range.budget(page), Budget { bytes: 4000, items: 100 });
        assert_eq!(Media::Text.budget(page), page);
        assert_eq!(image_limit(4 << 20), ((4 << 20) - (64 << 10)) / 4 * 3, "the response limit binds");
        assert_eq!(image_limit(64 << 20), API_IMAGE_BYTES, "else the API's");
    }
}
