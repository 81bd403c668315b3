//! The compact text form a model reads (`format: "text"`, the default) and the JSON form
//! programs read (`format: "json"`), for grep in its three modes, glob and list, over stdio and
//! Streamable HTTP, at several page budgets:
//! - the model's pages put together are exactly the whole rendering, which is ripgrep's own
//!   output for grep (`rg --heading -n` with a file's lone match on one line, as `rg -n`
//!   prints it; `rg -c`) and one path per line for `rg -l`, `rg --files` and a native walk
//!   (glob, list), relative to the root;
//! - every page keeps to its budget and says, on the last, the SHA-256 of the whole text;
//! - the JSON form of the same call still reassembles exactly: its items, hashed as delivered,
//!   give the last page's `payload_sha256`, and carry absolute paths and offsets.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::corpus;
use crate::support::{Server, next_cursor, page_meta, read_all};

/// Page budgets, in tokens: one page for everything, then several sizes that split files.
const BUDGETS: [u64; 3] = [25_000, 400, 90];

fn rg(cwd: &Path, args: &[&str]) -> String {
    let out = Command::new(corpus::ripgrep())
        .current_dir(cwd)
        .args(args)
        .env_remove("RIPGREP_CONFIG_PATH")
        .output()
        .expect("run rg");
    assert!(out.status.code().is_some_and(|c| c <= 1), "rg {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Paths (relative, in order) one per line, the way the compact form shows entries: `/`
/// after a directory.
fn one_per_line(paths: &[(String, bool)]) -> String {
    paths.iter().map(|(path, is_dir)| format!("{path}{}\n", if *is_dir { "/" } else { "" })).collect()
}

/// `rg --heading -n` output with each file that has one match on one line, `path:line:text`
/// as `rg -n` prints it (no blank line between such lines; one between them and a heading).
fn lone_matches_inline(heading: &str) -> String {
    let mut out = String::new();
    let mut after_group = false;
    for group in heading.split("\n\n") {
        let lines: Vec<&str> = group.lines().collect();
        match lines.as_slice() {
            [path, only] => {
                if after_group {
                    out.push('\n');
                }
                out.push_str(&format!("{path}:{only}\n"));
                after_group = false;
            }
            _ => {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(group.trim_end_matches('\n'));
                out.push('\n');
                after_group = true;
            }
        }
    }
    out
}

/// Every entry under `root` to `depth` levels, depth first in name order (as `list` walks).
fn walk(root: &Path, rel: &str, depth: u32, out: &mut Vec<(String, bool)>) {
    let dir = if rel.is_empty() { root.to_path_buf() } else { root.join(rel) };
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    for name in names {
        let path = if rel.is_empty() { name } else { format!("{rel}/{name}") };
        let is_dir = std::fs::symlink_metadata(root.join(&path)).unwrap().is_dir();
        out.push((path.clone(), is_dir));
        if is_dir && depth > 1 {
            walk(root, &path, depth - 1, out);
        }
    }
}

/// The calls checked, each with its whole rendering as the model must read it.
fn cases(root: &Path) -> Vec<(&'static str, Value, String)> {
    let files = |args: &[&str]| -> Vec<(String, bool)> { rg(root, args).lines().map(|p| (p.into(), false)).collect() };
    let mut listed = Vec::new();
    walk(root, "", 2, &mut listed);
    vec![
        (
            "grep",
            json!({"pattern": "haystack"}),
            lone_matches_inline(&rg(root, &["--heading", "-n", "--sort", "path", "haystack"])),
        ),
        (
            "grep",
            json!({"pattern": "needle", "output_mode": "files_with_matches"}),
            one_per_line(&files(&["-l", "--sort", "path", "needle"])),
        ),
        ("grep", json!({"pattern": "fn", "output_mode": "count"}), rg(root, &["-c", "--sort", "path", "fn"])),
        (
            "glob",
            json!({"pattern": "**/*.{md,json}"}),
            one_per_line(&files(&["--files", "--sort", "path", "-g", "*.{md,json}"])),
        ),
        ("list", json!({"depth": 2}), one_per_line(&listed)),
    ]
}

/// Checks one call in both forms at every budget on `server`.
fn check(server: &mut Server, tool: &str, args: &Value, want: &str) {
    for max_tokens in BUDGETS {
        let (text, pages) = read_all(server, tool, with_format(args, "text"), max_tokens);
        let text = String::from_utf8(text).unwrap();
        assert!(
            text == want,
            "{tool} {args} at {max_tokens} tokens: the pages put together are not the whole rendering:\n{text}\n--- want ---\n{want}"
        );
        if want.len() as u64 > max_tokens * 4 {
            assert!(pages.len() > 1, "{tool} {args}: {} bytes on one page at {max_tokens} tokens", want.len());
        }
        for page in &pages {
            let bytes = page_meta(page)["bytes"].as_u64().unwrap();
            assert!(bytes <= max_tokens * 4, "{tool}: a page of {bytes} bytes at {max_tokens} tokens");
            assert_eq!(page_meta(page)["form"], "text", "{tool}: every item shown as text: {page}");
            assert!(page_meta(page).get("chunks").is_none(), "{tool}: no hashes of bytes not shown: {page}");
        }
        let last = page_meta(pages.last().unwrap());
        assert_eq!(last["payload_sha256"], hex::encode(Sha256::digest(text.as_bytes())), "{tool}: the text's hash");

        let (items, pages) = read_all(server, tool, with_format(args, "json"), max_tokens);
        let items = String::from_utf8(items).unwrap();
        let delivered: String = items.lines().collect();
        let last = page_meta(pages.last().unwrap());
        assert_eq!(last["payload_sha256"], hex::encode(Sha256::digest(delivered.as_bytes())), "{tool}: items' hash");
        let parsed: Vec<Value> = items.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert!(parsed.iter().all(|i| i["path"].as_str().is_some_and(|p| p.starts_with('/'))), "{tool}: {items}");
        if tool == "grep" && args.get("output_mode").is_none() {
            assert!(parsed.iter().all(|i| i["byte_offset"].is_u64()), "programs keep the offsets: {items}");
        }
    }
}

fn with_format(args: &Value, format: &str) -> Value {
    let mut args = args.clone();
    args["format"] = format.into();
    args
}

fn corpus_root(seed: u64) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    corpus::generate(&root, 150, seed);
    let root = root.canonicalize().unwrap();
    (dir, root)
}

#[test]
fn the_models_pages_put_together_are_the_whole_rendering_over_stdio() {
    let (_dir, root) = corpus_root(61);
    let mut server = Server::initialized(&root, &[]);
    for (tool, args, want) in cases(&root) {
        assert!(!want.is_empty(), "{tool} {args}: the corpus holds no result");
        check(&mut server, tool, &args, &want);
    }
}

#[test]
fn the_models_pages_put_together_are_the_whole_rendering_over_http() {
    let (_dir, root) = corpus_root(62);
    let mut server = Server::initialized_http(&root, &[]);
    for (tool, args, want) in cases(&root) {
        check(&mut server, tool, &args, &want);
    }
}

#[test]
fn the_text_form_resumes_exactly_when_every_stream_is_reopened() {
    let (_dir, root) = corpus_root(63);
    let (_, _, want) = cases(&root).remove(0);
    // One parked stream at most: alternating two searches evicts each one, so
    // every page reopens grep at the cursor, under the heading it carries.
    let mut server = Server::initialized(&root, &["--max-sessions", "1"]);
    let args = json!({"pattern": "haystack"});
    let other = json!({"pattern": "needle", "output_mode": "count", "max_tokens": 30});
    let (got, pages) = crate::support::read_all_reopened(&mut server, "grep", args, other, 90);
    assert!(pages > 5, "{pages} pages");
    assert_eq!(String::from_utf8(got).unwrap(), want, "reopened pages differ from the whole rendering");
}

#[test]
fn a_cursor_keeps_its_form_and_a_bad_format_is_refused() {
    let (_dir, root) = corpus_root(64);
    let mut server = Server::initialized(&root, &[]);
    let first = server.call(1, "grep", json!({"pattern": "haystack", "max_tokens": 90}));
    let cursor = next_cursor(&first).unwrap();
    let call = |tool: &str, arguments: Value| json!({"name": tool, "arguments": arguments});
    let switched = server.request(2, "tools/call", call("grep", json!({"cursor": cursor, "format": "json"})));
    assert_eq!(switched["error"]["data"]["reason"], "arguments_changed", "{switched}");
    let same = server.call(3, "grep", json!({"cursor": cursor, "format": "text"}));
    assert_eq!(same["isError"], false, "{same}");
    let bad = server.request(4, "tools/call", call("grep", json!({"pattern": "x", "format": "xml"})));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(bad["error"]["message"].as_str().unwrap().contains("`format` must be \"text\" or \"json\""), "{bad}");
}
