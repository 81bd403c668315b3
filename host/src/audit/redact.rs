//! What a call's arguments look like in the audit trail: an allow-list.
//!
//! A record keeps an argument's value only when its key is on the list below
//! and the value has the key's type: paths (`path`, `from`, `to`), the
//! include and exclude globs of a search, counts, flags, small enums
//! (`format`, `output_mode`, `mode`, …), an upload's id and a short
//! continuation handle. Everything else is replaced by its size and an
//! HMAC-SHA-256 keyed with a server secret, `{"bytes": N, "hmac": HEX}`:
//!
//! - the keys that carry content or may carry a secret: `content`, `data`,
//!   `old_string`, `new_string`, a search's `pattern` (a grep for a password
//!   is a secret in the log), grep's `type`, the hashes a client sends
//!   (`expected_sha256`, `sha256`: a bare hash of a short file is guessable),
//!   a signed cursor (its body holds the original arguments), `staged`;
//! - a value of another type than its key's (an object or an array under
//!   `content` or `path`), and a string over `LONG_STRING` bytes;
//! - every other key, whatever its spelling (`contents`, `Content`, a third
//!   party tool's own arguments): its name is a secret too, so all of them
//!   together become one `"(other)": {"keys": K, "bytes": N, "hmac": HEX}`;
//! - arguments that are not an object at all.
//!
//! A string's digest covers its UTF-8 bytes; any other value's, its compact
//! JSON text. The key is derived from the cursor key with a label of its own
//! (`DigestKey::from_cursor_key`), so replicas that share a cursor key record
//! the same digest for the same value, and whoever holds the key can check a
//! guess; without a state directory or a cursor key it is random for each
//! process. A digest without the key tells nothing about a short value.

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Map, Value, json};
use sha2::Sha256;

use crate::pager::cursor::CursorKey;

/// Strings longer than this are digested, even under a key whose values are
/// kept.
pub const LONG_STRING: usize = 256;

/// The label the digest key is derived from the cursor key with.
const LABEL: &[u8] = b"cordon audit digest v1";

/// The name under which the other keys are recorded together.
pub const OTHER: &str = "(other)";

/// What a kept argument must be.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// A path: a string of at most `LONG_STRING` bytes.
    Path,
    /// Globs: an array of strings (each at most `LONG_STRING` bytes), at most 64.
    Globs,
    /// A count: a non-negative integer.
    Count,
    /// A flag: a boolean.
    Flag,
    /// One of these strings.
    Enum(&'static [&'static str]),
    /// A continuation handle (`h1_…`), not a signed cursor.
    Handle,
    /// An upload's id: up to 32 hex digits.
    UploadId,
}

/// The keys whose values a record keeps, with their kinds: the built-in
/// tools' input schemas (`tools/*/src/lib.rs`), the host's own arguments
/// (`args.rs`) and the `upload` tool's (`staging.rs`).
const KEPT: &[(&str, Kind)] = &[
    ("path", Kind::Path),
    ("from", Kind::Path),
    ("to", Kind::Path),
    ("include", Kind::Globs),
    ("exclude", Kind::Globs),
    ("start_line", Kind::Count),
    ("end_line", Kind::Count),
    ("start_byte", Kind::Count),
    ("end_byte", Kind::Count),
    ("depth", Kind::Count),
    ("context_before", Kind::Count),
    ("context_after", Kind::Count),
    ("max_line_length", Kind::Count),
    ("max_tokens", Kind::Count),
    ("page_size", Kind::Count),
    ("size", Kind::Count),
    ("index", Kind::Count),
    ("replace_all", Kind::Flag),
    ("allow_hardlinks", Kind::Flag),
    ("hidden", Kind::Flag),
    ("no_ignore", Kind::Flag),
    ("include_dirs", Kind::Flag),
    ("details", Kind::Flag),
    ("fixed_strings", Kind::Flag),
    ("case_insensitive", Kind::Flag),
    ("smart_case", Kind::Flag),
    ("multiline", Kind::Flag),
    ("binary", Kind::Flag),
    ("parents", Kind::Flag),
    ("overwrite", Kind::Flag),
    ("count_lines", Kind::Flag),
    ("format", Kind::Enum(&["text", "json"])),
    ("output_mode", Kind::Enum(&["content", "files_with_matches", "count"])),
    ("sort", Kind::Enum(&["path", "mtime"])),
    ("mode", Kind::Enum(&["create", "overwrite", "append"])),
    ("encoding", Kind::Enum(&["utf8", "base64"])),
    ("action", Kind::Enum(&["start", "chunk", "abort"])),
    ("cursor", Kind::Handle),
    ("upload_id", Kind::UploadId),
];

