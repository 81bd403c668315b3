//! Cordon's `grep` tool: ripgrep's search, through ripgrep's own crates
//! (`grep-regex`, `grep-searcher`, `ignore`), as a paged stream of JSON items.
//!
//! The domain logic is plain Rust, unit-tested natively: `args` builds the
//! matcher, searcher and filters; `walk` lists the files in `rg --sort path`
//! order; `guard` handles binary files; `sink` turns matches into items;
//! `source` produces the items lazily, file by file, with exact resume
//! positions; `render` writes JSON.

pub mod args;
pub mod guard;
pub mod needles;
pub mod position;
pub mod render;
pub mod sink;
pub mod source;
pub mod walk;

use std::path::{Path, PathBuf};

use cordon_sdk::items::{ItemStream, Items, Start};
use cordon_sdk::scan::Seeking;
use cordon_sdk::{Error, ErrorCode, Manifest, Summary, paths, schema};
use serde_json::json;

use args::{Args, HeapLimit, MAX_CONTEXT, OutputMode};
use position::{Counts, Position, Where};
use source::{GrepSource, Plan};
use walk::{Bounds, WalkSpec, Walker};

/// The tool's name as clients call it.
pub const NAME: &str = "grep";
/// The tool's version, bound into every cursor.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What the tool does, for a model choosing a tool.
pub const DESCRIPTION: &str = "Search file contents with ripgrep. Searches `path` (default: the first root) recursively, \
skipping hidden, binary and gitignored files. Shows a file's only match as `path:line:text`, several \
under the path as `line:text` (as `rg -n`), paths relative to the first root. A cut long line names \
the bytes to `read` for the rest.";

/// The JSON Schema of the arguments.
pub fn input_schema() -> serde_json::Value {
    let flag = |description: &str| json!({ "type": "boolean", "description": description });
    let globs =
        |description: &str| json!({ "type": "array", "items": { "type": "string" }, "description": description });
    let context = |description: &str| json!({ "type": "integer", "minimum": 0, "maximum": MAX_CONTEXT, "description": description });
    json!({
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
                "description": "Regex (Rust syntax, as rg), or literal text with fixed_strings."
            },
            "path": schema::path_property("File or directory (default: the first root)."),
            "fixed_strings": flag("Literal pattern (rg -F)."),
            "include": globs("Only files matching these globs (rg -g), e.g. [\"*.rs\"]."),
            "exclude": globs("Skip these globs (rg -g '!GLOB')."),
            "type": {
                "type": "string",
                "minLength": 1,
                "description": "File type (rg -t): rust, py, js, ts, go, md, ..."
            },
            "case_insensitive": flag("rg -i."),
            "smart_case": flag("rg -S."),
            "multiline": flag("Matches may span lines (rg -U)."),
            "context_before": context("Lines before each match (rg -B)."),
            "context_after": context("Lines after each match (rg -A)."),
            "output_mode": {
                "type": "string",
                "enum": ["content", "files_with_matches", "count"],
                "description": "content (default): matching lines; files_with_matches: paths; count: per file."
            },
            "hidden": flag("rg --hidden."),
            "no_ignore": flag("rg --no-ignore."),
            "binary": flag("Search binary files (rg -a)."),
            "max_line_length": {
                "type": "integer",
                "minimum": 1,
                "description": "Cut lines longer than this (bytes)."
            }
        },
        "required": ["pattern"],
        "additionalProperties": false
    })
}

/// The JSON Schema of `info`: the path searched and the counts so far.
pub fn output_schema() -> serde_json::Value {
    let count = |description: &str| json!({ "type": "integer", "minimum": 0, "description": description });
    json!({
        "type": "object",
        "properties": {
            "root": { "type": "string", "description": "The absolute path searched." },
            "files_searched": count("Files searched so far."),
            "files_matched": count("Files with a match so far."),
            "matches": count("Matches so far: matching lines (blocks in multiline mode)."),
            "binary_files": count("Files skipped or cut short so far because they hold a NUL byte."),
            "errors": count("Files or directories that could not be read or searched so far; each such file is named in the output by an item {path, not_searched: why}."),
            "ignore_files_skipped": count("Ignore files too large to apply (over 1 MiB) or unreadable so far, each named in the output by an item {path, not_applied: why}.")
        },
        "required": ["root", "files_searched", "files_matched", "matches"]
    })
}

