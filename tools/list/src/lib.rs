//! Cordon's `list` tool: a directory listing, optionally recursive, in path
//! order, without following symlinks.
//!
//! The walk lives in [`walk`], plain Rust unit-tested natively; this module
//! parses the arguments and pages the entries as JSON items.

pub mod walk;

use std::path::PathBuf;

use cordon_sdk::items::{self, ItemSource, ItemStream, Items, Start};
use cordon_sdk::{Error, ErrorCode, Manifest, Summary, paths, schema};
use serde::Deserialize;
use serde_json::json;

use walk::{Lister, MAX_DEPTH};

/// The tool's name as clients call it.
pub const NAME: &str = "list";
/// The tool's version, bound into every cursor.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What the tool does, for a model choosing a tool.
pub const DESCRIPTION: &str = "List a directory (default: the first root): one entry per line, relative to the first root, \
`/` after a directory, `@` after a symlink. `depth` above 1 recurses. Hidden entries are included; \
ignore files are not read (`glob` reads them).";

/// The JSON Schema of the arguments.
pub fn input_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "path": schema::path_property(schema::DIRECTORY),
            "depth": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_DEPTH,
                "description": "Levels to list (default 1)."
            },
            "hidden": {
                "type": "boolean",
                "description": "Include hidden entries (default true)."
            }
        },
        "additionalProperties": false
    })
}

/// The JSON Schema of `info`: what the tool says about the listing.
pub fn output_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "path": { "type": "string", "description": "The directory listed (absolute)." },
            "depth": { "type": "integer", "minimum": 1, "description": "The levels listed." },
            "listed": { "type": "integer", "minimum": 0, "description": "Entries listed so far by this stream." },
            "errors": { "type": "integer", "minimum": 0, "description": "Entries that vanished or could not be described, skipped." }
        },
        "required": ["path", "depth", "listed"]
    })
}

/// The call's arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The directory listed.
    pub path: Option<String>,
    /// How many levels.
    pub depth: Option<u32>,
    /// Include hidden entries (default true).
    pub hidden: Option<bool>,
}

impl Args {
    /// Parses the arguments' JSON text.
    pub fn parse(json: &str) -> Result<Args, Error> {
        let args: Args = cordon_sdk::parse_args(json)?;
        if args.depth.is_some_and(|d| !(1..=MAX_DEPTH).contains(&d)) {
            return Err(Error::new(ErrorCode::InvalidArgument, format!("`depth` must be between 1 and {MAX_DEPTH}")));
        }
        Ok(args)
    }
}

/// The walk as an item source: positions are paths relative to the listed
/// directory.
pub struct Source(pub Lister);

impl ItemSource for Source {
    fn next_item(&mut self) -> Result<Option<(String, String)>, Error> {
        let Some((rel, entry)) = self.0.next_entry() else { return Ok(None) };
        Ok(Some((items::to_item(&entry)?, rel.to_string_lossy().into_owned())))
    }
}

/// One call of the tool.
pub struct List {
    path: String,
    depth: u32,
    items: Items<Source>,
}

impl List {
    /// Resolves the directory, checks it, and starts the listing at `resume`.
    pub fn open(roots: &[String], args: &str, resume: Option<&str>) -> Result<List, Error> {
        let args = Args::parse(args)?;
        let dir = paths::resolve_or_first_root(roots, args.path.as_deref())?;
        let shown = dir.display().to_string();
        let meta = std::fs::metadata(&dir).map_err(|e| Error::io(&format!("`{shown}`"), &e))?;
        if !meta.is_dir() {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format!("`{shown}` is not a directory; use `stat` to describe a single file"),
            ));
        }
        let depth = args.depth.unwrap_or(1);
        let start = Start::decode(resume)?;
        let lister = Lister::new(&dir, depth, args.hidden.unwrap_or(true), start.source.map(PathBuf::from))?;
        Ok(List { path: shown, depth, items: Items::new(Source(lister), start)? })
    }
}

impl ItemStream for List {
    cordon_sdk::item_pager!(items: Source);

    /// The `info` object: matches `output_schema`.
    fn info(&self) -> serde_json::Value {
        let counts = self.items.source().0.counts;
        json!({ "path": self.path, "depth": self.depth, "listed": counts.listed, "errors": counts.errors })
    }

    /// Lower bounds: the entries listed so far.
    fn summary(&self) -> Summary {
        let counts = self.items.source().0.counts;
        let mut suggestions = vec![
            "List a subdirectory with `path`, or fewer levels with a smaller `depth`.".to_string(),
            "Use `glob` to find entries by name, gitignore-aware.".to_string(),
        ];
        if self.depth > 1 {
            suggestions.push("Leave out hidden entries with hidden: false.".into());
        }
        Summary { totals: json!({ "listed": counts.listed }), exact: false, suggestions }
    }
}

/// The tool, as the SDK exports it.
pub struct ListTool;

cordon_sdk::export_tool!(ListTool {
    manifest: Manifest::reader(NAME, VERSION, "List directory", DESCRIPTION)
        .with_schemas(input_schema(), output_schema()),
    open: List::open,
});

#[cfg(test)]
mod tests;
