//! One page: the chunks that fit a budget, rendered as payload blocks, with the
//! per-chunk metadata a client needs to check and stitch pages together.

use serde_json::Value;

use super::aside::Aside;
use super::depth;
use crate::sha256::{self, Sha256};
use crate::tool::{Budget, Chunk, Payload, Span, Summary};

/// A run of payload of one kind, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// Text, and items as JSON lines.
    Text(String),
    /// Bytes that are not UTF-8, returned base64-encoded.
    Bytes(Vec<u8>),
}

/// One piece of a page: a tool's chunk as it came, or one of its items
/// rendered for a model (see `compact`).
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Chunk(Chunk),
    Shown(Shown),
}

/// An item in the compact text form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// The rendered lines, each ending with a newline.
    pub text: String,
    /// The tool's resume position after the item.
    pub resume: String,
    /// The heading in force after the item.
    pub heading: Option<String>,
    /// The item's `path` as the printer shows it, if it names one (what a
    /// count of the whole result tallies per path).
    pub path: Option<String>,
}

impl Piece {
    /// The payload bytes the piece puts on a page.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Piece::Chunk(chunk) => chunk.payload.as_bytes(),
            Piece::Shown(shown) => shown.text.as_bytes(),
        }
    }

    /// The memory a piece kept between pages holds: its payload and its
    /// resume position.
    pub fn held_bytes(&self) -> usize {
        self.bytes().len() + self.resume().len()
    }

    /// The resume position after the piece.
    pub fn resume(&self) -> &str {
        match self {
            Piece::Chunk(chunk) => &chunk.resume,
            Piece::Shown(shown) => &shown.resume,
        }
    }

    /// The resume position after the piece, taken out of it (a page that
    /// takes the piece keeps its position, not a copy).
    pub fn take_resume(&mut self) -> String {
        match self {
            Piece::Chunk(chunk) => std::mem::take(&mut chunk.resume),
            Piece::Shown(shown) => std::mem::take(&mut shown.resume),
        }
    }

    /// What the piece counts against a page's items: one for an item, its
    /// line ends for text.
    fn budget_items(&self) -> u32 {
        match self {
            Piece::Chunk(chunk) => chunk.budget_items(),
            Piece::Shown(_) => 1,
        }
    }
}

/// How a chunk's SHA-256 is had: an item's is taken as it is pushed (its
/// line on the page may differ: a newline added, a deep item cut); text and
/// bytes are the page's own payload bytes from `offset`, hashed only when a
/// program's metadata is rendered (`cordon call --all` never renders it, and
/// a hash per byte less is most of the host's cost of paging a file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkHash {
    Known(String),
    At {
        offset: usize,
    },
    /// A large chunk of a page a program reads, hashed on another thread as
    /// the page is made (see `aside`); from `offset` if it was not ready.
    Aside {
        offset: usize,
        aside: Aside,
    },
}

/// What a client learns about each chunk on a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkMeta {
    pub span: Option<Span>,
    pub bytes: usize,
    /// SHA-256 of the chunk's payload bytes (see `Page::chunk_sha256`).
    pub sha256: ChunkHash,
    /// "utf8" for text, "base64" for raw bytes, "json" for items.
    pub encoding: &'static str,
    pub continued: bool,
}

/// Why a page ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Ended {
    /// The output is complete: this is the last page.
    Complete,
    /// The next piece did not fit the page's budget.
    #[default]
    Size,
    /// The page's time was up before its budget was filled (see `clock`).
    Time,
}

impl Ended {
    /// The word programs read in the page's metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            Ended::Complete => "complete",
            Ended::Size => "size",
            Ended::Time => "time",
        }
    }
}

/// How a page is shown: as a model reads it, or as programs do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum View {
    /// The exact payload with structured content, for programs (`format: "json"`).
    #[default]
    Json,
    /// Text for a model (the compact form of items, see `compact`).
    Text,
    /// Text for a model whose text is lines of a file: shown with their
    /// numbers, as `cat -n` does.
    Numbered,
}

/// A finished page.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub tool: String,
    /// How the page is shown.
    pub view: View,
    pub blocks: Vec<Block>,
    pub chunks: Vec<ChunkMeta>,
    /// From the first chunk's start to the last chunk's end, if chunks had spans.
    pub span: Option<Span>,
    /// The tool's `info` object.
    pub info: Value,
    /// 0-based.
    pub index: u64,
    /// Items (lines, for text) completed on this page.
    pub items: u64,
    pub bytes: u64,
    /// The page ends inside an item the next page continues.
    pub continued: bool,
    pub budget: Budget,
    pub next_cursor: Option<String>,
    /// A short handle for `next_cursor`, for the model to copy.
    pub handle: Option<String>,
    /// On a first page that is not the last: what the whole result holds.
    pub whole: Option<super::count::Whole>,
    /// The arguments to continue with: the original ones plus `cursor`.
    pub continue_with: Option<Value>,
    /// What the tool says about the whole output, on every page but the last.
    pub summary: Option<Summary>,
    /// Payload bytes and items on the pages before this one.
    pub bytes_before: u64,
    pub items_before: u64,
    /// On the last page: SHA-256 of every page's payload, concatenated.
    pub sha256: Option<String>,
    /// Why the page ended.
    pub ended: Ended,
    /// In the text form, how a page of a file is shown (see `media`).
    pub media: Option<super::media::Media>,
}

