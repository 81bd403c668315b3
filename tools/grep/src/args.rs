//! The call's arguments, and what is built from them: the regex matcher, the
//! searcher, the glob overrides and the file type filter, configured the way
//! ripgrep configures them.

use std::path::Path;

use cordon_sdk::{Error, ErrorCode};
use grep_matcher::LineTerminator;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use ignore::overrides::{Override, OverrideBuilder};
use ignore::types::{Types, TypesBuilder};
use serde::Deserialize;

/// The most context lines asked for on either side of a match.
pub const MAX_CONTEXT: usize = 1000;

/// The most memory one file's search holds when the host does not say how
/// much the instance may use (natively, in unit tests).
pub const DEFAULT_HEAP_LIMIT: usize = 64 << 20;

/// What one file's search may hold (`SearcherBuilder::heap_limit`): a quarter
/// of the memory the instance may use (its share of the call's `--memory-mib`,
/// see [`cordon_sdk::host::memory_bytes`]). The searcher grows its line buffer
/// to hold the longest line (in multiline mode, the whole file), tripling it
/// and holding the old one meanwhile, and a matching line becomes an item as
/// long; a quarter leaves room for both and the tool itself. A file that
/// needs more is not searched past that line, and the output says so, rather
/// than the call failing at its memory limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapLimit {
    /// The bytes a search may hold.
    pub bytes: usize,
    /// The memory the instance may use, when the host said.
    pub instance: Option<u64>,
}

impl HeapLimit {
    /// The limit for an instance that may use `instance` bytes (`None`: not
    /// told, [`DEFAULT_HEAP_LIMIT`]).
    pub fn new(instance: Option<u64>) -> HeapLimit {
        let bytes = instance.map_or(DEFAULT_HEAP_LIMIT, |m| usize::try_from(m / 4).unwrap_or(usize::MAX).max(1));
        HeapLimit { bytes, instance }
    }

    /// The longest line an item shows whole (an eighth of what a search
    /// holds): a longer matching or context line is cut in its item, as with
    /// `max_line_length`, with the byte range to `read` for the rest, so that
    /// the item (whose JSON may be several times the line, escaped) fits
    /// beside the searcher's buffer.
    pub fn longest_shown(&self) -> usize {
        (self.bytes / 8).max(1)
    }

    /// Why a file that needs more was not searched (past the line that does),
    /// for a model: "a line longer than 32 MiB, a quarter of …".
    pub fn exceeded(&self, multiline: bool) -> String {
        let what = match multiline {
            true => format!("larger than {}, which a multiline search holds whole", mib(self.bytes as u64)),
            false => format!("a line longer than {}", mib(self.bytes as u64)),
        };
        let of = match self.instance {
            Some(instance) => format!(", a quarter of the {} of memory this search may use", mib(instance)),
            None => ", the most a search holds".to_string(),
        };
        let rest = if multiline { "" } else { "; the lines before it were searched" };
        format!("{what}{of}{rest}")
    }
}

/// `bytes` in MiB, with one decimal when not whole: "32 MiB", "21.3 MiB".
fn mib(bytes: u64) -> String {
    match bytes % (1 << 20) {
        0 => format!("{} MiB", bytes >> 20),
        _ => format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20)),
    }
}

/// What the call returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// One item per matching line (or per block of lines in multiline mode).
    #[default]
    Content,
    /// One item per file with at least one match.
    FilesWithMatches,
    /// One item per file with at least one match, with the number of matches.
    Count,
}

/// The call's arguments, as the input schema describes them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The regex (or, with `fixed_strings`, the literal text) to search for.
    pub pattern: String,
    /// The file or directory to search; the first root when absent.
    pub path: Option<String>,
    /// Take `pattern` literally.
    #[serde(default)]
    pub fixed_strings: bool,
    /// Globs a file must match (ripgrep `-g GLOB`).
    #[serde(default)]
    pub include: Vec<String>,
    /// Globs that exclude files and directories (ripgrep `-g '!GLOB'`).
    #[serde(default)]
    pub exclude: Vec<String>,
    /// A ripgrep file type name (ripgrep `-t TYPE`).
    #[serde(rename = "type")]
    pub file_type: Option<String>,
    /// Match case-insensitively (ripgrep `-i`).
    #[serde(default)]
    pub case_insensitive: bool,
    /// Case-insensitive unless the pattern has an upper-case letter (ripgrep `-S`).
    #[serde(default)]
    pub smart_case: bool,
    /// Let matches span lines (ripgrep `-U`).
    #[serde(default)]
    pub multiline: bool,
    /// Lines of context before each match (ripgrep `-B`).
    #[serde(default)]
    pub context_before: usize,
    /// Lines of context after each match (ripgrep `-A`).
    #[serde(default)]
    pub context_after: usize,
    /// What to return.
    #[serde(default)]
    pub output_mode: OutputMode,
    /// Search hidden files and directories too (ripgrep `--hidden`).
    #[serde(default)]
    pub hidden: bool,
    /// Do not respect `.gitignore`, `.ignore` and `.rgignore` (ripgrep `--no-ignore`).
    #[serde(default)]
    pub no_ignore: bool,
    /// Search binary files as text (ripgrep `-a`).
    #[serde(default)]
    pub binary: bool,
    /// Cut lines longer than this many bytes.
    pub max_line_length: Option<usize>,
}

