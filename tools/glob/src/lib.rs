//! Cordon's `glob` tool: the files (optionally directories) under a directory
//! whose relative paths match globs, gitignore-aware like `rg --files -g`.
//!
//! The walk and its order live in [`walk`], plain Rust unit-tested natively;
//! this module parses the arguments and pages the entries as JSON items.

pub mod walk;

use std::path::PathBuf;

use cordon_sdk::items::{ItemSource, ItemStream, Items, Start};
use cordon_sdk::{Error, ErrorCode, Manifest, Summary, paths};
use serde::Deserialize;
use serde_json::json;

use walk::{Counts, Found, MAX_SORTED, Options, Walker};

/// The tool's name as clients call it.
pub const NAME: &str = "glob";
/// The tool's version, bound into every cursor.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What the tool does, for a model choosing a tool.
pub const DESCRIPTION: &str = "Find files by name: the files under `path` (default: the first root) whose \
paths relative to `path` match `pattern`, a glob or a list of globs in ripgrep's `-g` syntax (gitignore \
style: `*.md` matches at any depth, `src/**` everything under src, `**/*.rs` every Rust file, `!` negates). \
Like `rg --files`: respects .gitignore/.ignore files and skips hidden entries unless `no_ignore`/`hidden` \
say otherwise. As with rg -g, an entry a glob matches is included even if hidden or ignored, and a matched \
directory is entered (so `*` or `**/*`, which match every name, disregard ignore files; prefer `**/*.ext`). \
Symlinks are neither followed nor listed. Results are shown grouped by directory (`dir:` then the \
names, relative to the first root; `format: \"json\"`: one JSON object each {path, type, size, mtime_ns}), in \
path order (directory by directory, names sorted), or newest first with sort: \"mtime\" (which collects \
and sorts at most 100000 matches). Set include_dirs to match directories too.";

/// The JSON Schema of the arguments.
pub fn input_schema() -> serde_json::Value {
    let glob = json!({ "type": "string", "minLength": 1 });
    json!({
        "type": "object",
        "properties": {
            "pattern": {
                "description": "A glob, or a list of globs (an entry matching any is kept), matched against \
    paths relative to `path` with ripgrep `-g` (gitignore) semantics: a glob without `/` matches the name at any \
    depth (\"*.md\"), one with `/` is anchored (\"src/**\"), `**` crosses directories, `!` negates.",
                "anyOf": [glob, { "type": "array", "items": glob, "minItems": 1, "maxItems": 64 }]
            },
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "Directory to search: relative to the first root, or absolute inside a root. Default: the first root."
            },
            "hidden": {
                "type": "boolean",
                "description": "Include hidden entries (names starting with `.`), like rg --hidden. Default: false."
            },
            "no_ignore": {
                "type": "boolean",
                "description": "Disregard .gitignore, .ignore and git exclude files, like rg --no-ignore. Default: false."
            },
            "include_dirs": {
                "type": "boolean",
                "description": "Match directories as well as files. Default: false (files only, like rg --files)."
            },
            "sort": {
                "enum": ["path", "mtime"],
                "description": format!("\"path\" (default): path order, streamed. \"mtime\": newest first, ties in \
    path order; all matches are collected and sorted first, at most {MAX_SORTED}.")
            }
        },
        "required": ["pattern"],
        "additionalProperties": false
    })
}

/// The JSON Schema of `info`: what the tool says about the search.
pub fn output_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "root": { "type": "string", "description": "The directory searched (absolute)." },
            "matched": { "type": "integer", "minimum": 0, "description": "Matching entries found so far by this stream (a lower bound for the whole search)." },
            "visited": { "type": "integer", "minimum": 0, "description": "Entries looked at so far by this stream." },
            "errors": { "type": "integer", "minimum": 0, "description": "Entries that could not be read and were skipped." }
        },
        "required": ["root", "matched", "visited"]
    })
}

/// One glob, or several.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Patterns {
    /// A single glob.
    One(String),
    /// Several globs; an entry matching any is kept.
    Many(Vec<String>),
}

/// The result order.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sort {
    /// Path order, streamed.
    #[default]
    Path,
    /// Newest first, ties in path order; collected and sorted first.
    Mtime,
}

/// The call's arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The glob or globs.
    pub pattern: Patterns,
    /// The directory searched.
    pub path: Option<String>,
    /// Include hidden entries.
    #[serde(default)]
    pub hidden: bool,
    /// Disregard ignore files.
    #[serde(default)]
    pub no_ignore: bool,
    /// Match directories too.
    #[serde(default)]
    pub include_dirs: bool,
    /// The result order.
    #[serde(default)]
    pub sort: Sort,
}

