//! The `glob` tool end to end: on the generated corpus its result set and order
//! are those of `rg --files --sort path -g PATTERN` (with and without
//! `--hidden`/`--no-ignore`), paged over many small pages, from parked and
//! from reopened streams alike; newest-first order; errors.

use std::cmp::Reverse;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::corpus;
use crate::support::{Fixture, Rng, Server, read_all};

/// A fixture with the corpus in its root.
fn corpus_fixture(seed: u64) -> Fixture {
    let fx = Fixture::new();
    corpus::generate(&fx.root(), 400, seed);
    fx
}

/// `rg --files --sort path` with `flags` and a `-g` per glob, run in `root`,
/// isolated from the user's global gitignore and ripgrep config.
fn rg_files(fx: &Fixture, globs: &[&str], flags: &[&str]) -> Vec<String> {
    let mut command = Command::new(corpus::ripgrep());
    command.current_dir(fx.root()).args(["--files", "--sort", "path"]).args(flags);
    for glob in globs {
        command.arg("-g").arg(glob);
    }
    let out = command
        .env("HOME", fx.dir.path())
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("RIPGREP_CONFIG_PATH")
        .output()
        .expect("run rg");
    assert!(out.status.code().is_some_and(|c| c <= 1), "rg failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
}

/// The items of a whole paged result, parsed from its JSON lines.
pub fn items(server: &mut Server, tool: &str, args: Value, max_tokens: u64) -> (Vec<Value>, usize) {
    let (bytes, pages) = read_all(server, tool, args, max_tokens);
    let text = String::from_utf8(bytes).expect("items are UTF-8 JSON lines");
    let items = text.lines().map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))).collect();
    (items, pages.len())
}

/// The items' paths relative to `root`, checking each is a whole entry object:
/// its path and type, and with `details` (or sorted by time) its size and time.
fn relative(root: &Path, items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|item| {
            let path = Path::new(item["path"].as_str().unwrap());
            let meta = std::fs::symlink_metadata(path).unwrap();
            match item.get("size") {
                Some(size) => {
                    assert!(item["mtime_ns"].is_u64(), "{item}");
                    assert_eq!(*size, meta.len(), "{item}");
                }
                None => assert_eq!(item.as_object().unwrap().len(), 2, "path and type only: {item}"),
            }
            assert_eq!(item["type"], if meta.is_dir() { "dir" } else { "file" }, "{item}");
            path.strip_prefix(root).unwrap().to_str().unwrap().to_string()
        })
        .collect()
}

/// The patterns compared with rg: one per shape of glob.
const PATTERNS: [&[&str]; 6] =
    [&["**/*.rs"], &["*.md"], &["src/**"], &["**/fïlé_*"], &["*.json", "docs/**"], &["*", "!*.txt"]];

fn pattern_arg(globs: &[&str]) -> Value {
    if globs.len() == 1 { json!(globs[0]) } else { json!(globs) }
}

#[test]
fn glob_matches_rg_files_in_order_over_many_pages() {
    let fx = corpus_fixture(11);
    let root = fx.root();
    let mut server = Server::initialized(&root, &[]);
    for globs in PATTERNS {
        let want = rg_files(&fx, globs, &[]);
        assert!(!want.is_empty(), "{globs:?} matches something");
        let (got, pages) = items(&mut server, "glob", json!({"pattern": pattern_arg(globs)}), 120);
        assert_eq!(relative(&root, &got), want, "{globs:?}");
        assert!(want.len() < 8 || pages > 2, "{globs:?}: {} matches on {pages} pages", want.len());
    }
}

#[test]
fn glob_hidden_and_no_ignore_match_rg_flags() {
    let fx = corpus_fixture(12);
    let root = fx.root();
    let mut server = Server::initialized(&root, &[]);
    let cases = [
        (json!({"hidden": true}), vec!["--hidden"]),
        (json!({"no_ignore": true}), vec!["--no-ignore"]),
        (json!({"hidden": true, "no_ignore": true}), vec!["--hidden", "--no-ignore"]),
    ];
    for (flags, rg_flags) in cases {
        for globs in [&["**/*.rs"][..], &["*"], &["src/**", "*.log"]] {
            let want = rg_files(&fx, globs, &rg_flags);
            let mut args = flags.clone();
            args["pattern"] = pattern_arg(globs);
            let (got, _) = items(&mut server, "glob", args, 400);
            assert_eq!(relative(&root, &got), want, "{globs:?} with {rg_flags:?}");
        }
    }
    let wide = json!({"pattern": "**/*.rs", "hidden": true, "no_ignore": true});
    let (everything, _) = items(&mut server, "glob", wide, 6000);
    let (plain, _) = items(&mut server, "glob", json!({"pattern": "**/*.rs"}), 6000);
    assert!(everything.len() > plain.len(), "the flags widen the walk");
    // As with `rg -g '*'`: a glob that matches every name, directories
    // included, whitelists everything, so the flags change nothing.
    let (star, _) = items(&mut server, "glob", json!({"pattern": "*"}), 6000);
    let (star_wide, _) = items(&mut server, "glob", json!({"pattern": "*", "hidden": true, "no_ignore": true}), 6000);
    assert_eq!(star, star_wide);
}

