//! Files as MCP resources: `resources/list` and `resources/read`, under the
//! same policy as the tools because they are made of tool calls.
//!
//! A resource is a file under a root the caller may read, named by its
//! `file:///absolute/path` URI. The list is the `glob` tool's walk of each root
//! in turn (every file in path order, hidden and ignored entries left out, as
//! `rg --files` lists them); a read is the `read` tool's page of the file in
//! the JSON form. So the caller's rights, the client's roots and the deny
//! rules apply exactly as to a call, every page is audited as a call, and a
//! large file is paged by the continuation engine: a page that is not the last
//! names the URI that continues it (`?cursor=…`, the signed cursor).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::{CallRequest, Caller, Server};
use crate::pager::page::Page;
use crate::policy::{Rights, Within};
use crate::protocol::jsonrpc::ErrorObject;
use crate::results::resources::file_uri;
use crate::results::{self, Answer, Failed, Fault};
use crate::runtime::CallSignal;
use crate::tool::Access;

/// The query parameter of a URI that continues a read (`file:///a?cursor=…`).
const CURSOR_QUERY: &str = "cursor";

/// Who asks for resources, and within what: as for a tool call.
pub struct Asker<'a> {
    pub caller: Caller,
    /// The client's roots (canonical paths), when it gave some.
    pub client_roots: Option<&'a [PathBuf]>,
    pub signal: &'a Arc<CallSignal>,
}

/// A `file:` URI taken apart: the absolute path it names and, for a read that
/// continues, the cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileUri {
    pub path: PathBuf,
    pub cursor: Option<String>,
}

impl FileUri {
    /// The path a `file:` URI names (`file:///a/b`, `file://localhost/a/b`),
    /// with its `cursor`; `None` for any other URI.
    pub fn parse(uri: &str) -> Option<FileUri> {
        let url = url::Url::parse(uri).ok()?;
        if url.scheme() != "file" || url.fragment().is_some() {
            return None;
        }
        let cursor = url.query_pairs().find(|(k, _)| k == CURSOR_QUERY).map(|(_, v)| v.into_owned());
        let mut url = url;
        url.set_query(None);
        let path = url.to_file_path().ok()?;
        Some(FileUri { path, cursor })
    }
}

/// The URI that continues a read of `path` at `cursor`.
fn continued_uri(path: &Path, cursor: &str) -> String {
    let mut url = url::Url::from_file_path(path).expect("the read tool reports absolute paths");
    url.query_pairs_mut().append_pair(CURSOR_QUERY, cursor);
    url.into()
}

impl Server {
    /// Whether the files are offered as resources (not `--no-resources`).
    pub fn offers_resources(&self) -> bool {
        self.resources
    }

    /// Who listens to changes, and the watcher of files.
    pub fn notices(&self) -> &crate::notices::Hub {
        &self.notices
    }

    /// The directories a caller's resources are under: the roots, narrowed by
    /// its rights and by the client's roots, as a reading tool's grants are.
    pub fn resource_roots(&self, rights: &Rights, client_roots: Option<&[PathBuf]>) -> Vec<PathBuf> {
        let within = Within { client: client_roots, principal: rights.roots.as_deref(), tool: None };
        self.policy.narrowed(Access::Read, within).into_iter().map(|grant| grant.host).collect()
    }

    /// One page of `resources/list`: a page of `glob`'s walk of one root. The
    /// cursor is the root's index and glob's own signed cursor.
    pub fn list_resources(self: &Arc<Self>, asker: Asker<'_>, cursor: Option<&str>) -> Result<Value, ErrorObject> {
        let roots = self.resource_roots(&asker.caller.rights, asker.client_roots);
        let (index, resumed) = match cursor {
            None => (0, None),
            Some(cursor) => parse_list_cursor(cursor)?,
        };
        let Some(root) = roots.get(index) else {
            return Ok(results::resources::listed(Vec::new(), None));
        };
        let max_tokens = self.resource_page_tokens();
        let arguments = match resumed {
            Some(cursor) => json!({ "cursor": cursor, "max_tokens": max_tokens }),
            None => json!({
                "pattern": "!.*", "path": root, "details": true, "format": "json", "max_tokens": max_tokens,
            }),
        };
        let uri = file_uri(root);
        let page = self.resource_page("glob", &asker, &arguments, &uri)?;
        let next = match (&page.next_cursor, index + 1 < roots.len()) {
            (Some(next), _) => Some(format!("{index}:{next}")),
            (None, true) => Some(format!("{}:", index + 1)),
            (None, false) => None,
        };
        let found = results::resources::found(&page, root);
        Ok(results::resources::listed(found, next))
    }

