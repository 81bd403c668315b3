//! Gemini CLI, headless: the real `gemini` (npm `@google/gemini-cli`, pinned in
//! tests/interop/node-setup.sh) drives Cordon over stdio, with a stand-in for the Gemini API on
//! loopback playing the model. The stand-in records every `functionResponse` (and the parts sent
//! beside it) exactly as Gemini CLI forwards it, so these tests assert on what the model reads,
//! not on what the server sent (issue 38).
//!
//! One conversation: a read of a small text file, a grep, a glob, a read of a PNG, then a read
//! paged with a small `max_tokens`, following the continuation each page's footer showed the
//! model (`continue with `read` {"cursor":…}`) until there is none.
//!
//! How it is pointed at the stand-in (0.61.0; a Node bundle, run with the Node 22 installed
//! beside it): `GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT` and `GEMINI_API_KEY=<any dummy>`,
//! with `security.auth.selectedType: "gemini-api-key"` in a scratch `~/.gemini/settings.json`
//! (also: no auto-update, no usage statistics, no telemetry, no folder trust, and Cordon as the
//! trusted MCP server `cordon`); `GEMINI_CLI_NO_RELAUNCH` keeps it in one process. Run as
//! `gemini -p go --output-format json`, it connects to nothing but the stand-in (checked with
//! `strace -e connect`) and writes only under the scratch HOME (`~/.gemini/tmp/…/chats`).
//!
//! What Gemini CLI 0.61.0 does here:
//! - It calls `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` for the main loop (one
//!   request per turn, the whole conversation in `contents`, the key in `x-goog-api-key`), and
//!   answers a data-only event stream. Before the first turn, its model router asks
//!   `gemini-3.5-flash-lite:generateContent` (no tools, a JSON schema of `complexity_reasoning`
//!   and `complexity_score`) how hard the prompt is; answered with a low score, the main loop runs
//!   on `gemini-3.8-flash` (a failed answer leaves it on `gemini-3.1-pro-preview`). After a result
//!   that carries an image it also asks `:countTokens` for it.
//! - MCP tools are named `mcp_<server>_<tool>` (`mcp_cordon_read`) and every one is declared up
//!   front in each main-loop request's `functionDeclarations`, beside its own tools. It keeps the
//!   `id` the model gives a `functionCall` and answers with a `functionResponse` of that id.
//! - It checks a call's arguments against the tool's `inputSchema` before it calls the server,
//!   and answers the model itself (`params must have required property 'path'`) when they do not
//!   fit: a paging tool therefore lists nothing in `required` (it says so in the `cursor`
//!   description), or the continuation the footer offers, a cursor alone, would never arrive.
//! - The result reaches the model as one string, `response.output`: each text block of `content`
//!   wrapped as `<untrusted_context>\n{text}\n</untrusted_context>`, the blocks joined with `\n`
//!   (so a page and its footer are two wrapped blocks). An image block becomes a line of its own,
//!   `[Tool 'read' provided the following image data with mime-type: image/png]`, in the string,
//!   and its data an `inlineData` part: beside the `functionResponse` in the same turn, or inside
//!   it (`functionResponse.parts`) for a model whose name starts with `gemini-3-`.
//!   `structuredContent` is never read.
//! - A result that is one text part above 40,000 characters (less when the context is nearly
//!   full) is saved to a file and the model reads `Output too large. Showing first 8,000 and last
//!   32,000 characters. For full output see: PATH` with those ends; a result of several parts (a
//!   page with its footer) is never cut.

mod api;
mod run;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::agents::{self, Checks, PageRead, tail, trimmed};
use crate::claude::{HELLO, MARKERS_SHOWN, marker_tree, numbered};
use crate::clients::warm_cache;
use crate::support::Fixture;
use api::{Move, PREFIX, Script, Seen};
use run::run_gemini;

/// Tokens per page of the paged read: `big.txt` spans several such pages.
const PAGE_TOKENS: u64 = 200;

/// A valid 1x1 PNG.
const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

/// The `*.txt` files in the fixture (with its own `sub/inner.txt`) as the model must read them:
/// one path per line.
const TXT_FILES_SHOWN: &str = "big.txt\nhello.txt\nnotes.txt\nsrc/a.txt\nsub/inner.txt\n";

/// How Gemini CLI opens and closes each text block of a result.
const OPEN: &str = "<untrusted_context>\n";
const CLOSE: &str = "\n</untrusted_context>";

/// The line Gemini CLI puts before an image of Cordon's `read`.
const IMAGE_NOTE: &str = "[Tool 'read' provided the following image data with mime-type: image/png]";

/// The most characters of one text part Gemini CLI passes whole, and what it writes instead.
const GEMINI_TEXT_PART_CHARS: usize = 40_000;
const GEMINI_TRUNCATION_MARK: &str = "Output too large.";

