//! Unit tests: the tool run natively on temporary trees.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use cordon_sdk::{Budget, ErrorCode};
use serde_json::{Value, json};

use crate::position::{Counts, Position, Where};
use crate::{Grep, Tuning};

mod behaviour;
mod needles;
mod oversized;
mod resume;
mod shards;
mod whole;

/// A temporary directory, removed when dropped.
pub struct Tree(PathBuf);

impl Tree {
    /// An empty tree (its path canonical, as the host grants roots).
    pub fn new() -> Tree {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("cordon-grep-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Tree(dir.canonicalize().unwrap())
    }

    /// The root's path.
    pub fn root(&self) -> &Path {
        &self.0
    }

    /// The roots to grant.
    pub fn roots(&self) -> Vec<String> {
        vec![self.0.display().to_string()]
    }

    /// Writes `bytes` at `rel`, creating directories.
    pub fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) -> &Tree {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
        self
    }

    /// The absolute path of `rel`, as items show it.
    pub fn abs(&self, rel: &str) -> String {
        self.0.join(rel).display().to_string()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Drains a stream: every chunk's payload text and resume position.
pub fn chunks(grep: &mut Grep, bytes: u32) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    while let Some(chunk) = cordon_sdk::Stream::next(grep, Budget { bytes, items: 1 }).unwrap() {
        let text = String::from_utf8(chunk.payload.as_bytes().to_vec()).unwrap();
        out.push((text, chunk.resume, chunk.continued));
    }
    out
}

/// Every item of a search with `args`.
pub fn items(tree: &Tree, args: Value) -> Vec<Value> {
    let mut grep = Grep::open(&tree.roots(), &args.to_string(), None).unwrap();
    let chunks = chunks(&mut grep, u32::MAX).into_iter().filter(|(text, _, _)| !text.is_empty());
    chunks.map(|(text, _, _)| serde_json::from_str(&text).unwrap()).collect()
}

/// The error code of a search with `args`.
pub fn error(tree: &Tree, args: Value) -> (ErrorCode, String) {
    let err = Grep::open(&tree.roots(), &args.to_string(), None).err().expect("an error");
    (err.code, err.message)
}

/// `(path relative to the tree, line)` of content items.
pub fn lines(tree: &Tree, items: &[Value]) -> Vec<(String, u64)> {
    items.iter().map(|i| (rel(tree, &i["path"]), i["line"].as_u64().unwrap())).collect()
}

/// Paths of items relative to the tree.
pub fn paths(tree: &Tree, items: &[Value]) -> Vec<String> {
    items.iter().map(|i| rel(tree, &i["path"])).collect()
}

fn rel(tree: &Tree, path: &Value) -> String {
    let path = path.as_str().unwrap();
    Path::new(path).strip_prefix(tree.root()).unwrap().display().to_string()
}

#[test]
fn positions_round_trip_and_malformed_ones_are_refused() {
    let counts =
        Counts { files_searched: 3, files_matched: 2, matches: 9, binary_files: 1, errors: 0, ignore_files_skipped: 2 };
    for at in [Where::Line(12, 345), Where::End, Where::Start, Where::Noted(2)] {
        let p = Position { counts, path: PathBuf::from("/r/a\tb/ü.txt"), at };
        assert_eq!(Position::decode(&p.encode()).unwrap(), p);
    }
    let before = Position::decode("1,2,3,4,5\tE\t/a").unwrap();
    assert_eq!(before.counts.ignore_files_skipped, 0, "a position written before ignore files were counted");
    for bad in [
        "",
        "1,2,3,4,5",
        "1,2,3,4\tE\t/a",
        "1,2,3,4,5\tX\t/a",
        "1,2,3,4,5\tL1\t/a",
        "1,2,3,4,5\tE\t",
        "a,2,3,4,5\tE\t/a",
        "1,2,3,4,5,6\tNx\t/a",
        "1,2,3,4,5,6,7\tE\t/a",
    ] {
        assert_eq!(Position::decode(bad).unwrap_err().code, ErrorCode::InvalidArgument, "{bad:?}");
    }
}

#[test]
fn json_strings_escape_like_serde() {
    for s in ["plain", "quote\" back\\ slash", "tab\tnl\ncr\r", "\u{1}\u{1f}\u{7f}", "日本語 🎉", ""] {
        let mut out = String::new();
        crate::render::push_str(&mut out, s);
        assert_eq!(serde_json::from_str::<String>(&out).unwrap(), s);
    }
}

#[test]
fn lines_are_cut_on_character_boundaries() {
    use crate::render::cut;
    assert_eq!(cut(b"abcdef", None), 6);
    assert_eq!(cut(b"abcdef", Some(10)), 6);
    assert_eq!(cut(b"abcdef", Some(3)), 3);
    let s = "aé日".as_bytes(); // a, é (2 bytes), 日 (3 bytes)
    assert_eq!(cut(s, Some(2)), 1);
    assert_eq!(cut(s, Some(3)), 3);
    assert_eq!(cut(s, Some(4)), 3);
    assert_eq!(cut(s, Some(5)), 3);
    assert_eq!(cut(b"\x80\x80\x80\x80\x80x", Some(4)), 4, "invalid UTF-8 is cut at the limit");
}

#[test]
fn manifest_is_read_only_and_reserves_no_host_arguments() {
    use cordon_sdk::Tool;
    let m = crate::GrepTool::manifest();
    assert_eq!((m.name.as_str(), m.read_only, m.destructive, m.idempotent), ("grep", true, false, true));
    for reserved in ["cursor", "max_tokens", "page_size"] {
        assert!(m.input_schema["properties"].get(reserved).is_none());
    }
    assert_eq!(m.input_schema["required"], json!(["pattern"]));
}

/// Serves its bytes `step` at a time.
struct Chunked<'a>(&'a [u8], usize);

