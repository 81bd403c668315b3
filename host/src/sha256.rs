//! SHA-256 of every byte a page or an upload carries, on OpenSSL's block
//! code, with a state that a cursor can carry between pages.
//!
//! Why not `sha2`: on x86 without the SHA extensions it has no vector code,
//! and hashed at half OpenSSL's speed (1.40 s against 0.69 s for 256 MiB on
//! the bench machine), which made hashing two thirds of a paged read. `ring`
//! is as fast but keeps its state private, and a continuation must carry the
//! running hash to another page, process or replica. OpenSSL's `SHA256_CTX`
//! is a plain structure: its eight words, its bit count and its partial block
//! map one to one onto the state `sha2` serializes, so a state is written in
//! `sha2`'s layout (cursors sealed before this module still resume) and
//! either implementation reads what the other wrote.

use std::fmt;

use openssl_sys::{SHA256_CTX, SHA256_Final, SHA256_Init, SHA256_Update};

/// The bytes of a serialized state: eight state words, the blocks hashed,
/// then the partial block as its length and 63 bytes (zero past the length).
pub const STATE_LEN: usize = 32 + 8 + 1 + 63;

/// The bytes of one block.
const BLOCK: u64 = 64;

/// A running SHA-256.
#[derive(Clone)]
pub struct Sha256 {
    ctx: SHA256_CTX,
}

impl Sha256 {
    pub fn new() -> Sha256 {
        // SAFETY: `SHA256_CTX` is plain integers, for which zero is a valid
        // value; `SHA256_Init` then sets it to the initial state.
        let mut ctx: SHA256_CTX = unsafe { std::mem::zeroed() };
        // SAFETY: `ctx` is a valid, exclusively borrowed context.
        let ok = unsafe { SHA256_Init(&mut ctx) };
        debug_assert_eq!(ok, 1, "SHA256_Init cannot fail");
        Sha256 { ctx }
    }

    /// The SHA-256 of `bytes`.
    pub fn digest(bytes: &[u8]) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(bytes);
        hasher.finalize()
    }

    pub fn update(&mut self, bytes: &[u8]) {
        // SAFETY: `ctx` is initialised and exclusively borrowed; `bytes` is
        // valid for `bytes.len()` bytes.
        let ok = unsafe { SHA256_Update(&mut self.ctx, bytes.as_ptr().cast(), bytes.len()) };
        debug_assert_eq!(ok, 1, "SHA256_Update cannot fail");
    }

    pub fn finalize(mut self) -> [u8; 32] {
        let mut out = [0u8; 32];
        // SAFETY: `out` holds the 32 bytes of a SHA-256 digest.
        let ok = unsafe { SHA256_Final(out.as_mut_ptr(), &mut self.ctx) };
        debug_assert_eq!(ok, 1, "SHA256_Final cannot fail");
        out
    }

    /// The SHA-256 of `bytes` in lowercase hex.
    pub fn hex(bytes: &[u8]) -> String {
        hex(&Sha256::digest(bytes))
    }

    /// The state, in `sha2`'s layout.
    pub fn serialize(&self) -> [u8; STATE_LEN] {
        let mut out = [0u8; STATE_LEN];
        for (word, to) in self.ctx.h.iter().zip(out.chunks_exact_mut(4)) {
            to.copy_from_slice(&word.to_le_bytes());
        }
        let pending = self.ctx.num as usize;
        let bytes = self.bit_count() / 8;
        out[32..40].copy_from_slice(&((bytes - pending as u64) / BLOCK).to_le_bytes());
        out[40] = pending as u8;
        out[41..41 + pending].copy_from_slice(&self.pending()[..pending]);
        out
    }

    /// A state `serialize` (or `sha2`) wrote; `None` if it is not one.
    pub fn deserialize(state: &[u8]) -> Option<Sha256> {
        let state: &[u8; STATE_LEN] = state.try_into().ok()?;
        let blocks = u64::from_le_bytes(state[32..40].try_into().ok()?);
        let pending = usize::from(state[40]);
        if pending as u64 >= BLOCK || state[41 + pending..].iter().any(|b| *b != 0) {
            return None;
        }
        // The length in bits must fit the 64 bits SHA-256 appends.
        let bits = blocks.checked_mul(BLOCK)?.checked_add(pending as u64)?.checked_mul(8)?;
        let mut hasher = Sha256::new();
        for (word, from) in hasher.ctx.h.iter_mut().zip(state[..32].chunks_exact(4)) {
            *word = u32::from_le_bytes(from.try_into().ok()?);
        }
        hasher.ctx.Nl = bits as u32;
        hasher.ctx.Nh = (bits >> 32) as u32;
        hasher.ctx.num = pending as u32;
        hasher.pending_mut()[..pending].copy_from_slice(&state[41..41 + pending]);
        Some(hasher)
    }

    fn bit_count(&self) -> u64 {
        u64::from(self.ctx.Nh) << 32 | u64::from(self.ctx.Nl)
    }

    /// The partial block, which OpenSSL keeps as bytes in its words.
    fn pending(&self) -> &[u8] {
        let data = &self.ctx.data;
        // SAFETY: the words are initialised and any byte is a valid `u8`.
        unsafe { std::slice::from_raw_parts(data.as_ptr().cast(), std::mem::size_of_val(data)) }
    }

    fn pending_mut(&mut self) -> &mut [u8] {
        let data = &mut self.ctx.data;
        // SAFETY: as in `pending`, borrowed exclusively.
        unsafe { std::slice::from_raw_parts_mut(data.as_mut_ptr().cast(), std::mem::size_of_val(data)) }
    }
}

