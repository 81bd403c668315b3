//! Codex CLI, headless: the real `codex` (npm `@openai/codex`, pinned in
//! tests/interop/node-setup.sh) drives Cordon over stdio, with a stand-in for the OpenAI Responses
//! API on loopback playing the model. The stand-in records every `function_call_output` exactly
//! as Codex forwards it, so these tests assert on what the model reads, not on what the server
//! sent (issue 38).
//!
//! One conversation: a read of a small text file, a grep, a glob, a read of a PNG, then a read
//! paged with a small `max_tokens`, following the continuation each page's footer showed the
//! model (`continue with `read` {"cursor":…}`; the handle in `_meta` never reaches it) until
//! there is none.
//!
//! What Codex 0.169.0 does here (its binary is a native executable: it needs no Node):
//! - It calls only `POST /v1/responses`, always with `"stream": true`, one request per turn; each
//!   request's `input` carries the whole conversation. A `function_call` must name the tool as
//!   `name` (`read`) with `namespace: "mcp__cordon"` (with `mcp__cordon__` it answers `unsupported
//!   call`).
//! - Every output starts with an `input_text` of its own, `Wall time: 0.0063 seconds\nOutput:`;
//!   then, for a result without `structuredContent`, one `input_text` per text block and one
//!   `input_image` (a `data:` URL, `"detail": "high"`) per image block, in order. (A result with
//!   `structuredContent` reaches it as one string: the header and the compact JSON, `content`
//!   dropped.)
//! - For a model name it does not know (the first test's), Codex warns `Model metadata … not
//!   found`, lists every Cordon tool up front in a `namespace` tool `mcp__cordon` whose
//!   description is the server's `instructions`, and cuts an output at 12,000 characters.
//! - For a catalog model (`gpt-5.5`, the second test's) it defers every MCP tool behind its
//!   client-side `tool_search` (BM25 over names and descriptions, 8 tools unless asked for more),
//!   with no switch to turn that off: the model must search before it can call a Cordon tool.

mod api;
mod run;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::agents::{self, Checks, PageRead, tail, trimmed};
use crate::claude::{HELLO, MARKERS_SHOWN, marker_tree, numbered};
use crate::clients::warm_cache;
use crate::support::Fixture;
use api::{Move, NAMESPACE, Script, Seen, TOOL_SEARCH};
use run::{Setup, run_codex};

/// A model name not in Codex's catalog: MCP tools are listed up front, not deferred.
const UNKNOWN_MODEL: &str = "cordon-e2e-model";

/// A model in Codex's catalog: MCP tools are deferred behind `tool_search`.
const CATALOG_MODEL: &str = "gpt-5.5";

/// Tokens per page of the paged read: `big.txt` spans several such pages.
const PAGE_TOKENS: u64 = 200;

/// A valid 1x1 PNG.
const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

/// The `*.txt` files in the fixture (with its own `sub/inner.txt`) as the model must read them:
/// one path per line.
const TXT_FILES_SHOWN: &str = "big.txt\nhello.txt\nnotes.txt\nsrc/a.txt\nsub/inner.txt\n";

/// The searches of the second test, and the tool each must rank first (issue 38, item 3).
const SEARCHES: [(&str, &str); 4] = [
    ("read a file", "read"),
    ("search file contents", "grep"),
    ("find files by name", "glob"),
    ("edit a file", "edit"),
];

/// The text of the file read page by page.
fn big_text() -> String {
    (0..100).map(|i| format!("{i:03}: paged through Codex, ünïcödé ✓\n")).collect()
}

/// The fixture's root with the files the conversation reads, after warming the compile cache.
fn fixture() -> Fixture {
    warm_cache();
    let fx = Fixture::new();
    marker_tree(&fx);
    fx.write("big.txt", big_text());
    fx.write("pixel.png", base64::engine::general_purpose::STANDARD.decode(PNG_1X1).unwrap());
    fx
}

/// Whether an `input_text` is the header Codex puts before every output.
fn is_header(text: &str) -> bool {
    text.starts_with("Wall time: ") && text.ends_with("Output:")
}

/// The texts the model read in an output, Codex's header left out: one per text block, or the
/// one string Codex made of the result.
fn texts(seen: &Seen) -> Vec<String> {
    match &seen.output {
        Value::String(text) => {
            let body = text.split_once("Output:\n").filter(|(head, _)| head.starts_with("Wall time: "));
            vec![body.map_or(text.as_str(), |(_, body)| body).to_string()]
        }
        Value::Array(items) => items
            .iter()
            .filter(|item| item["type"] == "input_text")
            .filter_map(|item| item["text"].as_str())
            .filter(|text| !is_header(text))
            .map(str::to_string)
            .collect(),
        other => vec![other.to_string()],
    }
}

