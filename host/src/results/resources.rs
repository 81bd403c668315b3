//! Resource results: the files a `glob` page found as `resources/list`
//! entries, and a `read` page as `resources/read` contents (text with its
//! charset, or a blob with its MIME type), its place and hashes in `_meta`.

use std::path::Path;

use serde_json::{Value, json};

use super::json::page_bytes;
use super::{PAGE_META, base64_encode, page_meta};
use crate::pager::page::{Block, Page};

/// The Skills extension's identifier, declared for `resources/directory/read`.
pub const SKILLS: &str = "io.modelcontextprotocol/skills";

/// The URI template of every resource.
pub const TEMPLATE: &str = "file:///{+path}";

/// The `_meta` key of the item that says where a file read in pages goes on.
pub const CONTINUATION: &str = "cordon/continuation";

/// The `resources/templates/list` result.
pub fn templates() -> Value {
    json!({ "resourceTemplates": [{
        "uriTemplate": TEMPLATE,
        "name": "file",
        "title": "A file under the server's roots",
        "description": "Any file under the roots by its absolute path (file:///home/me/project/README.md); \
            a read that does not hold the whole file names the URI that continues it in \
            _meta[\"cordon/page\"].next_uri.",
    }] })
}

/// The MIME type of a directory resource (SEP-2640).
pub const DIRECTORY: &str = "inode/directory";

/// The items of a page in the JSON form (one JSON value a line).
fn items(page: &Page) -> impl Iterator<Item = Value> + '_ {
    let lines = page.blocks.iter().filter_map(|b| if let Block::Text(t) = b { Some(t.lines()) } else { None });
    lines.flatten().filter_map(|line| serde_json::from_str::<Value>(line).ok())
}

/// The files on a `glob` page (JSON form, `details`) as resources, each
/// named by its path relative to `root`.
pub fn found(page: &Page, root: &Path) -> Vec<Value> {
    let files = items(page).filter(|item| item.get("type").and_then(Value::as_str) == Some("file"));
    let found = files.filter_map(|item| {
        let path = item.get("path").and_then(Value::as_str)?;
        Some(resource(Path::new(path), root, item.get("size").and_then(Value::as_u64)))
    });
    found.collect()
}

/// The entries on a `list` page (JSON form, depth 1) as the children of the
/// directory `dir`: a subdirectory as a directory resource, anything else
/// (a file, a link the read follows) as a file resource.
pub fn children(page: &Page, dir: &Path) -> Vec<Value> {
    let children = items(page).filter_map(|item| {
        let path = Path::new(item.get("path").and_then(Value::as_str)?);
        if item.get("type").and_then(Value::as_str) == Some("dir") {
            let name = path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            let mut uri = file_uri(path);
            uri.push('/');
            return Some(json!({ "uri": uri, "name": name, "mimeType": DIRECTORY }));
        }
        Some(resource(path, dir, item.get("size").and_then(Value::as_u64)))
    });
    children.collect()
}

/// One file as a `Resource`.
fn resource(path: &Path, root: &Path, size: Option<u64>) -> Value {
    let name = path.strip_prefix(root).unwrap_or(path).display().to_string();
    let mut entry = json!({ "uri": file_uri(path), "name": name });
    if let Some(mime) = mime_guess::from_path(path).first_raw() {
        entry["mimeType"] = mime.into();
    }
    if let Some(size) = size {
        entry["size"] = size.into();
    }
    entry
}

/// The `file:` URI of an absolute path (percent-encoded as URIs need).
pub fn file_uri(path: &Path) -> String {
    url::Url::from_file_path(path).map_or_else(|()| format!("file://{}", path.display()), String::from)
}

/// The `resources/list` result.
pub fn listed(resources: Vec<Value>, next: Option<String>) -> Value {
    let mut result = json!({ "resources": resources });
    if let Some(next) = next {
        result["nextCursor"] = next.into();
    }
    result
}

/// A `read` page (JSON form) as `resources/read` contents for `uri`: text
/// when the page's payload is UTF-8, else a blob of every byte. `_meta`
/// holds the page's place, size, hashes and, when more follows, the cursor
/// and `next_uri`, the URI that reads on, which a second item also names for
/// a model to read (`CONTINUATION`).
pub fn contents(page: &Page, uri: &str, next_uri: Option<String>) -> Value {
    let media = page.info.get("media_type").and_then(Value::as_str).unwrap_or("application/octet-stream");
    let mut meta = page_meta(page);
    if let Some(size) = page.info.get("size") {
        meta["size"] = size.clone();
    }
    if let Some(span) = &page.span {
        meta["start_byte"] = span.start_byte.into();
        meta["end_byte"] = span.end_byte.into();
    }
    let text: Option<String> =
        page.blocks.iter().map(|b| if let Block::Text(t) = b { Some(t.as_str()) } else { None }).collect();
    let item = match text {
        Some(text) => {
            let guessed =
                page.info.get("path").and_then(Value::as_str).and_then(|p| mime_guess::from_path(p).first_raw());
            json!({ "uri": uri, "mimeType": text_type(guessed.filter(|g| is_text(g)).unwrap_or(media)), "text": text })
        }
        None => json!({ "uri": uri, "mimeType": media, "blob": base64_encode(&page_bytes(&page.blocks)) }),
    };
    let mut items = vec![item];
    if let Some(next) = next_uri {
        // Clients pass `contents` on to their model and drop `_meta`: a page that is not the
        // last says where the file goes on, in an item of its own (the page is the first item).
        let (end, size) = (meta["end_byte"].clone(), meta["size"].clone());
        let notice = format!("The file goes on after byte {end} of {size}: read the resource {next} for the rest.");
        items.push(json!({ "uri": next, "mimeType": "text/plain", "text": notice, "_meta": { CONTINUATION: true } }));
        meta["next_uri"] = next.into();
    }
    json!({ "contents": items, "_meta": { PAGE_META: meta } })
}

/// The MIME type of text: the file's own when it is a text type, with its
/// charset (UTF-8: the read tool's text is), else `text/plain`.
fn text_type(media: &str) -> String {
    let base = if is_text(media) { media } else { "text/plain" };
    format!("{base}; charset=utf-8")
}

/// Whether a MIME type is text a client may show as it is.
fn is_text(media: &str) -> bool {
    media.starts_with("text/")
        || ["json", "xml", "javascript", "yaml", "toml", "x-sh"].iter().any(|t| media.ends_with(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_typed_with_its_charset() {
        assert_eq!(text_type("text/plain"), "text/plain; charset=utf-8");
        assert_eq!(text_type("text/markdown"), "text/markdown; charset=utf-8");
        assert_eq!(text_type("application/json"), "application/json; charset=utf-8");
        assert_eq!(text_type("application/octet-stream"), "text/plain; charset=utf-8");
    }

    #[test]
    fn a_file_resource_is_named_under_its_root_and_typed_by_its_extension() {
        let entry = resource(Path::new("/r/src/main.rs"), Path::new("/r"), Some(12));
        assert_eq!(entry["uri"], "file:///r/src/main.rs");
        assert_eq!(entry["name"], "src/main.rs");
        assert_eq!(entry["size"], 12);
        assert_eq!(resource(Path::new("/r/a.png"), Path::new("/r"), None)["mimeType"], "image/png");
        assert!(resource(Path::new("/r/Makefile"), Path::new("/r"), None).get("mimeType").is_none());
        assert!(
            listed(vec![], Some("1:".into()))["nextCursor"] == "1:" && listed(vec![], None).get("nextCursor").is_none()
        );
    }
}
