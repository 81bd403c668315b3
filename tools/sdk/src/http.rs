//! wasi:http for tools that send requests: what the host's errors mean.
//!
//! A failure while a response body is read reaches the guest as a stream
//! error, and wasmtime-wasi-http 48 (Cordon's host) gives no error code for
//! it (`http-error-code` answers `none`): only its text, e.g. "HTTP response
//! body size exceeds limit: 100 bytes" when the call's `max-net-bytes-in` is
//! reached. [`recognise`] turns such a text back into the code it states, so
//! a tool can tell a limit of the host from a broken connection.

use wasip2::http::types::ErrorCode as HttpError;

/// A constructor of an error code from the limit the text gives, if any.
type Make = fn(Option<u64>) -> HttpError;

/// The codes a stream error's text may state: wasmtime-wasi-http's words for
/// them, their variant names, and how to make them.
const KNOWN: &[(&str, &str, Make)] = &[
    ("HTTP response body size exceeds limit", "HttpResponseBodySize", HttpError::HttpResponseBodySize),
    ("HTTP request body size exceeds limit", "HttpRequestBodySize", HttpError::HttpRequestBodySize),
    ("connection limit reached", "ConnectionLimitReached", |_| HttpError::ConnectionLimitReached),
    ("HTTP request denied", "HttpRequestDenied", |_| HttpError::HttpRequestDenied),
    ("destination IP address is prohibited", "DestinationIpProhibited", |_| HttpError::DestinationIpProhibited),
    ("connection timeout", "ConnectionTimeout", |_| HttpError::ConnectionTimeout),
    ("connection read timeout", "ConnectionReadTimeout", |_| HttpError::ConnectionReadTimeout),
    ("connection write timeout", "ConnectionWriteTimeout", |_| HttpError::ConnectionWriteTimeout),
    ("HTTP response timeout", "HttpResponseTimeout", |_| HttpError::HttpResponseTimeout),
    ("connection terminated", "ConnectionTerminated", |_| HttpError::ConnectionTerminated),
    ("incomplete HTTP response", "HttpResponseIncomplete", |_| HttpError::HttpResponseIncomplete),
];

/// The wasi:http error code an error's text states, in wasmtime-wasi-http's
/// words ("HTTP response body size exceeds limit: 100 bytes") or as the
/// code's `Debug` form ("ErrorCode::HttpResponseBodySize(Some(100))"), with
/// its limit; `None` for any other text.
pub fn recognise(text: &str) -> Option<HttpError> {
    let first = text.lines().next().unwrap_or_default().trim();
    let named = first.strip_prefix("ErrorCode::").unwrap_or(first);
    let (_, _, make) = KNOWN.iter().find(|(words, variant, _)| {
        first.starts_with(words)
            || named.strip_prefix(variant).is_some_and(|rest| rest.is_empty() || rest.starts_with('('))
    })?;
    let digits: String = first.chars().filter(char::is_ascii_digit).collect();
    Some(make(digits.parse().ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_error_texts_are_recognised_with_their_limit() {
        let cases = [
            ("HTTP response body size exceeds limit: 100000 bytes", "ErrorCode::HttpResponseBodySize(Some(100000))"),
            ("HTTP request body size exceeds limit", "ErrorCode::HttpRequestBodySize(None)"),
            ("connection read timeout\n\nCaused by:\n    deadline", "ErrorCode::ConnectionReadTimeout"),
            ("connection timeout", "ErrorCode::ConnectionTimeout"),
            ("ErrorCode::HttpResponseBodySize(Some(5))", "ErrorCode::HttpResponseBodySize(Some(5))"),
            ("ConnectionLimitReached", "ErrorCode::ConnectionLimitReached"),
        ];
        for (text, debug) in cases {
            assert_eq!(recognise(text).map(|code| format!("{code:?}")).as_deref(), Some(debug), "{text}");
        }
        for other in ["hyper error: connection closed", "ConnectionTimeoutish", ""] {
            assert!(recognise(other).is_none(), "{other}");
        }
    }
}
