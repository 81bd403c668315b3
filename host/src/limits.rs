//! The server's limits, in one table: each limit once, with its meaning, its
//! default and its name, which is both the flag (`--max-line-bytes`) and the
//! key in the configuration file's `[limits]` (`max-line-bytes`). The table
//! ([`Settings`]) becomes the typed [`Limits`] in one place, which validates
//! them once; each layer then gets its own part (`runtime::CallLimits`,
//! `pager::PageLimits`, `uploads::UploadLimits`).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use crate::pager::count::CountBounds;
use crate::pager::handles::Caps;
use crate::pager::{FilePage, PageLimits};
use crate::runtime::{CallLimits, Capacity, LimitError, NetLimits};
use crate::uploads::UploadLimits;

/// Declares [`Settings`] from one table: per limit its doc (the flag's help),
/// name, type, default, the flag's value name, where it lands in the typed
/// [`Limits`] (`=> pages.max_tokens`), any older name it keeps, the
/// environment variable that may give it, and `may_be 0` where zero means
/// "none" rather than refusing everything. The zero checks of both forms are
/// generated from it. Then, under `@fixed`, the bounds that are not settings
/// (queues, tables kept by the transports, uploads open at once), each with
/// its doc, name, type and value: they become [`FIXED`].
macro_rules! limit_table {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident: $ty:ty = $default:expr, $value:literal => $($typed:ident).+
            $(, alias $alias:literal)? $(, env $env:literal)? $(, may_be $zero:literal)?;
    )*
    @fixed {$(
        $(#[doc = $fixed_doc:literal])*
        $fixed:ident: $fixed_ty:ty = $fixed_value:expr;
    )*}) => {
        /// The bounds that are not settings, each used where its doc says.
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub struct Fixed {
            $(
                $(#[doc = $fixed_doc])*
                pub $fixed: $fixed_ty,
            )*
        }

        /// The fixed bounds' values.
        pub const FIXED: Fixed = Fixed { $($fixed: $fixed_value),* };

        /// Every limit, as the command line and the configuration file give it.
        #[derive(clap::Args, Deserialize, Debug, Clone, PartialEq)]
        #[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
        pub struct Settings {
            $(
                $(#[doc = $doc])*
                #[arg(long, value_name = $value, default_value_t = $default $(, alias = $alias)? $(, env = $env)?)]
                $(#[serde(alias = $alias)])?
                pub $name: $ty,
            )*
        }

        impl Default for Settings {
            fn default() -> Self {
                Settings { $($name: $default),* }
            }
        }

        impl Settings {
            /// Takes from `file` every limit for which `given(name)` (the
            /// command line named it) is false.
            pub fn merge(&mut self, file: &Settings, given: impl Fn(&str) -> bool) {
                $(if !given(stringify!($name)) {
                    self.$name = file.$name.clone();
                })*
            }

            /// The first limit that is not positive (unless it may be zero).
            fn not_positive(&self) -> Option<LimitError> {
                $(
                    let may_be_zero = false $(|| $zero == 0)?;
                    if !may_be_zero && let Some(refused) = Positive::refused(&self.$name, stringify!($name)) {
                        return Some(refused);
                    }
                )*
                None
            }
        }

        impl Limits {
            /// The first typed limit that is zero (unless it may be), named
            /// as its setting: for limits built in code, not from settings.
            fn zero(&self) -> Option<LimitError> {
                $(
                    let may_be_zero = false $(|| $zero == 0)?;
                    if !may_be_zero && let Some(refused) = Positive::refused(&self.$($typed).+, stringify!($name)) {
                        return Some(refused);
                    }
                )*
                None
            }
        }
    };
}

limit_table! {
    /// The longest request line accepted, in bytes.
    max_line_bytes: Bytes = Bytes(8 << 20), "BYTES" => max_line_bytes;
    /// The longest response sent, in bytes; a longer one is replaced by a
    /// `payload_too_large` error saying which page size would fit.
    max_response_bytes: Bytes = Bytes(4 << 20), "BYTES" => max_response_bytes;
    /// Tool calls one session (connection) runs at once; more wait their turn.
    max_concurrent_calls: usize = 8, "N" => max_concurrent_calls;
    /// Tool calls being answered at once across all sessions and transports;
    /// more wait for one to end until their time limit, then are answered `busy`.
    max_calls_in_flight: usize = 16, "N" => max_calls_in_flight;
    /// Page size, in estimated tokens (4 bytes each), when a call does not ask.
    page_tokens: u32 = 6_000, "TOKENS" => pages.default_tokens;
    /// The largest page a call may ask for, in estimated tokens.
    max_page_tokens: u32 = 25_000, "TOKENS" => pages.max_tokens;
    /// Page size of a file's lines (`read`) when a call does not ask, in
    /// estimated tokens (4 bytes each): 60 KB, which with line numbers is
    /// about 20,000 tokens of source code as Claude counts them (some 3.3
    /// characters a token), below Claude Code's cap of 25,000 a result.
    file_page_tokens: u32 = 15_000, "TOKENS" => pages.file.tokens;
    /// The most lines on a page of a file's lines when a call does not ask.
    file_page_lines: u32 = 2_000, "N" => pages.file.lines;
    /// The most items (lines, for text) on one page.
    max_page_items: u32 = 10_000, "N" => pages.max_items;
    /// Streams parked between pages, at most (least recently used given up first).
    /// Zero parks none: every page reopens its stream.
    max_parked_streams: usize = 64, "N" => pages.parked, alias "max-sessions", may_be 0;
    /// How long a parked stream waits for its next page before it is dropped, in seconds.
    parked_ttl_secs: u64 = 600, "SECS" => pages.parked_ttl, alias "session-ttl-secs";
    /// How long a cursor stays valid, in seconds.
    cursor_ttl_secs: u64 = 24 * 3600, "SECS" => pages.cursor_ttl;
    /// Results whose continuation handles the handle store keeps; past it the ones
    /// written longest ago are evicted (their handles are then unknown).
    max_handle_results: u64 = 10_000, "N" => pages.handles.results;
    /// Bytes a directory handle store (`<state-dir>/handles`) or the memory store
    /// holds; past it the results written longest ago are evicted.
    max_handle_store_bytes: Bytes = Bytes(256 << 20), "BYTES" => pages.handles.bytes;
    /// The most bytes one staged upload may hold.
    max_upload_bytes: Bytes = Bytes(4 << 30), "BYTES" => uploads.max_bytes;
    /// How long an idle staged upload is kept before it is deleted, in seconds.
    upload_ttl_secs: u64 = 3600, "SECS" => uploads.ttl;
    /// Before a first page that does not hold the whole result, the time the
    /// server may spend counting it (items, bytes, per path), in ms; 0 turns
    /// counting off. Past it the totals say "at least".
    count_ms: u64 = 2000, "MS" => pages.count.time, may_be 0;
    /// The most time one page is pulled before it answers with what it has (possibly
    /// no item) and a continuation at the exact point the work reached, in ms; 0: until
    /// shortly before the call's time limit (`timeout_secs`), which bounds every page.
    page_ms: u64 = 0, "MS" => pages.page_time, may_be 0;
    /// The most payload bytes that count may read; past it the totals say "at least".
    count_max_bytes: Bytes = Bytes(256 << 20), "BYTES" => pages.count.bytes, may_be 0;
    /// JSON items from tools nested deeper than this are truncated.
    max_depth: usize = 16, "N" => pages.max_depth, may_be 0;
    /// Linear memory one call may use, in MiB.
    memory_mib: usize = 256, "MIB" => call.memory_bytes;
    /// Linear memory all tool instances together may hold, in MiB: a call that would
    /// grow past it first takes memory back from parked streams (least recently used
    /// first), else its growth is refused (`limit_exceeded`); at least `memory_mib`.
    max_memory_mib: usize = 1536, "MIB" => max_memory_bytes;
    /// Linear memory the streams parked between pages may hold together, in MiB: parking
    /// past it gives up the least recently used first (their cursors still resume).
    max_parked_mib: usize = 512, "MIB" => pages.parked_bytes, may_be 0;
    /// Wall time one call may take, in seconds.
    timeout_secs: f64 = 30.0, "SECS" => call.wall_time;
    /// How long past the wall time the host waits for a tool stuck in a host
    /// call (which cannot be interrupted) before answering without it, in ms.
    host_grace_ms: u64 = 1000, "MS" => call.host_grace;
    /// Resources one call may hold at once (open files, directory streams, ...).
    max_handles: usize = 1024, "N" => call.max_handles;
    /// The most payload bytes one chunk from a tool may carry.
    max_output_chunk_bytes: Bytes = Bytes(4 << 20), "BYTES" => call.max_chunk_bytes;
    /// The most bytes of metadata, a summary or a message a tool may return at once.
    max_info_bytes: Bytes = Bytes(64 << 10), "BYTES" => call.max_info_bytes;
    /// HTTP requests one call (one page) of a tool with network grants may send.
    max_requests: u32 = 32, "N" => call.net.requests;
    /// Request body bytes one call's HTTP requests may send, together.
    max_net_bytes_out: Bytes = Bytes(8 << 20), "BYTES" => call.net.bytes_out;
    /// Response body bytes one call's HTTP requests may receive, together.
    max_net_bytes_in: Bytes = Bytes(64 << 20), "BYTES" => call.net.bytes_in;
    /// Table elements one call may use, summed over its tables.
    max_table_elements: usize = 100_000, "N" => call.table_elements;
    /// Core and component instances one call may create.
    max_instances: usize = 64, "N" => call.instances;
    /// Instances one call of a tool that can split its output (grep, glob) runs at
    /// once, each on a range of the output, paged strictly in order; they share the
    /// call's memory. 1 turns this off [default: the cores, at most 16].
    shards: usize = default_shards(), "N" => pages.shards, env "CORDON_SHARDS";

    @fixed {
        /// The decoded bytes of one upload chunk, at most (a message carries a
        /// chunk, so `max_line_bytes` bounds it first).
        upload_chunk_bytes: usize = 4 << 20;
        /// Uploads open at once.
        uploads_open: usize = 16;
        /// Legacy Streamable HTTP sessions kept at once; the least recently used goes first.
        http_sessions: usize = 1024;
        /// How long a legacy HTTP session may sit idle before it is dropped.
        http_session_idle: Duration = Duration::from_secs(3600);
        /// Notifications waiting for a slow SSE reader, per HTTP request.
        sse_queue: usize = 64;
        /// Messages waiting for a stdio or TCP writer; a slow reader holds the
        /// session back rather than letting them pile up in memory.
        output_queue: usize = 64;
        /// Calls started and not yet answered on a stdio or TCP session
        /// (running, or waiting for a slot); past it, input is not read until one finishes.
        pending_calls: usize = 256;
        /// The longest first line a TCP connection is read for, waiting for its
        /// credential (an access token with many groups runs to a few KiB).
        token_line_bytes: u64 = 16384;
    }
}

/// The most shards run at once by default, however many cores there are.
const MAX_DEFAULT_SHARDS: usize = 16;

/// The default for `shards`: the cores this process may use, at most
/// `MAX_DEFAULT_SHARDS`.
fn default_shards() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_DEFAULT_SHARDS)
}

