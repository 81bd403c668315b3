//! Claude Code, headless: the real `claude` CLI (npm `@anthropic-ai/claude-code`, pinned in
//! tests/interop/node-setup.sh) drives Cordon over stdio and over Streamable HTTP, with a
//! stand-in for the Anthropic Messages API on loopback playing the model. The stand-in records
//! every `tool_result` exactly as Claude Code forwards it, so these tests assert on what the
//! model reads, not on what the server sent.
//!
//! One conversation per transport: read, grep, glob, list, stat, write and edit, then a read and
//! a grep paged with a small `max_tokens`, following the continuation the model saw until there is
//! none. The model must read results as text, not JSON: a file's lines numbered as `cat -n`
//! shows them, grep as `rg -n` prints a file's lone match and `rg --heading -n` several, glob
//! and list one path per line, relative to the root, no offsets; a one-line edit in a few
//! hundred characters.
//!
//! What Claude Code 2.1.328 does here (a native, Bun-compiled executable: it needs no Node):
//! - It calls only `POST /v1/messages?beta=true`, always with `"stream": true`, one request per
//!   turn of the main loop (in `-p` mode it asks for no title and sends no other side request;
//!   `count_tokens` only for a large tool result, see below). The request's `tools` list every
//!   `mcp__cordon__*` tool beside its own (with `ENABLE_TOOL_SEARCH=false`). Its `messages` carry
//!   the whole conversation with consecutive turns merged, so the last user message holds every
//!   result so far: the stand-in records each result once, by `tool_use_id`.
//! - It talks to Cordon in the 2026-07-28 era.
//! - When a result has `structuredContent`, the model reads only `JSON.stringify(structuredContent)`
//!   (a string `content` in the `tool_result`); the text blocks of `content` are dropped.
//!
//! Its limits on MCP tool output (2.1.328; the JavaScript bundled in its binary):
//! ```js
//! var R=0.5,S=4,y=4.4,E=1600,O=25000;
//! function C(){let e=s.MAX_MCP_OUTPUT_TOKENS;if(e!==void 0&&e>0)return e;
//!   let r=b("tengu_velvet_ibis",{})?.mcp_tool;if(typeof r==="number"&&…&&r>0)return r;return O}
//! function w(e,r=4){return Math.round(e/r)}   // a text's tokens: its length / 4 (an image: E)
//! async function K5n(e,o,r){…if(lqt(e)<=C()*R&&u<=C()*A$o)return!1;          // A$o=0.7
//!   if(lqt(…text blocks…)>C()*S)return!0;  …count_tokens through the API…  >C()}
//! ```
//! So: the limit is `MAX_MCP_OUTPUT_TOKENS`, default 25,000 tokens (≈ characters / 4). A result
//! estimated at up to half of it passes untouched; above 4x it is too large; in between Claude
//! Code asks `POST /v1/messages/count_tokens`. A result that is too large is saved to a file and
//! the model reads instead `Error: result (N characters) exceeds maximum allowed tokens. Output
//! has been saved to PATH.` (or, with `ENABLE_MCP_LARGE_OUTPUT_FILES=false` or images, the
//! first `C()*4` characters followed by `\n\n[OUTPUT TRUNCATED - exceeded 25000 token limit]\n\n
//! The tool output was truncated. If this MCP server provides pagination or filtering tools, use
//! them to retrieve specific portions of the data. …`). Above 10,000 tokens (`var Qs=1e4`) the
//! terminal shows `Large MCP response (~N tokens) · can fill context quickly` (display only).

mod api;
mod loading;
mod media;
mod resources;
mod run;
mod seen;
mod skipped;
mod timed;

use serde_json::{Value, json};

use crate::agents::{Checks, tail, trimmed};
use crate::clients::warm_cache;
use crate::support::issuer::Issuer;
use crate::support::{Fixture, HttpServer, cordon_bin, shared_state_dir};
use api::ToolResultSeen;
use run::run_claude;
use seen::{Match, continuation, model_text, names, saw_match, saw_number, strings_in};

