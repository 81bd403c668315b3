//! The needles a search hands the host's `scan.read-head-seeking`: their
//! bounds, checked the same way by the host and by the SDK's native stand-in.

/// The most needles one call takes.
pub const MAX_NEEDLES: usize = 16;
/// The longest needle, in bytes.
pub const MAX_NEEDLE: usize = 256;

/// Checks `needles` against the bounds: 1 to [`MAX_NEEDLES`], each of 1 to
/// [`MAX_NEEDLE`] bytes; the sentence saying what is wrong otherwise.
pub fn check_needles(needles: &[Vec<u8>]) -> Result<(), String> {
    if needles.is_empty() || needles.len() > MAX_NEEDLES {
        return Err(format!("{} needles given: 1 to {MAX_NEEDLES} are looked for", needles.len()));
    }
    match needles.iter().find(|n| n.is_empty() || n.len() > MAX_NEEDLE) {
        Some(bad) => Err(format!("a needle of {} bytes: each holds 1 to {MAX_NEEDLE}", bad.len())),
        None => Ok(()),
    }
}
