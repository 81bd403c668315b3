//! Who may send a request, before anything else is looked at: `Origin` and
//! `Host` (against DNS rebinding), then the bearer credential, which makes
//! the request's principal (`auth`). A refusal is recorded in the audit trail
//! with the peer and its reason; the client learns only the RFC 6750 error.
//! Also the protected resource metadata (RFC 9728) that tells a client where
//! to get a token.

use axum::Json;
use axum::extract::State;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

use super::{Endpoint, Peer};
use crate::audit::Who;
use crate::auth::AuthFailure;
use crate::results::faults::refusal::{Challenge, Refusal};
use crate::server::Caller;

impl Endpoint {
    /// The caller a request comes from, or the response that refuses it.
    pub(super) async fn admit(&self, parts: &Parts, peer: Option<Peer>) -> Result<Caller, Response> {
        let who = Who { peer: peer.map(|p| p.to_string()), ..Who::new("http") };
        let headers = &parts.headers;
        if let Some(origin) = headers.get(header::ORIGIN) {
            let allowed = origin.to_str().ok().and_then(origin_host).is_some_and(is_loopback_name);
            if !allowed {
                tracing::warn!(?origin, "refused a request from a foreign origin");
                return Err(self.refuse(&who, Refusal::ForeignOrigin, format!("the Origin {origin:?} is not allowed")));
            }
        }
        if self.loopback {
            let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).map(host_name);
            if !host.is_some_and(is_loopback_name) {
                tracing::warn!(?host, "refused a request for a foreign Host (DNS rebinding?)");
                return Err(self.refuse(&who, Refusal::ForeignHost, format!("the Host {host:?} is not allowed")));
            }
        }
        let principal = match self.auth.required() {
            false => self.auth.authenticate(None).await,
            true => match bearer(headers, parts.uri.query()) {
                Ok(token) => self.auth.authenticate(token).await,
                Err(failure) => Err(failure),
            },
        };
        match principal {
            Ok(principal) => Ok(self.server.caller(&principal, who)),
            Err(failure) => {
                self.server.refused(&who, failure.reason(), None, failure.to_string());
                let error = (failure != AuthFailure::Missing).then_some("invalid_token");
                let challenge = Challenge { metadata: self.metadata_url.as_deref(), error, scope: None };
                Err(Refusal::BadToken.challenged(&challenge))
            }
        }
    }

    /// Records `refusal` (`detail`: its sentence) and answers it.
    fn refuse(&self, who: &Who, refusal: Refusal, detail: String) -> Response {
        if let Some(reason) = refusal.audit_reason() {
            self.server.refused(who, reason, None, detail);
        }
        refusal.into_response()
    }
}

/// The bearer token of a request: `Authorization: Bearer …`, once. A token
/// in the query string is refused (URLs are logged), as is a second
/// `Authorization` header.
fn bearer<'a>(headers: &'a HeaderMap, query: Option<&str>) -> Result<Option<&'a str>, AuthFailure> {
    let in_query = query.is_some_and(|q| {
        q.split('&').any(|pair| pair.split('=').next().is_some_and(|name| name.eq_ignore_ascii_case("access_token")))
    });
    if in_query {
        return Err(AuthFailure::InQuery);
    }
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return match headers.contains_key(header::AUTHORIZATION) {
            true => Err(AuthFailure::Malformed),
            false => Ok(None),
        };
    };
    let value = value.to_str().map_err(|_| AuthFailure::Malformed)?;
    let (scheme, token) = value.split_once(' ').ok_or(AuthFailure::Malformed)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthFailure::Malformed);
    }
    Ok(Some(token.trim()))
}

/// `GET /.well-known/oauth-protected-resource[/mcp]`: the protected
/// resource metadata, when tokens come from an issuer.
pub(super) async fn on_metadata(State(endpoint): State<Arc<Endpoint>>) -> Response {
    match endpoint.auth.resource_metadata() {
        Some(metadata) => (StatusCode::OK, Json(metadata)).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The host of an `Origin` (`scheme://host[:port]`).
fn origin_host(origin: &str) -> Option<&str> {
    let rest = origin.split_once("://")?.1;
    Some(host_name(rest))
}

/// A `Host` value without its port.
fn host_name(host: &str) -> &str {
    if let Some(v6) = host.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6);
    }
    host.rsplit_once(':')
        .map_or(host, |(name, port)| if port.chars().all(|c| c.is_ascii_digit()) { name } else { host })
}

fn is_loopback_name(name: &str) -> bool {
    matches!(name.to_ascii_lowercase().as_str(), "localhost" | "127.0.0.1" | "::1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn hosts_and_origins_are_reduced_to_their_names() {
        assert_eq!(host_name("127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(host_name("[::1]:80"), "::1");
        assert_eq!(host_name("localhost"), "localhost");
        assert_eq!(origin_host("http://localhost:3000"), Some("localhost"));
        assert_eq!(origin_host("http://evil.example.com"), Some("evil.example.com"));
        assert!(is_loopback_name("LOCALHOST") && !is_loopback_name("evil.example.com"));
        assert_eq!(origin_host("null"), None);
    }

    #[test]
    fn the_bearer_token_comes_from_one_authorization_header_and_never_the_query() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(&headers, None), Ok(None));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer abc.def.ghi"));
        assert_eq!(bearer(&headers, None), Ok(Some("abc.def.ghi")), "the scheme is case-insensitive");
        assert_eq!(bearer(&headers, Some("x=1&Access_Token=abc")), Err(AuthFailure::InQuery));
        assert_eq!(bearer(&headers, Some("x=access_token")), Ok(Some("abc.def.ghi")), "a value is not a name");
        headers.append(header::AUTHORIZATION, HeaderValue::from_static("Bearer other"));
        assert_eq!(bearer(&headers, None), Err(AuthFailure::Malformed), "two headers");
        let mut basic = HeaderMap::new();
        basic.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic dXNlcjpwYXNz"));
        assert_eq!(bearer(&basic, None), Err(AuthFailure::Malformed));
    }
}