/// Keys that are known (a built-in tool takes them) but whose values are
/// always digested: content, searches, hashes of content.
const DIGESTED: &[&str] =
    &["content", "data", "old_string", "new_string", "pattern", "type", "expected_sha256", "sha256", "staged"];

impl Kind {
    /// Whether `value` is of this kind, and so may be kept.
    fn admits(self, value: &Value) -> bool {
        let short = |s: &str| s.len() <= LONG_STRING;
        match (self, value) {
            (Kind::Path, Value::String(s)) => short(s),
            (Kind::Globs, Value::Array(items)) => {
                items.len() <= 64 && items.iter().all(|item| item.as_str().is_some_and(short))
            }
            (Kind::Count, Value::Number(n)) => n.is_u64(),
            (Kind::Flag, Value::Bool(_)) => true,
            (Kind::Enum(allowed), Value::String(s)) => allowed.contains(&s.as_str()),
            (Kind::Handle, Value::String(s)) => crate::pager::handles::stream_of(s).is_some(),
            (Kind::UploadId, Value::String(s)) => {
                (1..=32).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
            }
            _ => false,
        }
    }
}

/// The key of the audit trail's digests.
#[derive(Clone)]
pub struct DigestKey([u8; 32]);

impl std::fmt::Debug for DigestKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DigestKey(..)")
    }
}

impl DigestKey {
    /// The key derived from the cursor key: HMAC-SHA-256(cursor key, label).
    pub fn from_cursor_key(key: &CursorKey) -> DigestKey {
        DigestKey(key.derive(LABEL))
    }

