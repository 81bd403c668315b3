//! wasi:http's error codes as the tool's errors: a code a program can act on
//! and a sentence naming the URL.
//!
//! A failure reading a response body has only a text; the SDK's
//! [`recognise`] turns it back into the code it states.

use cordon_sdk::http::recognise;
use cordon_sdk::{Error, ErrorCode};
use wasip2::http::types::ErrorCode as HttpError;

/// A wasi:http error code's name and fields, as Rust's `Debug` prints it
/// without the enum's name: `HttpRequestDenied`, `HttpResponseBodySize(Some(1024))`.
pub fn debug_form(code: &HttpError) -> String {
    let debug = format!("{code:?}");
    debug.strip_prefix("ErrorCode::").map(str::to_string).unwrap_or(debug)
}

/// The tool's error for a request to `url` that failed with `code`:
/// refusals by the host are permission-denied, its limits too-large, a name
/// that does not resolve not-found, and everything else io.
pub fn from_http(code: &HttpError, url: &str) -> Error {
    let debug = debug_form(code);
    let (kind, sentence) = match code {
        HttpError::HttpRequestDenied => (
            ErrorCode::PermissionDenied,
            format!(
                "the host refused the request to {url}: the tool has no network grant for this destination \
                 (install it with `--grant net:<scheme>://<host>`)"
            ),
        ),
        HttpError::DestinationIpProhibited => (
            ErrorCode::PermissionDenied,
            format!(
                "the host refused the request to {url}: its address is loopback, private or a metadata service, \
                 which only a grant naming it literally allows"
            ),
        ),
        HttpError::ConnectionLimitReached => (
            ErrorCode::TooLarge,
            format!("the request to {url} is over the call's limit on requests: make fewer in one call"),
        ),
        HttpError::HttpRequestBodySize(limit) => (
            ErrorCode::TooLarge,
            format!("the request to {url} is over the call's limit on bytes sent{}", limit_of(*limit)),
        ),
        HttpError::HttpResponseBodySize(limit) => (
            ErrorCode::TooLarge,
            format!(
                "the response from {url} is over the call's limit on bytes received{}: ask for less",
                limit_of(*limit)
            ),
        ),
        HttpError::ConnectionTimeout
        | HttpError::ConnectionReadTimeout
        | HttpError::ConnectionWriteTimeout
        | HttpError::HttpResponseTimeout
        | HttpError::DnsTimeout => {
            (ErrorCode::Io, format!("the request to {url} timed out (the call's deadline, or the server's)"))
        }
        HttpError::DnsError(_) | HttpError::DestinationNotFound => {
            (ErrorCode::NotFound, format!("the host name of {url} does not resolve"))
        }
        HttpError::ConnectionRefused => (ErrorCode::Io, format!("the server of {url} refused the connection")),
        HttpError::DestinationUnavailable | HttpError::DestinationIpUnroutable => {
            (ErrorCode::Io, format!("the server of {url} cannot be reached"))
        }
        HttpError::ConnectionTerminated | HttpError::HttpResponseIncomplete => {
            (ErrorCode::Io, format!("the connection to {url} ended before the response did"))
        }
        HttpError::TlsProtocolError | HttpError::TlsCertificateError | HttpError::TlsAlertReceived(_) => {
            (ErrorCode::Io, format!("the TLS connection to {url} failed"))
        }
        _ => (ErrorCode::Io, format!("the request to {url} failed")),
    };
    Error::new(kind, format!("{sentence} ({debug})"))
}

/// The tool's error for a response body from `url` that failed to read:
/// from wasi:http's `code` when it gave one, else from the code `text` (the
/// stream error's own words) states, else io with the text.
pub fn from_stream(code: Option<HttpError>, text: &str, url: &str) -> Error {
    let text = text.trim();
    match code {
        Some(code) => from_http(&code, url),
        None => match recognise(text) {
            Some(code) => from_http(&code, url),
            None => Error::new(ErrorCode::Io, format!("reading the response from {url} failed: {text}")),
        },
    }
}

