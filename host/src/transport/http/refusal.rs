//! Why an HTTP request is refused before any session reads it, one variant a
//! reason: each knows its status, its JSON-RPC code and sentence (the body, a
//! JSON-RPC error with no id), the header HTTP asks beside it, and, for the
//! refusals the audit trail records, its reason there. The one place the
//! HTTP adapter's own refusals become responses.

use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::protocol::jsonrpc::{self, Code, ErrorObject};

/// A request refused by the HTTP adapter itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// An `Origin` that is not a loopback name.
    ForeignOrigin,
    /// A `Host` that is not a loopback name on a loopback listener (DNS rebinding).
    ForeignHost,
    /// No bearer token, or not the server's.
    BadToken,
    /// A POST whose body is not declared JSON.
    NotJson,
    /// A POST that accepts neither JSON nor an event stream.
    AcceptsNeither,
    /// A GET that does not accept an event stream.
    AcceptsNoStream,
    /// A legacy request naming a session the server does not have (any more).
    UnknownSession,
    /// A GET without a legacy session to stream.
    GetWithoutSession,
    /// A DELETE in the stateless era, which has no sessions.
    DeleteStateless,
    /// A DELETE without `Mcp-Session-Id`.
    DeleteWithoutSession,
}

impl Refusal {
    /// The HTTP status.
    pub fn status(self) -> StatusCode {
        match self {
            Refusal::ForeignOrigin | Refusal::ForeignHost => StatusCode::FORBIDDEN,
            Refusal::BadToken => StatusCode::UNAUTHORIZED,
            Refusal::NotJson => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Refusal::AcceptsNeither | Refusal::AcceptsNoStream => StatusCode::NOT_ACCEPTABLE,
            Refusal::UnknownSession => StatusCode::NOT_FOUND,
            Refusal::GetWithoutSession | Refusal::DeleteStateless => StatusCode::METHOD_NOT_ALLOWED,
            Refusal::DeleteWithoutSession => StatusCode::BAD_REQUEST,
        }
    }

    /// The JSON-RPC code of the body.
    pub fn code(self) -> Code {
        match self {
            Refusal::BadToken => Code::Unauthorized,
            _ => Code::InvalidRequest,
        }
    }

    /// The sentence of the body.
    pub fn message(self) -> &'static str {
        match self {
            Refusal::ForeignOrigin => "Forbidden: this Origin is not allowed",
            Refusal::ForeignHost => "Forbidden: this Host is not allowed",
            Refusal::BadToken => "Unauthorized: send `Authorization: Bearer <token>` (see `cordon serve --http`)",
            Refusal::NotJson => "Content-Type must be application/json",
            Refusal::AcceptsNeither => "Accept must include application/json and text/event-stream",
            Refusal::AcceptsNoStream => "Accept must include text/event-stream",
            Refusal::UnknownSession => "Session not found: initialize again",
            Refusal::GetWithoutSession => {
                "Method Not Allowed: GET opens a legacy session's stream and needs its Mcp-Session-Id; 2026-07-28 \
                 has no sessions"
            }
            Refusal::DeleteStateless => "Method Not Allowed: 2026-07-28 has no sessions",
            Refusal::DeleteWithoutSession => "Bad Request: DELETE needs the Mcp-Session-Id header",
        }
    }

    /// The reason the audit trail records the refusal under, for those it
    /// records (who may not use the endpoint at all); the rest are a
    /// client's mistakes, answered and not recorded.
    pub fn audit_reason(self) -> Option<&'static str> {
        match self {
            Refusal::ForeignOrigin => Some("bad_origin"),
            Refusal::ForeignHost => Some("bad_host"),
            Refusal::BadToken => Some("bad_token"),
            _ => None,
        }
    }

    /// The header HTTP asks for beside the status.
    fn header(self) -> Option<(HeaderName, HeaderValue)> {
        match self {
            Refusal::BadToken => Some((header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))),
            Refusal::GetWithoutSession => Some((header::ALLOW, HeaderValue::from_static("POST, DELETE"))),
            Refusal::DeleteStateless => Some((header::ALLOW, HeaderValue::from_static("POST"))),
            _ => None,
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = jsonrpc::failure(None, &ErrorObject::new(self.code(), self.message()));
        let mut response = (self.status(), [(header::CONTENT_TYPE, "application/json")], body).into_response();
        if let Some((name, value)) = self.header() {
            response.headers_mut().insert(name, value);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_has_one_status_code_header_and_audit_reason() {
        use Refusal::*;
        let table = [
            (ForeignOrigin, 403, Code::InvalidRequest, None, Some("bad_origin")),
            (ForeignHost, 403, Code::InvalidRequest, None, Some("bad_host")),
            (BadToken, 401, Code::Unauthorized, Some(("www-authenticate", "Bearer")), Some("bad_token")),
            (NotJson, 415, Code::InvalidRequest, None, None),
            (AcceptsNeither, 406, Code::InvalidRequest, None, None),
            (AcceptsNoStream, 406, Code::InvalidRequest, None, None),
            (UnknownSession, 404, Code::InvalidRequest, None, None),
            (GetWithoutSession, 405, Code::InvalidRequest, Some(("allow", "POST, DELETE")), None),
            (DeleteStateless, 405, Code::InvalidRequest, Some(("allow", "POST")), None),
            (DeleteWithoutSession, 400, Code::InvalidRequest, None, None),
        ];
        for (refusal, status, code, header, reason) in table {
            let response = refusal.into_response();
            assert_eq!(response.status().as_u16(), status, "{refusal:?}");
            assert_eq!((refusal.code(), refusal.audit_reason()), (code, reason), "{refusal:?}");
            if let Some((name, value)) = header {
                assert_eq!(response.headers().get(name).and_then(|v| v.to_str().ok()), Some(value), "{refusal:?}");
            }
            assert_eq!(response.headers().get(header::CONTENT_TYPE).unwrap(), "application/json");
        }
    }
}
