//! Cursor decoding (`host/src/pager/cursor.rs`) on arbitrary text: it never
//! panics, and whatever verifies is exactly a cursor this key made (it encodes
//! back to the same text). The seeds are cursors signed with the fuzz key.

#![no_main]

use std::time::{Duration, UNIX_EPOCH};

use cordon_fuzz::pager::cursor::{Cursor, CursorKey};
use libfuzzer_sys::fuzz_target;

/// The key the seed cursors in `fuzz/corpus/cursor` are signed with.
pub const FUZZ_KEY: [u8; 32] = [7; 32];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let key = CursorKey::new(FUZZ_KEY.to_vec()).expect("32 bytes");
    let other = CursorKey::new(vec![8; 32]).expect("32 bytes");
    if let Ok(cursor) = Cursor::decode(text, &key, UNIX_EPOCH) {
        assert_eq!(cursor.encode(&key), text, "a cursor verified that this key did not make");
        if let Some(later) = cursor.expires.checked_add(1).and_then(|s| UNIX_EPOCH.checked_add(Duration::from_secs(s)))
        {
            assert!(Cursor::decode(text, &key, later).is_err(), "an expired cursor verified");
        }
    }
    assert!(Cursor::decode(text, &other, UNIX_EPOCH).is_err(), "another key verified it");
});