    /// A key of this process alone (no argument digest is ever compared
    /// across processes).
    pub fn random() -> DigestKey {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).expect("the OS random source works");
        DigestKey(key)
    }

    /// `{"bytes": N, "hmac": HEX}` for `bytes`.
    fn digest(&self, bytes: &[u8]) -> Value {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(bytes);
        json!({ "bytes": bytes.len(), "hmac": hex::encode(mac.finalize().into_bytes()) })
    }

    /// The digest of a value: a string's UTF-8 bytes, anything else's JSON text.
    fn digest_value(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => self.digest(s.as_bytes()),
            other => self.digest(other.to_string().as_bytes()),
        }
    }

    /// A call's arguments for the record (see the module's documentation).
    pub fn redact(&self, arguments: &Value) -> Value {
        let Value::Object(arguments) = arguments else { return self.digest_value(arguments) };
        let mut kept = Map::new();
        let mut other = Map::new();
        for (key, value) in arguments {
            let kind = KEPT.iter().find(|(name, _)| name == key).map(|(_, kind)| *kind);
            match kind {
                Some(kind) if kind.admits(value) => {
                    kept.insert(key.clone(), value.clone());
                }
                Some(_) => {
                    kept.insert(key.clone(), self.digest_value(value));
                }
                None if DIGESTED.contains(&key.as_str()) => {
                    kept.insert(key.clone(), self.digest_value(value));
                }
                None => {
                    other.insert(key.clone(), value.clone());
                }
            }
        }
        if !other.is_empty() {
            let mut digest = self.digest(Value::Object(other.clone()).to_string().as_bytes());
            digest["keys"] = other.len().into();
            kept.insert(OTHER.into(), digest);
        }
        Value::Object(kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;

    const SECRET: &str = "hunter2-SECRET";

    fn key() -> DigestKey {
        DigestKey::from_cursor_key(&CursorKey::new(vec![7; 32]).unwrap())
    }

    /// The record of `arguments`, checked to hold no trace of the secret.
    fn redacted(arguments: Value) -> Value {
        let line = key().redact(&arguments);
        assert!(!line.to_string().contains(SECRET), "the secret is in the record: {line}");
        assert!(!line.to_string().contains("hunter2"), "part of the secret is in the record: {line}");
        line
    }

    #[test]
    fn known_safe_fields_are_kept_as_they_are() {
        let args = json!({
            "path": "src/a.rs", "start_line": 3, "hidden": true, "format": "json", "output_mode": "count",
            "include": ["*.rs"], "cursor": "h1_8e661cd6222b5035356ffcdcf9b19743.2", "upload_id": "00ff00ff00ff00ff",
        });
        assert_eq!(key().redact(&args), args);
    }

    #[test]
    fn content_objects_arrays_and_misspelled_keys_carry_no_value() {
        let bare = hex::encode(sha2::Sha256::digest(SECRET));
        let long = format!("{SECRET}{}", "x".repeat(LONG_STRING));
        for args in [
            json!({ "path": "a", "content": SECRET }),
            json!({ "path": "a", "content": { "k": SECRET } }),
            json!({ "path": "a", "content": [SECRET] }),
            json!({ "path": "a", "new_string": { "k": SECRET }, "old_string": "x" }),
            json!({ "path": "a", "contents": SECRET }),
            json!({ "path": "a", "Content": SECRET }),
            json!({ "path": { "nested": SECRET } }),
            json!({ "path": [SECRET] }),
            json!({ "path": long }),
            json!({ "path": "a", "mode": SECRET }),
            json!({ "path": "a", "include": [{ "k": SECRET }] }),
            json!({ "pattern": SECRET }),
            json!({ "cursor": format!("c1.{SECRET}.mac") }),
            json!({ "path": "a", SECRET: 1 }),
            json!({ "path": "a", "expected_sha256": bare.clone() }),
            json!([SECRET]),
            json!(SECRET),
        ] {
            let line = redacted(args);
            assert!(!line.to_string().contains(&bare), "a bare hash of the secret is in the record: {line}");
            if let Some(path) = line.get("path").and_then(Value::as_str) {
                assert_eq!(path, "a");
            }
        }
    }

    #[test]
    fn other_keys_are_recorded_together_without_their_names() {
        let line = redacted(json!({ "path": "a", "contents": SECRET, "Content": "x" }));
        assert_eq!(line[OTHER]["keys"], 2, "{line}");
        assert!(!line.to_string().contains("contents"), "{line}");
        assert_eq!(line["path"], "a");
    }

    #[test]
    fn a_digest_is_keyed_not_a_bare_sha256() {
        let line = redacted(json!({ "content": SECRET }));
        let digest = line["content"]["hmac"].as_str().unwrap();
        assert_eq!(line["content"]["bytes"], SECRET.len());
        assert_ne!(digest, hex::encode(sha2::Sha256::digest(SECRET)), "not the bare SHA-256");
        // The same key gives the same digest (replicas agree); another key another.
        assert_eq!(key().redact(&json!({ "content": SECRET }))["content"]["hmac"], digest);
        let other = DigestKey::from_cursor_key(&CursorKey::new(vec![8; 32]).unwrap());
        assert_ne!(other.redact(&json!({ "content": SECRET }))["content"]["hmac"], digest);
        assert_ne!(DigestKey::random().redact(&json!({ "content": SECRET }))["content"]["hmac"], digest);
    }
}