#[test]
fn glob_resumes_exactly_from_reopened_streams() {
    let fx = corpus_fixture(13);
    let root = fx.root();
    // No parked streams: every page reopens the tool at the cursor's position,
    // and at 20 tokens (80 bytes) every entry with `details` is split across
    // pages too.
    let mut server = Server::initialized(&root, &["--max-sessions", "0"]);
    let want = rg_files(&fx, &["src/**"], &[]);
    let (got, pages) = items(&mut server, "glob", json!({"pattern": "src/**"}), 20);
    assert_eq!(relative(&root, &got), want);
    assert!(got.iter().all(|item| item.get("size").is_none()), "no stat without `details`");
    assert!(pages >= want.len(), "{pages} pages for {} entries", want.len());
    let (detailed, pages) = items(&mut server, "glob", json!({"pattern": "src/**", "details": true}), 20);
    assert_eq!(relative(&root, &detailed), want);
    assert!(detailed.iter().all(|item| item["size"].is_u64()), "`details` reports sizes and times");
    assert!(pages > want.len(), "{pages} pages for {} entries", want.len());
}

#[test]
fn glob_sort_mtime_is_newest_first_with_ties_in_path_order() {
    let fx = corpus_fixture(14);
    let root = fx.root();
    let want = rg_files(&fx, &["**/*.md", "**/*.py"], &[]);
    let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    let mut rng = Rng(99);
    for rel in &want {
        // Few distinct times, so that many entries tie.
        let when = base + Duration::from_secs(rng.range(0, 5) * 3600);
        std::fs::File::options().write(true).open(root.join(rel)).unwrap().set_modified(when).unwrap();
    }
    let mut server = Server::initialized(&root, &["--max-sessions", "1"]);
    let (got, pages) = items(&mut server, "glob", json!({"pattern": ["**/*.md", "**/*.py"], "sort": "mtime"}), 100);
    assert!(pages > 2);
    let keys: Vec<(Reverse<u64>, PathBuf)> = got
        .iter()
        .map(|item| (Reverse(item["mtime_ns"].as_u64().unwrap()), PathBuf::from(item["path"].as_str().unwrap())))
        .collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "newest first, ties by path");
    assert!(keys.windows(2).any(|w| w[0].0 == w[1].0), "the corpus has ties");
    let mut got = relative(&root, &got);
    got.sort_by(|a, b| Path::new(a).cmp(Path::new(b)));
    assert_eq!(got, want, "the same entries as in path order");
    for (Reverse(mtime_ns), path) in keys {
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        assert_eq!(mtime_ns as u128, mtime.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos(), "{path:?}");
    }
}

#[test]
fn glob_include_dirs_info_and_errors() {
    let fx = corpus_fixture(15);
    let root = fx.root();
    std::os::unix::fs::symlink(fx.dir.path(), root.join("link-to-parent")).unwrap();
    let mut server = Server::initialized(&root, &[]);
    let (dirs, _) = items(&mut server, "glob", json!({"pattern": "src/**", "include_dirs": true}), 6000);
    let rels = relative(&root, &dirs);
    assert!(rels.contains(&"src/deep".to_string()) && rels.contains(&"src/deep/deeper".to_string()), "{rels:?}");
    let first = server.call(1, "glob", json!({"pattern": "**/*", "max_tokens": 50, "format": "json"}));
    let meta = &first["structuredContent"];
    assert!(meta["root"].as_str().is_some_and(|r| r.starts_with('/')), "the root searched: {meta}");
    assert!(meta["matched"].as_u64().unwrap() >= 1 && meta["visited"].as_u64().unwrap() >= 1, "{meta}");
    // The whole result counted stands in for the tool's lower bounds.
    assert!(meta.get("summary").is_none(), "{meta}");
    assert_eq!(meta["whole"]["exact"], true, "{meta}");
    assert!(!meta["whole"]["suggestions"].as_array().unwrap().is_empty(), "{meta}");
    let code = |server: &mut Server, args: Value| {
        let result = server.call(2, "glob", args);
        assert_eq!(result["isError"], true, "{result}");
        result["_meta"]["cordon/error"]["code"].as_str().unwrap().to_string()
    };
    assert_eq!(code(&mut server, json!({"pattern": "a[b"})), "invalid_argument");
    assert_eq!(code(&mut server, json!({"pattern": "*", "path": "hello.txt"})), "invalid_argument");
    assert_eq!(code(&mut server, json!({"pattern": "*", "path": "missing"})), "not_found");
    assert_eq!(code(&mut server, json!({"pattern": "*", "path": ".."})), "permission_denied");
    assert_eq!(code(&mut server, json!({"pattern": "*", "path": fx.outside().parent().unwrap()})), "permission_denied");
    assert_eq!(code(&mut server, json!({"pattern": "*", "path": "link-to-parent"})), "permission_denied");
    let (all, _) = items(&mut server, "glob", json!({"pattern": "*", "hidden": true, "include_dirs": true}), 6000);
    assert!(all.iter().all(|i| !i["path"].as_str().unwrap().contains("link-to-parent")), "symlinks are not listed");
}