/// Claude Code's default limit on one MCP tool result, in its estimated tokens (characters / 4).
const CLAUDE_MCP_OUTPUT_TOKENS: usize = 25_000;

/// What Claude Code puts in place of (or after) a result above its limit.
const CLAUDE_TRUNCATION_MARKS: [&str; 2] = ["[OUTPUT TRUNCATED - exceeded", "exceeds maximum allowed tokens"];

/// Tokens per page of the paged read: `big.txt` spans several such pages.
const PAGE_TOKENS: u64 = 200;

pub(crate) const HELLO: &str = "Hello from the first line\nand the second line: ünïcödé ✓\n";
const NEW_FILE: &str = "written by Claude Code through Cordon\n";
const EDIT_BEFORE: &str = "colour: red\nsize: large\n";
const EDIT_AFTER: &str = "colour: blue\nsize: large\n";

/// The grep matches in the fixture: (path, line, text).
const MARKERS: [(&str, u64, &str); 2] = [("notes.txt", 1, "MARKER in the notes"), ("src/a.txt", 2, "MARKER in a")];

/// The grep for `MARKER` as the model must read it: `rg -n` from the root (one match a file).
pub(crate) const MARKERS_SHOWN: &str = "notes.txt:1:MARKER in the notes\nsrc/a.txt:2:MARKER in a\n";

/// The `*.txt` files in the fixture before the conversation writes `new.txt`, as the model
/// must read them: one path per line (`rg --files` style), relative to the root.
const TXT_FILES_SHOWN: &str = "big.txt\nedit.txt\nhello.txt\nnotes.txt\nsrc/a.txt\nsub/inner.txt\n";

/// The root's entries before the conversation writes `new.txt`, as the model must read them
/// (`ls -F` style).
const ROOT_ENTRIES_SHOWN: &str = "big.txt\nedit.txt\nhello.txt\nlong.py\nnotes.txt\nsrc/\nsub/\n";

/// The files that hold `MARKER`, as the model must read grep's `files_with_matches`: one path
/// per line (`rg -l` style).
const MARKER_FILES_SHOWN: &str = "notes.txt\nsrc/a.txt\n";

/// The most characters a one-line edit's answer may cost the model.
const EDIT_ANSWER_CHARS: usize = 400;

/// The pattern of the paged grep: every line of `big.txt`.
const PAGED_PATTERN: &str = "paged through";

/// The tools the conversation calls, as Claude Code names them.
const ALLOWED: [&str; 7] = [
    "mcp__cordon__read",
    "mcp__cordon__grep",
    "mcp__cordon__glob",
    "mcp__cordon__list",
    "mcp__cordon__stat",
    "mcp__cordon__write",
    "mcp__cordon__edit",
];

/// A 300-line source file, read whole in one call.
fn long_text() -> String {
    (1..=150).map(|i| format!("def f{i}(x):\n    return \"x\\ty\" + x\n")).collect()
}

/// The text of the file read page by page.
fn big_text() -> String {
    (0..100).map(|i| format!("{i:03}: paged through Claude Code, ünïcödé ✓\n")).collect()
}

/// The fixture's root with the files the conversation reads, searches and changes, after
/// warming the compile cache (every test starts here, before any server).
fn conversation_fixture() -> Fixture {
    warm_cache();
    let fx = Fixture::new();
    marker_tree(&fx);
    fx.write("edit.txt", EDIT_BEFORE);
    fx.write("big.txt", big_text());
    fx.write("long.py", long_text());
    fx
}

/// The files every agent conversation reads and searches: `hello.txt` (`HELLO`), and `MARKER`
/// in `notes.txt` line 1 and `src/a.txt` line 2 (`MARKERS_SHOWN`).
pub(crate) fn marker_tree(fx: &Fixture) {
    std::fs::create_dir_all(fx.root().join("src")).unwrap();
    fx.write("hello.txt", HELLO);
    fx.write("notes.txt", "MARKER in the notes\nnothing here\n");
    fx.write("src/a.txt", "first\nMARKER in a\nlast\n");
}