impl std::io::Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.len().min(self.1).min(buf.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn the_guard_stops_before_the_line_of_the_first_nul_however_the_file_is_read() {
    use std::io::Read;
    let data = b"one\ntwo\nthree \0 four\nfive\n";
    for step in [1, 2, 3, 5, 8, 13, 100] {
        let mut guard = crate::guard::Guard::new(Chunked(data, step), &[], true);
        let mut got = Vec::new();
        let err = guard.read_to_end(&mut got).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::Other);
        assert!(guard.tripped());
        // Bytes of the NUL's line may have been served, but never its end:
        // a line reader (the searcher) sees only the lines before it.
        let complete = got.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        assert_eq!(&got[..complete], b"one\ntwo\n", "step {step}");
    }
    let clean = b"no nul\nhere";
    let mut guard = crate::guard::Guard::new(Chunked(&clean[4..], 4), &clean[..4], true);
    let mut got = Vec::new();
    guard.read_to_end(&mut got).unwrap();
    assert_eq!(got, clean, "a short first read is not taken for the end of the file");
}

#[test]
fn progress_counts_the_bytes_this_stream_searched() {
    let tree = Tree::new();
    let big = "needle and hay\n".repeat(10_000);
    tree.write("a.txt", &big).write("b/c.txt", "hay\nneedle\n").write("d.txt", "");
    let total = big.len() as u64 + 11;
    let args = json!({"pattern": "needle"}).to_string();
    let drain = |grep: &mut Grep| {
        let (mut last, mut resumes) = (0, Vec::new());
        while let Some(chunk) = cordon_sdk::Stream::next(grep, Budget { bytes: 1 << 20, items: 1 }).unwrap() {
            let now = grep.items.source().scanned().bytes;
            assert!(now >= last, "progress never goes back");
            last = now;
            resumes.push(chunk.resume);
        }
        resumes
    };
    for batch in [None, Some(1), Some(7)] {
        let mut grep =
            Grep::open_tuned(&tree.roots(), &args, (None, None), Tuning { batch, ..Tuning::default() }).unwrap();
        let resumes = drain(&mut grep);
        assert_eq!(resumes.len(), 10_001);
        let scanned = grep.items.source().scanned();
        assert_eq!((scanned.files, scanned.bytes), (3, total), "batch {batch:?}");
        assert_eq!(scanned.message(), "3 files, 146.5 KiB scanned");

        // Reopened after line 5000 of a.txt, a stream counts from there.
        let mut grep =
            Grep::open_tuned(&tree.roots(), &args, (Some(&resumes[4999]), None), Tuning { batch, ..Tuning::default() })
                .unwrap();
        drain(&mut grep);
        let scanned = grep.items.source().scanned();
        assert_eq!((scanned.files, scanned.bytes), (3, total - 5000 * 15), "batch {batch:?}");
    }
}