impl Page {
    /// The SHA-256 (hex) of a chunk's payload bytes.
    pub fn chunk_sha256(&self, chunk: &ChunkMeta) -> String {
        let mut hex = Vec::with_capacity(64);
        self.chunk_sha256_into(chunk, &mut hex);
        String::from_utf8(hex).expect("hex digits are ASCII")
    }

    /// Appends the SHA-256 (hex) of a chunk's payload bytes to `out`, as
    /// a page of a thousand items writes a thousand of them.
    pub fn chunk_sha256_into(&self, chunk: &ChunkMeta, out: &mut Vec<u8>) {
        let offset = match &chunk.sha256 {
            ChunkHash::Known(hex) => return out.extend_from_slice(hex.as_bytes()),
            ChunkHash::Aside { offset, aside } => match aside.ready() {
                Some(hex) => return out.extend_from_slice(hex.as_bytes()),
                // Not ready: hashed here, as without it.
                None => *offset,
            },
            ChunkHash::At { offset } => *offset,
        };
        let (end, mut at, mut hasher) = (offset + chunk.bytes, 0usize, Sha256::new());
        for block in &self.blocks {
            let bytes = match block {
                Block::Text(text) => text.as_bytes(),
                Block::Bytes(raw) => raw,
            };
            let (from, to) = (offset.max(at), end.min(at + bytes.len()));
            if from < to {
                hasher.update(&bytes[from - at..to - at]);
            }
            at += bytes.len();
        }
        sha256::hex_into(&hasher.finalize(), out);
    }
}

/// Gathers chunks up to a budget.
pub struct Builder {
    budget: Budget,
    max_depth: usize,
    blocks: Vec<Block>,
    chunks: Vec<ChunkMeta>,
    span: Option<Span>,
    items: u64,
    bytes: u64,
    budget_items: u64,
    continued: bool,
    /// The bytes of `blocks`, all together.
    payload_len: usize,
}