/// The server's limits, typed, each layer's part apart; each fails closed.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The longest request line accepted, in bytes.
    pub max_line_bytes: usize,
    /// The longest response sent, in bytes; a longer one becomes an error.
    pub max_response_bytes: usize,
    /// Calls one session runs at once; more wait.
    pub max_concurrent_calls: usize,
    /// Tool calls being answered at once across every session and transport;
    /// more wait for one to end, until their deadline.
    pub max_calls_in_flight: usize,
    /// The linear memory all tool instances may hold together, in bytes.
    pub max_memory_bytes: usize,
    pub call: CallLimits,
    pub pages: PageLimits,
    pub uploads: UploadLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Settings::default().limits().expect("the default limits are valid")
    }
}

impl Settings {
    /// The typed limits, validated.
    pub fn limits(&self) -> Result<Limits, LimitError> {
        if let Some(refused) = self.not_positive() {
            return Err(refused);
        }
        let too_large = |name: &'static str| LimitError::AboveMaximum { name, max: usize::MAX as u64 };
        let size = |name, b: Bytes| usize::try_from(b.0).map_err(|_| too_large(name));
        let limits = Limits {
            max_line_bytes: size("max_line_bytes", self.max_line_bytes)?,
            max_response_bytes: size("max_response_bytes", self.max_response_bytes)?,
            max_concurrent_calls: self.max_concurrent_calls,
            max_calls_in_flight: self.max_calls_in_flight,
            max_memory_bytes: self.max_memory_mib.checked_mul(1 << 20).ok_or(too_large("max_memory_mib"))?,
            call: CallLimits {
                memory_bytes: self.memory_mib.checked_mul(1 << 20).ok_or(too_large("memory_mib"))?,
                table_elements: self.max_table_elements,
                instances: self.max_instances,
                max_handles: self.max_handles,
                max_chunk_bytes: size("max_output_chunk_bytes", self.max_output_chunk_bytes)?,
                max_info_bytes: size("max_info_bytes", self.max_info_bytes)?,
                wall_time: Duration::try_from_secs_f64(self.timeout_secs).map_err(|_| too_large("timeout_secs"))?,
                host_grace: Duration::from_millis(self.host_grace_ms),
                net: NetLimits {
                    requests: self.max_requests,
                    bytes_out: self.max_net_bytes_out.0,
                    bytes_in: self.max_net_bytes_in.0,
                },
            },
            pages: PageLimits {
                default_tokens: self.page_tokens,
                max_tokens: self.max_page_tokens,
                file: FilePage { tokens: self.file_page_tokens, lines: self.file_page_lines },
                max_items: self.max_page_items,
                max_depth: self.max_depth,
                cursor_ttl: Duration::from_secs(self.cursor_ttl_secs),
                handles: Caps { results: self.max_handle_results, bytes: self.max_handle_store_bytes.0 },
                parked: self.max_parked_streams,
                parked_bytes: self.max_parked_mib.checked_mul(1 << 20).ok_or(too_large("max_parked_mib"))?,
                parked_ttl: Duration::from_secs(self.parked_ttl_secs),
                count: CountBounds { time: Duration::from_millis(self.count_ms), bytes: self.count_max_bytes.0 },
                shards: self.shards,
                page_time: (self.page_ms > 0).then(|| Duration::from_millis(self.page_ms)),
                max_whole_bytes: crate::pager::media::image_limit(size("max_response_bytes", self.max_response_bytes)?),
            },
            uploads: UploadLimits {
                max_bytes: self.max_upload_bytes.0,
                max_chunk: FIXED.upload_chunk_bytes,
                max_open: FIXED.uploads_open,
                ttl: Duration::from_secs(self.upload_ttl_secs),
            },
        };
        limits.validate()?;
        Ok(limits)
    }
}

