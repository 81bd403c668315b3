//! Cordon's `hostile` test tool: a tool that misbehaves in the way its
//! arguments ask, so the end-to-end suite can check that every per-call limit
//! holds, names itself, and leaves the server and other calls unaffected.
//!
//! `behaviour` picks the misbehaviour and `in` where it happens (`open`,
//! `next` or `info`, for the behaviours that are not about output). `benign`
//! returns three small items, so the same tool also shows a healthy call.
//! The network behaviours (`fetch`, `fetch-loop`, `upload`, `download`) send
//! requests to `url` through wasi:http, in `open` (`in: open`) or in the first
//! `next` (otherwise), then go on as `benign`; `info` says what came back.
//! The argument handling and the mapping of wasi:http's errors (`codes`)
//! are plain Rust, unit-tested natively; `component` (and `net`, its
//! requests) does the misbehaving when built for `wasm32-wasip2`.

use serde::Deserialize;
use serde_json::json;

pub mod codes;
#[cfg(target_arch = "wasm32")]
mod component;
#[cfg(target_arch = "wasm32")]
mod net;

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
/// The most requests `fetch-loop` sends when none fails.
pub const FETCH_LOOP_MAX: u64 = 100_000;
/// The most bytes `upload` writes to the body stream at once.
pub const UPLOAD_PIECE: u64 = 64 << 10;
/// The most bytes `upload` may be asked to send.
pub const MAX_UPLOAD: u64 = 1 << 40;

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
    /// One GET of `url`, its body read whole: `info` gets `fetched`
    /// (`{status, bytes}`); a failure is the call's error, its message
    /// holding wasi:http's error code (`Debug`).
    Fetch,
    /// GETs of `url`, each body read whole, until one fails (or
    /// `FETCH_LOOP_MAX` were sent): `info` gets `requests` (those that
    /// succeeded) and `stopped_by` (the failure's error code, `Debug`; null
    /// after `FETCH_LOOP_MAX`). The call itself succeeds.
    FetchLoop,
    /// One POST of a body of `bytes` bytes to `url`, written in pieces as the
    /// body stream allows: `info` gets `uploaded` (`{status}`); a failure
    /// (sending, writing the body or the response) is the call's error.
    Upload,
    /// One GET of `url`, its body read whole and counted: `info` gets
    /// `downloaded` (`{status, bytes}`); a failure reading the body (the
    /// host's limit on bytes received) is the call's error.
    Download,
}

impl Behaviour {
    /// Whether the behaviour sends requests to `url`.
    pub fn is_network(self) -> bool {
        matches!(self, Behaviour::Fetch | Behaviour::FetchLoop | Behaviour::Upload | Behaviour::Download)
    }
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
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    pub behaviour: Behaviour,
    #[serde(default, rename = "in")]
    pub place: Place,
    /// Where the network behaviours send their requests.
    #[serde(default)]
    pub url: Option<String>,
    /// The body size of `upload`.
    #[serde(default)]
    pub bytes: Option<u64>,
}

impl Args {
    /// Parses the arguments' JSON text; the error is a sentence. A network
    /// behaviour needs a `url` that [`Target::parse`] accepts, `upload` also
    /// `bytes`.
    pub fn parse(json: &str) -> Result<Args, String> {
        let args: Args = serde_json::from_str(json).map_err(|e| format!("invalid arguments: {e}"))?;
        if args.behaviour.is_network() {
            Target::parse(args.url.as_deref().ok_or("invalid arguments: this behaviour needs a `url`")?)?;
        }
        match args.bytes {
            None if args.behaviour == Behaviour::Upload => Err("invalid arguments: `upload` needs `bytes`".into()),
            Some(n) if n > MAX_UPLOAD => Err(format!("invalid arguments: `bytes` is {n}: at most {MAX_UPLOAD}")),
            _ => Ok(args),
        }
    }

    /// Benign arguments with `behaviour`, in the first `next`.
    pub fn of(behaviour: Behaviour) -> Args {
        Args { behaviour, place: Place::Next, url: None, bytes: None }
    }
}

/// Where a request goes, as wasi:http's `outgoing-request` takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `true` for https, `false` for http.
    pub https: bool,
    /// `host[:port]`, as written in the URL.
    pub authority: String,
    /// The path and query, at least `/`.
    pub path_with_query: String,
}

