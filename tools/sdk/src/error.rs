//! The tool's errors, mirroring the WIT `error-code` one to one.

use std::io;

/// Why a call failed; see `wit/tool.wit` for the meaning of each code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// An argument is missing, malformed, or out of range.
    InvalidArgument,
    /// The path does not exist.
    NotFound,
    /// The path is outside the roots, or access was refused.
    PermissionDenied,
    /// A caller's precondition did not hold.
    Conflict,
    /// An input or output exceeds a limit.
    TooLarge,
    /// The file changed since the resume position was made.
    Stale,
    /// Another filesystem error.
    Io,
    /// Well formed, but not something this tool can do.
    Unsupported,
    /// A bug in the tool.
    Internal,
}

/// A failed call: a code and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What kind of failure this is.
    pub code: ErrorCode,
    /// One or two sentences for people; never file content.
    pub message: String,
}

/// The longest message sent to the host. A message is for people; one that
/// echoes a huge argument (a 70 KB path) is cut, so it never meets the host's
/// limit on what a tool may return.
pub const MAX_MESSAGE_BYTES: usize = 4096;

impl Error {
    /// The message, cut to at most [`MAX_MESSAGE_BYTES`] (on a character
    /// boundary) with a note of how much was cut.
    pub fn bounded_message(self) -> String {
        let mut message = self.message;
        if message.len() > MAX_MESSAGE_BYTES {
            let cut = message.len();
            let mut end = MAX_MESSAGE_BYTES - 64;
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            message.truncate(end);
            message.push_str(&format!("… [message cut from {cut} bytes]"));
        }
        message
    }

    /// An error with `code` and `message`.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_echoing_a_huge_argument_is_cut_on_a_character_boundary() {
        let long = Error::new(ErrorCode::NotFound, format!("`{}` does not exist", "é".repeat(40_000)));
        let message = long.bounded_message();
        assert!(message.len() <= MAX_MESSAGE_BYTES, "{}", message.len());
        assert!(message.ends_with("[message cut from 80017 bytes]"), "{}", &message[message.len() - 60..]);
        assert_eq!(Error::new(ErrorCode::Io, "short").bounded_message(), "short");
    }
}