impl Limits {
    /// Refuses limits that cannot work together, whoever built them: a zero
    /// limit (nothing runs unlimited, and a zero limit would refuse
    /// everything), a default page above the largest, a chunk above what a
    /// budget carries, and limits whose instance pool cannot be reserved; the
    /// error names the limit.
    pub fn validate(&self) -> Result<(), LimitError> {
        if let Some(zero) = self.zero() {
            return Err(zero);
        }
        self.call.validate()?;
        if self.call.memory_bytes > self.max_memory_bytes {
            return Err(LimitError::AboveMaximum { name: "memory_mib", max: (self.max_memory_bytes >> 20) as u64 });
        }
        if self.pages.default_tokens > self.pages.max_tokens {
            return Err(LimitError::AboveMaximum { name: "page_tokens", max: u64::from(self.pages.max_tokens) });
        }
        if self.pages.file.tokens > self.pages.max_tokens {
            return Err(LimitError::AboveMaximum { name: "file_page_tokens", max: u64::from(self.pages.max_tokens) });
        }
        self.capacity().validate().map_err(LimitError::Capacity)?;
        Ok(())
    }

    /// The tool instances these limits keep alive at once.
    pub fn capacity(&self) -> Capacity {
        Capacity {
            parked: self.pages.parked,
            in_flight: self.max_calls_in_flight,
            shards: self.pages.shards,
            memory: self.max_memory_bytes,
        }
    }
}

