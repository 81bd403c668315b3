//! The tool's errors, mirroring the WIT `error-code` one to one.

use std::io;

/// Why a call failed; see `wit/tool.wit` for the meaning of each code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Conflict,
    TooLarge,
    Stale,
    Io,
    Unsupported,
    Internal,
}

/// A failed call: a code and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: ErrorCode,
    pub message: String,
}

impl Error {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error { code, message: message.into() }
    }

    /// Maps a filesystem error on `what` to the closest code, with a sentence.
    pub fn io(what: &str, err: &io::Error) -> Self {
        let (code, says) = match err.kind() {
            io::ErrorKind::NotFound => (ErrorCode::NotFound, "does not exist".to_string()),
            io::ErrorKind::PermissionDenied => (
                ErrorCode::PermissionDenied,
                "cannot be opened: access denied, or a symlink on the way leads outside the granted roots".to_string(),
            ),
            io::ErrorKind::IsADirectory => (ErrorCode::InvalidArgument, "is a directory, not a file".to_string()),
            io::ErrorKind::InvalidData => (ErrorCode::Io, format!("could not be read: {err}")),
            _ => (ErrorCode::Io, format!("could not be accessed: {err}")),
        };
        Error::new(code, format!("{what} {says}"))
    }
}
