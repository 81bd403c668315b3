//! The `grep` tool end to end: its whole paged result on a generated corpus is
//! compared with ripgrep's (`rg --json --sort path`, `-l`, `-c`, context,
//! globs, types, hidden and ignore flags, multiline), and long lines are cut
//! with a byte range that `read` turns back into the rest of the line.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::corpus;
use crate::support::{Server, read_all, text};

/// A generated corpus (canonical root) and a server granted it.
fn setup(seed: u64) -> (tempfile::TempDir, PathBuf, Server) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    corpus::generate(&root, 400, seed);
    let root = root.canonicalize().unwrap();
    let server = Server::initialized(&root, &[]);
    (dir, root, server)
}

/// Runs `rg` in `cwd` with `args` (exit 1 means no match, also fine).
fn rg(cwd: &Path, args: &[&str]) -> String {
    let out = Command::new(corpus::ripgrep()).current_dir(cwd).args(args).output().expect("run rg");
    assert!(out.status.code().is_some_and(|c| c <= 1), "rg {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The tool's whole result, paged with `max_tokens`, as items; asserts it
/// took more than one page when `several` is set.
fn grep(server: &mut Server, args: Value, max_tokens: u64, several: bool) -> Vec<Value> {
    let (payload, pages) = read_all(server, "grep", args.clone(), max_tokens);
    assert!(!several || pages.len() > 1, "{args}: one page only");
    let text = String::from_utf8(payload).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

/// A line as the tool shows it: rg's `lines` (text or base64 bytes) without
/// the final `\n`, lossy.
fn rg_text(lines: &Value) -> String {
    let bytes = match lines["text"].as_str() {
        Some(t) => t.as_bytes().to_vec(),
        None => base64::engine::general_purpose::STANDARD.decode(lines["bytes"].as_str().unwrap()).unwrap(),
    };
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    String::from_utf8_lossy(bytes).into_owned()
}

fn rg_path(data: &Value) -> String {
    data["path"]["text"].as_str().unwrap().to_string()
}

/// `rg --json` matches as the tool's items: path, line, offset, text, submatches.
fn rg_matches(cwd: &Path, args: &[&str]) -> Vec<Value> {
    let out = rg(cwd, &[&["--json", "--sort", "path"], args].concat());
    out.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|m| m["type"] == "match")
        .map(|m| {
            let d = &m["data"];
            let subs: Vec<Value> = d["submatches"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| json!({"start": s["start"], "end": s["end"]}))
                .collect();
            json!({"path": rg_path(d), "line": d["line_number"], "byte_offset": d["absolute_offset"],
                   "text": rg_text(&d["lines"]), "submatches": subs})
        })
        .collect()
}

/// The tool's content items reduced to what `rg_matches` gives.
fn tool_matches(items: &[Value]) -> Vec<Value> {
    items
        .iter()
        .map(|i| {
            json!({"path": i["path"], "line": i["line"], "byte_offset": i["byte_offset"],
                   "text": i["text"], "submatches": i["submatches"]})
        })
        .collect()
}

fn assert_same(what: &str, got: &[Value], want: &[Value]) {
    assert!(!want.is_empty(), "{what}: rg found nothing; the comparison would be vacuous");
    assert_eq!(got.len(), want.len(), "{what}: item count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "{what}: item {i}");
    }
}

#[test]
fn content_files_and_count_modes_equal_ripgrep() {
    let (_dir, root, mut server) = setup(0xC0FFEE);
    let r = root.to_str().unwrap();
    let cases: [(Value, Vec<&str>); 5] = [
        (json!({"pattern": "needle"}), vec!["needle"]),
        (json!({"pattern": "x[0-9]{2,}"}), vec!["x[0-9]{2,}"]),
        (json!({"pattern": "日本語"}), vec!["日本語"]),
        (json!({"pattern": "needle", "case_insensitive": true}), vec!["-i", "needle"]),
        (json!({"pattern": "quote\"d", "fixed_strings": true}), vec!["-F", "quote\"d"]),
    ];
    for (args, rg_args) in cases {
        let what = args.to_string();
        let items = grep(&mut server, args.clone(), 2000, true);
        assert_same(&what, &tool_matches(&items), &rg_matches(&root, &[&rg_args[..], &[r]].concat()));

        let mut files_args = args.clone();
        files_args["output_mode"] = "files_with_matches".into();
        let files: Vec<Value> = grep(&mut server, files_args, 300, true);
        let want: Vec<Value> = rg(&root, &[&["-l", "--sort", "path"], &rg_args[..], &[r]].concat())
            .lines()
            .map(|p| json!({"path": p}))
            .collect();
        assert_same(&format!("{what} files"), &files, &want);

        let mut count_args = args;
        count_args["output_mode"] = "count".into();
        let counts = grep(&mut server, count_args, 300, true);
        let want: Vec<Value> = rg(&root, &[&["-c", "--sort", "path"], &rg_args[..], &[r]].concat())
            .lines()
            .map(|l| {
                let (path, n) = l.rsplit_once(':').unwrap();
                json!({"path": path, "count": n.parse::<u64>().unwrap()})
            })
            .collect();
        assert_same(&format!("{what} count"), &counts, &want);
    }
}

/// `rg --json` match and context messages, in order, as (path, line, kind, text).
fn rg_with_context(cwd: &Path, args: &[&str]) -> Vec<Value> {
    rg(cwd, &[&["--json", "--sort", "path"], args].concat())
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|m| m["type"] == "match" || m["type"] == "context")
        .map(|m| json!([rg_path(&m["data"]), m["data"]["line_number"], m["type"], rg_text(&m["data"]["lines"])]))
        .collect()
}

#[test]
fn context_lines_equal_ripgrep() {
    let (_dir, root, mut server) = setup(7);
    let r = root.to_str().unwrap();
    for (before, after) in [(2, 1), (0, 3), (4, 0)] {
        let args = json!({"pattern": "x[0-9]+", "context_before": before, "context_after": after});
        let items = grep(&mut server, args, 2000, true);
        let mut got = Vec::new();
        for item in &items {
            let context = |key: &str| item.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
            for line in context("before") {
                got.push(json!([item["path"], line["line"], "context", line["text"]]));
            }
            got.push(json!([item["path"], item["line"], "match", item["text"]]));
            for line in context("after") {
                got.push(json!([item["path"], line["line"], "context", line["text"]]));
            }
        }
        let want = rg_with_context(&root, &["-B", &before.to_string(), "-A", &after.to_string(), "x[0-9]+", r]);
        assert_same(&format!("-B{before} -A{after}"), &got, &want);
    }
}

#[test]
fn filters_and_flags_equal_ripgrep() {
    let (_dir, root, mut server) = setup(99);
    let r = root.to_str().unwrap();
    let src = root.join("src");
    let (s, r_root, r_src) = (src.to_str().unwrap(), root.as_path(), src.as_path());
    let cases: [(Value, Vec<&str>, &Path, &str); 7] = [
        (json!({"pattern": "needle", "include": ["*.rs", "*.md"]}), vec!["-g", "*.rs", "-g", "*.md"], r_root, r),
        (
            json!({"pattern": "needle", "exclude": ["src/deep/**", "*.txt"]}),
            vec!["-g", "!src/deep/**", "-g", "!*.txt"],
            r_root,
            r,
        ),
        (json!({"pattern": "needle", "type": "py"}), vec!["-t", "py"], r_root, r),
        (json!({"pattern": "needle", "hidden": true}), vec!["--hidden"], r_root, r),
        (json!({"pattern": "needle", "no_ignore": true}), vec!["--no-ignore"], r_root, r),
        (json!({"pattern": "needle", "hidden": true, "no_ignore": true}), vec!["--hidden", "--no-ignore"], r_root, r),
        (json!({"pattern": "needle", "path": "src", "include": ["deep/**"]}), vec!["-g", "deep/**"], r_src, s),
    ];
    for (args, mut rg_args, cwd, target) in cases {
        let what = args.to_string();
        rg_args.push("needle");
        let mut files_args = args.clone();
        files_args["output_mode"] = "files_with_matches".into();
        let files = grep(&mut server, files_args, 1000, false);
        let want: Vec<Value> = rg(cwd, &[&["-l", "--sort", "path"], &rg_args[..], &[target]].concat())
            .lines()
            .map(|p| json!({"path": p}))
            .collect();
        assert_same(&what, &files, &want);
        let items = grep(&mut server, args, 4000, false);
        assert_same(&what, &tool_matches(&items), &rg_matches(cwd, &[&rg_args[..], &[target]].concat()));
    }
    // The subdirectory honours the root's .gitignore (*.log, target/) and its own (*.tmp).
    let files = grep(
        &mut server,
        json!({"pattern": "needle", "path": "src", "output_mode": "files_with_matches"}),
        1000,
        false,
    );
    let want: Vec<Value> =
        rg(&root, &["-l", "--sort", "path", "needle", s]).lines().map(|p| json!({"path": p})).collect();
    assert_same("path src", &files, &want);
    assert!(files.iter().all(|f| !f["path"].as_str().unwrap().ends_with(".tmp")));
}

#[test]
fn multiline_equals_ripgrep() {
    let (_dir, root, mut server) = setup(3);
    let pattern = r"needle \r?\n\S+";
    let items = grep(&mut server, json!({"pattern": pattern, "multiline": true}), 2000, true);
    assert_same("multiline", &tool_matches(&items), &rg_matches(&root, &["-U", pattern, root.to_str().unwrap()]));
}

#[test]
fn long_lines_are_cut_and_read_gives_the_rest() {
    let (_dir, root, mut server) = setup(11);
    let want = rg_matches(&root, &["needle", root.to_str().unwrap()]);
    let items = grep(&mut server, json!({"pattern": "needle", "max_line_length": 40}), 1500, true);
    assert_eq!(items.len(), want.len());
    let mut cut = 0;
    for (item, w) in items.iter().zip(&want) {
        let full = w["text"].as_str().unwrap();
        let shown = item["text"].as_str().unwrap();
        assert!(shown.len() <= 40 && full.starts_with(shown), "{item}");
        let Some(t) = item.get("truncated") else {
            assert_eq!(shown, full);
            continue;
        };
        cut += 1;
        assert_eq!(t["line_bytes"].as_u64(), Some(full.len() as u64));
        let rest = server.call(
            cut,
            "read",
            json!({"path": item["path"], "start_byte": t["read"]["start_byte"], "end_byte": t["read"]["end_byte"]}),
        );
        assert_eq!(format!("{shown}{}", text(&rest)), full, "{item}");
        if cut >= 25 {
            break;
        }
    }
    assert!(cut >= 10, "only {cut} lines were long enough to be cut");
}

#[test]
fn sharded_searches_equal_ripgrep_at_every_shard_count() {
    let (_dir, root, _) = setup(0x5AD);
    let r = root.to_str().unwrap();
    let want = rg_matches(&root, &["needle", r]);
    let files: Vec<Value> =
        rg(&root, &["-l", "--sort", "path", "fn ", r]).lines().map(|p| json!({"path": p})).collect();
    for n in ["1", "2", "4"] {
        let mut server = Server::initialized(&root, &["--shards", n]);
        let got = grep(&mut server, json!({"pattern": "needle", "path": r}), 300, true);
        assert_same(&format!("content, {n} shards"), &tool_matches(&got), &want);
        let listed =
            grep(&mut server, json!({"pattern": "fn ", "path": r, "output_mode": "files_with_matches"}), 100, true);
        assert_same(&format!("files, {n} shards"), &listed, &files);
    }
}

#[test]
fn pages_resume_exactly_when_every_stream_is_reopened() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    corpus::generate(&root, 120, 5);
    let root = root.canonicalize().unwrap();
    let args = json!({"pattern": "needle|x1", "context_before": 1, "context_after": 1, "format": "json"});
    let mut reference = Server::initialized(&root, &[]);
    let (whole, _) = read_all(&mut reference, "grep", args.clone(), 25_000);
    let parse = |bytes: &[u8]| -> Vec<Value> {
        std::str::from_utf8(bytes).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    // One parked stream at most: alternating two searches evicts each one,
    // so every page reopens the tool at the cursor's position.
    let mut server = Server::initialized(&root, &["--max-sessions", "1"]);
    let other = json!({"pattern": "haystack", "output_mode": "count", "max_tokens": 60});
    let (got, pages) = crate::support::read_all_reopened(&mut server, "grep", args.clone(), other, 300);
    assert!(pages > 5, "{pages} pages");
    assert!(parse(&got) == parse(&whole), "reopened pages differ from one unbroken search");
}

#[test]
fn errors_are_tool_errors() {
    let (_dir, _root, mut server) = setup(1);
    for (args, code) in [
        (json!({"pattern": "a("}), "invalid_argument"),
        (json!({"pattern": "x", "type": "nonsense"}), "invalid_argument"),
        (json!({"pattern": "x", "path": "../.."}), "permission_denied"),
        (json!({"pattern": "x", "path": "missing"}), "not_found"),
    ] {
        let result = server.call(1, "grep", args.clone());
        assert_eq!(result["isError"], true, "{args}");
        assert_eq!(result["_meta"]["cordon/error"]["code"], code, "{args}: {result}");
    }
}

/// `rg -c PATTERN`'s counts: per path (relative to `root`, as rg run there
/// prints them and as a model reads them), for a corpus at `root`.
fn rg_counts(root: &Path, pattern: &str) -> Vec<(String, u64)> {
    let mut counts: Vec<(String, u64)> = rg(root, &["-c", pattern])
        .lines()
        .map(|line| {
            let (path, n) = line.rsplit_once(':').unwrap();
            (path.to_string(), n.parse().unwrap())
        })
        .collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    counts
}

#[test]
fn a_truncated_first_page_states_the_whole_results_exact_totals_as_ripgrep_counts_them() {
    let (_dir, root, _) = setup(31);
    // A bound far above what counting 400 files takes, even on a busy machine:
    // this test is about exactness; the bounded count is checked below.
    let mut server = Server::initialized(&root, &["--count-ms", "25000"]);
    let counts = rg_counts(&root, "fn ");
    let matches: u64 = counts.iter().map(|(_, n)| n).sum();
    let first = server.call(1, "grep", json!({"pattern": "fn ", "max_tokens": 200, "format": "json"}));
    let whole = &first["structuredContent"]["whole"];
    assert_eq!(whole["exact"], true, "{whole}");
    assert_eq!((whole["items"].as_u64(), whole["paths"].as_u64()), (Some(matches), Some(counts.len() as u64)));
    let top: Vec<(String, u64)> = whole["top_paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["path"].as_str().unwrap().to_string(), t["items"].as_u64().unwrap()))
        .collect();
    // The JSON form names files by their absolute paths.
    let root_prefix = format!("{}/", root.display());
    let top: Vec<(String, u64)> =
        top.into_iter().map(|(p, n)| (p.strip_prefix(&root_prefix).unwrap_or(&p).to_string(), n)).collect();
    assert_eq!(top, counts[..top.len()], "the top files by matches, as rg -c counts them");
    let footer = first["content"].as_array().unwrap().last().unwrap()["text"].as_str().unwrap().to_string();
    assert!(footer.contains(&format!("{matches} items")), "{footer}");
    let mut dirs: std::collections::BTreeMap<String, u64> = Default::default();
    for (path, n) in &counts {
        *dirs.entry(Path::new(path).parent().unwrap().display().to_string()).or_default() += n;
    }
    let most = dirs.values().max().unwrap();
    let top_dir = dirs.iter().find(|(_, n)| *n == most).unwrap().0;
    let shown_dir = whole["top_dirs"][0]["dir"].as_str().unwrap_or_default();
    let shown_dir = shown_dir.strip_prefix(&format!("{}/", root.display())).unwrap_or(shown_dir);
    assert_eq!((shown_dir, &whole["top_dirs"][0]["items"]), (top_dir.as_str(), &json!(most)), "{whole}");
    let said = whole["suggestions"][0].as_str().unwrap_or_default();
    assert!(said.contains(&format!("/{top_dir}: narrow with `path`")), "suggested from the result: {whole}");

    let mut bounded = Server::initialized(&root, &["--count-max-bytes", "1KiB"]);
    let first = bounded.call(2, "grep", json!({"pattern": "fn ", "max_tokens": 200, "format": "json"}));
    let whole = &first["structuredContent"]["whole"];
    assert_eq!(whole["exact"], false, "past its bound the count is a lower bound: {whole}");
    assert!(whole["items"].as_u64().unwrap() < matches, "{whole}");
    let shown = bounded.call(4, "grep", json!({"pattern": "fn ", "max_tokens": 200}));
    let footer = shown["content"].as_array().unwrap().last().unwrap()["text"].as_str().unwrap().to_string();
    assert!(footer.contains("at least"), "the text form's footer: {footer}");
    let off =
        Server::initialized(&root, &["--count-ms", "0"]).call(3, "grep", json!({"pattern": "fn ", "max_tokens": 200}));
    assert!(off["structuredContent"].get("whole").is_none(), "counting off: {off}");
}

#[test]
fn cordon_call_all_follows_a_grep_without_counting_it_first() {
    let (_dir, root, _) = setup(32);
    let mut command = Command::new(crate::support::cordon_bin());
    command.args(["call", "grep", "--all", "--jsonl", "--root"]).arg(&root);
    command.arg("--state-dir").arg(crate::support::shared_state_dir());
    command.args(["--json", r#"{"pattern":"fn ","max_tokens":200}"#]);
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let pages: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(pages.len() > 1, "several pages");
    assert!(pages[0]["structuredContent"].get("whole").is_none(), "a program reads it all anyway: {}", pages[0]);
}
