//! `todos`: an example third-party Cordon tool written with the Rust SDK.
//!
//! It walks a directory it was granted and lists every line that carries a
//! marker (`TODO`, `FIXME`, … ) as one JSON item:
//! `{"path": "/abs/file.rs", "line": 12, "tag": "TODO", "text": "// TODO: …"}`.
//! Cordon pages the items; this tool only says where it would start again
//! after each item (`<line>:<path>`) and reopens there when a page's live
//! stream is gone. Walks are in path order, never follow symlinks, and skip
//! what the server's deny rules deny and files that are not text.
//!
//! Build: `cargo build --release --target wasm32-wasip2 -p cordon-example-todos`;
//! install: `cordon tool add target/wasm32-wasip2/release/cordon_example_todos.wasm --grant ro:DIR`.

use std::path::{Path, PathBuf};

use cordon_sdk::items::{self, ItemSource, Items, Pace, Start, Step};
use cordon_sdk::policy::Denied;
use cordon_sdk::{Budget, Chunk, Context, Error, ErrorCode, Manifest, Stream, Summary, Tool, paths, progress, schema};
use serde::Deserialize;
use serde_json::json;

/// The tool's name as clients call it.
pub const NAME: &str = "todos";

/// Files larger than this are skipped: markers live in source, not in data.
const MAX_FILE_BYTES: u64 = 4 << 20;

/// The markers looked for when the call names none.
const DEFAULT_TAGS: [&str; 4] = ["TODO", "FIXME", "XXX", "HACK"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    /// A directory (or one file) inside a granted directory; default: the first.
    #[serde(default)]
    path: Option<String>,
    /// The markers to look for.
    #[serde(default)]
    tags: Option<Vec<String>>,
}

fn input_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "path": schema::path_property("Directory or file to search; default: the first granted directory."),
            "tags": {
                "type": "array", "items": { "type": "string", "minLength": 1, "maxLength": 64 }, "minItems": 1, "maxItems": 16,
                "description": "Markers to look for (whole words). Default: TODO, FIXME, XXX, HACK."
            }
        },
        "additionalProperties": false
    })
}

/// Every regular file under `start` (itself, if it is one), in path order,
/// without following symlinks or entering what the deny rules deny.
fn walk(start: &Path, denied: Option<Denied>) -> Result<Vec<PathBuf>, Error> {
    let meta = std::fs::symlink_metadata(start).map_err(|e| Error::io(&format!("`{}`", start.display()), &e))?;
    if meta.is_file() {
        return Ok(vec![start.to_path_buf()]);
    }
    let mut files = Vec::new();
    let mut stack = vec![start.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut children: Vec<(PathBuf, std::fs::FileType)> =
            entries.filter_map(|e| e.ok()).filter_map(|e| Some((e.path(), e.file_type().ok()?))).collect();
        children.retain(|(path, _)| !denied.is_some_and(|d| d.denies(path)));
        for (path, kind) in children {
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// The first marker in `line` that stands as a whole word.
fn marker<'a>(line: &str, tags: &'a [String]) -> Option<&'a str> {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    tags.iter().map(String::as_str).find(|tag| {
        line.match_indices(tag).any(|(at, _)| {
            let before = line[..at].chars().next_back();
            let after = line[at + tag.len()..].chars().next();
            !before.is_some_and(word) && !after.is_some_and(word)
        })
    })
}

/// The marked lines of the files, one file at a time.
struct Marked {
    files: Vec<PathBuf>,
    next_file: usize,
    /// The file being read: its path, its lines, and the index of the next one.
    current: Option<(PathBuf, Vec<String>, usize)>,
    tags: Vec<String>,
    found: u64,
    /// The work since the last item or checkpoint.
    pace: Pace,
}

/// After this many files (or bytes, or 10 ms) read without a marked line, the tool
/// says how far it got (a checkpoint), so a page can end on time there.
const CHECKPOINT: Pace = Pace::every(256, 4 << 20, items::CHECKPOINT_TIME);

