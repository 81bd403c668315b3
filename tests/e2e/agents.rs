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
