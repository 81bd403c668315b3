//! The running hash's state, sealed for a cursor.
//!
//! A cursor carries the SHA-256 state over every payload byte delivered, so that
//! a resumed call's hashes go on exactly. That state holds the bytes of the last
//! unfinished 64-byte block — up to 63 bytes of the file, in plaintext — and
//! cursors are kept on disk and in Redis behind handles. Sealed, the state is
//! encrypted with ChaCha20 under a key derived from the cursor key and a fresh
//! random nonce per cursor; the cursor's HMAC, over the sealed text, keeps it
//! from being altered, so no second tag is needed.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use chacha20::ChaCha20;
use chacha20::cipher::{KeyIvInit, StreamCipher};

use super::cursor::CursorKey;

/// What the encryption key is derived for (see `CursorKey::derive`).
const LABEL: &[u8] = b"cordon cursor hash-state encryption v1";
/// Bytes of the nonce that starts the sealed text.
const NONCE: usize = 12;

/// `state` encrypted under `key`: base64url of a random nonce and the ciphertext.
pub fn seal(key: &CursorKey, state: &[u8]) -> String {
    let mut nonce = [0u8; NONCE];
    getrandom::fill(&mut nonce).expect("the OS random source works");
    let mut sealed = nonce.to_vec();
    sealed.extend_from_slice(state);
    cipher(key, &nonce).apply_keystream(&mut sealed[NONCE..]);
    B64.encode(sealed)
}

/// The state `seal` sealed under `key`; `None` when `text` is not sealed text.
pub fn open(key: &CursorKey, text: &str) -> Option<Vec<u8>> {
    let sealed = B64.decode(text).ok()?;
    let (nonce, ciphertext) = sealed.split_at_checked(NONCE)?;
    let mut state = ciphertext.to_vec();
    cipher(key, nonce.try_into().ok()?).apply_keystream(&mut state);
    Some(state)
}

fn cipher(key: &CursorKey, nonce: &[u8; NONCE]) -> ChaCha20 {
    ChaCha20::new_from_slices(&key.derive(LABEL), nonce).expect("a 32-byte key and a 12-byte nonce")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_state_opens_with_its_key_only_and_shows_none_of_its_bytes() {
        let key = CursorKey::random();
        let state = b"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".to_vec();
        let sealed = seal(&key, &state);
        let raw = B64.decode(&sealed).unwrap();
        assert!(!raw.windows(8).any(|w| state.windows(8).any(|s| s == w)), "no 8 bytes of the state show");
        assert_eq!(open(&key, &sealed), Some(state.clone()));
        assert_ne!(seal(&key, &state), sealed, "a fresh nonce each time");
        assert_ne!(open(&CursorKey::random(), &sealed), Some(state));
        assert_eq!(open(&key, "!"), None);
        assert_eq!(open(&key, "AAAA"), None, "shorter than a nonce");
    }
}