impl Marked {
    /// Loads `files[index]` starting after line `skip`, or skips it if it is
    /// too large, unreadable or not text.
    fn load(&mut self, index: usize, skip: usize) {
        let path = self.files[index].clone();
        let text = std::fs::metadata(&path)
            .ok()
            .filter(|m| m.len() <= MAX_FILE_BYTES)
            .and_then(|_| std::fs::read(&path).ok())
            .filter(|bytes| !bytes[..bytes.len().min(8192)].contains(&0));
        // A file resumed inside was read before: only new work counts.
        if skip == 0 {
            self.pace.add(1, text.as_ref().map_or(0, |b| b.len() as u64));
        }
        let lines = text.map(|b| String::from_utf8_lossy(&b).lines().map(str::to_string).collect()).unwrap_or_default();
        self.current = Some((path, lines, skip));
        self.next_file = index + 1;
        progress::report(
            self.next_file as u64,
            Some(self.files.len() as u64),
            Some(&format!("{} files searched", self.next_file)),
        );
    }
}

impl ItemSource for Marked {
    fn next_item(&mut self) -> Result<Option<(String, String)>, Error> {
        items::without_checkpoints(self)
    }

    /// The marked lines, and at the end of a file, once `CHECKPOINT`'s work
    /// found none, a checkpoint: the position after the file's last line.
    fn next_step(&mut self) -> Result<Option<Step>, Error> {
        loop {
            if let Some((path, lines, next)) = &mut self.current {
                while *next < lines.len() {
                    let (number, text) = (*next + 1, &lines[*next]);
                    *next += 1;
                    if let Some(tag) = marker(text, &self.tags) {
                        self.found += 1;
                        self.pace.reset();
                        let item = json!({ "path": path, "line": number, "tag": tag, "text": text.trim() });
                        return Ok(Some(Step::Item(item.to_string(), format!("{number}:{}", path.display()))));
                    }
                }
                if self.pace.due() {
                    return Ok(Some(Step::Checkpoint(format!("{}:{}", lines.len(), path.display()))));
                }
            }
            if self.next_file == self.files.len() {
                return Ok(None);
            }
            self.load(self.next_file, 0);
        }
    }
}

/// One call.
struct Call {
    root: PathBuf,
    items: Items<Marked>,
}

/// The tool, as the SDK exports it.
pub struct Todos;

impl Tool for Todos {
    fn manifest() -> Manifest {
        Manifest::reader(
            NAME,
            env!("CARGO_PKG_VERSION"),
            "List TODO comments",
            "Lists the lines marked TODO, FIXME, XXX or HACK (or the given `tags`) in the text files under a \
             directory, as JSON items {path, line, tag, text}, in path order. Large results come in pages.",
        )
        .with_schemas(input_schema(), json!({ "type": "object", "properties": { "root": { "type": "string" } } }))
    }

    fn open(ctx: &Context, args: &str, resume: Option<&str>) -> Result<Box<dyn Stream>, Error> {
        let args: Args = serde_json::from_str(args)
            .map_err(|e| Error::new(ErrorCode::InvalidArgument, format!("invalid arguments: {e}")))?;
        let root = paths::resolve_or_first_root(&ctx.roots, args.path.as_deref())?;
        let tags = args.tags.unwrap_or_else(|| DEFAULT_TAGS.map(String::from).to_vec());
        let files = walk(&root, Denied::for_walk())?;
        let mut marked = Marked { files, next_file: 0, current: None, tags, found: 0, pace: CHECKPOINT };
        let start = Start::decode(resume)?;
        if let Some(position) = start.source {
            let malformed = || Error::new(ErrorCode::InvalidArgument, format!("malformed position `{position}`"));
            let (line, path) = position.split_once(':').ok_or_else(malformed)?;
            let line: usize = line.parse().map_err(|_| malformed())?;
            // A file that is gone since: go on with the one after it.
            match marked.files.binary_search(&PathBuf::from(path)) {
                Ok(index) => marked.load(index, line),
                Err(index) => marked.next_file = index,
            }
        }
        Ok(Box::new(Call { root, items: Items::new(marked, start)? }))
    }
}