/// The images (`data:` URLs) the model was shown in an output.
fn images(seen: &Seen) -> Vec<String> {
    let items = seen.output.as_array().into_iter().flatten().filter(|item| item["type"] == "input_image");
    items.filter_map(|item| item["image_url"].as_str()).map(str::to_string).collect()
}

/// Everything the model read of an output, one part per line (an image as `[image]`).
fn model_text(seen: &Seen) -> String {
    let Value::Array(items) = &seen.output else { return texts(seen).concat() };
    let part = |item: &Value| {
        item["text"].as_str().map_or_else(|| format!("[{}]", item["type"].as_str().unwrap_or("?")), str::to_string)
    };
    items.iter().map(part).collect::<Vec<_>>().join("\n")
}

/// The payload the model read: its texts but the footer, put together.
fn payload(seen: &Seen) -> String {
    agents::payload(&texts(seen))
}

/// The arguments a page's footer told the model to send to continue, if it offered any.
fn continuation(seen: &Seen) -> Option<Value> {
    agents::continuation(&texts(seen))
}

/// Whether an output is a page of the read of `path` (a conversation pages through one file).
fn is_page(seen: &Seen, path: &str) -> bool {
    seen.tool == "read" && (seen.arguments["path"] == path || seen.arguments.get("cursor").is_some())
}

/// The model's side of the first test: one call of each kind, then `big.txt` page by page,
/// sending back exactly what each page's footer offered until a page offers nothing.
fn script() -> Script {
    let calls = [
        Move::Call("read", json!({"path": "hello.txt"})),
        Move::Call("grep", json!({"pattern": "MARKER"})),
        Move::Call("glob", json!({"pattern": "**/*.txt"})),
        Move::Call("read", json!({"path": "pixel.png"})),
        Move::Call("read", json!({"path": "big.txt", "max_tokens": PAGE_TOKENS})),
    ];
    Box::new(move |seen: &[Seen]| {
        if let Some(next) = calls.get(seen.len()) {
            return Some(next.clone());
        }
        let last = seen.last().filter(|s| is_page(s, "big.txt"))?;
        continuation(last).map(|arguments| Move::Call("read", arguments))
    })
}

/// The output of the first call of `tool` with `path` (any path when `None`).
fn output_of<'a>(seen: &'a [Seen], tool: &str, path: Option<&str>) -> &'a Seen {
    let found = seen.iter().find(|s| s.tool == tool && path.is_none_or(|p| s.arguments["path"] == p));
    found.unwrap_or_else(|| panic!("no output of {tool} {path:?} in {seen:#?}"))
}

/// A read, grep or glob: the model read exactly `want` as text (not JSON), nothing more.
fn check_text(checks: &mut Checks, seen: &Seen, want: &str) {
    let (shown, all) = (payload(seen), model_text(seen));
    let what = format!("{} {}", seen.tool, seen.arguments);
    checks.expect(shown == want, || format!("{what}: the model read {all:?}, not {want:?}"));
    checks.expect(serde_json::from_str::<Value>(&shown).is_err(), || format!("{what}: the model read JSON: {all}"));
    checks.expect(texts(seen).len() == 1, || format!("{what}: {} texts, not one: {all:?}", texts(seen).len()));
}

/// The PNG: the model sees it as an image, with at most a one-line description beside it.
fn check_png(checks: &mut Checks, seen: &Seen) {
    let want = format!("data:image/png;base64,{PNG_1X1}");
    let (shown, all) = (images(seen), model_text(seen));
    checks.expect(shown == [want], || format!("read pixel.png: the model was shown {shown:?}: {all}"));
    let described = texts(seen);
    let one_line = described.iter().all(|t| !t.trim_end().contains('\n') && t.contains("pixel.png"));
    checks.expect(described.len() <= 1 && one_line, || format!("read pixel.png: not one line beside it: {all}"));
}

/// The paged read of `path`, whose text is `text`: several pages, each but the last with its
/// footer and a continuation of at most 64 characters that the next call sent back as shown,
/// whose texts put together are the file's numbered lines.
fn check_paging(checks: &mut Checks, seen: &[Seen], path: &str, text: &str) {
    let pages: Vec<&Seen> = seen.iter().filter(|s| is_page(s, path)).collect();
    let read: Vec<PageRead> =
        pages.iter().map(|p| PageRead { arguments: &p.arguments, texts: texts(p), shown: model_text(p) }).collect();
    agents::check_followed(checks, &read, &numbered(text));
}

/// Fails with every expectation that did not hold, and what the model read, call by call.
fn report(checks: Checks, seen: &[Seen]) {
    let read: Vec<String> =
        seen.iter().map(|s| format!("{} {}: {}", s.tool, s.arguments, trimmed(&model_text(s), 300))).collect();
    checks.report("Codex", &read);
}