fn invalid(message: String) -> Error {
    Error::new(ErrorCode::InvalidArgument, message)
}

impl Args {
    /// Parses the arguments' JSON text and checks what the schema cannot.
    pub fn parse(json: &str) -> Result<Args, Error> {
        let args: Args = cordon_sdk::parse_args(json)?;
        if args.context_before > MAX_CONTEXT || args.context_after > MAX_CONTEXT {
            return Err(invalid(format!("`context_before` and `context_after` are at most {MAX_CONTEXT}")));
        }
        if args.max_line_length == Some(0) {
            return Err(invalid("`max_line_length` must be at least 1".into()));
        }
        Ok(args)
    }

    /// The regex matcher, built as ripgrep builds it: `^`/`$` match at line
    /// boundaries, Unicode on, a match never crosses a line unless multiline,
    /// and never matches a NUL byte unless binary files are searched as text.
    pub fn matcher(&self) -> Result<RegexMatcher, Error> {
        let mut builder = RegexMatcherBuilder::new();
        builder.multi_line(true).unicode(true).octal(false).fixed_strings(self.fixed_strings);
        if self.case_insensitive {
            builder.case_insensitive(true);
        } else if self.smart_case {
            builder.case_smart(true);
        }
        builder.dot_matches_new_line(false);
        if !self.multiline {
            builder.line_terminator(Some(b'\n'));
        }
        if !self.binary {
            builder.ban_byte(Some(b'\0'));
        }
        builder.build(&self.pattern).map_err(|e| invalid(format!("invalid regex `{}`: {e}", self.pattern)))
    }

    /// The searcher: `\n` line terminators, no BOM sniffing or transcoding
    /// (so byte offsets are the file's), binary data handled by the caller,
    /// line numbers and context only for content output (a count or a list
    /// of files needs no line counted, as `rg -c` and `rg -l` count none),
    /// and at most `heap` held.
    pub fn searcher(&self, heap: HeapLimit) -> Searcher {
        let content = self.output_mode == OutputMode::Content;
        SearcherBuilder::new()
            .line_terminator(LineTerminator::byte(b'\n'))
            .line_number(content)
            .multi_line(self.multiline)
            .binary_detection(BinaryDetection::none())
            .bom_sniffing(false)
            .heap_limit(Some(heap.bytes))
            .before_context(if content { self.context_before } else { 0 })
            .after_context(if content { self.context_after } else { 0 })
            .build()
    }

    /// The include/exclude globs, matched against paths relative to `base`
    /// (the directory searched), as ripgrep's `-g` matches them against paths
    /// relative to its working directory.
    pub fn overrides(&self, base: &Path) -> Result<Override, Error> {
        if self.include.is_empty() && self.exclude.is_empty() {
            return Ok(Override::empty());
        }
        let mut builder = OverrideBuilder::new(base);
        for glob in &self.include {
            builder.add(glob).map_err(|e| invalid(format!("invalid `include` glob `{glob}`: {e}")))?;
        }
        for glob in &self.exclude {
            builder.add(&format!("!{glob}")).map_err(|e| invalid(format!("invalid `exclude` glob `{glob}`: {e}")))?;
        }
        builder.build().map_err(|e| invalid(format!("invalid globs: {e}")))
    }

    /// The file type filter from ripgrep's default type definitions.
    pub fn types(&self) -> Result<Types, Error> {
        let Some(name) = &self.file_type else { return Ok(Types::empty()) };
        let mut builder = TypesBuilder::new();
        builder.add_defaults();
        if name != "all" && !builder.definitions().iter().any(|d| d.name() == name) {
            return Err(invalid(unknown_type_message(name, &builder)));
        }
        builder.select(name);
        builder.build().map_err(|e| invalid(format!("invalid `type` `{name}`: {e}")))
    }
}

/// Names ripgrep's commonest types, and those that resemble `name`.
fn unknown_type_message(name: &str, builder: &TypesBuilder) -> String {
    let lower = name.to_lowercase();
    let mut names: Vec<String> = builder
        .definitions()
        .iter()
        .map(|d| d.name().to_string())
        .filter(|n| n.len() > 1 && (n.contains(&lower) || lower.contains(n.as_str())))
        .take(8)
        .collect();
    for common in ["rust", "py", "js", "ts", "go", "c", "cpp", "java", "md", "json", "yaml", "sh"] {
        if names.len() >= 12 {
            break;
        }
        if !names.iter().any(|n| n == common) {
            names.push(common.to_string());
        }
    }
    format!(
        "unknown file `type` `{name}`: use a ripgrep type name such as {} (`rg --type-list` lists them all)",
        names.join(", ")
    )
}
