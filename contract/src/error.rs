//! Why a call failed: the WIT `error-code` and `error`.

use std::{fmt, io};

/// Why a tool call failed (WIT `error-code`). The list is flat and closed so
/// that a host can map every code to a protocol answer without reading the
/// message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// An argument is missing, malformed, or out of range.
    InvalidArgument,
    /// The path or item named by the arguments does not exist.
    NotFound,
    /// The path is outside every root the tool was granted, or the grant does
    /// not allow the access.
    PermissionDenied,
    /// A precondition given by the caller (such as an expected hash) did not hold.
    Conflict,
    /// An input or output exceeds a limit of the tool or the host.
    TooLarge,
    /// What is being paged changed since the position being resumed was made.
    Stale,
    /// The filesystem reported an error not covered by another code.
    Io,
    /// The request is well formed but asks for something this tool cannot do.
    Unsupported,
    /// The tool hit a bug of its own.
    Internal,
}

impl ErrorCode {
    /// Every code in WIT declaration order, which is also the discriminant
    /// order of the enums both bindings generate: `ALL[wit as usize]` converts
    /// a generated code (a unit test checks the order against `wit/tool.wit`).
    pub const ALL: [ErrorCode; 9] = [
        ErrorCode::InvalidArgument,
        ErrorCode::NotFound,
        ErrorCode::PermissionDenied,
        ErrorCode::Conflict,
        ErrorCode::TooLarge,
        ErrorCode::Stale,
        ErrorCode::Io,
        ErrorCode::Unsupported,
        ErrorCode::Internal,
    ];

    /// The code as clients see it in `structuredContent.error.code`: the WIT
    /// name in snake case.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "invalid_argument",
            ErrorCode::NotFound => "not_found",
            ErrorCode::PermissionDenied => "permission_denied",
            ErrorCode::Conflict => "conflict",
            ErrorCode::TooLarge => "too_large",
            ErrorCode::Stale => "stale",
            ErrorCode::Io => "io",
            ErrorCode::Unsupported => "unsupported",
            ErrorCode::Internal => "internal",
        }
    }
}

/// A failed call (WIT `error`): a code for programs and a sentence for people,
/// as the tool (or the host on its behalf) reports it to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// What kind of failure this is.
    pub code: ErrorCode,
    /// One or two sentences saying what went wrong and, where possible, what to
    /// do instead; never file content.
    pub message: String,
}

/// The longest message a tool sends to the host. A message is for people; one
/// that echoes a huge argument (a 70 KB path) is cut, so it never meets the
/// host's limit on what a tool may return.
pub const MAX_MESSAGE_BYTES: usize = 4096;

impl ToolError {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ToolError { code, message: message.into() }
    }

    /// Maps a filesystem error on `what` (e.g. a quoted path) to the closest
    /// code, with a sentence.
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
        ToolError::new(code, format!("{what} {says}"))
    }

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
}

/// `code: message`, the code as [`ErrorCode::as_str`] names it.
impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cases of the WIT enum `name`, in declaration order, in snake case.
    fn wit_cases(name: &str) -> Vec<String> {
        let wit = include_str!("../../wit/tool.wit");
        let body = wit.split(&format!("enum {name} {{")).nth(1).expect("the enum is in wit/tool.wit");
        let body = body.split('}').next().unwrap();
        body.lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with("//"))
            .map(|line| line.trim_end_matches(',').replace('-', "_"))
            .collect()
    }

    #[test]
    fn all_lists_every_code_in_wit_order_by_its_client_name() {
        let ours: Vec<&str> = ErrorCode::ALL.iter().map(|code| code.as_str()).collect();
        assert_eq!(ours, wit_cases("error-code"));
        for (i, code) in ErrorCode::ALL.into_iter().enumerate() {
            assert_eq!(code as usize, i, "{code:?}");
        }
    }

    #[test]
    fn a_message_echoing_a_huge_argument_is_cut_on_a_character_boundary() {
        let long = ToolError::new(ErrorCode::NotFound, format!("`{}` does not exist", "é".repeat(40_000)));
        let message = long.bounded_message();
        assert!(message.len() <= MAX_MESSAGE_BYTES, "{}", message.len());
        assert!(message.ends_with("[message cut from 80017 bytes]"), "{}", &message[message.len() - 60..]);
        assert_eq!(ToolError::new(ErrorCode::Io, "short").bounded_message(), "short");
    }

    #[test]
    fn an_error_shows_as_its_code_and_message() {
        assert_eq!(ToolError::new(ErrorCode::TooLarge, "too big").to_string(), "too_large: too big");
        let gone = ToolError::io("`a`", &io::Error::from(io::ErrorKind::NotFound));
        assert_eq!((gone.code, gone.message.as_str()), (ErrorCode::NotFound, "`a` does not exist"));
    }
}
