//! Why a request is refused by a transport before any session reads it, one
//! variant a reason: each knows its HTTP status, its JSON-RPC code and
//! sentence (the body, a JSON-RPC error with no id), the header HTTP asks
//! beside it, and, for the refusals the audit trail records, its reason
//! there. The one place the transports' own refusals become responses; also
//! the HTTP status of any JSON-RPC error a session answers (`status_of`).

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
    /// A TCP connection whose first line is not the server's token (the TCP
    /// transport has no status: it writes the body and closes).
    LineToken,
}

impl Refusal {
    /// The HTTP status.
    pub fn status(self) -> StatusCode {
        match self {
            Refusal::ForeignOrigin | Refusal::ForeignHost => StatusCode::FORBIDDEN,
            Refusal::BadToken | Refusal::LineToken => StatusCode::UNAUTHORIZED,
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
            Refusal::BadToken | Refusal::LineToken => Code::Unauthorized,
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
            Refusal::LineToken => {
                "Unauthorized: send the server's token alone on the first line (see `cordon serve --tcp`)"
            }
        }
    }

    /// The reason the audit trail records the refusal under, for those it
    /// records (who may not use the endpoint at all); the rest are a
    /// client's mistakes, answered and not recorded.
    pub fn audit_reason(self) -> Option<&'static str> {
        match self {
            Refusal::ForeignOrigin => Some("bad_origin"),
            Refusal::ForeignHost => Some("bad_host"),
            Refusal::BadToken | Refusal::LineToken => Some("bad_token"),
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

    /// The body: a JSON-RPC error with no id, as one line without its newline.
    pub fn body(self) -> String {
        jsonrpc::failure(None, &ErrorObject::new(self.code(), self.message()))
    }

    /// The response, with `challenge` as its `WWW-Authenticate` header.
    pub fn challenged(self, challenge: &Challenge<'_>) -> Response {
        let mut response = self.into_response();
        response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge.value());
        response
    }
}

/// What a `WWW-Authenticate: Bearer` challenge says (RFC 6750 §3): where
/// the protected resource metadata is (RFC 9728 §5.1), the error code (none
/// when the request carried no credential), and the scope a refused request
/// needs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Challenge<'a> {
    pub metadata: Option<&'a str>,
    pub error: Option<&'static str>,
    pub scope: Option<&'a str>,
}

impl Challenge<'_> {
    /// The header's value.
    pub fn value(&self) -> HeaderValue {
        // Quoted strings hold neither quotes nor backslashes here.
        let quoted = |name: &str, value: &str| format!("{name}=\"{}\"", value.replace(['"', '\\'], ""));
        let params: Vec<String> = [
            self.metadata.map(|m| quoted("resource_metadata", m)),
            self.error.map(|e| quoted("error", e)),
            self.scope.map(|s| quoted("scope", s)),
        ]
        .into_iter()
        .flatten()
        .collect();
        let value = if params.is_empty() { "Bearer".to_string() } else { format!("Bearer {}", params.join(", ")) };
        HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
    }
}

/// The HTTP status of an answered request whose error (if any) has `code`,
/// in the stateless era (`modern`) or the legacy one: 2xx unless it is an
/// error HTTP knows about.
pub fn status_of(code: Option<Code>, modern: bool) -> StatusCode {
    match code {
        None => StatusCode::OK,
        Some(Code::Forbidden) => StatusCode::FORBIDDEN,
        Some(Code::MethodNotFound) if modern => StatusCode::NOT_FOUND,
        Some(Code::ParseError | Code::InvalidRequest) => StatusCode::BAD_REQUEST,
        Some(code) if modern && (code.is_server_error() || code == Code::InvalidParams) => StatusCode::BAD_REQUEST,
        Some(Code::InternalError) if modern => StatusCode::INTERNAL_SERVER_ERROR,
        Some(_) => StatusCode::OK,
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = self.body();
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
            (LineToken, 401, Code::Unauthorized, None, Some("bad_token")),
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

    #[test]
    fn a_challenge_names_the_metadata_the_error_and_the_scope() {
        assert_eq!(Challenge::default().value(), "Bearer");
        let missing = Challenge {
            metadata: Some("https://f.example/.well-known/oauth-protected-resource/mcp"),
            ..Challenge::default()
        };
        assert_eq!(
            missing.value(),
            r#"Bearer resource_metadata="https://f.example/.well-known/oauth-protected-resource/mcp""#
        );
        let scope = Challenge { error: Some("insufficient_scope"), scope: Some("cordon:\"write"), ..missing };
        assert_eq!(
            scope.value(),
            r#"Bearer resource_metadata="https://f.example/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", scope="cordon:write""#
        );
        let response =
            Refusal::BadToken.challenged(&Challenge { error: Some("invalid_token"), ..Challenge::default() });
        assert_eq!(response.status(), 401);
        assert_eq!(response.headers()[header::WWW_AUTHENTICATE], r#"Bearer error="invalid_token""#);
    }

    #[test]
    fn an_answered_error_has_the_status_its_era_gives_its_code() {
        let table = [
            (None, false, 200, 200),
            (Some(Code::MethodNotFound), false, 200, 404),
            (Some(Code::ParseError), false, 400, 400),
            (Some(Code::InvalidRequest), false, 400, 400),
            (Some(Code::InvalidParams), false, 200, 400),
            (Some(Code::Unauthorized), false, 200, 400),
            (Some(Code::InternalError), false, 200, 500),
            (Some(Code::Forbidden), false, 403, 403),
        ];
        for (code, _, legacy, modern) in table {
            assert_eq!(status_of(code, false).as_u16(), legacy, "{code:?}, legacy");
            assert_eq!(status_of(code, true).as_u16(), modern, "{code:?}, stateless");
        }
    }
}