/// How a stream is run, for tests: the defaults, or other values that
/// exercise what the defaults rarely reach.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tuning {
    /// Each search run is bounded to this many items instead of thousands:
    /// small batches exercise stopping and restarting a search inside a
    /// file, which the output must not show.
    pub batch: Option<usize>,
    /// The memory the instance may use, instead of what the host says
    /// ([`cordon_sdk::host::memory_bytes`]): a small one makes lines "too
    /// long" without writing hundreds of megabytes.
    pub memory: Option<u64>,
    /// Every file is read into the search, as when the pattern has no
    /// needles (see [`needles`]): what the host rules out must not change
    /// the output.
    pub no_needles: bool,
}

/// One call of the tool: the items still to come and what was searched.
pub struct Grep {
    /// The absolute path searched, as shown to clients.
    pub root: String,
    items: Items<GrepSource>,
}

fn denied(shown: &str, roots: &[String]) -> Error {
    Error::new(ErrorCode::PermissionDenied, format!("`{shown}` is outside every granted root ({})", roots.join(", ")))
}

/// What a call's arguments resolve to.
struct Setup {
    args: Args,
    /// The path searched.
    target: PathBuf,
    /// The granted root holding it.
    root: PathBuf,
    is_dir: bool,
}

impl Setup {
    fn new(roots: &[String], args: &str) -> Result<Setup, Error> {
        let args = Args::parse(args)?;
        let target = paths::resolve_or_first_root(roots, args.path.as_deref())?;
        let shown = target.display().to_string();
        let meta = std::fs::metadata(&target).map_err(|e| Error::io(&format!("`{shown}`"), &e))?;
        if !meta.is_dir() && !meta.is_file() {
            return Err(Error::new(
                ErrorCode::Unsupported,
                format!(
                    "`{shown}` is not a regular file or directory (a FIFO, socket or device); it cannot be searched"
                ),
            ));
        }
        let root_list: Vec<&str> = roots.iter().map(String::as_str).collect();
        let (index, _) = paths::within_root(&root_list, &target).ok_or_else(|| denied(&shown, roots))?;
        let root = PathBuf::from(root_list[index]);
        Ok(Setup { args, target, root, is_dir: meta.is_dir() })
    }

    /// A position inside the searched path, decoded.
    fn position(&self, source: Option<&str>) -> Result<Option<Position>, Error> {
        let position = source.map(Position::decode).transpose()?;
        if let Some(position) = &position
            && !position.path.starts_with(&self.target)
        {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format!("the resume position is not inside `{}`; start the search again", self.target.display()),
            ));
        }
        Ok(position)
    }
}

impl Grep {
    /// Checks the arguments, resolves the path inside `roots` and prepares the
    /// search from the beginning or from `resume`.
    pub fn open(roots: &[String], args: &str, resume: Option<&str>) -> Result<Grep, Error> {
        Grep::open_tuned(roots, args, (resume, None), Tuning::default())
    }

    /// The search from `start` up to the boundary `end` (`None`: to the end),
    /// one shard of a call; its positions and counts are the shard's own.
    pub fn open_range(roots: &[String], args: &str, start: Option<&str>, end: Option<&str>) -> Result<Grep, Error> {
        Grep::open_tuned(roots, args, (start, end), Tuning::default())
    }

    /// The boundaries that cut the search after `start` into at most `count`
    /// shards: paths in the searched directory, in path order.
    pub fn split(roots: &[String], args: &str, start: Option<&str>, count: u32) -> Result<Vec<String>, Error> {
        let setup = Setup::new(roots, args)?;
        let start = Start::decode(start)?;
        // Inside an item, the rest of it lies in a file not yet known: one
        // shard. A multiline search reads each file whole: one shard keeps
        // all of the call's memory for it.
        if !setup.is_dir || start.inside_item() || setup.args.multiline {
            return Ok(Vec::new());
        }
        let from = setup.position(start.source)?.map(|p| p.path);
        let cuts = cordon_sdk::walk::boundaries(&setup.target, from.as_deref(), count, setup.args.hidden);
        let boundary =
            |path: &Path| format!("b{}", position::encode(&Counts::default(), Where::Start, &path.to_string_lossy()));
        Ok(cuts.iter().map(|p| boundary(p)).collect())
    }

