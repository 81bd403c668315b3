//! What the tests of real agent clients (`claude/`, `codex/`, `gemini/`) share: a page read as
//! the model read it (its payload without the footer, and the continuation the footer offered),
//! and the ends of a long text for a failure's message.

use serde_json::Value;

/// What a footer offers the model to continue a read.
pub(crate) const CONTINUE_READ: &str = "continue with `read` ";

/// The payload the model read: its texts but the footer (`[Page …]`), put together.
pub(crate) fn payload(texts: &[String]) -> String {
    texts.iter().filter(|t| !t.starts_with("[Page ")).map(String::as_str).collect()
}

/// The arguments a read's footer told the model to send to continue, if it offered any.
pub(crate) fn continuation(texts: &[String]) -> Option<Value> {
    texts.iter().find_map(|text| {
        let (_, rest) = text.split_once(CONTINUE_READ)?;
        serde_json::Deserializer::from_str(rest).into_iter::<Value>().next()?.ok().filter(Value::is_object)
    })
}

/// The first `max` characters of a text (whole characters), marked when cut.
pub(crate) fn trimmed(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}… ({} bytes in all)", &text[..at], text.len()),
        None => text.to_string(),
    }
}

/// The end of a text: about its last `max` bytes, from a character boundary.
pub(crate) fn tail(text: &str, max: usize) -> &str {
    let mut at = text.len().saturating_sub(max);
    while !text.is_char_boundary(at) {
        at += 1;
    }
    &text[at..]
}

/// Expectations that failed, collected so that one run reports all of them.
#[derive(Default)]
pub(crate) struct Checks(pub(crate) Vec<String>);

impl Checks {
    pub(crate) fn expect(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.0.push(what());
        }
    }

    /// Expects the model to have seen every part of one result: one failure names all it missed.
    pub(crate) fn expect_seen(&mut self, tool: &str, text: &str, missed: Vec<String>) {
        self.expect(missed.is_empty(), || {
            format!("{tool}: the model did not see {}; it read {}", missed.join(", "), trimmed(text, 800))
        });
    }

    /// Fails with every expectation that did not hold, naming `client` and what the model read,
    /// one line per call (`read`, also printed for `--nocapture`).
    pub(crate) fn report(self, client: &str, read: &[String]) {
        eprintln!("{}", read.join("\n"));
        assert!(
            self.0.is_empty(),
            "what {client} showed the model falls short:\n- {}\n\nthe {} results it forwarded:\n{}",
            self.0.join("\n- "),
            read.len(),
            read.join("\n")
        );
    }
}

/// One page of a paged read as the model read it: the call's arguments, its texts (a footer
/// among them unless it is the last page), and all the model was given, for failure messages.
pub(crate) struct PageRead<'a> {
    pub(crate) arguments: &'a Value,
    pub(crate) texts: Vec<String>,
    pub(crate) shown: String,
}

/// A read followed page by page: several pages, each but the last with one footer and a
/// continuation whose cursor has 1 to 64 characters, which the next call sent back as offered;
/// the last page offers none; the payloads put together are `want`.
pub(crate) fn check_followed(checks: &mut Checks, pages: &[PageRead], want: &str) {
    checks.expect(pages.len() >= 3, || format!("the paged read took {} pages, not several", pages.len()));
    for (page, next) in pages.iter().zip(pages.iter().skip(1)) {
        let offered = continuation(&page.texts);
        let cursor = offered.as_ref().and_then(|c| c["cursor"].as_str()).unwrap_or_default();
        checks.expect(!cursor.is_empty() && cursor.len() <= 64, || {
            format!("a page offered the continuation {offered:?}, not a cursor of 1 to 64 characters: {}", page.shown)
        });
        checks.expect(offered.as_ref() == Some(next.arguments), || {
            format!("the model sent {} after a page that offered {offered:?}", next.arguments)
        });
        let footers = page.texts.iter().filter(|t| t.starts_with("[Page ")).count();
        checks.expect(footers == 1, || format!("a page without its footer: {}", page.shown));
    }
    if let Some(last) = pages.last() {
        checks.expect(continuation(&last.texts).is_none(), || format!("the last page offers more: {}", last.shown));
    }
    let got: String = pages.iter().map(|p| payload(&p.texts)).collect();
    checks.expect(got == want, || {
        format!(
            "the pages put together are not the file ({} bytes, not {}): {}",
            got.len(),
            want.len(),
            tail(&got, 300)
        )
    });
}

/// How a client's headless run ended, as the process and the stand-in saw it.
pub(crate) struct Ended<'a> {
    /// The client's name, for messages.
    pub(crate) client: &'a str,
    pub(crate) stdout: &'a str,
    pub(crate) stderr: &'a str,
    /// The stand-in's log: one line per request, what it could not make sense of, and whether
    /// the script reached its final answer.
    pub(crate) requests: &'a [String],
    pub(crate) problems: &'a [String],
    pub(crate) finished: bool,
    /// More to show on a failure (a client's own logs), or nothing.
    pub(crate) more: String,
}

impl Ended<'_> {
    /// What a failure message shows: the stand-in's requests and problems, the ends of the
    /// client's output, and `more`.
    pub(crate) fn context(&self) -> String {
        format!(
            "requests to the stand-in:\n{}\nproblems: {:?}\nstderr (end):\n{}\nstdout (end):\n{}{}",
            self.requests.join("\n"),
            self.problems,
            tail(self.stderr, 3000),
            tail(self.stdout, 3000),
            self.more
        )
    }

    /// Panics unless the client finished within `timeout`, succeeded, and played the script to
    /// its final answer without a problem.
    pub(crate) fn check(&self, status: Option<std::process::ExitStatus>, timeout: std::time::Duration) {
        let client = self.client;
        let status = status.unwrap_or_else(|| panic!("{client} did not finish within {timeout:?}\n{}", self.context()));
        assert!(status.success(), "{client} failed ({status})\n{}", self.context());
        assert!(self.problems.is_empty(), "the conversation went wrong\n{}", self.context());
        assert!(self.finished, "{client} stopped before the script's final answer\n{}", self.context());
    }
}