/// A call to one of Cordon's tools, as the model makes it.
fn call(tool: &str, input: Value) -> (String, Value) {
    (format!("mcp__cordon__{tool}"), input)
}

/// Whether a result is a page of the paged read.
fn is_page(seen: &ToolResultSeen) -> bool {
    seen.tool == "mcp__cordon__read" && (seen.input["path"] == "big.txt" || seen.input.get("cursor").is_some())
}

/// Whether a result is a page of the paged grep.
fn is_grep_page(seen: &ToolResultSeen) -> bool {
    seen.tool == "mcp__cordon__grep" && (seen.input["pattern"] == PAGED_PATTERN || seen.input.get("cursor").is_some())
}

/// The model's side: one call of each tool, then `big.txt` page by page and a grep of it page
/// by page, following the continuation each page showed until there is none.
fn script() -> impl FnMut(&[ToolResultSeen]) -> Option<(String, Value)> + Send + 'static {
    let calls = [
        call("read", json!({"path": "hello.txt"})),
        call("grep", json!({"pattern": "MARKER"})),
        call("glob", json!({"pattern": "**/*.txt"})),
        call("list", json!({})),
        call("stat", json!({"path": "hello.txt"})),
        call("write", json!({"path": "new.txt", "content": NEW_FILE})),
        call("edit", json!({"path": "edit.txt", "old_string": "colour: red", "new_string": "colour: blue"})),
        call("read", json!({"path": "long.py"})),
        call("grep", json!({"pattern": "MARKER", "output_mode": "files_with_matches"})),
    ];
    move |seen: &[ToolResultSeen]| {
        if let Some(next) = calls.get(seen.len()) {
            return Some(next.clone());
        }
        let last = seen.last()?;
        let paging = [("read", is_page(last)), ("grep", is_grep_page(last))].into_iter().find(|(_, is)| *is);
        if let Some((tool, _)) = paging
            && let Some(cursor) = continuation(&model_text(last))
        {
            return Some(call(tool, json!({"cursor": cursor, "max_tokens": PAGE_TOKENS})));
        }
        if !seen.iter().any(is_page) {
            return Some(call("read", json!({"path": "big.txt", "max_tokens": PAGE_TOKENS})));
        }
        if !seen.iter().any(is_grep_page) {
            return Some(call("grep", json!({"pattern": PAGED_PATTERN, "max_tokens": PAGE_TOKENS})));
        }
        None
    }
}

/// The first result of `tool` (e.g. `read`), and what the model read of it.
fn result_of<'a>(seen: &'a [ToolResultSeen], tool: &str) -> (&'a ToolResultSeen, String) {
    let name = format!("mcp__cordon__{tool}");
    let found = seen.iter().find(|s| s.tool == name).unwrap_or_else(|| panic!("no {name} result in {seen:#?}"));
    (found, model_text(found))
}

/// `read` of a two-line file: the model sees both lines, numbered as `cat -n` shows them, with
/// real line ends (text, not a JSON string).
fn check_read(checks: &mut Checks, seen: &[ToolResultSeen]) {
    let (found, text) = result_of(seen, "read");
    let strings = strings_in(&text);
    let missed = HELLO.lines().filter(|line| !strings.iter().any(|s| s.contains(line)));
    checks.expect_seen("read", &text, missed.map(|line| format!("{line:?}")).collect());
    let shown = payload_text(found);
    checks.expect(shown == numbered(HELLO), || format!("read: not the numbered lines; the model read {shown:?}"));
}

/// The read of a 300-line file: every line numbered, with real line ends and the file's own
/// quotes and backslashes (text, not a JSON string), in one call.
fn check_long_read(checks: &mut Checks, seen: &[ToolResultSeen]) {
    let Some(found) = seen.iter().find(|s| s.tool == "mcp__cordon__read" && s.input["path"] == "long.py") else {
        return checks.expect(false, || "no read of long.py".into());
    };
    let shown = payload_text(found);
    let want = numbered(&long_text());
    checks.expect(shown == want, || {
        format!("read long.py: not the numbered lines; the model read {}", trimmed(&shown, 400))
    });
    let text = model_text(found);
    checks.expect(!text.contains("[Page "), || format!("read long.py: more than one page: {}", tail(&text, 300)));
}

