//! Cursors: opaque, versioned, HMAC-SHA256-signed continuation tokens.
//!
//! A cursor is `c1.<body>.<mac>`, both parts base64url without padding. The body
//! (JSON) binds the tool and its version, the original arguments, the resume
//! position after the last chunk delivered, the fingerprint of what is paged,
//! the index of the next page, the id of the parked stream, the
//! running SHA-256 of everything delivered (sealed: it holds the last bytes
//! delivered), the signing key's id and an expiry. The rest of the body is
//! readable by whoever holds the cursor (it holds only what that client sent);
//! only the server's key can make one.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::totals::Base;
use crate::tool::Fingerprint;

const PREFIX: &str = "c1.";

/// The server's signing key.
#[derive(Clone)]
pub struct CursorKey {
    key: Vec<u8>,
    /// The first bytes of the key's SHA-256, hex: tells a foreign cursor from a
    /// tampered one.
    id: String,
}

impl fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CursorKey({})", self.id)
    }
}

/// Why a cursor key cannot be used.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyError {
    /// The text is not hex.
    NotHex(hex::FromHexError),
    /// Fewer than 16 bytes.
    Short(usize),
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::NotHex(e) => write!(f, "a cursor key must be hex: {e}"),
            KeyError::Short(n) => write!(f, "a cursor key needs at least 16 bytes, got {n}"),
        }
    }
}

impl std::error::Error for KeyError {}

impl CursorKey {
    /// At least 16 bytes of secret.
    pub fn new(key: Vec<u8>) -> Result<CursorKey, KeyError> {
        if key.len() < 16 {
            return Err(KeyError::Short(key.len()));
        }
        let id = hex::encode(&Sha256::digest(&key)[..4]);
        Ok(CursorKey { key, id })
    }

    /// A key from hex text (as in `CORDON_CURSOR_KEY` or the key file).
    pub fn from_hex(text: &str) -> Result<CursorKey, KeyError> {
        let bytes = hex::decode(text.trim()).map_err(KeyError::NotHex)?;
        CursorKey::new(bytes)
    }

    /// 32 random bytes.
    pub fn random() -> CursorKey {
        let mut key = vec![0u8; 32];
        getrandom::fill(&mut key).expect("the OS random source works");
        CursorKey::new(key).expect("32 bytes")
    }

    pub fn to_hex(&self) -> String {
        hex::encode(&self.key)
    }

    /// A key for another purpose, derived from this one with a label of its
    /// own (HMAC-SHA-256(key, label)): it tells nothing about this key, and
    /// replicas that share this key derive the same one.
    pub fn derive(&self, label: &[u8]) -> [u8; 32] {
        self.mac(label).finalize().into_bytes().into()
    }

    fn mac(&self, body: &[u8]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(body);
        mac
    }
}

/// What a cursor says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// The signing key's id.
    #[serde(rename = "k")]
    pub key_id: String,
    #[serde(rename = "t")]
    pub tool: String,
    #[serde(rename = "tv")]
    pub tool_version: String,
    /// The id of the principal that started the result (`Principal::id`):
    /// only it may continue it.
    #[serde(rename = "o", default)]
    pub owner: String,
    /// The original arguments, canonical JSON (keys sorted).
    #[serde(rename = "a")]
    pub args: String,
    /// The tool's resume position after the last chunk delivered.
    #[serde(rename = "r")]
    pub resume: String,
    #[serde(rename = "f", default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<Fingerprint>,
    /// The index of the page this cursor asks for.
    #[serde(rename = "p")]
    pub page: u64,
    /// The id the stream is parked under between pages (see `parked`), if
    /// it is still there.
    #[serde(rename = "s")]
    pub parked_id: u64,
    /// Payload bytes delivered on earlier pages.
    #[serde(rename = "b")]
    pub bytes_before: u64,
    /// Items delivered on earlier pages.
    #[serde(rename = "n")]
    pub items_before: u64,
    /// The SHA-256 state over every payload byte delivered so far, sealed
    /// (`pager::sealed`: it holds up to 63 bytes of what was delivered).
    #[serde(rename = "hs")]
    pub hash_state: String,
    /// Set when the pages show items in the compact text form: the heading
    /// in force after the last item delivered, so the next page continues
    /// under it. Absent: the pages show JSON items.
    #[serde(rename = "g", default, skip_serializing_if = "Option::is_none")]
    pub compact: Option<Heading>,
    /// Expiry, seconds since the Unix epoch.
    #[serde(rename = "e")]
    pub expires: u64,
    /// Set for a call paged as shards (see `pager::shards`): `resume` is a
    /// position of this shard's own. Absent: the call is one stream.
    #[serde(rename = "x", default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
}

/// The shard a sharded call's cursor stands in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// The boundary the shard ends at; absent: the end of the output.
    #[serde(rename = "e", default, skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    /// The counts of the shards before it.
    #[serde(rename = "b", default)]
    pub base: Base,
}

/// The compact form's state in a cursor (see `pager::compact`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heading {
    /// The heading line in force, if any.
    #[serde(rename = "h", default, skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
}

