//! The glob tool on real directory trees: what matches (gitignore, hidden,
//! overrides, directories), the order, exact resumption at every chunk, and
//! newest-first order.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use cordon_sdk::items::ItemStream;
use cordon_sdk::{Budget, ErrorCode};

use crate::Glob;
use crate::walk::{self, Options, Walker};

/// A directory tree removed when dropped.
struct Tree(PathBuf);

impl Tree {
    fn new(tag: &str) -> Tree {
        let dir = std::env::temp_dir().join(format!("cordon-glob-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Tree(dir.canonicalize().unwrap())
    }

    fn file(&self, rel: &str, text: &str) -> &Tree {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        self
    }

    fn roots(&self) -> Vec<String> {
        vec![self.0.display().to_string()]
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A small repository: ignore files, hidden entries, names that sort
/// differently by component than by bytes (`a/x` before `a-c`).
fn repo(tag: &str) -> Tree {
    let tree = Tree::new(tag);
    std::fs::create_dir_all(tree.0.join(".git")).unwrap();
    tree.file(".gitignore", "target/\n*.log\n")
        .file(".ignore", "vendor/\n")
        .file("README.md", "r")
        .file("a/x.rs", "x")
        .file("a/y.md", "y")
        .file("a-c.rs", "ac")
        .file("a.rs", "a")
        .file("src/main.rs", "fn main() {}\n")
        .file("src/deep/lib.rs", "lib")
        .file("src/deep/notes.txt", "n")
        .file("src/.hidden.rs", "h")
        .file(".config/settings.rs", "s")
        .file("target/debug/build.rs", "t")
        .file("vendor/dep.rs", "v")
        .file("run.log", "l")
        .file("ünï/fïlé.rs", "u");
    tree
}

fn rels(tree: &Tree, args: &str) -> Vec<String> {
    let mut glob = Glob::open(&tree.roots(), args, None).unwrap();
    let mut out = Vec::new();
    while let Some(chunk) = glob.items.next(Budget { bytes: u32::MAX, items: 1 }).unwrap() {
        let item: serde_json::Value = serde_json::from_slice(chunk.payload.as_bytes()).unwrap();
        let path = Path::new(item["path"].as_str().unwrap());
        out.push(path.strip_prefix(&tree.0).unwrap().display().to_string());
    }
    out
}

#[test]
fn matches_like_rg_files_in_component_order() {
    let tree = repo("order");
    assert_eq!(
        rels(&tree, r#"{"pattern": "**/*.rs"}"#),
        ["a/x.rs", "a-c.rs", "a.rs", "src/.hidden.rs", "src/deep/lib.rs", "src/main.rs", "ünï/fïlé.rs"]
    );
    assert_eq!(rels(&tree, r#"{"pattern": "*.md"}"#), ["README.md", "a/y.md"]);
    assert_eq!(
        rels(&tree, r#"{"pattern": "src/**"}"#),
        ["src/.hidden.rs", "src/deep/lib.rs", "src/deep/notes.txt", "src/main.rs"]
    );
    assert_eq!(
        rels(&tree, r#"{"pattern": ["*.md", "src/deep/*"]}"#),
        ["README.md", "a/y.md", "src/deep/lib.rs", "src/deep/notes.txt"]
    );
    assert_eq!(rels(&tree, r#"{"pattern": "fïlé*"}"#), ["ünï/fïlé.rs"]);
}

#[test]
fn a_matching_glob_overrides_ignore_files_and_hiding_but_not_pruned_directories() {
    let tree = repo("override");
    // As with `rg --files -g '*.log'`: the glob whitelists run.log (and, above,
    // `**/*.rs` src/.hidden.rs), but never enters target/ or .config/.
    assert_eq!(rels(&tree, r#"{"pattern": "*.log"}"#), ["run.log"]);
    assert_eq!(rels(&tree, r#"{"pattern": "target/**"}"#), Vec::<String>::new());
}

#[test]
fn hidden_and_no_ignore_widen_the_walk() {
    let tree = repo("flags");
    assert_eq!(
        rels(&tree, r#"{"pattern": "**/*.rs", "hidden": true}"#),
        [
            ".config/settings.rs",
            "a/x.rs",
            "a-c.rs",
            "a.rs",
            "src/.hidden.rs",
            "src/deep/lib.rs",
            "src/main.rs",
            "ünï/fïlé.rs"
        ]
    );
    let all = rels(&tree, r#"{"pattern": "**/*.rs", "no_ignore": true}"#);
    assert!(all.contains(&"target/debug/build.rs".to_string()) && all.contains(&"vendor/dep.rs".to_string()));
    assert!(!all.iter().any(|p| p.contains(".config")));
}

#[test]
fn negated_globs_and_directories() {
    let tree = repo("dirs");
    let not_rs = rels(&tree, r#"{"pattern": "!*.rs"}"#);
    assert_eq!(not_rs, ["README.md", "a/y.md", "src/deep/notes.txt"]);
    assert_eq!(
        rels(&tree, r#"{"pattern": "src/**", "include_dirs": true}"#),
        ["src/.hidden.rs", "src/deep", "src/deep/lib.rs", "src/deep/notes.txt", "src/main.rs"]
    );
    assert_eq!(rels(&tree, r#"{"pattern": "a", "include_dirs": true}"#), ["a"]);
}

#[test]
fn resuming_at_every_chunk_gives_exactly_the_rest() {
    let tree = repo("resume");
    for args in [
        r#"{"pattern": "*", "hidden": true, "no_ignore": true, "include_dirs": true}"#,
        r#"{"pattern": "**/*.rs", "sort": "mtime"}"#,
    ] {
        for bytes in [4u32, 37, 100_000] {
            let budget = Budget { bytes, items: 1 };
            let mut glob = Glob::open(&tree.roots(), args, None).unwrap();
            let chunks: Vec<_> = std::iter::from_fn(|| glob.items.next(budget).unwrap()).collect();
            assert!(chunks.len() >= 5, "{args}");
            for (i, chunk) in chunks.iter().enumerate() {
                let mut rest = Glob::open(&tree.roots(), args, Some(&chunk.resume)).unwrap();
                let tail: Vec<_> = std::iter::from_fn(|| rest.items.next(budget).unwrap()).collect();
                assert_eq!(tail, chunks[i + 1..], "{args} at {bytes} bytes, resume {}", chunk.resume);
            }
        }
    }
}

#[test]
fn newest_first_breaks_ties_by_path_and_has_a_limit() {
    let tree = repo("mtime");
    let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for (rel, age) in [("a.rs", 5), ("src/main.rs", 1), ("a/x.rs", 3), ("a-c.rs", 3), ("src/deep/lib.rs", 9)] {
        let file = std::fs::File::options().write(true).open(tree.0.join(rel)).unwrap();
        file.set_modified(base - Duration::from_secs(age)).unwrap();
    }
    std::fs::File::options()
        .write(true)
        .open(tree.0.join("ünï/fïlé.rs"))
        .unwrap()
        .set_modified(base - Duration::from_secs(100))
        .unwrap();
    assert_eq!(
        rels(&tree, r#"{"pattern": "**/*.rs", "sort": "mtime"}"#),
        ["src/.hidden.rs", "src/main.rs", "a/x.rs", "a-c.rs", "a.rs", "src/deep/lib.rs", "ünï/fïlé.rs"]
    );
    let options = Options {
        top: tree.0.clone(),
        root: tree.0.clone(),
        patterns: vec!["**/*.rs".into()],
        hidden: false,
        no_ignore: false,
        include_dirs: false,
        details: true,
    };
    let mut walker = Walker::new(&options, walk::Bounds::default()).unwrap();
    let err = walk::collect_newest_first(&mut walker, None, 3).unwrap_err();
    assert_eq!(err.code, ErrorCode::TooLarge);
}

#[test]
fn info_and_summary_count_what_was_seen() {
    let tree = repo("info");
    let mut glob = Glob::open(&tree.roots(), r#"{"pattern": "**/*.rs"}"#, None).unwrap();
    while glob.items.next(Budget { bytes: 1000, items: 1 }).unwrap().is_some() {}
    let info = glob.info();
    assert_eq!(info["root"], tree.0.display().to_string());
    assert_eq!(info["matched"], 7);
    assert!(info["visited"].as_u64().unwrap() > 7);
    assert!(!glob.summary().exact);
}

#[test]
fn bad_arguments_and_paths_are_refused() {
    let tree = repo("errors");
    let code = |args: &str| Glob::open(&tree.roots(), args, None).err().unwrap().code;
    assert_eq!(code(r#"{"pattern": "a[b"}"#), ErrorCode::InvalidArgument);
    assert_eq!(code(r#"{"pattern": []}"#), ErrorCode::InvalidArgument);
    assert_eq!(code(r#"{"pattern": ""}"#), ErrorCode::InvalidArgument);
    assert_eq!(code(r#"{"pattern": "*", "sort": "size"}"#), ErrorCode::InvalidArgument);
    assert_eq!(code(r#"{"pattern": "*", "path": "a.rs"}"#), ErrorCode::InvalidArgument);
    assert_eq!(code(r#"{"pattern": "*", "path": "missing"}"#), ErrorCode::NotFound);
    assert_eq!(code(r#"{"pattern": "*", "path": "../.."}"#), ErrorCode::PermissionDenied);
    let sub = rels(&tree, r#"{"pattern": "*.rs", "path": "src"}"#);
    assert_eq!(sub, ["src/.hidden.rs", "src/deep/lib.rs", "src/main.rs"]);
    assert_eq!(
        Glob::open(&tree.roots(), r#"{"pattern": "*", "sort": "mtime"}"#, Some("bnot-a-key")).err().unwrap().code,
        ErrorCode::InvalidArgument
    );
}

#[test]
fn the_description_states_the_sorting_limit() {
    assert!(crate::input_schema()["properties"]["sort"]["description"].as_str().unwrap().contains("100000"));
}

/// Every chunk's text and position of the range `start..end`.
fn range(tree: &Tree, args: &str, start: Option<&str>, end: Option<&str>) -> Vec<(String, String)> {
    let mut glob = Glob::open_range(&tree.roots(), args, start, end).unwrap();
    std::iter::from_fn(|| cordon_sdk::Stream::next(&mut glob, Budget { bytes: 30, items: 1 }).unwrap())
        .map(|c| (String::from_utf8(c.payload.as_bytes().to_vec()).unwrap(), c.resume))
        .collect()
}

#[test]
fn shards_concatenate_to_the_unsharded_output_from_any_position() {
    let tree = repo("shards");
    for d in 0..5 {
        for f in 0..4 {
            tree.file(&format!("m{d}/n{f}/x.rs"), "");
            // One directory holding most of the tree: its cuts fall deep,
            // below directories the shard before has emitted.
            tree.file(&format!("deep/m{d}/n{f}/y.rs"), "");
        }
    }
    let args = r#"{"pattern": ["**/*.rs", "*.md"], "include_dirs": true}"#;
    let whole = range(&tree, args, None, None);
    let text = |chunks: &[(String, String)]| chunks.iter().map(|(t, _)| t.as_str()).collect::<String>();
    let starts: Vec<Option<&str>> = std::iter::once(None).chain(whole.iter().map(|(_, r)| Some(r.as_str()))).collect();
    for (i, start) in starts.iter().enumerate() {
        for count in [2, 3, 8] {
            let cuts = Glob::split(&tree.roots(), args, *start, count).unwrap();
            assert!(cuts.len() < count as usize);
            let mut bounds: Vec<Option<&str>> = vec![*start];
            bounds.extend(cuts.iter().map(|c| Some(c.as_str())));
            let ends: Vec<Option<&str>> = cuts.iter().map(|c| Some(c.as_str())).chain([None]).collect();
            let out: String = bounds.iter().zip(&ends).map(|(s, e)| text(&range(&tree, args, *s, *e))).collect();
            assert_eq!(out, text(&whole[i..]), "{count} shards from {start:?}");
        }
    }
    let sorted = r#"{"pattern": "**/*.rs", "sort": "mtime"}"#;
    assert!(Glob::split(&tree.roots(), sorted, None, 4).unwrap().is_empty(), "newest first is not split");
}

#[test]
fn a_walk_that_matches_little_checkpoints_and_resumes_exactly_from_each_checkpoint() {
    let tree = Tree::new("checkpoints");
    for i in 0..2600 {
        let name = if i % 1300 == 5 { format!("d{}/f{i:04}.rs", i / 100) } else { format!("d{}/f{i:04}.txt", i / 100) };
        tree.file(&name, "");
    }
    for args in [r#"{"pattern": "**/*.rs"}"#, r#"{"pattern": "**/*.rs", "include_dirs": true}"#] {
        let budget = Budget { bytes: 1000, items: 1 };
        let data = |chunks: &[cordon_sdk::Chunk]| -> Vec<cordon_sdk::Chunk> {
            chunks.iter().filter(|c| !c.is_checkpoint()).cloned().collect()
        };
        let mut glob = Glob::open(&tree.roots(), args, None).unwrap();
        let all: Vec<_> = std::iter::from_fn(|| glob.items.next(budget).unwrap()).collect();
        assert_eq!(data(&all).len(), 2, "{args}");
        let checkpoints: Vec<usize> = (0..all.len()).filter(|&i| all[i].is_checkpoint()).collect();
        assert!(checkpoints.len() >= 2, "2626 entries with 2 matches make checkpoints: {args}: {all:?}");
        for &i in &checkpoints {
            let mut rest = Glob::open(&tree.roots(), args, Some(&all[i].resume)).unwrap();
            let rest: Vec<_> = std::iter::from_fn(|| rest.items.next(budget).unwrap()).collect();
            assert_eq!(data(&rest), data(&all[i + 1..]), "{args} resumed at {}", all[i].resume);
        }
        // Reopened at the last match (as a shard is at its boundary), the walk
        // after it checkpoints too.
        let last = all.iter().rposition(|c| !c.is_checkpoint()).unwrap();
        let mut rest = Glob::open(&tree.roots(), args, Some(&all[last].resume)).unwrap();
        let rest: Vec<_> = std::iter::from_fn(|| rest.items.next(budget).unwrap()).collect();
        assert!(!rest.is_empty() && rest.iter().all(|c| c.is_checkpoint()), "{args}: after a resume: {rest:?}");
    }
}

#[test]
fn a_shard_from_a_boundary_the_filters_leave_out_checkpoints_before_any_entry_is_kept() {
    let tree = Tree::new("boundary");
    // One flat directory: no directory after the boundary is kept either.
    for i in 0..1500 {
        tree.file(&format!("flat/f{i:04}.txt"), "");
    }
    tree.file("a/x.rs", "");
    let args = r#"{"pattern": "**/*.rs"}"#;
    let chunks = range(&tree, args, Some("b/flat/f0150.txt"), None);
    assert!(!chunks.is_empty() && chunks.iter().all(|(text, _)| text.is_empty()), "{chunks:?}");
}

/// A tree whose ignore files are too large to apply: a sparse 3 GiB
/// `.ignore` at the top, and in `sub/` one just over 1 MiB that would leave
/// out `*.log`.
fn oversized(tag: &str) -> Tree {
    let tree = Tree::new(tag);
    std::fs::File::create(tree.0.join(".ignore")).unwrap().set_len(3 << 30).unwrap();
    tree.file("a.rs", "").file("sub/.ignore", &"*.log\n".repeat((1 << 20) / 6 + 1));
    tree.file("sub/x.log", "").file("sub/y.rs", "").file("z/w.rs", "");
    tree
}

#[test]
fn ignore_files_too_large_to_apply_are_named_at_their_place_and_the_walk_goes_on() {
    let tree = oversized("oversized");
    // Only a negated glob: the ignore files decide the rest (a matching glob
    // would keep an ignored entry anyway).
    let args = r#"{"pattern": "!*.md"}"#;
    assert_eq!(rels(&tree, args), [".ignore", "a.rs", "sub/.ignore", "sub/x.log", "sub/y.rs", "z/w.rs"]);
    let whole = range(&tree, args, None, None);
    let text = |chunks: &[(String, String)]| chunks.iter().map(|(t, _)| t.as_str()).collect::<String>();
    assert_eq!(text(&whole).matches("\"not_applied\":\"an ignore file larger than 1 MiB").count(), 2);
    let mut glob = Glob::open(&tree.roots(), args, None).unwrap();
    while glob.items.next(Budget { bytes: u32::MAX, items: 1 }).unwrap().is_some() {}
    assert_eq!(glob.info()["ignore_files_skipped"], 2);
    // From the searched directory, the top's is said first; sorted by time,
    // both come first.
    let sub = rels(&tree, r#"{"pattern": "!*.md", "path": "sub"}"#);
    assert_eq!(sub, [".ignore", "sub/.ignore", "sub/x.log", "sub/y.rs"]);
    let newest = r#"{"pattern": "!*.md", "sort": "mtime"}"#;
    assert_eq!(rels(&tree, newest)[..2], [".ignore", "sub/.ignore"]);
    // Every position resumes exactly, and shards from any of them concatenate.
    for args in [args, r#"{"pattern": "!*.md", "path": "sub"}"#, newest] {
        let whole = range(&tree, args, None, None);
        for (i, (_, resume)) in whole.iter().enumerate() {
            assert_eq!(text(&range(&tree, args, Some(resume), None)), text(&whole[i + 1..]), "{args} after {resume}");
            let cuts = Glob::split(&tree.roots(), args, Some(resume), 3).unwrap();
            let starts = std::iter::once(Some(resume.as_str())).chain(cuts.iter().map(|c| Some(c.as_str())));
            let ends = cuts.iter().map(|c| Some(c.as_str())).chain([None]);
            let out: String = starts.zip(ends).map(|(s, e)| text(&range(&tree, args, s, e))).collect();
            assert_eq!(out, text(&whole[i + 1..]), "{args}: shards after {resume}");
        }
    }
}