/// The text of the file read page by page.
fn big_text() -> String {
    (0..100).map(|i| format!("{i:03}: paged through Gemini CLI, ünïcödé ✓\n")).collect()
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

/// One piece of a result's `output` string as the model reads it.
#[derive(Clone, Debug, PartialEq)]
enum Piece {
    /// A text block of Cordon's, unwrapped from its `<untrusted_context>`.
    Cordon(String),
    /// A line of Gemini CLI's own (an image's note).
    Gemini(String),
}

/// The string the model read for a result (`response.output`).
fn output(seen: &Seen) -> &str {
    seen.response["output"].as_str().unwrap_or_default()
}

/// A result's `output` split back into the blocks Gemini CLI joined with `\n`.
fn pieces(seen: &Seen) -> Vec<Piece> {
    let (mut rest, mut found) = (output(seen), Vec::new());
    while !rest.is_empty() {
        if let Some((text, after)) = rest.strip_prefix(OPEN).and_then(|inner| inner.split_once(CLOSE)) {
            found.push(Piece::Cordon(text.to_string()));
            rest = after.strip_prefix('\n').unwrap_or(after);
        } else {
            let (line, after) = rest.split_once('\n').unwrap_or((rest, ""));
            found.push(Piece::Gemini(line.to_string()));
            rest = after;
        }
    }
    found
}

/// Cordon's text blocks as the model read them, unwrapped.
fn texts(seen: &Seen) -> Vec<String> {
    let cordon = pieces(seen).into_iter().filter_map(|p| if let Piece::Cordon(t) = p { Some(t) } else { None });
    cordon.collect()
}

/// Gemini CLI's own lines in what the model read.
fn notes(seen: &Seen) -> Vec<String> {
    let own = pieces(seen).into_iter().filter_map(|p| if let Piece::Gemini(t) = p { Some(t) } else { None });
    own.collect()
}

/// The images the model was shown with a result: (MIME type, base64 data).
fn images(seen: &Seen) -> Vec<(String, String)> {
    let inline = seen.parts.iter().filter_map(|p| p.get("inlineData"));
    inline.map(|i| (i["mimeType"].as_str().unwrap_or("?").into(), i["data"].as_str().unwrap_or("?").into())).collect()
}

/// Everything the model read of a result: its `output`, then a line per other part.
fn model_text(seen: &Seen) -> String {
    let other = seen.parts.iter().map(|p| match p.get("inlineData") {
        Some(image) => format!("[inlineData {}]", image["mimeType"]),
        None => p.to_string(),
    });
    let head = match seen.response["output"].as_str() {
        Some(text) => text.to_string(),
        None => format!("[response {}]", seen.response),
    };
    std::iter::once(head).chain(other).collect::<Vec<_>>().join("\n")
}

/// The payload the model read: its texts but the footer, put together.
fn payload(seen: &Seen) -> String {
    agents::payload(&texts(seen))
}

/// The arguments a page's footer told the model to send to continue, if it offered any.
fn continuation(seen: &Seen) -> Option<Value> {
    agents::continuation(&texts(seen))
}

/// Whether a result is a page of the read of `path` (a conversation pages through one file).
fn is_page(seen: &Seen, path: &str) -> bool {
    seen.tool == "read" && (seen.arguments["path"] == path || seen.arguments.get("cursor").is_some())
}

/// The model's side of the first test: one call of each kind, then `big.txt` page by page,
/// sending back exactly what each page's footer offered until a page offers nothing.
fn script() -> Script {
    let calls: [Move; 5] = [
        ("read", json!({"path": "hello.txt"})),
        ("grep", json!({"pattern": "MARKER"})),
        ("glob", json!({"pattern": "**/*.txt"})),
        ("read", json!({"path": "pixel.png"})),
        ("read", json!({"path": "big.txt", "max_tokens": PAGE_TOKENS})),
    ];
    Box::new(move |seen: &[Seen]| {
        if let Some(next) = calls.get(seen.len()) {
            return Some(next.clone());
        }
        let last = seen.last().filter(|s| is_page(s, "big.txt"))?;
        continuation(last).map(|arguments| ("read", arguments))
    })
}

/// The result of the first call of `tool` with `path` (any path when `None`).
fn result_of<'a>(seen: &'a [Seen], tool: &str, path: Option<&str>) -> &'a Seen {
    let found = seen.iter().find(|s| s.tool == tool && path.is_none_or(|p| s.arguments["path"] == p));
    found.unwrap_or_else(|| panic!("no result of {tool} {path:?} in {seen:#?}"))
}

