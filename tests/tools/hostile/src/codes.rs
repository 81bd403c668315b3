//! How the network behaviours report a failed request: the tool error code
//! for a wasi:http error code, and the message holding the code's `Debug`
//! form.
//!
//! A failure reading a response body has only a text; the SDK's
//! [`recognise`] turns it back into the code it states.

use cordon_sdk::http::recognise;
use wasip2::http::types::ErrorCode as HttpError;

/// The tool error code a failure becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// The host refused the destination (`HttpRequestDenied`,
    /// `DestinationIpProhibited`).
    PermissionDenied,
    /// A limit of the host (`ConnectionLimitReached`, `HttpRequestBodySize`,
    /// `HttpResponseBodySize`).
    TooLarge,
    /// Anything else.
    Io,
}

impl Code {
    /// The code for wasi:http's `code`.
    pub fn of(code: &HttpError) -> Code {
        match code {
            HttpError::HttpRequestDenied | HttpError::DestinationIpProhibited => Code::PermissionDenied,
            HttpError::ConnectionLimitReached
            | HttpError::HttpRequestBodySize(_)
            | HttpError::HttpResponseBodySize(_) => Code::TooLarge,
            _ => Code::Io,
        }
    }
}

/// A failed request.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The tool error code it becomes.
    pub code: Code,
    /// wasi:http's error code as Rust's `Debug` prints it (e.g.
    /// `ErrorCode::HttpRequestDenied`), or, when there is none, what the
    /// error said.
    pub debug: String,
    /// `<what> failed: <debug>`, and the error's own text when the code was
    /// recognised in it.
    pub message: String,
}

impl Failure {
    /// `what` (e.g. `GET <url>`) failed with wasi:http's `code`.
    pub fn http(what: &str, code: &HttpError) -> Failure {
        Failure::new(Code::of(code), what, format!("{code:?}"))
    }

    /// `what` failed with an error that has only a text: the code the text
    /// states if [`recognise`] knows it, else io.
    pub fn from_text(what: &str, text: &str) -> Failure {
        match recognise(text) {
            Some(code) => {
                let mut failure = Failure::http(what, &code);
                failure.message = format!("{} (the stream said: {})", failure.message, text.trim());
                failure
            }
            None => Failure::other(what, text.trim().to_string()),
        }
    }

    /// `what` failed in a way no error code names: io.
    pub fn other(what: &str, debug: String) -> Failure {
        Failure::new(Code::Io, what, debug)
    }

    /// A failure of `what` with `code`, described by `debug`.
    fn new(code: Code, what: &str, debug: String) -> Failure {
        Failure { code, message: format!("{what} failed: {debug}"), debug }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_tool_errors() {
        assert_eq!(Code::of(&HttpError::HttpRequestDenied), Code::PermissionDenied);
        assert_eq!(Code::of(&HttpError::DestinationIpProhibited), Code::PermissionDenied);
        assert_eq!(Code::of(&HttpError::ConnectionLimitReached), Code::TooLarge);
        assert_eq!(Code::of(&HttpError::HttpRequestBodySize(Some(1))), Code::TooLarge);
        assert_eq!(Code::of(&HttpError::HttpResponseBodySize(None)), Code::TooLarge);
        assert_eq!(Code::of(&HttpError::ConnectionRefused), Code::Io);
        assert_eq!(Code::of(&HttpError::HttpResponseTimeout), Code::Io);
    }

    #[test]
    fn messages_hold_the_debug_form() {
        let failure = Failure::http("GET http://127.0.0.1:1/", &HttpError::HttpRequestDenied);
        assert_eq!(failure.debug, "ErrorCode::HttpRequestDenied");
        assert_eq!(failure.message, "GET http://127.0.0.1:1/ failed: ErrorCode::HttpRequestDenied");
    }

    #[test]
    fn stream_error_texts_are_recognised() {
        let said = "HTTP response body size exceeds limit: 100000 bytes";
        let failure = Failure::from_text("GET u", said);
        assert_eq!(failure.code, Code::TooLarge);
        assert_eq!(failure.debug, "ErrorCode::HttpResponseBodySize(Some(100000))");
        assert!(failure.message.contains("HttpResponseBodySize") && failure.message.contains(said), "{failure:?}");
        let failure = Failure::from_text("GET u", "something odd");
        assert_eq!((failure.code, failure.debug.as_str()), (Code::Io, "something odd"));
    }
}