/// Refuses a limit's value that is not above zero (or, for a time in
/// seconds, not a finite number above zero).
trait Positive {
    fn refused(&self, name: &'static str) -> Option<LimitError>;
}

macro_rules! positive_integers {
    ($($ty:ty),*) => {$(
        impl Positive for $ty {
            fn refused(&self, name: &'static str) -> Option<LimitError> {
                (*self == 0).then_some(LimitError::Zero(name))
            }
        }
    )*};
}
positive_integers!(u32, u64, usize);

impl Positive for Duration {
    fn refused(&self, name: &'static str) -> Option<LimitError> {
        self.is_zero().then_some(LimitError::Zero(name))
    }
}

/// A limit that may be off: `None` counts as zero.
impl<T: Positive> Positive for Option<T> {
    fn refused(&self, name: &'static str) -> Option<LimitError> {
        self.as_ref().map_or(Some(LimitError::Zero(name)), |value| value.refused(name))
    }
}

impl Positive for f64 {
    fn refused(&self, name: &'static str) -> Option<LimitError> {
        (!(*self > 0.0 && self.is_finite())).then_some(LimitError::NotSeconds(name))
    }
}

impl Positive for Bytes {
    fn refused(&self, name: &'static str) -> Option<LimitError> {
        self.0.refused(name)
    }
}

/// A size in bytes: a number, or text with a unit (`"8 MiB"`, `"512KiB"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for Bytes {
    type Err = SizeError;

