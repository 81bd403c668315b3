//! Cordon's `hostile` test tool: a tool that misbehaves in the way its
//! arguments ask, so the end-to-end suite can check that every per-call limit
//! holds, names itself, and leaves the server and other calls unaffected.
//!
//! `behaviour` picks the misbehaviour and `in` where it happens (`open`,
//! `next` or `info`, for the behaviours that are not about output). `benign`
//! returns three small items, so the same tool also shows a healthy call.
//! The argument handling is plain Rust, unit-tested natively; `component`
//! does the misbehaving when built for `wasm32-wasip2`.

use serde::Deserialize;
use serde_json::json;

#[cfg(target_arch = "wasm32")]
mod component;

/// The tool's name as clients call it.
pub const NAME: &str = "hostile";
/// The tool's version, bound into every cursor.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The tool's title.
pub const TITLE: &str = "Hostile test tool";
/// What the tool does, for a model choosing a tool.
pub const DESCRIPTION: &str = "Test tool: misbehaves on request to check the host's limits. Never call it.";

/// Items the `benign` behaviour returns.
pub const BENIGN_ITEMS: u32 = 3;
/// Bytes of the `huge-chunk` chunk: over the host's default `max_chunk_bytes`.
pub const HUGE_CHUNK_BYTES: usize = 8 << 20;
/// Bytes of the `huge-info` info and the `huge-error` message: over the host's
/// default `max_info_bytes`.
pub const HUGE_TEXT_BYTES: usize = 1 << 20;
/// Resources `handles` and `guest-handles` try to hold: far over any sane limit.
pub const HANDLE_ATTEMPTS: u64 = 10_000_000;
/// Refused `memory.grow` calls `memory` makes after the first refusal.
pub const GROW_RETRIES: u32 = 100_000;
/// The allocation `memory-huge` asks for at once.
pub const HUGE_ALLOCATION: usize = 3 << 29;
/// How long `sleep-in-host` blocks in a WASI poll: far past any deadline.
pub const HOST_SLEEP_NS: u64 = 3600 * 1_000_000_000;
/// When `sleep-in-host` reports progress before it blocks: past the host's
/// first progress interval (100 ms), in which reports are dropped.
pub const REPORT_AFTER_NS: u64 = 120_000_000;

/// What the tool does wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Behaviour {
    /// Three small items, then the end: a healthy call.
    Benign,
    /// An infinite loop (in `open`, `next` or `info`).
    Loop,
    /// Grows memory a page at a time until refused, touches every page it got,
    /// keeps trying to grow, then allocates past the limit (a Rust allocation
    /// failure aborts).
    Memory,
    /// One allocation of `HUGE_ALLOCATION` bytes.
    MemoryHuge,
    /// Creates WASI pollables in a loop and never drops them.
    Handles,
    /// Creates its own `chunk-stream` resources in a loop and never drops them.
    GuestHandles,
    /// Returns a chunk one byte over the budget.
    BigChunk,
    /// Returns a chunk of `HUGE_CHUNK_BYTES`.
    HugeChunk,
    /// Returns an `info` of `HUGE_TEXT_BYTES`.
    HugeInfo,
    /// Refuses `open` with an error message of `HUGE_TEXT_BYTES`.
    HugeError,
    /// An endless stream of one-byte chunks.
    SmallChunks,
    /// An endless stream of empty (continued) chunks: no progress.
    EmptyChunks,
    /// An endless stream of checkpoints, each further on: work that never
    /// finds anything, so every page ends on time.
    Checkpoints,
    /// The same checkpoint again and again: no progress.
    SameCheckpoint,
    /// One item, then a loop inside `next` with no checkpoint: stopped at
    /// the wall time, however the page is bounded.
    Stall,
    /// Executes `unreachable`.
    Trap,
    /// Panics (which aborts: a trap).
    Panic,
    /// Blocks in a WASI poll on a timer of `HOST_SLEEP_NS`, a host call the
    /// epoch deadline cannot interrupt, after a progress report saying so.
    SleepInHost,
    /// Leaves marks for a later call to find (a static set, a page grown and
    /// filled), after looking for the marks of an earlier one, and reports
    /// what it found in `info` (`prior_mark`, `dirty_page`); otherwise benign.
    Remember,
    /// Benign, and says in `info` the environment it sees (`environment`:
    /// every variable, name to value), so a test can check what a tool is
    /// granted of the server's.
    Environment,
}

/// Where the misbehaviour happens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Place {
    Open,
    #[default]
    Next,
    Info,
}

/// The call's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    pub behaviour: Behaviour,
    #[serde(default, rename = "in")]
    pub place: Place,
}

impl Args {
    /// Parses the arguments' JSON text; the error is a sentence.
    pub fn parse(json: &str) -> Result<Args, String> {
        serde_json::from_str(json).map_err(|e| format!("invalid arguments: {e}"))
    }
}

/// The JSON Schema of the arguments.
pub fn input_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "behaviour": {
                "type": "string",
                "enum": ["benign", "loop", "memory", "memory-huge", "handles", "guest-handles", "big-chunk",
                         "huge-chunk", "huge-info", "huge-error", "small-chunks", "empty-chunks", "checkpoints",
                         "same-checkpoint", "stall", "trap",
                         "panic", "sleep-in-host", "remember", "environment"],
                "description": "What to do wrong."
            },
            "in": {
                "type": "string",
                "enum": ["open", "next", "info"],
                "default": "next",
                "description": "Where: in `open`, in the first `next`, or in `info`."
            }
        },
        "required": ["behaviour"],
        "additionalProperties": false
    })
}

/// The JSON Schema of `info`.
pub fn output_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": { "behaviour": { "type": "string" } },
        "additionalProperties": true
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_name_a_behaviour_and_a_place_which_defaults_to_next() {
        let args = Args::parse(r#"{"behaviour": "sleep-in-host", "in": "open"}"#).unwrap();
        assert_eq!(args, Args { behaviour: Behaviour::SleepInHost, place: Place::Open });
        assert_eq!(Args::parse(r#"{"behaviour": "guest-handles"}"#).unwrap().place, Place::Next);
        assert!(Args::parse(r#"{"behaviour": "nice"}"#).is_err());
        assert!(Args::parse(r#"{"behaviour": "loop", "extra": 1}"#).is_err());
    }

    #[test]
    fn the_schema_lists_every_behaviour_the_parser_accepts() {
        let schema = input_schema();
        for name in schema["properties"]["behaviour"]["enum"].as_array().unwrap() {
            let json = json!({ "behaviour": name }).to_string();
            assert!(Args::parse(&json).is_ok(), "{name}");
        }
    }
}