/// ` of N bytes` for a known limit, else nothing.
fn limit_of(limit: Option<u64>) -> String {
    limit.map(|n| format!(" of {n} bytes")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The URL the errors name.
    const URL: &str = "https://api.example.com/v1";

    /// Checks that `code` maps to `kind`, and that the message names the URL, says `says` and
    /// ends with the debug form.
    fn check(code: HttpError, kind: ErrorCode, says: &str) {
        let err = from_http(&code, URL);
        assert_eq!(err.code, kind, "{code:?}: {}", err.message);
        assert!(err.message.contains(URL), "{}", err.message);
        assert!(err.message.contains(says), "{code:?}: {}", err.message);
        assert!(err.message.contains(&format!("({})", debug_form(&code))), "{}", err.message);
    }

    #[test]
    fn the_debug_form_is_the_variant_with_its_fields() {
        assert_eq!(debug_form(&HttpError::HttpRequestDenied), "HttpRequestDenied");
        assert_eq!(debug_form(&HttpError::HttpResponseBodySize(Some(1024))), "HttpResponseBodySize(Some(1024))");
        assert_eq!(debug_form(&HttpError::InternalError(Some("boom".into()))), "InternalError(Some(\"boom\"))");
    }

    #[test]
    fn body_stream_errors_are_recognised_from_their_text() {
        let said = "HTTP response body size exceeds limit: 100000 bytes";
        let err = from_stream(None, said, URL);
        assert_eq!(err.code, ErrorCode::TooLarge);
        assert!(
            err.message.contains("(HttpResponseBodySize(Some(100000)))") && err.message.contains(URL),
            "{}",
            err.message
        );
        let err = from_stream(None, "connection read timeout\n\nCaused by:\n    the deadline", URL);
        assert_eq!(err.code, ErrorCode::Io);
        assert!(
            err.message.contains("timed out") && err.message.ends_with("(ConnectionReadTimeout)"),
            "{}",
            err.message
        );
        let err = from_stream(Some(HttpError::HttpRequestDenied), "whatever", URL);
        assert_eq!(err.code, ErrorCode::PermissionDenied);
        let err = from_stream(None, "hyper error: connection closed", URL);
        assert_eq!(err.code, ErrorCode::Io);
        assert_eq!(err.message, format!("reading the response from {URL} failed: hyper error: connection closed"));
        let debug = |text: &str| recognise(text).map(|code| debug_form(&code));
        assert_eq!(debug("ErrorCode::HttpRequestBodySize(Some(7))").as_deref(), Some("HttpRequestBodySize(Some(7))"));
        assert_eq!(debug("HTTP request body size exceeds limit").as_deref(), Some("HttpRequestBodySize(None)"));
        assert_eq!(debug("ConnectionLimitReached").as_deref(), Some("ConnectionLimitReached"));
        assert_eq!(debug("ConnectionTimeoutish"), None);
        assert_eq!(debug(""), None);
    }

    #[test]
    fn refusals_limits_and_failures_map_to_codes() {
        check(HttpError::HttpRequestDenied, ErrorCode::PermissionDenied, "the host refused the request to");
        check(HttpError::DestinationIpProhibited, ErrorCode::PermissionDenied, "the host refused the request to");
        check(HttpError::ConnectionLimitReached, ErrorCode::TooLarge, "limit on requests");
        check(HttpError::HttpRequestBodySize(Some(10)), ErrorCode::TooLarge, "bytes sent of 10 bytes");
        check(HttpError::HttpResponseBodySize(Some(5)), ErrorCode::TooLarge, "bytes received of 5 bytes");
        check(HttpError::HttpResponseBodySize(None), ErrorCode::TooLarge, "bytes received: ask");
        check(HttpError::ConnectionTimeout, ErrorCode::Io, "timed out");
        check(HttpError::HttpResponseTimeout, ErrorCode::Io, "timed out");
        check(HttpError::DestinationNotFound, ErrorCode::NotFound, "does not resolve");
        let dns = wasip2::http::types::DnsErrorPayload { rcode: Some("NXDOMAIN".into()), info_code: None };
        check(HttpError::DnsError(dns), ErrorCode::NotFound, "does not resolve");
        check(HttpError::ConnectionRefused, ErrorCode::Io, "refused the connection");
        check(HttpError::TlsCertificateError, ErrorCode::Io, "TLS");
        check(HttpError::HttpProtocolError, ErrorCode::Io, "failed (HttpProtocolError)");
        check(HttpError::InternalError(Some("x".into())), ErrorCode::Io, "failed");
    }
}
