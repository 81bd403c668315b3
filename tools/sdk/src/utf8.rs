//! Text or bytes: a run of a file or a body cut into the longest valid UTF-8
//! text, or, where the bytes are not UTF-8, the run of those bytes as they
//! are, so a tool returns text where it can and never a replacement character.

// `std::str::from_utf8`'s drop-in, with SIMD where the target has it.
use simdutf8::compat::from_utf8;

/// What one chunk holds: text, or bytes that are not UTF-8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Valid UTF-8.
    Text(String),
    /// Bytes that are not valid UTF-8, as they came.
    Bytes(Vec<u8>),
}

impl Piece {
    /// The payload's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Piece::Text(text) => text.as_bytes(),
            Piece::Bytes(bytes) => bytes,
        }
    }
}

/// The longest text prefix of `bytes`, or, when it starts with bytes that are
/// not UTF-8, the run of such bytes; and how many bytes that is. An
/// unfinished character at the end of `bytes` is left for the next call,
/// unless `complete` says nothing follows (then it is returned as bytes).
pub fn split_valid(bytes: &[u8], complete: bool) -> (Piece, usize) {
    match from_utf8(bytes) {
        Ok(text) => (Piece::Text(text.to_owned()), bytes.len()),
        Err(e) if e.valid_up_to() > 0 => {
            let valid = e.valid_up_to();
            let text = from_utf8(&bytes[..valid]).expect("checked prefix");
            (Piece::Text(text.to_owned()), valid)
        }
        Err(_) => {
            let mut used = 0;
            while used < bytes.len() {
                match from_utf8(&bytes[used..]) {
                    Err(e) if e.valid_up_to() == 0 => match e.error_len() {
                        Some(n) => used += n,
                        None if complete || used == 0 => used = bytes.len(),
                        None => break,
                    },
                    _ => break,
                }
            }
            (Piece::Bytes(bytes[..used].to_vec()), used)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_runs_and_byte_runs_are_cut_where_utf8_starts_and_stops() {
        assert_eq!(split_valid("añb".as_bytes(), false), (Piece::Text("añb".into()), 4));
        assert_eq!(split_valid(b"ok \xff\xfe then", false), (Piece::Text("ok ".into()), 3));
        assert_eq!(split_valid(b"\xff\xfe then", false), (Piece::Bytes(vec![0xff, 0xfe]), 2));
        // An unfinished character: left for later, unless nothing follows.
        assert_eq!(split_valid(b"a\xc3", false), (Piece::Text("a".into()), 1));
        assert_eq!(split_valid(b"\xc3", true), (Piece::Bytes(vec![0xc3]), 1));
        assert_eq!(split_valid(b"\xc3", false), (Piece::Bytes(vec![0xc3]), 1));
        assert_eq!(Piece::Text("x".into()).as_bytes(), b"x");
    }

    #[test]
    fn the_simd_check_finds_what_std_finds_in_long_and_broken_text() {
        // Long enough for the vector loops, with every kind of flaw at every
        // offset of a 64-byte window: cut characters, overlong forms,
        // surrogates, code points past U+10FFFF, stray continuation bytes.
        let text = "line ünïcödé ✓ 𝄞 and plain ASCII to fill the vector lanes....\n".repeat(8);
        let flaws: [&[u8]; 7] =
            [b"\xc3", b"\xe2\x9c", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80", b"\xff"];
        for flaw in flaws {
            for at in 0..64 {
                let mut bytes = text.as_bytes().to_vec();
                let at = 300 + at;
                bytes.splice(at..at, flaw.iter().copied());
                for end in [bytes.len(), at + 1, at + flaw.len()] {
                    let input = &bytes[..end];
                    let (ours, theirs) = (from_utf8(input), std::str::from_utf8(input));
                    let ours = ours.map_err(|e| (e.valid_up_to(), e.error_len()));
                    let theirs = theirs.map_err(|e| (e.valid_up_to(), e.error_len()));
                    assert_eq!(ours, theirs, "{flaw:x?} at {at}, {end} bytes");
                }
            }
        }
    }
}