    fn from_str(text: &str) -> Result<Bytes, SizeError> {
        parse_bytes(text).map(Bytes)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(d).map_err(|_| {
            serde::de::Error::custom("expected a size in bytes: a whole number, or a string such as \"8 MiB\"")
        })? {
            Raw::Number(n) => Ok(Bytes(n)),
            Raw::Text(text) => parse_bytes(&text).map(Bytes).map_err(serde::de::Error::custom),
        }
    }
}

/// Why a text is not a size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeError {
    text: String,
    why: SizeWhy,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum SizeWhy {
    /// It does not start with a whole number.
    NoNumber,
    /// Its unit is none of B, K, M, G, T (with or without `iB`/`B`).
    Unit(String),
    /// It is more than 64 bits hold.
    TooLarge,
}

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = &self.text;
        match &self.why {
            SizeWhy::NoNumber => write!(f, "`{text}` is not a size: it must start with a whole number"),
            SizeWhy::Unit(unit) => write!(f, "`{text}` has an unknown unit `{unit}` (use B, KiB, MiB, GiB or TiB)"),
            SizeWhy::TooLarge => write!(f, "`{text}` is too large"),
        }
    }
}

impl std::error::Error for SizeError {}

/// Reads a size: `1048576`, `"1 MiB"`, `"1MiB"`, `"1M"` (binary units: K,
/// KiB, KB are all 1024).
pub fn parse_bytes(text: &str) -> Result<u64, SizeError> {
    let text = text.trim();
    let fail = |why| SizeError { text: text.to_string(), why };
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let number: u64 = digits.parse().map_err(|_| fail(SizeWhy::NoNumber))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => return Err(fail(SizeWhy::Unit(other.to_string()))),
    };
    number.checked_mul(1 << shift).ok_or_else(|| fail(SizeWhy::TooLarge))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_zero_limit_built_in_code_is_refused_by_its_settings_name() {
        type Zero = fn(&mut Limits);
        let zeroed: [(&str, Zero); 11] = [
            ("memory_mib", |l| l.call.memory_bytes = 0),
            ("max_table_elements", |l| l.call.table_elements = 0),
            ("max_instances", |l| l.call.instances = 0),
            ("max_handles", |l| l.call.max_handles = 0),
            ("max_output_chunk_bytes", |l| l.call.max_chunk_bytes = 0),
            ("max_info_bytes", |l| l.call.max_info_bytes = 0),
            ("timeout_secs", |l| l.call.wall_time = Duration::ZERO),
            ("host_grace_ms", |l| l.call.host_grace = Duration::ZERO),
            ("file_page_lines", |l| l.pages.file.lines = 0),
            ("max_handle_results", |l| l.pages.handles.results = 0),
            ("upload_ttl_secs", |l| l.uploads.ttl = Duration::ZERO),
        ];
        for (name, zero) in zeroed {
            let mut limits = Limits::default();
            zero(&mut limits);
            assert_eq!(limits.validate(), Err(LimitError::Zero(name)));
        }
        let mut off = Limits::default();
        (off.pages.parked, off.pages.page_time, off.pages.count.bytes) = (0, None, 0);
        assert_eq!(off.validate(), Ok(()), "a limit that may be zero is not refused");
    }

    #[test]
    fn the_default_limits_are_valid_and_a_zero_limit_is_refused_by_name() {
        assert!(Settings::default().limits().is_ok());
        let zero = |settings: Settings| settings.limits().unwrap_err();
        assert_eq!(
            zero(Settings { max_concurrent_calls: 0, ..Settings::default() }),
            LimitError::Zero("max_concurrent_calls")
        );
        assert_eq!(
            zero(Settings { max_calls_in_flight: 0, ..Settings::default() }),
            LimitError::Zero("max_calls_in_flight")
        );
        assert_eq!(zero(Settings { max_handles: 0, ..Settings::default() }), LimitError::Zero("max_handles"));
        assert_eq!(zero(Settings { max_page_items: 0, ..Settings::default() }), LimitError::Zero("max_page_items"));
        assert_eq!(
            zero(Settings { timeout_secs: f64::NAN, ..Settings::default() }),
            LimitError::NotSeconds("timeout_secs")
        );
        assert_eq!(
            zero(Settings { max_upload_bytes: Bytes(0), ..Settings::default() }),
            LimitError::Zero("max_upload_bytes")
        );
        let none_parked = Settings { max_parked_streams: 0, max_depth: 0, ..Settings::default() };
        assert_eq!(none_parked.limits().map(|l| l.pages.parked), Ok(0), "zero parks none");
        assert_eq!(Settings::default().limits().map(|l| l.pages.page_time), Ok(None), "page_ms 0: no page time");
        let quick = Settings { page_ms: 250, ..Settings::default() };
        assert_eq!(quick.limits().map(|l| l.pages.page_time), Ok(Some(Duration::from_millis(250))));
        let built = Limits { max_calls_in_flight: 0, ..Limits::default() };
        assert_eq!(built.validate(), Err(LimitError::Zero("max_calls_in_flight")), "limits built in code too");
    }

    #[test]
    fn limits_that_cannot_work_together_are_refused() {
        let page = Settings { page_tokens: 30_000, ..Settings::default() }.limits().unwrap_err();
        assert_eq!(page, LimitError::AboveMaximum { name: "page_tokens", max: 25_000 });
        let memory = Settings { memory_mib: usize::MAX, ..Settings::default() }.limits().unwrap_err();
        assert!(matches!(memory, LimitError::AboveMaximum { name: "memory_mib", .. }), "{memory}");
        let over = Settings { memory_mib: 2048, max_memory_mib: 1024, ..Settings::default() }.limits().unwrap_err();
        assert_eq!(
            over,
            LimitError::AboveMaximum { name: "memory_mib", max: 1024 },
            "a call's memory within the server's"
        );
        let pool = Settings { max_parked_streams: 10_000_000, ..Settings::default() }.limits().unwrap_err();
        assert!(matches!(pool, LimitError::Capacity(_)), "{pool}");
    }

    #[test]
    fn the_file_fills_in_what_the_command_line_did_not_give() {
        let file: Settings = toml::from_str("max-depth = 3\nmax-sessions = 5\nmax-line-bytes = \"1 MiB\"").unwrap();
        let mut flags = Settings { max_depth: 9, max_handles: 7, ..Settings::default() };
        flags.merge(&file, |name| name == "max_depth");
        assert_eq!((flags.max_depth, flags.max_parked_streams, flags.max_line_bytes), (9, 5, Bytes(1 << 20)));
        assert_eq!(flags.max_handles, Settings::default().max_handles, "not given: the file's (its default)");
        assert!(toml::from_str::<Settings>("max-nonsense = 1").is_err());
    }
}