impl Builder {
    pub fn new(budget: Budget, max_depth: usize) -> Builder {
        Builder {
            budget,
            max_depth,
            blocks: Vec::new(),
            chunks: Vec::new(),
            span: None,
            items: 0,
            bytes: 0,
            budget_items: 0,
            continued: false,
            payload_len: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// Whether `piece` fits what is left of the budget.
    pub fn fits(&self, piece: &Piece) -> bool {
        self.bytes + piece.bytes().len() as u64 <= u64::from(self.budget.bytes)
            && self.budget_items + u64::from(piece.budget_items()) <= u64::from(self.budget.items)
    }

    /// Adds a piece that fits.
    pub fn push(&mut self, piece: Piece) {
        self.push_hashed(piece, None);
    }

    /// Adds a piece that fits, whose chunk (text or bytes) is being hashed
    /// `aside`, if it is.
    pub fn push_hashed(&mut self, piece: Piece, aside: Option<Aside>) {
        match piece {
            Piece::Chunk(chunk) => self.push_chunk(chunk, aside),
            Piece::Shown(shown) => {
                self.chunks.push(ChunkMeta {
                    span: None,
                    bytes: shown.text.len(),
                    sha256: ChunkHash::At { offset: self.payload_len },
                    encoding: "utf8",
                    continued: false,
                });
                self.bytes += shown.text.len() as u64;
                self.budget_items += 1;
                self.items += 1;
                self.continued = false;
                self.append_text(shown.text, false);
            }
        }
    }

    fn push_chunk(&mut self, chunk: Chunk, aside: Option<Aside>) {
        let raw = chunk.payload.as_bytes();
        let encoding = match &chunk.payload {
            Payload::Text(_) => "utf8",
            Payload::Bytes(_) => "base64",
            Payload::Item(_) => "json",
        };
        // An item is shown as it came unless it nests too deep: only a cut
        // one is hashed now (its own bytes are not on the page); any other
        // chunk is hashed from the page, if ever asked (the JSON form).
        let too_deep = match &chunk.payload {
            Payload::Item(item) => !chunk.continued && depth::deeper_than(item, self.max_depth),
            _ => false,
        };
        let offset = self.payload_len;
        // An item's line on the page may differ from its bytes: never aside.
        let aside = aside.filter(|_| !matches!(chunk.payload, Payload::Item(_)));
        let sha256 = match (too_deep, aside) {
            (true, _) => ChunkHash::Known(Sha256::hex(raw)),
            (false, Some(aside)) => ChunkHash::Aside { offset, aside },
            (false, None) => ChunkHash::At { offset },
        };
        self.chunks.push(ChunkMeta {
            span: chunk.span,
            bytes: raw.len(),
            sha256,
            encoding,
            continued: chunk.continued,
        });
        self.bytes += raw.len() as u64;
        let lines = u64::from(chunk.budget_items());
        self.budget_items += lines;
        self.items += match &chunk.payload {
            Payload::Item(_) => u64::from(!chunk.continued),
            _ => lines,
        };
        self.continued = chunk.continued;
        if let Some(s) = chunk.span {
            self.span = Some(match self.span {
                None => s,
                Some(first) => Span {
                    start_byte: first.start_byte,
                    end_byte: s.end_byte,
                    lines: first.lines.zip(s.lines).map(|(a, b)| (a.0, b.1)),
                },
            });
        }
        self.append(chunk, too_deep);
    }

    /// Adds a chunk's payload; an item nesting deeper than the page shows
    /// (`too_deep`) is cut.
    fn append(&mut self, chunk: Chunk, too_deep: bool) {
        match chunk.payload {
            Payload::Bytes(raw) => {
                self.payload_len += raw.len();
                match self.blocks.last_mut() {
                    Some(Block::Bytes(last)) => last.extend_from_slice(&raw),
                    _ => self.blocks.push(Block::Bytes(raw)),
                }
            }
            Payload::Text(text) => self.append_text(text, false),
            Payload::Item(item) if too_deep => {
                let cut = self.cut_item(item);
                self.append_text(cut, false);
            }
            // A whole item is a line: its line end is written after it, not
            // added to its own text first (a copy of each item).
            Payload::Item(item) => self.append_text(item, !chunk.continued),
        }
    }

    /// Adds text, and a line end after it with `line_end`.
    fn append_text(&mut self, text: String, line_end: bool) {
        self.payload_len += text.len() + usize::from(line_end);
        match self.blocks.last_mut() {
            Some(Block::Text(last)) => last.push_str(&text),
            _ => self.blocks.push(Block::Text(text)),
        }
        if line_end && let Some(Block::Text(last)) = self.blocks.last_mut() {
            last.push('\n');
        }
    }

    /// An item nesting too deep, as a JSON line cut to the depth the page
    /// shows. The pieces of an item split across chunks pass through
    /// unchanged: a leading piece is `continued`, and a trailing piece never
    /// parses alone (it closes more brackets than it opens), so it is never
    /// rewritten either.
    fn cut_item(&self, item: String) -> String {
        let item = match serde_json::from_str::<Value>(&item).ok().and_then(|v| depth::truncate(&v, self.max_depth)) {
            Some(cut) => cut.to_string(),
            None => item,
        };
        item + "\n"
    }

    /// The page, without its cursor, summary or hash (the pager adds those).
    pub fn finish(self, tool: &str, index: u64, info: Value) -> Page {
        Page {
            tool: tool.to_string(),
            view: View::default(),
            blocks: self.blocks,
            chunks: self.chunks,
            span: self.span,
            info,
            index,
            items: self.items,
            bytes: self.bytes,
            continued: self.continued,
            budget: self.budget,
            next_cursor: None,
            continue_with: None,
            handle: None,
            whole: None,
            summary: None,
            bytes_before: 0,
            items_before: 0,
            sha256: None,
            ended: Ended::default(),
            media: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Job;

    #[test]
    fn each_chunks_hash_is_of_its_own_bytes_whichever_block_holds_them() {
        let payloads = [
            Payload::Text("ab\n".into()),
            Payload::Bytes(vec![0xff, 0]),
            Payload::Bytes(vec![1]),
            Payload::Item(r#"{"a":1}"#.into()),
            Payload::Text("cd".into()),
        ];
        let mut want: Vec<Vec<u8>> = payloads.iter().map(|p| p.as_bytes().to_vec()).collect();
        want.push(b"x.rs\n1:y\n".to_vec());
        // `sha2`, an implementation apart from the page's.
        let want: Vec<String> = want.iter().map(|b| hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b))).collect();
        // Hashed from the page; aside on another thread (ready when asked, or
        // not yet and then hashed from the page), an item's aside ignored.
        let late_jobs = std::sync::Mutex::new(Vec::new());
        for way in ["page", "ready", "late"] {
            let mut builder = Builder::new(Budget { bytes: 1 << 20, items: 100 }, 16);
            for payload in payloads.clone() {
                let aside = match way {
                    "page" => None,
                    "ready" => Aside::start(payload.as_bytes(), |job: Job| {
                        job();
                        Ok(())
                    }),
                    _ => Aside::start(payload.as_bytes(), |job: Job| {
                        late_jobs.lock().unwrap().push(job);
                        Ok(())
                    }),
                };
                let chunk = Chunk { payload, span: None, continued: false, resume: String::new() };
                builder.push_hashed(Piece::Chunk(chunk), aside);
            }
            let shown = Shown { text: "x.rs\n1:y\n".into(), resume: String::new(), heading: None, path: None };
            builder.push(Piece::Shown(shown));
            let page = builder.finish("t", 0, Value::Null);
            let got: Vec<String> = page.chunks.iter().map(|c| page.chunk_sha256(c)).collect();
            assert_eq!(got, want, "{way}");
            let asides = page.chunks.iter().filter(|c| matches!(c.sha256, ChunkHash::Aside { .. })).count();
            assert_eq!(asides, if way == "page" { 0 } else { 4 }, "{way}: text and bytes aside, not the item");
        }
    }
}
