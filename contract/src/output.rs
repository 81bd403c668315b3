//! What a call produces: chunks within a budget, the fingerprint of what is
//! paged, and a summary (WIT `payload`, `span`, `chunk`, `budget`,
//! `fingerprint`, `summary`).

use serde_json::Value;

/// The data a chunk carries (WIT `payload`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// Text, valid UTF-8, such as lines of a file.
    Text(String),
    /// Bytes that are not valid UTF-8, returned as they are rather than mangled.
    Bytes(Vec<u8>),
    /// One result item (or a piece of one) as a JSON text.
    Item(String),
}

impl Payload {
    /// The payload's bytes, as they count against a budget and into hashes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Payload::Text(s) | Payload::Item(s) => s.as_bytes(),
            Payload::Bytes(b) => b,
        }
    }

    /// The payload's size in bytes, the unit of a budget.
    pub fn len(&self) -> usize {
        self.as_bytes().len()
    }

    /// Whether the payload holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where a chunk's data sits in a file, for tools that page through one (WIT
/// `span`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The byte offset of the chunk's first byte.
    pub start_byte: u64,
    /// The byte offset just after the chunk's last byte (exclusive).
    pub end_byte: u64,
    /// The lines the chunk covers, 1-based and inclusive, when the tool knows
    /// the line numbers (it does not when it started in the middle of a file).
    pub lines: Option<(u64, u64)>,
}

/// One piece of a tool's output (WIT `chunk`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The data.
    pub payload: Payload,
    /// Where the data sits in the file being paged, if the tool pages a file.
    pub span: Option<Span>,
    /// The payload stops inside an item (or line) that the next chunk continues.
    pub continued: bool,
    /// The exact position just after this chunk, opaque to the host: opening
    /// the call again at it yields exactly the chunks that would have followed.
    pub resume: String,
}

impl Chunk {
    /// A checkpoint at `resume`: no data, only how far the work has come, so
    /// a page can end on time there (see WIT `chunk`).
    pub fn checkpoint(resume: String) -> Chunk {
        Chunk { payload: Payload::Text(String::new()), span: None, continued: false, resume }
    }

    /// Whether the chunk is a checkpoint: an empty payload continuing no item.
    pub fn is_checkpoint(&self) -> bool {
        !self.continued && self.payload.is_empty()
    }

    /// How many items the chunk holds against a budget: one for an item (or a
    /// piece of one), the line ends for text, none for a checkpoint.
    pub fn budget_items(&self) -> u32 {
        match &self.payload {
            _ if self.is_checkpoint() => 0,
            Payload::Item(_) => 1,
            other => bytecount::count(other.as_bytes(), b'\n') as u32,
        }
    }
}

/// How much one chunk may hold (WIT `budget`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The most payload bytes; the host never asks for fewer than 4, so a
    /// UTF-8 character always fits.
    pub bytes: u32,
    /// The most items: for an item payload a chunk is one item; for text an
    /// item is a line, and a chunk may hold at most this many line ends. At
    /// least 1.
    pub items: u32,
}

/// The identity of what a stream pages, read afresh, so a later page can tell
/// whether it changed in between (WIT `fingerprint`).
///
/// Serializable with one-letter names (`s`, `m`, `i`) because the host binds
/// it into its cursors, which should stay short.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Fingerprint {
    /// Size in bytes.
    #[serde(rename = "s")]
    pub size: u64,
    /// Last modification time, in nanoseconds since the Unix epoch.
    #[serde(rename = "m")]
    pub mtime_ns: u64,
    /// What identifies the file itself (a hash of its device and inode), so a
    /// file replaced by another of the same size and time is still noticed; 0
    /// when unknown.
    #[serde(rename = "i")]
    pub identity: u64,
}

/// What a tool can say about its whole output before it is all produced (WIT
/// `summary`, with the totals parsed). The default says nothing is known.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Counts about the whole output, as a JSON object (e.g. `{"bytes": 1048576}`).
    pub totals: Value,
    /// Whether `totals` are final (else lower bounds: what was counted so far).
    pub exact: bool,
    /// Ways to narrow the request, as short sentences for a model.
    pub suggestions: Vec<String>,
}

impl Default for Summary {
    fn default() -> Self {
        Summary { totals: Value::Object(Default::default()), exact: false, suggestions: Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_counts_one_item_or_its_line_ends() {
        let chunk = |payload| Chunk { payload, span: None, continued: false, resume: String::new() };
        assert_eq!(chunk(Payload::Item("{\"a\":\"\\n\"}\n".into())).budget_items(), 1);
        assert_eq!(chunk(Payload::Text("a\nb\nc".into())).budget_items(), 2);
        assert_eq!(chunk(Payload::Bytes(vec![0xff, b'\n'])).budget_items(), 1);
        assert!(Payload::Text(String::new()).is_empty() && Payload::Bytes(vec![1, 2]).len() == 2);
    }

    #[test]
    fn a_fingerprint_serializes_with_short_names() {
        let f = Fingerprint { size: 1, mtime_ns: 2, identity: 3 };
        let text = serde_json::to_string(&f).unwrap();
        assert_eq!(text, r#"{"s":1,"m":2,"i":3}"#);
        assert_eq!(serde_json::from_str::<Fingerprint>(&text).unwrap(), f);
    }
}