impl Stream for Call {
    fn next(&mut self, budget: Budget) -> Result<Option<Chunk>, Error> {
        self.items.next(budget)
    }

    fn info(&self) -> serde_json::Value {
        json!({ "root": self.root.display().to_string() })
    }

    fn summary(&self) -> Summary {
        let marked = self.items.source();
        Summary {
            totals: json!({ "files": marked.files.len(), "files_searched": marked.next_file, "found_so_far": marked.found }),
            exact: false,
            suggestions: vec!["Pass `path` (a subdirectory) or fewer `tags` to narrow the list.".into()],
        }
    }
}

cordon_sdk::export_tool!(Todos);

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(stream: &mut Box<dyn Stream>, bytes: u32) -> Vec<Chunk> {
        std::iter::from_fn(|| stream.next(Budget { bytes, items: 1 }).unwrap()).collect()
    }

    fn text(chunks: &[Chunk]) -> String {
        chunks.iter().map(|c| String::from_utf8_lossy(c.payload.as_bytes()).into_owned()).collect()
    }

    #[test]
    fn markers_are_whole_words() {
        let tags: Vec<String> = DEFAULT_TAGS.map(String::from).to_vec();
        assert_eq!(marker("// TODO: fix", &tags), Some("TODO"));
        assert_eq!(marker("let TODOS = 1; // FIXME(x)", &tags), Some("FIXME"));
        assert_eq!(marker("fn todo_list() {}", &tags), None);
        assert_eq!(marker("XXXL", &tags), None);
    }

    #[test]
    fn every_position_resumes_to_exactly_the_rest() {
        let dir = std::env::temp_dir().join(format!("todos-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("b")).unwrap();
        std::fs::write(dir.join("a.rs"), "// TODO one\nfn x() {}\n// FIXME: two, with é\n").unwrap();
        std::fs::write(dir.join("b/c.py"), "# HACK three\n# nothing\n# XXX four\n").unwrap();
        std::fs::write(dir.join("b/data.bin"), b"TODO\0binary").unwrap();
        let ctx = Context { roots: vec![dir.display().to_string()] };
        let chunks = drain(&mut Todos::open(&ctx, "{}", None).unwrap(), 24);
        let whole = text(&drain(&mut Todos::open(&ctx, "{}", None).unwrap(), 4096));
        assert_eq!(text(&chunks), whole);
        assert_eq!(whole.matches("\"tag\"").count(), 4, "{whole}");
        for (i, chunk) in chunks.iter().enumerate() {
            let rest = drain(&mut Todos::open(&ctx, "{}", Some(&chunk.resume)).unwrap(), 24);
            assert_eq!(text(&rest), text(&chunks[i + 1..]), "resume at {}", chunk.resume);
        }
        let err = Todos::open(&ctx, r#"{"path":"/etc"}"#, None).err().unwrap();
        assert_eq!(err.code, ErrorCode::PermissionDenied);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn files_without_markers_end_in_checkpoints_that_resume_exactly() {
        let dir = std::env::temp_dir().join(format!("todos-checkpoints-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..600 {
            std::fs::write(dir.join(format!("f{i:03}.rs")), if i == 300 { "// TODO late\n" } else { "fn x() {}\n" })
                .unwrap();
        }
        let ctx = Context { roots: vec![dir.display().to_string()] };
        let chunks = drain(&mut Todos::open(&ctx, "{}", None).unwrap(), 4096);
        let checkpoints: Vec<usize> = (0..chunks.len()).filter(|&i| chunks[i].is_checkpoint()).collect();
        assert_eq!(checkpoints.len(), 2, "after 256 files read without a marker, twice");
        for i in checkpoints {
            let rest = drain(&mut Todos::open(&ctx, "{}", Some(&chunks[i].resume)).unwrap(), 4096);
            assert_eq!(text(&rest), text(&chunks[i + 1..]), "resume at {}", chunks[i].resume);
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