/// grep `files_with_matches`: one relative path per line.
fn check_files_with_matches(checks: &mut Checks, seen: &[ToolResultSeen]) {
    let found = seen.iter().find(|s| s.tool == "mcp__cordon__grep" && s.input["output_mode"] == "files_with_matches");
    let shown = found.map(payload_text).unwrap_or_default();
    checks.expect(shown == MARKER_FILES_SHOWN, || {
        format!("grep -l: the model read {shown:?}, not {MARKER_FILES_SHOWN:?}")
    });
}

/// `text`'s lines as the model must read a file: the number, a tab, the line.
pub(crate) fn numbered(text: &str) -> String {
    text.lines().enumerate().map(|(i, line)| format!("{}\t{line}\n", i + 1)).collect()
}

/// The payload the model read in a result as Claude Code forwards it: its text blocks but the
/// footer (`[Page …]`), put together; `None`-like empty when it read something else (JSON).
fn payload_text(seen: &ToolResultSeen) -> String {
    match &seen.content {
        Value::Array(blocks) => {
            blocks.iter().filter_map(|b| b["text"].as_str()).filter(|t| !t.starts_with("[Page ")).collect()
        }
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// `grep`: the model sees each match's text with its file and line number.
fn check_grep(checks: &mut Checks, seen: &[ToolResultSeen]) {
    let (_, shown) = result_of(seen, "grep");
    let missed = MARKERS.iter().filter(|&&(path, line, text)| !saw_match(&shown, &Match { path, line, text }));
    checks.expect_seen("grep", &shown, missed.map(|(path, line, text)| format!("{path}:{line}:{text:?}")).collect());
}

/// What the model read of `tool`'s first result is the compact form `want`, and holds no
/// absolute path or offset it does not need.
fn check_compact(checks: &mut Checks, fx: &Fixture, seen: &[ToolResultSeen], tool: &str, want: &str) {
    let (found, text) = result_of(seen, tool);
    let shown = payload_text(found);
    checks.expect(shown == want, || {
        format!("{tool}: the model did not read the compact form {want:?}; it read {}", trimmed(&text, 800))
    });
    let root = fx.root().display().to_string();
    for noise in [root.as_str(), "byte_offset", "submatches", "mtime_ns"] {
        checks.expect(!text.contains(noise), || format!("{tool}: the model read {noise:?}: {}", trimmed(&text, 800)));
    }
}

/// `stat`: the model sees the file's size.
fn check_stat(checks: &mut Checks, seen: &[ToolResultSeen]) {
    let (_, text) = result_of(seen, "stat");
    let missed = (!saw_number(&text, HELLO.len() as u64)).then(|| format!("the size {}", HELLO.len()));
    checks.expect_seen("stat", &text, missed.into_iter().collect());
}

/// `write` and `edit`: the files changed on disk and the model saw a success.
fn check_mutations(checks: &mut Checks, fx: &Fixture, seen: &[ToolResultSeen]) {
    for (tool, file, want) in [("write", "new.txt", NEW_FILE), ("edit", "edit.txt", EDIT_AFTER)] {
        let (result, text) = result_of(seen, tool);
        let ok = !result.is_error && !text.trim().is_empty();
        checks.expect(ok, || format!("{tool}: the model did not see a success; it read {}", trimmed(&text, 800)));
        let on_disk = std::fs::read_to_string(fx.root().join(file)).unwrap_or_default();
        checks.expect(on_disk == want, || format!("{tool}: {file} holds {on_disk:?}, not {want:?}"));
    }
    let (_, edit) = result_of(seen, "edit");
    let root = fx.root().display().to_string();
    checks.expect(edit.chars().count() <= EDIT_ANSWER_CHARS && !edit.contains(&root), || {
        format!(
            "edit: a one-line edit's answer of {} characters, naming the root or over {EDIT_ANSWER_CHARS}: {edit}",
            edit.chars().count()
        )
    });
    checks.expect(edit.contains("-colour: red") && edit.contains("+colour: blue"), || format!("edit: no diff: {edit}"));
}

/// The paged read: several pages, and the text of every page the model saw, in order, is the
/// file's lines numbered.
fn check_paging(checks: &mut Checks, seen: &[ToolResultSeen]) {
    let pages: Vec<String> = seen.iter().filter(|s| is_page(s)).map(model_text).collect();
    let want = numbered(&big_text());
    checks.expect(pages.len() >= 3, || format!("the paged read took {} pages, not several: {pages:#?}", pages.len()));
    let texts: Vec<Option<String>> =
        seen.iter().filter(|s| is_page(s)).map(payload_text).map(|t| (!t.is_empty()).then_some(t)).collect();
    for page in &pages[..pages.len().saturating_sub(1)] {
        let cursor = continuation(page).unwrap_or_default();
        checks.expect(!cursor.is_empty() && cursor.len() <= 64, || {
            format!("the model was given a continuation of {} characters, not at most 64: {cursor}", cursor.len())
        });
    }
    let missing = texts.iter().filter(|t| t.is_none()).count();
    checks.expect(missing == 0, || {
        let first = pages.first().map(|p| trimmed(p, 800)).unwrap_or_default();
        format!("{missing} of {} pages showed the model no text; the first read {first}", pages.len())
    });
    let got: String = texts.into_iter().flatten().collect();
    checks.expect(got == want, || {
        let (got_len, want_len) = (got.len(), want.len());
        format!(
            "the pages' text put together is not the file ({got_len} bytes, not {want_len}): {}",
            trimmed(&got, 300)
        )
    });
}

/// The paged grep: several pages, each continued by at most 64 characters, whose `text` put
/// together is the whole result in the compact form, one heading for the file.
fn check_grep_paging(checks: &mut Checks, seen: &[ToolResultSeen]) {
    let pages: Vec<String> = seen.iter().filter(|s| is_grep_page(s)).map(model_text).collect();
    checks.expect(pages.len() >= 3, || format!("the paged grep took {} pages, not several", pages.len()));
    for page in &pages[..pages.len().saturating_sub(1)] {
        let cursor = continuation(page).unwrap_or_default();
        checks.expect(!cursor.is_empty() && cursor.len() <= 64, || {
            format!("a grep page gave a continuation of {} characters, not 1 to 64: {cursor}", cursor.len())
        });
    }
    let got: String = seen.iter().filter(|s| is_grep_page(s)).map(payload_text).collect();
    let lines = big_text().lines().enumerate().map(|(i, line)| format!("{}:{line}\n", i + 1)).collect::<String>();
    let want = format!("big.txt\n{lines}");
    checks.expect(got == want, || {
        format!("the grep pages put together are not the whole result: {}", trimmed(&got, 400))
    });
}

/// No result went over Claude Code's limit on MCP output, or was cut or saved aside for it.
fn check_limits(checks: &mut Checks, seen: &[ToolResultSeen]) {
    for result in seen {
        let (text, call) = (model_text(result), format!("{} {}", result.tool, trimmed(&result.input.to_string(), 100)));
        let tokens = text.chars().count() / 4;
        checks.expect(tokens < CLAUDE_MCP_OUTPUT_TOKENS, || {
            format!("{call}: ~{tokens} tokens, over Claude Code's {CLAUDE_MCP_OUTPUT_TOKENS}")
        });
        let cut = CLAUDE_TRUNCATION_MARKS.iter().any(|mark| text.contains(mark));
        checks.expect(!cut, || format!("{call}: Claude Code cut it: {}", tail(&text, 600)));
    }
}

/// Runs the conversation with Claude Code against the server in `mcp_config` and checks what the
/// model read.
fn converse(fx: &Fixture, mcp_config: &Value, server: Option<&HttpServer>) {
    let seen = run_claude(fx.dir.path(), mcp_config, &ALLOWED, script());
    let mut checks = Checks::default();
    check_read(&mut checks, &seen);
    check_long_read(&mut checks, &seen);
    check_files_with_matches(&mut checks, &seen);
    check_grep(&mut checks, &seen);
    check_compact(&mut checks, fx, &seen, "grep", MARKERS_SHOWN);
    check_compact(&mut checks, fx, &seen, "glob", TXT_FILES_SHOWN);
    check_compact(&mut checks, fx, &seen, "list", ROOT_ENTRIES_SHOWN);
    check_grep_paging(&mut checks, &seen);
    check_stat(&mut checks, &seen);
    check_mutations(&mut checks, fx, &seen);
    check_paging(&mut checks, &seen);
    check_limits(&mut checks, &seen);
    let results: Vec<String> = seen
        .iter()
        .map(|s| format!("{} {}: {}", s.tool, trimmed(&s.input.to_string(), 100), trimmed(&model_text(s), 300)))
        .collect();
    // Shown with --nocapture: what the model read, call by call.
    eprintln!("{}", results.join("\n"));
    assert!(
        checks.0.is_empty(),
        "what Claude Code showed the model falls short:\n- {}\n\nthe {} tool results it forwarded:\n{}\n{}",
        checks.0.join("\n- "),
        seen.len(),
        results.join("\n"),
        server.map(HttpServer::log).unwrap_or_default()
    );
}

#[test]
fn claude_code_over_stdio() {
    let fx = conversation_fixture();
    let args = json!(["serve", "--root", fx.root(), "--state-dir", shared_state_dir()]);
    let config = json!({"mcpServers": {"cordon": {"command": cordon_bin(), "args": args}}});
    converse(&fx, &config, None);
}

/// Over HTTP as a team member would: Cordon takes access tokens from a real
/// issuer, and Claude Code sends alice's as `Authorization: Bearer …`.
#[test]
fn claude_code_over_http() {
    let fx = conversation_fixture();
    let issuer = Issuer::start();
    let flags = ["--auth-issuer", issuer.url.as_str(), "--auth-audience", crate::teams::AUDIENCE];
    let server = HttpServer::start_with(&fx.root(), &flags);
    let token = issuer.token("alice", crate::teams::AUDIENCE, None);
    let headers = json!({"Authorization": format!("Bearer {token}")});
    let config = json!({"mcpServers": {"cordon": {"type": "http", "url": server.url, "headers": headers}}});
    converse(&fx, &config, Some(&server));
}

#[test]
fn what_the_model_read_is_found_in_any_format() {
    let m = Match { path: "src/a.txt", line: 2, text: "MARKER in a" };
    let json = r#"{"items":[{"path":"/r/src/a.txt","line":2,"text":"MARKER in a"}],"next_cursor":"c1.x"}"#;
    let grouped = r#"{"files":{"src/a.txt":[{"line":2,"text":"MARKER in a"}]},"next_cursor":null}"#;
    let lines = "{\"path\":\"/r/src/a.txt\",\"line\":2,\"text\":\"MARKER in a\"}\n{\"path\":\"/r/b.txt\",\"line\":9}\n";
    for shown in [json, grouped, lines] {
        assert!(saw_match(shown, &m) && strings_in(shown).iter().any(|s| names(s, "src/a.txt")), "{shown}");
    }
    for shown in ["src/a.txt:2:MARKER in a\n", "notes.txt\n1:MARKER\n\nsrc/a.txt\n2:MARKER in a\n"] {
        assert!(saw_match(shown, &m), "{shown}");
    }
    let misses =
        [r#"{"path":"/r/src/a.txt","matches":1,"line":2}"#, "src/a.txt\n3:MARKER in a\n", "b.txt:2:MARKER in a"];
    for shown in misses {
        assert!(!saw_match(shown, &m), "{shown}");
    }
    assert_eq!(continuation(json).as_deref(), Some("c1.x"));
    assert_eq!(continuation(grouped), None);
    assert_eq!(continuation("file text\n[more: cursor=\"c1.y\"]").as_deref(), Some("c1.y"));
    assert!(saw_number(r#"{"items":[{"size":63}]}"#, 63) && saw_number("hello.txt: 63 bytes", 63));
    assert!(!saw_number(r#"{"size":630}"#, 63));
}
