//! Cordon's `stat` tool: describes one file or directory as a single JSON item.
//!
//! The description lives in [`describe`], plain Rust unit-tested natively;
//! this module parses the arguments and pages the one item like any other item
//! stream (so a budget smaller than the item still splits it exactly).

pub mod describe;

use std::path::PathBuf;

use cordon_sdk::items::{self, ItemSource, ItemStream, Items, Start};
use cordon_sdk::{Error, ErrorCode, Fingerprint, Manifest, Summary, paths, schema};
use serde::Deserialize;
use serde_json::json;

/// The tool's name as clients call it.
pub const NAME: &str = "stat";
/// The tool's version, bound into every cursor.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The position after the one item.
const END: &str = "1";

/// What the tool does, for a model choosing a tool.
pub const DESCRIPTION: &str = "Describe a file or directory: type, size, mtime_ns, is_symlink (links are followed), and \
its lines with count_lines.";

/// The JSON Schema of the arguments.
pub fn input_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "path": schema::path_property(schema::IN_A_ROOT),
            "count_lines": {
                "type": "boolean",
                "description": "Count a file's lines."
            }
        },
        "required": ["path"],
        "additionalProperties": false
    })
}

/// The JSON Schema of `info`.
pub fn output_schema() -> serde_json::Value {
    json!({
        // One item answers a call: clients are shown no paging options.
        "x-cordon-pages": false,
        "type": "object",
        "properties": {
            "path": { "type": "string", "description": "The path described (absolute)." }
        },
        "required": ["path"]
    })
}

/// The call's arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The path described.
    pub path: String,
    /// Count lines of a regular file.
    #[serde(default)]
    pub count_lines: bool,
}

/// The one item, until it is taken.
pub struct Single(Option<String>);

impl ItemSource for Single {
    fn next_item(&mut self) -> Result<Option<(String, String)>, Error> {
        Ok(self.0.take().map(|item| (item, END.to_string())))
    }
}

/// One call of the tool.
pub struct Stat {
    path: String,
    resolved: PathBuf,
    items: Items<Single>,
}

impl Stat {
    /// Resolves the path and describes it, unless `resume` is past the item.
    pub fn open(roots: &[String], args: &str, resume: Option<&str>) -> Result<Stat, Error> {
        let args: Args = cordon_sdk::parse_args(args)?;
        let resolved = paths::resolve(roots, &args.path)?;
        let shown = resolved.display().to_string();
        let start = Start::decode(resume)?;
        let item = match start.source {
            None => {
                let description = describe::describe(&resolved, &shown, args.count_lines)?;
                Some(items::to_item(&description)?)
            }
            Some(END) => None,
            Some(other) => {
                return Err(Error::new(ErrorCode::InvalidArgument, format!("malformed resume position `{other}`")));
            }
        };
        Ok(Stat { path: shown, resolved, items: Items::new(Single(item), start)? })
    }
}

impl ItemStream for Stat {
    cordon_sdk::item_pager!(items: Single);

    fn info(&self) -> serde_json::Value {
        json!({ "path": self.path })
    }

    fn summary(&self) -> Summary {
        Summary {
            totals: json!({ "items": 1 }),
            exact: true,
            suggestions: vec!["Use `list` for a directory's entries, `read` for a file's content.".into()],
        }
    }

    /// The path's fingerprint, read afresh, so that an item split across pages
    /// is refused as stale if the path changed in between.
    fn fingerprint(&self) -> Result<Option<Fingerprint>, Error> {
        let what = format!("`{}`", self.path);
        let meta = std::fs::metadata(&self.resolved).map_err(|e| Error::io(&what, &e))?;
        let identity = paths::identity(&self.resolved, &meta, &self.path)?;
        Ok(Some(Fingerprint { size: meta.len(), mtime_ns: paths::mtime_ns(&meta), identity }))
    }
}

/// The tool, as the SDK exports it.
pub struct StatTool;

cordon_sdk::export_tool!(StatTool {
    manifest: Manifest::reader(NAME, VERSION, "Describe a path", DESCRIPTION)
        .with_schemas(input_schema(), output_schema()),
    open: Stat::open,
});

#[cfg(test)]
mod tests;