    /// `open_range`, tuned (see [`Tuning`]).
    pub fn open_tuned(
        roots: &[String],
        args: &str,
        (resume, end): (Option<&str>, Option<&str>),
        tuning: Tuning,
    ) -> Result<Grep, Error> {
        let setup = Setup::new(roots, args)?;
        let matcher = setup.args.matcher()?;
        let types = setup.args.types()?;
        let overrides = setup.args.overrides(&setup.target)?;
        let start = Start::decode(resume)?;
        let position = setup.position(start.source)?;
        let end = setup.position(Start::decode(end)?.source)?.map(|p| p.path);
        let args = &setup.args;
        let spec = WalkSpec { hidden: args.hidden, no_ignore: args.no_ignore, overrides, types };
        let bounds = Bounds { from: position.as_ref().map(|p| p.path.clone()), end };
        let walker = Walker::new(&setup.root, &setup.target, &spec, bounds);
        let heap = HeapLimit::new(tuning.memory.or_else(cordon_sdk::host::memory_bytes));
        // A whole file beside what the search holds: where that is little,
        // only the start that tells a binary file.
        let read = if heap.bytes >= 4 * source::WHOLE { source::WHOLE } else { guard::HEAD };
        // With needles, a file's start is read as far and looked for them
        // by the host; a binary file is told by its first 64 KiB.
        let needles::Needles { bytes, ascii_case_insensitive } =
            if tuning.no_needles { Default::default() } else { needles::required(args) };
        let nul_probe = if args.binary { 0 } else { guard::HEAD as u32 };
        let seeking = (!bytes.is_empty()).then_some(Seeking {
            max: read as u32,
            needles: bytes,
            nul_probe,
            ascii_case_insensitive,
        });
        let plan = Plan {
            mode: args.output_mode,
            searcher: args.searcher(heap),
            heap,
            matcher,
            binary: args.binary,
            before: if args.output_mode == OutputMode::Content { args.context_before } else { 0 },
            after: if args.output_mode == OutputMode::Content { args.context_after } else { 0 },
            max_line: Some(args.max_line_length.map_or(heap.longest_shown(), |m| m.min(heap.longest_shown()))),
            batch_items: tuning.batch.unwrap_or(if args.multiline { 8192 } else { 2048 }),
            batch_bytes: if args.multiline { 8 << 20 } else { 1 << 20 },
            read,
            seeking,
        };
        let items = Items::new(GrepSource::new(plan, walker, position), start)?;
        Ok(Grep { root: setup.target.display().to_string(), items })
    }
}

impl ItemStream for Grep {
    cordon_sdk::item_pager!(items: GrepSource);

    /// The `info` object: matches `output_schema`.
    fn info(&self) -> serde_json::Value {
        let c = self.items.source().counts();
        json!({
            "root": self.root,
            "files_searched": c.files_searched,
            "files_matched": c.files_matched,
            "matches": c.matches,
            "binary_files": c.binary_files,
            "errors": c.errors,
            "ignore_files_skipped": c.ignore_files_skipped,
        })
    }

    /// The counts so far (final once the search is done), and ways to narrow.
    fn summary(&self) -> Summary {
        let source = self.items.source();
        let c = source.counts();
        Summary {
            totals: json!({
                "files_searched": c.files_searched,
                "files_matched": c.files_matched,
                "matches": c.matches,
            }),
            exact: source.done(),
            suggestions: vec![
                "Narrow the search with include/exclude globs, a file type, or a more specific path.".into(),
                "Use output_mode \"files_with_matches\" or \"count\" to see where matches are before reading them."
                    .into(),
                "Make the pattern more specific, or cut long lines with max_line_length.".into(),
            ],
        }
    }
}

/// The tool, as the SDK exports it.
pub struct GrepTool;

cordon_sdk::export_tool!(GrepTool {
    manifest: Manifest::reader(NAME, VERSION, "Search file contents", DESCRIPTION)
        .with_schemas(input_schema(), output_schema()),
    open: Grep::open,
    split: Grep::split,
    open_range: Grep::open_range,
});

#[cfg(test)]
mod tests;