/// A digest in lowercase hex (`hex::encode` goes a char at a time, which
/// showed in the profile of pages of a thousand small items).
pub fn hex(digest: &[u8; 32]) -> String {
    let mut out = Vec::with_capacity(64);
    hex_into(digest, &mut out);
    String::from_utf8(out).expect("hex digits are ASCII")
}

/// Appends a digest in lowercase hex to `out`.
pub fn hex_into(digest: &[u8; 32], out: &mut Vec<u8>) {
    let mut digits = [0u8; 64];
    hex::encode_to_slice(digest, &mut digits).expect("32 bytes are 64 hex digits");
    out.extend_from_slice(&digits);
}

impl Default for Sha256 {
    fn default() -> Sha256 {
        Sha256::new()
    }
}

impl fmt::Debug for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sha256").field("bytes", &(self.bit_count() / 8)).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use sha2::Digest as _;
    use sha2::digest::common::hazmat::{SerializableState as _, SerializedState};

    use super::*;

    /// Bytes that are not periodic in the block length.
    fn sample(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn digests_match_sha2_and_the_standard_vectors_whatever_the_pieces() {
        assert_eq!(
            hex::encode(Sha256::digest(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex::encode(Sha256::digest(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let bytes = sample(10_000);
        for piece in [1, 3, 63, 64, 65, 1000, 10_000] {
            let mut ours = Sha256::new();
            bytes.chunks(piece).for_each(|p| ours.update(p));
            assert_eq!(ours.finalize()[..], sha2::Sha256::digest(&bytes)[..], "pieces of {piece}");
        }
    }

    #[test]
    fn a_state_written_by_either_implementation_is_read_by_the_other() {
        let bytes = sample(3_000);
        for at in [0, 1, 63, 64, 65, 127, 128, 1000, 2999] {
            let (head, tail) = bytes.split_at(at);
            let want = sha2::Sha256::digest(&bytes);

            // Ours to sha2, byte for byte the same state.
            let mut ours = Sha256::new();
            ours.update(head);
            let mut theirs = sha2::Sha256::new();
            theirs.update(head);
            let written = ours.serialize();
            assert_eq!(written[..], theirs.serialize()[..], "state after {at} bytes");
            let state = SerializedState::<sha2::Sha256>::try_from(&written[..]).unwrap();
            let mut resumed = sha2::Sha256::deserialize(&state).unwrap();
            resumed.update(tail);
            assert_eq!(resumed.finalize()[..], want[..], "sha2 resumed after {at}");

            // sha2's to ours.
            let mut resumed = Sha256::deserialize(&theirs.serialize()).unwrap();
            resumed.update(tail);
            assert_eq!(resumed.finalize()[..], want[..], "ours resumed after {at}");
        }
    }

    #[test]
    fn a_state_that_is_not_one_is_refused() {
        let mut hasher = Sha256::new();
        hasher.update(b"hello");
        let good = hasher.serialize();
        assert!(Sha256::deserialize(&good).is_some());
        assert!(Sha256::deserialize(&good[..STATE_LEN - 1]).is_none(), "short");
        let mut long_pending = good;
        long_pending[40] = 64;
        assert!(Sha256::deserialize(&long_pending).is_none(), "a partial block of a whole block");
        let mut dirty = good;
        dirty[STATE_LEN - 1] = 1;
        assert!(Sha256::deserialize(&dirty).is_none(), "bytes past the partial block");
        let mut huge = good;
        huge[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(Sha256::deserialize(&huge).is_none(), "more bits than SHA-256 counts");
    }
}