#[test]
fn codex_shows_the_model_text_matches_paths_an_image_and_pages() {
    let fx = fixture();
    let root = fx.root();
    let ran = run_codex(&Setup { model: UNKNOWN_MODEL, root: &root }, script());
    let seen = &ran.seen;
    let mut checks = Checks::default();
    check_text(&mut checks, output_of(seen, "read", Some("hello.txt")), &numbered(HELLO));
    check_text(&mut checks, output_of(seen, "grep", None), MARKERS_SHOWN);
    check_text(&mut checks, output_of(seen, "glob", None), TXT_FILES_SHOWN);
    check_png(&mut checks, output_of(seen, "read", Some("pixel.png")));
    check_paging(&mut checks, seen, "big.txt", &big_text());
    for s in seen {
        let text = model_text(s);
        checks.expect(!text.contains("truncated"), || format!("Codex cut {} {}: {}", s.tool, s.arguments, text));
    }
    report(checks, seen);
}

/// The names of the Cordon tools a `tool_search_output` loaded, best first.
fn found_tools(seen: &Seen) -> Vec<String> {
    let spaces = seen.output.as_array().into_iter().flatten().filter(|t| t["name"] == NAMESPACE);
    let tools = spaces.flat_map(|space| space["tools"].as_array().cloned().unwrap_or_default());
    tools.filter_map(|t| t["name"].as_str().map(str::to_string)).collect()
}

#[test]
fn codex_tool_search_finds_cordon_tools_first_then_calls_them() {
    let fx = fixture();
    let root = fx.root();
    let script: Script = Box::new(|seen: &[Seen]| match SEARCHES.get(seen.len()) {
        Some((query, _)) => Some(Move::Search(query)),
        None => (seen.len() == SEARCHES.len()).then(|| Move::Call("read", json!({"path": "hello.txt"}))),
    });
    let ran = run_codex(&Setup { model: CATALOG_MODEL, root: &root }, script);
    let mut checks = Checks::default();
    let up_front = ran.first_tools.iter().any(|t| t["name"] == NAMESPACE);
    let search = ran.first_tools.iter().any(|t| t["type"] == TOOL_SEARCH);
    // What this test is about: Codex defers Cordon's tools for a catalog model.
    checks.expect(!up_front && search, || {
        format!("Codex no longer defers MCP tools (mcp__cordon up front: {up_front}, tool_search: {search})")
    });
    for (query, best) in SEARCHES {
        let Some(found) = ran.seen.iter().find(|s| s.tool == TOOL_SEARCH && s.arguments["query"] == query) else {
            checks.expect(false, || format!("no tool_search_output for {query:?}"));
            continue;
        };
        let ranked = found_tools(found);
        checks.expect(ranked.first().map(String::as_str) == Some(best), || {
            format!("tool_search {query:?} ranked {ranked:?}, not {best} first")
        });
    }
    let read = ran.seen.iter().find(|s| s.tool == "read");
    match read {
        Some(read) => check_text(&mut checks, read, &numbered(HELLO)),
        None => checks.expect(false, || "the read after the searches left no output".into()),
    }
    for s in ran.seen.iter().filter(|s| s.tool == TOOL_SEARCH) {
        eprintln!("tool_search {}: {:?}", s.arguments["query"], found_tools(s));
    }
    report(checks, &ran.seen);
}

/// The most bytes of one output Codex passes whole for a model it does not know: above it, it
/// keeps the first and last halves of the budget (`…N tokens truncated…` between them) and
/// replaces every later text block, a page's footer with its continuation among them, by
/// `[omitted N text items ...]`. For a catalog model (`gpt-5.5`) the budget is 48,000 bytes.
const CODEX_OUTPUT_BYTES: usize = 12_000;

/// A file of about 250 KB, read with Cordon's default page size.
fn large_text() -> String {
    (0..3000).map(|i| format!("{i:05}: a fairly long line of text to fill a page, ünïcödé ✓\n")).collect()
}

#[test]
fn codex_default_pages_reach_the_model_whole() {
    let fx = fixture();
    fx.write("large.txt", large_text());
    let root = fx.root();
    let script: Script = Box::new(|seen: &[Seen]| {
        let Some(last) = seen.last() else { return Some(Move::Call("read", json!({"path": "large.txt"}))) };
        continuation(last).map(|arguments| Move::Call("read", arguments))
    });
    let ran = run_codex(&Setup { model: UNKNOWN_MODEL, root: &root }, script);
    let mut checks = Checks::default();
    for s in &ran.seen {
        let (text, bytes) = (model_text(s), texts(s).iter().map(String::len).sum::<usize>());
        let cut = text.contains("truncated") || text.contains("[omitted ");
        checks.expect(!cut && bytes <= CODEX_OUTPUT_BYTES, || {
            format!("a page of {bytes} bytes, cut by Codex: {} … {}", trimmed(&text, 200), tail(&text, 300))
        });
    }
    check_paging(&mut checks, &ran.seen, "large.txt", &large_text());
    report(checks, &ran.seen);
}