impl Target {
    /// Splits an `http://` or `https://` URL (no fragment, no credentials);
    /// the error is a sentence.
    pub fn parse(url: &str) -> Result<Target, String> {
        let bad = |why: &str| format!("invalid arguments: `url` {why}");
        let (https, rest) = match url.split_once("://") {
            Some(("http", rest)) => (false, rest),
            Some(("https", rest)) => (true, rest),
            _ => return Err(bad("must start with http:// or https://")),
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/"),
        };
        if authority.is_empty() || authority.contains(['@', ' ']) || path.contains(['#', ' ']) {
            return Err(bad("needs a host, and no credentials, fragment or spaces"));
        }
        let path_with_query = if path.starts_with('?') { format!("/{path}") } else { path.to_string() };
        Ok(Target { https, authority: authority.to_string(), path_with_query })
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
                         "panic", "sleep-in-host", "remember", "environment",
                         "fetch", "fetch-loop", "upload", "download"],
                "description": "What to do wrong."
            },
            "url": {
                "type": "string",
                "description": "For fetch, fetch-loop, upload and download: the http or https URL to send to."
            },
            "bytes": {
                "type": "integer", "minimum": 0, "maximum": MAX_UPLOAD,
                "description": "For upload: the size of the request body."
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
        "properties": {
            "behaviour": { "type": "string" },
            "fetched": { "type": "object", "description": "fetch: {status, bytes}" },
            "downloaded": { "type": "object", "description": "download: {status, bytes}" },
            "uploaded": { "type": "object", "description": "upload: {status}" },
            "requests": { "type": "integer", "description": "fetch-loop: the requests that succeeded" },
            "stopped_by": { "type": ["string", "null"], "description": "fetch-loop: the error that ended it" }
        },
        "additionalProperties": true
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_name_a_behaviour_and_a_place_which_defaults_to_next() {
        let args = Args::parse(r#"{"behaviour": "sleep-in-host", "in": "open"}"#).unwrap();
        assert_eq!(args, Args { place: Place::Open, ..Args::of(Behaviour::SleepInHost) });
        assert_eq!(Args::parse(r#"{"behaviour": "guest-handles"}"#).unwrap().place, Place::Next);
        assert!(Args::parse(r#"{"behaviour": "nice"}"#).is_err());
        assert!(Args::parse(r#"{"behaviour": "loop", "extra": 1}"#).is_err());
    }

    #[test]
    fn the_schema_lists_every_behaviour_the_parser_accepts() {
        let schema = input_schema();
        for name in schema["properties"]["behaviour"]["enum"].as_array().unwrap() {
            let json = json!({ "behaviour": name, "url": "http://127.0.0.1:8080/", "bytes": 10 }).to_string();
            assert!(Args::parse(&json).is_ok(), "{name}");
        }
    }

    #[test]
    fn network_behaviours_need_a_url_and_upload_a_size() {
        let args = Args::parse(r#"{"behaviour": "upload", "url": "https://api.example.com/in", "bytes": 5}"#).unwrap();
        assert_eq!(
            (args.behaviour, args.url.as_deref(), args.bytes),
            (Behaviour::Upload, Some("https://api.example.com/in"), Some(5))
        );
        for json in [
            r#"{"behaviour": "fetch"}"#,
            r#"{"behaviour": "fetch-loop", "url": "ftp://example.com/"}"#,
            r#"{"behaviour": "download", "url": "http:///nohost"}"#,
            r#"{"behaviour": "upload", "url": "http://example.com/"}"#,
            r#"{"behaviour": "upload", "url": "http://example.com/", "bytes": -1}"#,
            r#"{"behaviour": "upload", "url": "http://example.com/", "bytes": 1099511627777}"#,
        ] {
            assert!(Args::parse(json).unwrap_err().starts_with("invalid arguments"), "{json}");
        }
        assert!(Behaviour::FetchLoop.is_network() && !Behaviour::Benign.is_network());
    }

    #[test]
    fn urls_split_into_scheme_authority_and_path() {
        let target = Target::parse("http://127.0.0.1:8080/a/b?c=d").unwrap();
        assert_eq!(
            target,
            Target { https: false, authority: "127.0.0.1:8080".into(), path_with_query: "/a/b?c=d".into() }
        );
        let target = Target::parse("https://[::1]:443").unwrap();
        assert_eq!(
            (target.https, target.authority.as_str(), target.path_with_query.as_str()),
            (true, "[::1]:443", "/")
        );
        assert_eq!(Target::parse("http://example.com?q").unwrap().path_with_query, "/?q");
        for bad in ["example.com/", "file:///etc/passwd", "http://", "http://user@example.com/", "http://e.com/#f"] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }
}