/// The entries in the order asked for, with their positions.
pub enum Source {
    /// Path order: the walk itself.
    Path(Box<Walker>),
    /// Newest first: every match collected and sorted, and the next index.
    Mtime {
        /// The walk that collected them, for its counts.
        counts: Counts,
        /// The matches, sorted.
        sorted: Vec<Found>,
        /// The next one to emit.
        next: usize,
    },
}

impl Source {
    /// How far the walk got.
    pub fn counts(&self) -> Counts {
        match self {
            Source::Path(walker) => walker.counts,
            Source::Mtime { counts, .. } => *counts,
        }
    }
}

impl ItemSource for Source {
    fn next_item(&mut self) -> Result<Option<(String, String)>, Error> {
        let (found, position) = match self {
            Source::Path(walker) => match walker.next_match()? {
                Some(found) => {
                    let position = found.rel.to_string_lossy().into_owned();
                    (found, position)
                }
                None => return Ok(None),
            },
            Source::Mtime { sorted, next, .. } => match sorted.get(*next) {
                Some(found) => {
                    *next += 1;
                    (found.clone(), walk::encode_mtime_key(found))
                }
                None => return Ok(None),
            },
        };
        let item = serde_json::to_string(&found.entry).map_err(|e| Error::new(ErrorCode::Internal, e.to_string()))?;
        Ok(Some((item, position)))
    }
}

/// One call of the tool.
pub struct Glob {
    root: String,
    sort: Sort,
    items: Items<Source>,
}

impl Glob {
    /// Resolves the directory, checks it, and starts the walk at `resume`.
    pub fn open(roots: &[String], args: &str, resume: Option<&str>) -> Result<Glob, Error> {
        let args: Args = cordon_sdk::parse_args(args)?;
        let root = match &args.path {
            Some(path) => paths::resolve(roots, path)?,
            None => paths::resolve(roots, ".")?,
        };
        let shown = root.display().to_string();
        let meta = std::fs::metadata(&root).map_err(|e| Error::io(&format!("`{shown}`"), &e))?;
        if !meta.is_dir() {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format!("`{shown}` is not a directory; `path` names the directory to search (use `stat` for one file)"),
            ));
        }
        std::fs::read_dir(&root).map_err(|e| Error::io(&format!("`{shown}`"), &e))?;
        let patterns = match args.pattern {
            Patterns::One(one) => vec![one],
            Patterns::Many(many) => many,
        };
        let options = Options {
            root,
            patterns,
            hidden: args.hidden,
            no_ignore: args.no_ignore,
            include_dirs: args.include_dirs,
            denied: cordon_sdk::policy::Denied::for_walk(),
        };
        let start = Start::decode(resume)?;
        let source = match args.sort {
            Sort::Path => Source::Path(Box::new(Walker::new(&options, start.source.map(PathBuf::from))?)),
            Sort::Mtime => {
                let after = start.source.map(walk::decode_mtime_key).transpose()?;
                let mut walker = Walker::new(&options, None)?;
                let (sorted, next) = walk::collect_newest_first(&mut walker, after.as_ref(), MAX_SORTED)?;
                Source::Mtime { counts: walker.counts, sorted, next }
            }
        };
        Ok(Glob { root: shown, sort: args.sort, items: Items::new(source, start)? })
    }
}

impl ItemStream for Glob {
    type Source = Source;

    fn items(&mut self) -> &mut Items<Source> {
        &mut self.items
    }

    /// The `info` object: matches `output_schema`.
    fn info(&self) -> serde_json::Value {
        let counts = self.items.source().counts();
        json!({ "root": self.root, "matched": counts.matched, "visited": counts.visited, "errors": counts.errors })
    }

    /// What is known so far: lower bounds in path order, the exact number of
    /// matches once newest-first order has collected them.
    fn summary(&self) -> Summary {
        let counts = self.items.source().counts();
        let mut suggestions = vec![
            "Narrow `path` to a subdirectory, or make `pattern` more specific (e.g. \"src/**/*.rs\").".to_string(),
        ];
        if counts.errors > 0 {
            suggestions.push(format!("{} entries could not be read and were skipped.", counts.errors));
        }
        match self.sort {
            Sort::Path => {
                suggestions.push("Use sort: \"mtime\" to see the most recently modified matches first.".into());
                Summary {
                    totals: json!({ "matched": counts.matched, "visited": counts.visited }),
                    exact: false,
                    suggestions,
                }
            }
            Sort::Mtime => Summary {
                totals: json!({ "matched": counts.matched, "visited": counts.visited }),
                exact: true,
                suggestions,
            },
        }
    }
}

/// The tool, as the SDK exports it.
pub struct GlobTool;

cordon_sdk::export_tool!(GlobTool {
    manifest: Manifest::reader(NAME, VERSION, "Find files by glob", DESCRIPTION)
        .with_schemas(input_schema(), output_schema()),
    open: Glob::open,
});

#[cfg(test)]
mod tests;
