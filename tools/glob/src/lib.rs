//! Cordon's `glob` tool: the files (optionally directories) under a directory
//! whose relative paths match globs, gitignore-aware like `rg --files -g`.
//!
//! The walk and its order live in [`walk`], plain Rust unit-tested natively;
//! this module parses the arguments and pages the entries as JSON items.

pub mod walk;

use std::path::PathBuf;

use cordon_sdk::items::{self, ItemSource, ItemStream, Items, Start, Step};
use cordon_sdk::walk::Unapplied;
use cordon_sdk::{Error, ErrorCode, Manifest, Summary, paths, schema};
use serde::{Deserialize, Serialize};
use serde_json::json;

use walk::{Bounds, Counts, Found, MAX_SORTED, Next, Options, Walker};

/// The tool's name as clients call it.
pub const NAME: &str = "glob";
/// The tool's version, bound into every cursor.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What the tool does, for a model choosing a tool.
pub const DESCRIPTION: &str = "Find files by name, as `rg --files -g`: the paths under `path` (default: the first root) \
matching `pattern`, one per line, relative to the first root, in path order (newest first with sort \
\"mtime\"). Respects .gitignore and skips hidden entries unless `no_ignore`/`hidden`.";

/// The JSON Schema of the arguments.
pub fn input_schema() -> serde_json::Value {
    let glob = json!({ "type": "string", "minLength": 1 });
    json!({
        "type": "object",
        "properties": {
            "pattern": {
                "description": "Glob(s), gitignore style: \"*.md\" at any depth, \"src/**\", \"**/*.rs\"; \"!\" negates.",

                "anyOf": [glob, { "type": "array", "items": glob, "minItems": 1, "maxItems": 64 }]
            },
            "path": schema::path_property(schema::DIRECTORY),
            "hidden": {
                "type": "boolean",
                "description": "rg --hidden."
            },
            "no_ignore": {
                "type": "boolean",
                "description": "rg --no-ignore."
            },
            "include_dirs": {
                "type": "boolean",
                "description": "Match directories too."
            },
            "details": {
                "type": "boolean",
                "description": "Also size and mtime_ns (JSON form)."
            },
            "sort": {
                "enum": ["path", "mtime"],
                "description": format!("path (default), or mtime: newest first (at most {MAX_SORTED} matches).")
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
            "errors": { "type": "integer", "minimum": 0, "description": "Entries that could not be read and were skipped." },
            "ignore_files_skipped": { "type": "integer", "minimum": 0, "description": "Ignore files too large to apply (over 1 MiB) or unreadable so far, each named in the output by an item {path, not_applied: why}." }
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
    /// Report each match's size and time.
    #[serde(default)]
    pub details: bool,
    /// The result order.
    #[serde(default)]
    pub sort: Sort,
}

/// The entries in the order asked for, with their positions.
pub enum Source {
    /// Path order: the walk itself.
    Path(Box<Walker>),
    /// Newest first: the ignore files not applied, then every match
    /// collected and sorted, and the next index.
    Mtime {
        /// The walk that collected them, for its counts.
        counts: Counts,
        /// The ignore files not applied, named first, and how many were.
        unapplied: Vec<Unapplied>,
        /// How many of `unapplied` were named.
        named: usize,
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
        items::without_checkpoints(self)
    }

    /// Matches, and in path order checkpoints where the walk matches little
    /// (newest-first order walks everything before its first item).
    fn next_step(&mut self) -> Result<Option<Step>, Error> {
        let (found, position) = match self {
            Source::Path(walker) => match walker.next_step()? {
                Some(Next::Match(found)) => {
                    let position = found.rel.clone();
                    (found, position)
                }
                Some(Next::Checkpoint(rel)) => return Ok(Some(Step::Checkpoint(rel.to_string_lossy().into_owned()))),
                Some(Next::Unapplied { unapplied, at, k }) => {
                    let position = format!("//{k}/{}", at.to_string_lossy());
                    return Ok(Some(Step::Item(not_applied(&unapplied), position)));
                }
                None => return Ok(None),
            },
            Source::Mtime { unapplied, named, .. } if *named < unapplied.len() => {
                *named += 1;
                return Ok(Some(Step::Item(not_applied(&unapplied[*named - 1]), format!("!{named}"))));
            }
            Source::Mtime { sorted, next, .. } => match sorted.get(*next) {
                Some(found) => {
                    *next += 1;
                    (found.clone(), walk::encode_mtime_key(found))
                }
                None => return Ok(None),
            },
        };
        let item = match found.described {
            true => items::to_item(&found.entry)?,
            false => items::to_item(&Named { path: &found.entry.path, kind: found.entry.kind })?,
        };
        Ok(Some(Step::Item(item, position)))
    }
}

/// A match's item without details: its path and type.
#[derive(Serialize)]
struct Named<'a> {
    path: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
}

/// The item naming an ignore file not applied, and why.
fn not_applied(unapplied: &Unapplied) -> String {
    json!({ "path": unapplied.file.to_string_lossy(), "not_applied": unapplied.reason() }).to_string()
}

/// One call of the tool.
pub struct Glob {
    root: String,
    sort: Sort,
    items: Items<Source>,
}

/// The resolved arguments of a call.
struct Setup {
    args: Args,
    options: Options,
}

impl Setup {
    fn new(roots: &[String], args: &str) -> Result<Setup, Error> {
        let mut args: Args = cordon_sdk::parse_args(args)?;
        let root = paths::resolve_or_first_root(roots, args.path.as_deref())?;
        let shown = root.display().to_string();
        let meta = std::fs::metadata(&root).map_err(|e| Error::io(&format!("`{shown}`"), &e))?;
        if !meta.is_dir() {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format!("`{shown}` is not a directory; `path` names the directory to search (use `stat` for one file)"),
            ));
        }
        let root_list: Vec<&str> = roots.iter().map(String::as_str).collect();
        let top = paths::within_root(&root_list, &root).map_or_else(|| root.clone(), |(i, _)| root_list[i].into());
        let patterns = match std::mem::replace(&mut args.pattern, Patterns::Many(Vec::new())) {
            Patterns::One(one) => vec![one],
            Patterns::Many(many) => many,
        };
        let options = Options {
            top,
            root,
            patterns,
            hidden: args.hidden,
            no_ignore: args.no_ignore,
            include_dirs: args.include_dirs,
            details: args.details || args.sort == Sort::Mtime,
        };
        Ok(Setup { args, options })
    }
}

/// A position in path order: `REL` (after the entry `REL`, relative to the
/// directory searched), `/REL` (at the entry `REL`: a shard's boundary; a
/// relative path never starts with `/`) or `//K/REL` (at the entry `REL`, the
/// first `K` ignore files not applied that the walk says there named; `REL`
/// is empty for the directory searched, where those above it are said).
fn bounds(start: Option<&str>, end: Option<&str>) -> Result<Bounds, Error> {
    let mut bounds = Bounds::default();
    if let Some(start) = start {
        let bad = || Error::new(ErrorCode::InvalidArgument, format!("malformed resume position `{start}`"));
        if let Some(noted) = start.strip_prefix("//") {
            let (k, rel) = noted.split_once('/').ok_or_else(bad)?;
            bounds.noted = Some((PathBuf::from(rel), k.parse().map_err(|_| bad())?));
        } else {
            match start.strip_prefix('/') {
                Some(from) => bounds.from = Some(PathBuf::from(from)),
                None => bounds.after = Some(PathBuf::from(start)),
            }
        }
    }
    if let Some(end) = end {
        let bad = || Error::new(ErrorCode::InvalidArgument, format!("malformed shard boundary `{end}`"));
        bounds.end = Some(PathBuf::from(end.strip_prefix('/').ok_or_else(bad)?));
    }
    Ok(bounds)
}

impl Glob {
    /// Resolves the directory, checks it, and starts the walk at `resume`.
    pub fn open(roots: &[String], args: &str, resume: Option<&str>) -> Result<Glob, Error> {
        Glob::open_range(roots, args, resume, None)
    }

    /// The entries from `start` up to the boundary `end` (`None`: to the end),
    /// one shard of a call; its counts are the shard's own.
    pub fn open_range(roots: &[String], args: &str, start: Option<&str>, end: Option<&str>) -> Result<Glob, Error> {
        let Setup { args, options } = Setup::new(roots, args)?;
        let shown = options.root.display().to_string();
        let start = Start::decode(start)?;
        let end = Start::decode(end)?.source;
        let source = match args.sort {
            Sort::Path => Source::Path(Box::new(Walker::new(&options, bounds(start.source, end)?)?)),
            Sort::Mtime => {
                // `!N`: the first N ignore files not applied were named.
                let named = start.source.and_then(|s| s.strip_prefix('!')).map(str::parse::<usize>).transpose();
                let named = named.map_err(|_| Error::new(ErrorCode::InvalidArgument, "malformed resume position"))?;
                let after = match named {
                    Some(_) => None,
                    None => start.source.map(walk::decode_mtime_key).transpose()?,
                };
                let mut walker = Walker::new(&options, Bounds::default())?;
                let (sorted, next, unapplied) = walk::collect_newest_first(&mut walker, after.as_ref(), MAX_SORTED)?;
                // Past the ignore files, every one was named.
                let named = named.unwrap_or(if after.is_some() { unapplied.len() } else { 0 });
                Source::Mtime { counts: walker.counts, unapplied, named, sorted, next }
            }
        };
        Ok(Glob { root: shown, sort: args.sort, items: Items::new(source, start)? })
    }

    /// The boundaries that cut a path-ordered search after `start` into at
    /// most `count` shards (none for newest-first order, which sorts it all).
    pub fn split(roots: &[String], args: &str, start: Option<&str>, count: u32) -> Result<Vec<String>, Error> {
        let Setup { args, options } = Setup::new(roots, args)?;
        if args.sort != Sort::Path {
            return Ok(Vec::new());
        }
        let start = Start::decode(start)?;
        // Inside an item, its rest is one shard's.
        if start.inside_item() {
            return Ok(Vec::new());
        }
        let bounds = bounds(start.source, None)?;
        let noted = bounds.noted.map(|(rel, _)| rel);
        let from = bounds.from.or(bounds.after).or(noted).map(|rel| options.root.join(rel));
        let cuts = cordon_sdk::walk::boundaries(&options.root, from.as_deref(), count, options.hidden);
        let rel = |p: &PathBuf| p.strip_prefix(&options.root).map(|r| format!("b/{}", r.to_string_lossy())).ok();
        Ok(cuts.iter().filter_map(rel).collect())
    }
}

impl ItemStream for Glob {
    cordon_sdk::item_pager!(items: Source);

    /// The `info` object: matches `output_schema`.
    fn info(&self) -> serde_json::Value {
        let counts = self.items.source().counts();
        json!({
            "root": self.root,
            "matched": counts.matched,
            "visited": counts.visited,
            "errors": counts.errors,
            "ignore_files_skipped": counts.ignore_files_skipped,
        })
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
    split: Glob::split,
    open_range: Glob::open_range,
});

#[cfg(test)]
mod tests;