/// Why a cursor was refused. Every kind is answered with -32602 `invalid_cursor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CursorError {
    /// Not a cursor this server writes (wrong prefix, bad encoding, bad body).
    Malformed,
    /// The signature does not match: the cursor was altered.
    Tampered,
    /// Signed with another key: another server, or this one before its key changed.
    Foreign,
    /// Past its expiry.
    Expired,
    /// Made by another tool.
    OtherTool { made_by: String },
    /// Made by another version of the tool.
    OtherVersion { made_by: String },
    /// The call's other arguments differ from the ones the cursor was made for.
    ArgumentsChanged,
    /// Started by another principal: only whoever started a result may
    /// continue it.
    OtherPrincipal,
    /// A handle no store here holds: expired and swept, made by a server that
    /// does not share this one's handle store, or mistyped.
    UnknownHandle,
}

impl CursorError {
    /// A short machine-readable reason.
    pub fn reason(&self) -> &'static str {
        match self {
            CursorError::Malformed => "malformed",
            CursorError::Tampered => "bad_signature",
            CursorError::Foreign => "foreign_key",
            CursorError::Expired => "expired",
            CursorError::OtherTool { .. } => "other_tool",
            CursorError::OtherVersion { .. } => "other_tool_version",
            CursorError::ArgumentsChanged => "arguments_changed",
            CursorError::OtherPrincipal => "other_principal",
            CursorError::UnknownHandle => "unknown_handle",
        }
    }
}

impl fmt::Display for CursorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let again = "start again: call the tool without `cursor`";
        match self {
            CursorError::Malformed => {
                write!(f, "the cursor is not one this server made; pass it exactly as received, or {again}")
            }
            CursorError::Tampered => write!(
                f,
                "the cursor's signature does not match: it was altered; pass it exactly as received, or {again}"
            ),
            CursorError::Foreign => write!(f, "the cursor was signed by another server or an earlier key; {again}"),
            CursorError::Expired => write!(f, "the cursor has expired; {again}"),
            CursorError::OtherTool { made_by } => {
                write!(f, "the cursor belongs to tool `{made_by}`; call `{made_by}` with it")
            }
            CursorError::OtherVersion { made_by } => {
                write!(f, "the cursor was made by version {made_by} of this tool, which has since changed; {again}")
            }
            CursorError::ArgumentsChanged => write!(
                f,
                "the other arguments differ from the call that made the cursor; send only `cursor` (and paging options), or the same arguments"
            ),
            CursorError::OtherPrincipal => {
                write!(f, "the cursor belongs to a result another principal started; {again}")
            }
            CursorError::UnknownHandle => write!(
                f,
                "no handle like this one is known here: it expired, was mistyped, or was made by a server that does not \
                 share this one's handle store; pass it exactly as received, or {again}"
            ),
        }
    }
}

impl Cursor {
    /// Signs and encodes the cursor.
    pub fn encode(&self, key: &CursorKey) -> String {
        let body = serde_json::to_vec(self).expect("cursors serialize");
        let body = B64.encode(body);
        let mac = key.mac(body.as_bytes()).finalize().into_bytes();
        format!("{PREFIX}{body}.{}", B64.encode(mac))
    }

    /// Decodes, checks the signature, the key and the expiry.
    pub fn decode(text: &str, key: &CursorKey, now: SystemTime) -> Result<Cursor, CursorError> {
        let rest = text.strip_prefix(PREFIX).ok_or(CursorError::Malformed)?;
        let (body, mac) = rest.split_once('.').ok_or(CursorError::Malformed)?;
        let mac = B64.decode(mac).map_err(|_| CursorError::Malformed)?;
        let raw = B64.decode(body).map_err(|_| CursorError::Malformed)?;
        let signed_ok = key.mac(body.as_bytes()).verify_slice(&mac).is_ok();
        let cursor: Option<Cursor> = serde_json::from_slice(&raw).ok();
        match (signed_ok, cursor) {
            // HMAC pads a short key with zeros, so a key and the same key with
            // zero bytes appended sign alike: the key id tells them apart.
            (true, Some(cursor)) if cursor.key_id != key.id => Err(CursorError::Foreign),
            (true, Some(cursor)) => {
                if cursor.expires < unix_secs(now) {
                    return Err(CursorError::Expired);
                }
                Ok(cursor)
            }
            (true, None) => Err(CursorError::Malformed),
            (false, Some(cursor)) if cursor.key_id != key.id => Err(CursorError::Foreign),
            (false, _) => Err(CursorError::Tampered),
        }
    }

    /// The expiry for a cursor made `now` that lives `ttl`.
    pub fn expiry(now: SystemTime, ttl: Duration) -> u64 {
        unix_secs(now).saturating_add(ttl.as_secs())
    }

    pub fn key_id(key: &CursorKey) -> String {
        key.id.clone()
    }
}

fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(key: &CursorKey) -> Cursor {
        Cursor {
            key_id: Cursor::key_id(key),
            tool: "read".into(),
            tool_version: "0.1.0".into(),
            owner: "alice".into(),
            args: r#"{"path":"a"}"#.into(),
            resume: "10:2".into(),
            fingerprint: Some(Fingerprint { size: 5, mtime_ns: 6, identity: 7 }),
            page: 1,
            parked_id: 42,
            bytes_before: 100,
            items_before: 3,
            hash_state: "x".into(),
            compact: Some(Heading { line: Some("src/a.rs".into()) }),
            expires: Cursor::expiry(SystemTime::now(), Duration::from_secs(60)),
            shard: None,
        }
    }

    #[test]
    fn a_sharded_cursor_round_trips_and_one_without_a_shard_still_decodes() {
        let key = CursorKey::random();
        let mut base = Base::default();
        base.info.add(&serde_json::json!({"matches": 12, "root": "/r"}));
        base.totals.add(&serde_json::json!({"files_matched": 3}));
        let sharded = Cursor { shard: Some(Shard { end: Some("src/m".into()), base }), ..sample(&key) };
        assert_eq!(Cursor::decode(&sharded.encode(&key), &key, SystemTime::now()), Ok(sharded.clone()));
        let last = Cursor { shard: Some(Shard { end: None, base: Base::default() }), ..sample(&key) };
        assert_eq!(Cursor::decode(&last.encode(&key), &key, SystemTime::now()), Ok(last));
        // A cursor made before shards (no `x` in its body) decodes as one stream.
        let plain = sample(&key);
        let body = serde_json::to_string(&plain).unwrap();
        assert!(!body.contains("\"x\":"), "{body}");
        assert_eq!(Cursor::decode(&plain.encode(&key), &key, SystemTime::now()).unwrap().shard, None);
    }

    #[test]
    fn servers_starting_at_once_on_a_new_state_directory_agree_on_one_whole_key() {
        for _ in 0..20 {
            let tmp = tempfile::tempdir().unwrap();
            let dir = || cap_std::fs::Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
            let racers: Vec<_> = (0..4)
                .map(|_| {
                    let dir = dir();
                    std::thread::spawn(move || CursorKey::load_or_create(&dir).unwrap().to_hex())
                })
                .collect();
            let keys: Vec<String> = racers.into_iter().map(|r| r.join().unwrap()).collect();
            assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
            let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert_eq!(left, ["cursor.key"], "no draft is left behind");
            assert_eq!(CursorKey::load_or_create(&dir()).unwrap().to_hex(), keys[0], "a restart reads it");
        }
    }

    #[test]
    fn a_cursor_round_trips() {
        let key = CursorKey::random();
        let cursor = sample(&key);
        assert_eq!(Cursor::decode(&cursor.encode(&key), &key, SystemTime::now()), Ok(cursor));
    }

    #[test]
    fn every_bit_flip_is_refused() {
        let key = CursorKey::random();
        let text = sample(&key).encode(&key);
        let bytes = text.as_bytes();
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut flipped = bytes.to_vec();
                flipped[i] ^= 1 << bit;
                let Ok(flipped) = String::from_utf8(flipped) else { continue };
                assert!(Cursor::decode(&flipped, &key, SystemTime::now()).is_err(), "flip at {i}:{bit} accepted");
            }
        }
    }

    #[test]
    fn a_cursor_from_another_key_is_foreign() {
        let (ours, theirs) = (CursorKey::random(), CursorKey::random());
        let text = sample(&theirs).encode(&theirs);
        assert_eq!(Cursor::decode(&text, &ours, SystemTime::now()), Err(CursorError::Foreign));
    }

    #[test]
    fn a_key_with_zero_bytes_appended_is_another_key() {
        let ours = CursorKey::new(vec![5; 16]).unwrap();
        let padded = CursorKey::new([vec![5; 16], vec![0; 16]].concat()).unwrap();
        let text = sample(&padded).encode(&padded);
        assert!(ours.mac(b"x").finalize() == padded.mac(b"x").finalize(), "HMAC itself cannot tell them apart");
        assert_eq!(Cursor::decode(&text, &ours, SystemTime::now()), Err(CursorError::Foreign));
    }

    #[test]
    fn an_expired_cursor_is_refused() {
        let key = CursorKey::random();
        let text = sample(&key).encode(&key);
        let later = SystemTime::now() + Duration::from_secs(3600);
        assert_eq!(Cursor::decode(&text, &key, later), Err(CursorError::Expired));
    }

    #[test]
    fn garbage_is_malformed() {
        let key = CursorKey::random();
        for text in ["", "c1.", "c1.abc", "c2.abc.def", "c1.!!.??"] {
            assert_eq!(Cursor::decode(text, &key, SystemTime::now()), Err(CursorError::Malformed), "{text}");
        }
    }

    #[test]
    fn short_or_non_hex_keys_are_refused() {
        assert!(CursorKey::from_hex("abcd").is_err());
        assert!(CursorKey::from_hex("zz".repeat(16).as_str()).is_err());
        let key = CursorKey::random();
        assert_eq!(CursorKey::from_hex(&key.to_hex()).unwrap().id, key.id);
    }
}