/// A read, grep or glob: the model read exactly `want` as text (not JSON), in one block of its
/// own, with its line ends, and nothing more.
fn check_text(checks: &mut Checks, seen: &Seen, want: &str) {
    let (shown, all) = (payload(seen), model_text(seen));
    let what = format!("{} {}", seen.tool, seen.arguments);
    checks.expect(shown == want, || format!("{what}: the model read {all:?}, not {want:?}"));
    checks.expect(serde_json::from_str::<Value>(&shown).is_err(), || format!("{what}: the model read JSON: {all}"));
    let whole = format!("{OPEN}{want}{CLOSE}");
    checks.expect(output(seen) == whole, || format!("{what}: the model read {all:?}, not {whole:?} alone"));
    checks.expect(seen.parts.is_empty(), || format!("{what}: parts beside the text: {all}"));
}

/// The PNG: the model is shown it as an image (`inlineData`), with Gemini CLI's note and at most
/// Cordon's one-line description beside it.
fn check_png(checks: &mut Checks, seen: &Seen) {
    let (shown, all) = (images(seen), model_text(seen));
    checks.expect(shown == [("image/png".to_string(), PNG_1X1.to_string())], || {
        format!("read pixel.png: the model was shown {shown:?}: {all}")
    });
    checks.expect(notes(seen) == [IMAGE_NOTE], || format!("read pixel.png: not Gemini CLI's note: {all}"));
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
    for page in &pages[..pages.len().saturating_sub(1)] {
        let texts = texts(page);
        let last = texts.last().is_some_and(|t| t.starts_with("[Page "));
        let own = notes(page).is_empty() && page.parts.is_empty();
        checks.expect(last && texts.len() >= 2 && own, || {
            format!("not a page with its footer last: {}", trimmed(&model_text(page), 300))
        });
    }
}
/// Gemini CLI ran every call (it checks the arguments against the tool's `inputSchema` first and
/// answers a `response.error` instead), cut none of the results, and passed every text part under
/// its limit.
fn check_uncut(checks: &mut Checks, seen: &[Seen]) {
    for s in seen {
        let error = &s.response["error"];
        checks.expect(error.is_null(), || format!("Gemini CLI refused {} {}: {error}", s.tool, s.arguments));
        let (text, longest) = (model_text(s), texts(s).iter().map(|t| t.chars().count()).max().unwrap_or(0));
        let cut = text.contains(GEMINI_TRUNCATION_MARK);
        checks.expect(!cut && longest <= GEMINI_TEXT_PART_CHARS, || {
            format!(
                "{} {}: a text of {longest} characters, cut by Gemini CLI: {} … {}",
                s.tool,
                s.arguments,
                trimmed(&text, 200),
                tail(&text, 300)
            )
        });
    }
}

/// Fails with every expectation that did not hold, and what the model read, call by call.
fn report(checks: Checks, seen: &[Seen]) {
    let read: Vec<String> =
        seen.iter().map(|s| format!("{} {}: {}", s.tool, s.arguments, trimmed(&model_text(s), 300))).collect();
    checks.report("Gemini CLI", &read);
}

#[test]
fn gemini_shows_the_model_text_matches_paths_an_image_and_pages() {
    let fx = fixture();
    let ran = run_gemini(&fx.root(), script());
    let seen = &ran.seen;
    let mut checks = Checks::default();
    for tool in ["read", "grep", "glob"] {
        let name = format!("{PREFIX}{tool}");
        // Gemini CLI does not defer MCP tools: every one is declared up front.
        checks.expect(ran.first_tools.contains(&name), || format!("{name} not declared: {:?}", ran.first_tools));
    }
    check_text(&mut checks, result_of(seen, "read", Some("hello.txt")), &numbered(HELLO));
    check_text(&mut checks, result_of(seen, "grep", None), MARKERS_SHOWN);
    check_text(&mut checks, result_of(seen, "glob", None), TXT_FILES_SHOWN);
    check_png(&mut checks, result_of(seen, "read", Some("pixel.png")));
    check_paging(&mut checks, seen, "big.txt", &big_text());
    check_uncut(&mut checks, seen);
    eprintln!("main-loop models: {:?}", ran.main_models);
    report(checks, seen);
}

/// A file of about 250 KB, read with Cordon's default page size.
fn large_text() -> String {
    (0..3000).map(|i| format!("{i:05}: a fairly long line of text to fill a page, ünïcödé ✓\n")).collect()
}

#[test]
fn gemini_default_pages_reach_the_model_whole() {
    let fx = fixture();
    fx.write("large.txt", large_text());
    let script: Script = Box::new(|seen: &[Seen]| {
        let Some(last) = seen.last() else { return Some(("read", json!({"path": "large.txt"}))) };
        continuation(last).map(|arguments| ("read", arguments))
    });
    let ran = run_gemini(&fx.root(), script);
    let mut checks = Checks::default();
    check_uncut(&mut checks, &ran.seen);
    check_paging(&mut checks, &ran.seen, "large.txt", &large_text());
    report(checks, &ran.seen);
}
