//! Why no page came back: the call's own failure, a refused cursor, or a
//! handle store that could not be read.

use super::cursor::CursorError;
use crate::runtime::CallFailure;

/// Why no page came back.
#[derive(Debug)]
pub enum PageError {
    /// The call failed (the tool's error, a trap, a limit).
    Call(CallFailure),
    /// The cursor (or handle) was refused.
    Cursor(CursorError),
    /// The handle store could not be read.
    Store(std::io::Error),
}

impl From<CallFailure> for PageError {
    fn from(f: CallFailure) -> Self {
        PageError::Call(f)
    }
}

impl From<CursorError> for PageError {
    fn from(e: CursorError) -> Self {
        PageError::Cursor(e)
    }
}
