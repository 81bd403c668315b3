//! Cursors (`host/src/pager/cursor.rs`) with arbitrary contents, signed, then
//! altered: an unaltered cursor decodes to what was encoded (until it expires,
//! and only under its own key); any alteration at all is refused.

#![no_main]

use std::time::{Duration, UNIX_EPOCH};

use arbitrary::Arbitrary;
use cordon_fuzz::pager::cursor::{Cursor, CursorError, CursorKey, Heading, Shard};
use cordon_fuzz::pager::totals::Base;
use cordon_fuzz::tool::Fingerprint;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Fields {
    tool: String,
    tool_version: String,
    /// The principal that started the result.
    owner: String,
    args: String,
    resume: String,
    fingerprint: Option<(u64, u64, u64)>,
    page: u64,
    parked_id: u64,
    bytes_before: u64,
    items_before: u64,
    hash_state: String,
    compact: Option<Option<String>>,
    /// A sharded call's shard: its end, and the counts before it (`info`, totals).
    shard: Option<(Option<String>, Vec<(String, u64)>, Vec<(String, u64)>)>,
    expires: u64,
}

/// The counts of earlier shards, from arbitrary names and numbers.
fn base(info: &[(String, u64)], totals: &[(String, u64)]) -> Base {
    let object = |pairs: &[(String, u64)]| {
        serde_json::Value::Object(pairs.iter().map(|(k, v)| (k.clone(), (*v).into())).collect())
    };
    let mut base = Base::default();
    base.info.add(&object(info));
    base.totals.add(&object(totals));
    base
}

#[derive(Arbitrary, Debug)]
enum Mutation {
    Flip {
        at: usize,
        bit: u8,
    },
    Insert {
        at: usize,
        byte: u8,
    },
    Remove {
        at: usize,
    },
    Truncate {
        at: usize,
    },
    /// Swaps two bytes.
    Swap {
        a: usize,
        b: usize,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    key: [u8; 16],
    fields: Fields,
    mutations: Vec<Mutation>,
}

fn mutate(bytes: &mut Vec<u8>, m: &Mutation) {
    let n = bytes.len().max(1);
    match *m {
        Mutation::Flip { at, bit } if !bytes.is_empty() => bytes[at % n] ^= 1 << (bit % 8),
        Mutation::Insert { at, byte } => bytes.insert(at % (bytes.len() + 1), byte),
        Mutation::Remove { at } if !bytes.is_empty() => {
            bytes.remove(at % n);
        }
        Mutation::Truncate { at } => bytes.truncate(at % n),
        Mutation::Swap { a, b } if !bytes.is_empty() => bytes.swap(a % n, b % n),
        _ => {}
    }
}

fuzz_target!(|input: Input| {
    let key = CursorKey::new(input.key.to_vec()).expect("16 bytes");
    let f = input.fields;
    let cursor = Cursor {
        key_id: Cursor::key_id(&key),
        tool: f.tool,
        tool_version: f.tool_version,
        owner: f.owner,
        args: f.args,
        resume: f.resume,
        fingerprint: f.fingerprint.map(|(size, mtime_ns, identity)| Fingerprint { size, mtime_ns, identity }),
        page: f.page,
        parked_id: f.parked_id,
        bytes_before: f.bytes_before,
        items_before: f.items_before,
        hash_state: f.hash_state,
        compact: f.compact.map(|line| Heading { line }),
        shard: f.shard.map(|(end, info, totals)| Shard { end, base: base(&info, &totals) }),
        expires: f.expires,
    };
    let text = cursor.encode(&key);
    assert_eq!(Cursor::decode(&text, &key, UNIX_EPOCH), Ok(cursor.clone()), "a cursor round-trips");
    if let Some(later) = cursor.expires.checked_add(1).and_then(|s| UNIX_EPOCH.checked_add(Duration::from_secs(s))) {
        assert_eq!(Cursor::decode(&text, &key, later), Err(CursorError::Expired));
    }
    // Another key, and the same key with a zero byte appended (which HMAC
    // alone cannot tell apart): both refuse the cursor as foreign.
    let mut flipped = input.key.to_vec();
    flipped[0] ^= 1;
    let other = CursorKey::new(flipped).expect("16 bytes");
    let padded = CursorKey::new([&input.key[..], &[0]].concat()).expect("17 bytes");
    for key in [&other, &padded] {
        assert_eq!(Cursor::decode(&text, key, UNIX_EPOCH), Err(CursorError::Foreign), "another key's cursor");
    }
    // Signed by another key but claiming this one: tampered.
    let forged = Cursor { key_id: Cursor::key_id(&key), ..cursor.clone() }.encode(&other);
    assert_eq!(Cursor::decode(&forged, &key, UNIX_EPOCH), Err(CursorError::Tampered));

    let mut bytes = text.clone().into_bytes();
    for m in &input.mutations {
        mutate(&mut bytes, m);
    }
    let Ok(altered) = String::from_utf8(bytes) else { return };
    let decoded = Cursor::decode(&altered, &key, UNIX_EPOCH);
    if altered == text {
        assert_eq!(decoded, Ok(cursor));
    } else {
        assert!(decoded.is_err(), "an altered cursor verified: {altered}");
    }
});