    /// `resources/read`: a page of the file (`read` in the JSON form), or the
    /// page a continuing URI names.
    pub fn read_resource(self: &Arc<Self>, asker: Asker<'_>, uri: &str) -> Result<Value, ErrorObject> {
        let Some(file) = FileUri::parse(uri) else {
            return Err(Fault::UnknownResource { uri: uri.to_string() }.into());
        };
        let max_tokens = self.resource_page_tokens();
        let arguments = match &file.cursor {
            Some(cursor) => json!({ "cursor": cursor, "max_tokens": max_tokens }),
            None => json!({ "path": file.path, "format": "json", "max_tokens": max_tokens }),
        };
        let page = self.resource_page("read", &asker, &arguments, uri)?;
        // A cursor continues the file it was made for, which must be the one named.
        let read = page.info.get("path").and_then(Value::as_str).map(PathBuf::from);
        if read.as_deref() != Some(file.path.as_path()) {
            let failure = results::ToolFailure {
                code: "invalid_argument",
                message: "the cursor continues another file than the URI names".into(),
                limit: None,
            };
            return Err(Fault::ResourceRefused { uri: uri.to_string(), failure }.into());
        }
        let next = page.next_cursor.as_deref().map(|cursor| continued_uri(&file.path, cursor));
        Ok(results::resources::contents(&page, &file_uri(&file.path), next))
    }

    /// `resources/directory/read` (the Skills extension, SEP-2640): a page of
    /// the directory's direct children, as the `list` tool walks it (hidden
    /// entries left out, as in `resources/list`); a subdirectory carries the
    /// MIME type `inode/directory`. A URI that names a file is refused.
    pub fn read_directory(
        self: &Arc<Self>,
        asker: Asker<'_>,
        uri: &str,
        cursor: Option<&str>,
    ) -> Result<Value, ErrorObject> {
        let Some(dir) = FileUri::parse(uri).filter(|f| f.cursor.is_none()) else {
            return Err(Fault::UnknownResource { uri: uri.to_string() }.into());
        };
        let max_tokens = self.resource_page_tokens();
        let arguments = match cursor {
            Some(cursor) => json!({ "cursor": cursor, "max_tokens": max_tokens }),
            None => json!({ "path": dir.path, "hidden": false, "format": "json", "max_tokens": max_tokens }),
        };
        let page = self.resource_page("list", &asker, &arguments, uri)?;
        let children = results::resources::children(&page, &dir.path);
        Ok(results::resources::listed(children, page.next_cursor.clone()))
    }

    /// The page a resource request asks for: the largest a call may, or less
    /// when the response limit holds less.
    fn resource_page_tokens(&self) -> usize {
        let most = self.pager.limits().max_tokens as usize;
        Fault::tokens_that_fit(self.limits.max_response_bytes, most)
    }

    /// One page of `tool` for a resource request, through the same path as a
    /// `tools/call` (rights, grants, audit); a refusal names `uri`.
    fn resource_page(
        self: &Arc<Self>,
        tool: &str,
        asker: &Asker<'_>,
        arguments: &Value,
        uri: &str,
    ) -> Result<Page, ErrorObject> {
        let entry = self.called(tool, &asker.caller)?;
        let request = CallRequest {
            tool: entry,
            arguments,
            client_roots: asker.client_roots,
            signal: asker.signal,
            for_model: false,
            caller: asker.caller.clone(),
            client: crate::clients::Client::default(),
            watch: None,
        };
        match self.call(request)? {
            Answer::Page(page) => Ok(*page),
            Answer::Failed(Failed::Tool(failure)) => Err(Fault::ResourceRefused { uri: uri.into(), failure }.into()),
            Answer::Failed(Failed::Server(error)) => Err(error),
            Answer::Host(_) => unreachable!("glob and read are component tools"),
        }
    }
}

/// `INDEX:GLOB_CURSOR` (the cursor empty at a root's start).
fn parse_list_cursor(cursor: &str) -> Result<(usize, Option<String>), ErrorObject> {
    let malformed = || Fault::Cursor(crate::pager::cursor::CursorError::Malformed).to_error();
    let (index, rest) = cursor.split_once(':').ok_or_else(malformed)?;
    let index = index.parse().map_err(|_| malformed())?;
    Ok((index, (!rest.is_empty()).then(|| rest.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_name_absolute_paths_and_may_continue() {
        let plain = FileUri::parse("file:///tmp/a%20b/c.txt").unwrap();
        assert_eq!(plain, FileUri { path: "/tmp/a b/c.txt".into(), cursor: None });
        let continued = FileUri::parse(&continued_uri(Path::new("/tmp/a b/c.txt"), "c1_x.2+/=")).unwrap();
        assert_eq!(continued, FileUri { path: "/tmp/a b/c.txt".into(), cursor: Some("c1_x.2+/=".into()) });
        assert_eq!(FileUri::parse("file://localhost/etc/hosts").unwrap().path, PathBuf::from("/etc/hosts"));
        assert_eq!(FileUri::parse("file:///a/../b").unwrap().path, PathBuf::from("/b"));
        for other in ["test://static-text", "https://example.com/a", "file:///a#frag", "not a uri", "file://host/a"] {
            assert_eq!(FileUri::parse(other), None, "{other}");
        }
        assert_eq!(file_uri(Path::new("/tmp/ü #.txt")), "file:///tmp/%C3%BC%20%23.txt");
    }

    #[test]
    fn list_cursors_are_a_root_index_and_globs_cursor() {
        assert_eq!(parse_list_cursor("2:").unwrap(), (2, None));
        assert_eq!(parse_list_cursor("0:c1.x:y").unwrap(), (0, Some("c1.x:y".into())));
        assert!(parse_list_cursor("x:").is_err() && parse_list_cursor("nothing").is_err());
    }
}
