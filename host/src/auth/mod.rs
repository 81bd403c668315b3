//! Who may use the server over HTTP and TCP: the credential a request
//! carries becomes a `Principal` here, once, at the edge.
//!
//! Two kinds of credential are accepted, as configured: an OAuth 2.1 access
//! token, a JWT checked against its issuer's keys (`jwt`, `keys`: this server
//! is an OAuth resource server, and says so in its protected resource
//! metadata, RFC 9728), and named static tokens (`tokens`). With neither
//! configured, every request is the endpoint's unauthenticated principal:
//! the local user on loopback, or `anonymous` off loopback, which the command
//! line allows only with `--insecure-no-auth`. What a principal may then do
//! is `policy::access`'s business.

pub mod jwt;
pub mod keys;
pub mod principal;
pub mod scopes;
pub mod tokens;

use std::fmt;

use serde_json::{Value, json};

pub use jwt::OauthSettings;
pub use principal::{Named, Principal, Scopes, Subject};
pub use scopes::ScopeNames;
pub use tokens::{TokenError, TokenSpec, Tokens};

/// Why a request's credential is not accepted. The client is told only the
/// RFC 6750 error code; the audit trail records the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthFailure {
    /// No credential.
    Missing,
    /// The token was sent in the URL's query, where it would be logged.
    InQuery,
    /// Not a token of a shape this server reads.
    Malformed,
    /// Signed with an algorithm that is refused (`none`, a MAC) or that the
    /// key does not fit.
    BadAlgorithm,
    /// Signed with a key the issuer does not publish.
    UnknownKey,
    /// The signature does not match.
    BadSignature,
    /// Past its `exp`.
    Expired,
    /// Before its `nbf`.
    NotYetValid,
    /// Issued by another issuer.
    WrongIssuer,
    /// Issued for another resource.
    WrongAudience,
    /// Not one of the static tokens.
    UnknownToken,
    /// The issuer's keys cannot be fetched, so no token can be checked.
    IssuerUnreachable,
}

impl AuthFailure {
    /// The reason the audit trail records.
    pub fn reason(self) -> &'static str {
        match self {
            AuthFailure::Missing => "missing_token",
            AuthFailure::InQuery => "token_in_query",
            AuthFailure::Malformed => "malformed_token",
            AuthFailure::BadAlgorithm => "bad_algorithm",
            AuthFailure::UnknownKey => "unknown_key",
            AuthFailure::BadSignature => "bad_signature",
            AuthFailure::Expired => "expired",
            AuthFailure::NotYetValid => "not_yet_valid",
            AuthFailure::WrongIssuer => "wrong_issuer",
            AuthFailure::WrongAudience => "wrong_audience",
            AuthFailure::UnknownToken => "unknown_token",
            AuthFailure::IssuerUnreachable => "issuer_unreachable",
        }
    }
}

impl fmt::Display for AuthFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AuthFailure::Missing => "no bearer token",
            AuthFailure::InQuery => "a token in the URL's query is never accepted: send it in the Authorization header",
            AuthFailure::Malformed => "the token is not one this server reads",
            AuthFailure::BadAlgorithm => "the token's algorithm is refused (only public-key signatures are accepted)",
            AuthFailure::UnknownKey => "the token is signed with a key the issuer does not publish",
            AuthFailure::BadSignature => "the token's signature does not match",
            AuthFailure::Expired => "the token has expired",
            AuthFailure::NotYetValid => "the token is not valid yet",
            AuthFailure::WrongIssuer => "the token comes from another issuer",
            AuthFailure::WrongAudience => "the token is for another resource",
            AuthFailure::UnknownToken => "not a token this server knows",
            AuthFailure::IssuerUnreachable => "the issuer's keys cannot be fetched",
        })
    }
}

/// Why the authentication settings cannot be used.
#[derive(Debug)]
pub enum AuthError {
    Token(TokenError),
    /// An issuer or key set address that is not `https:` (or `http:` on loopback).
    Insecure {
        what: &'static str,
        url: String,
    },
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthError::Token(e) => write!(f, "{e}"),
            AuthError::Insecure { what, url } => {
                write!(f, "the {what} `{url}` must be an https: URL (http: only on loopback)")
            }
        }
    }
}

impl std::error::Error for AuthError {}

/// What the server accepts as credentials.
#[derive(Debug, Clone, Default)]
pub struct AuthSettings {
    pub oauth: Option<OauthSettings>,
    pub tokens: Vec<TokenSpec>,
    /// `--token` (`CORDON_TOKEN`): the token named `default`.
    pub token: Option<String>,
}

impl AuthSettings {
    /// Whether any credential is configured.
    pub fn configured(&self) -> bool {
        self.oauth.is_some() || !self.tokens.is_empty() || self.token.is_some()
    }
}

/// The credentials a server accepts, and who a request without one is.
pub struct Auth {
    tokens: Tokens,
    oauth: Option<jwt::Verifier>,
    /// Who a request is when no credential is configured.
    open: Principal,
}

impl Auth {
    /// Checks the settings; `open` is who requests are when none is configured.
    pub fn new(settings: &AuthSettings, open: Principal) -> Result<Auth, AuthError> {
        let names = settings.oauth.as_ref().map(|o| o.scopes.clone()).unwrap_or_default();
        let tokens = Tokens::new(&settings.tokens, settings.token.as_deref(), &names).map_err(AuthError::Token)?;
        if let Some(oauth) = &settings.oauth {
            secure("issuer", &oauth.issuer)?;
            if let Some(jwks) = &oauth.jwks {
                secure("key set", jwks)?;
            }
        }
        Ok(Auth { tokens, oauth: settings.oauth.clone().map(jwt::Verifier::new), open })
    }

    /// No credential required: everyone is `open`.
    pub fn none(open: Principal) -> Auth {
        Auth { tokens: Tokens::default(), oauth: None, open }
    }

    /// Whether requests must carry a credential.
    pub fn required(&self) -> bool {
        self.oauth.is_some() || !self.tokens.is_empty()
    }

    /// The OAuth settings, when tokens come from an issuer.
    pub fn oauth(&self) -> Option<&OauthSettings> {
        self.oauth.as_ref().map(jwt::Verifier::settings)
    }

    /// Fetches the issuer's keys ahead of the first request; a failure is
    /// logged (requests try again, at most once per `keys::REFETCH`).
    pub async fn warm(&self) {
        if let Some(oauth) = &self.oauth
            && let Err(e) = oauth.keys().refresh().await
        {
            tracing::warn!("the issuer's keys cannot be fetched yet: {e}");
        }
    }

    /// Who presents `bearer` (a static token, or an access token when an
    /// issuer is configured); with no credential configured, `open`.
    pub async fn authenticate(&self, bearer: Option<&str>) -> Result<Principal, AuthFailure> {
        if !self.required() {
            return Ok(self.open.clone());
        }
        let token = bearer.filter(|t| !t.is_empty()).ok_or(AuthFailure::Missing)?;
        if let Some(principal) = self.tokens.principal(token) {
            return Ok(principal);
        }
        match &self.oauth {
            Some(oauth) if token.matches('.').count() == 2 => oauth.verify(token).await.map(Principal::Subject),
            Some(_) => Err(AuthFailure::Malformed),
            None => Err(AuthFailure::UnknownToken),
        }
    }

    /// The protected resource metadata (RFC 9728), when an issuer is configured.
    pub fn resource_metadata(&self) -> Option<Value> {
        let oauth = self.oauth()?;
        Some(json!({
            "resource": oauth.audience,
            "authorization_servers": [oauth.issuer],
            "scopes_supported": oauth.scopes.all(),
            "bearer_methods_supported": ["header"],
            "resource_name": "Cordon",
        }))
    }

    /// Where the protected resource metadata is served for this resource:
    /// the well-known path inserted before the resource URI's path (RFC 9728 §3.1).
    pub fn resource_metadata_url(&self) -> Option<String> {
        let audience = &self.oauth()?.audience;
        let url = url::Url::parse(audience).ok()?;
        let path = url.path().trim_end_matches('/');
        Some(format!("{}/.well-known/oauth-protected-resource{path}", url.origin().ascii_serialization()))
    }
}

/// `url` if it is `https:`, or `http:` on a loopback host.
fn secure(what: &'static str, url: &str) -> Result<(), AuthError> {
    let parsed = url::Url::parse(url).ok();
    let ok = parsed.as_ref().is_some_and(|u| match u.scheme() {
        "https" => true,
        "http" => {
            matches!(u.host(), Some(url::Host::Ipv4(ip)) if ip.is_loopback())
                || matches!(u.host(), Some(url::Host::Ipv6(ip)) if ip.is_loopback())
                || u.host_str() == Some("localhost")
        }
        _ => false,
    });
    if ok { Ok(()) } else { Err(AuthError::Insecure { what, url: url.to_string() }) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oauth(issuer: &str, audience: &str) -> AuthSettings {
        AuthSettings {
            oauth: Some(OauthSettings {
                issuer: issuer.into(),
                audience: audience.into(),
                jwks: None,
                groups_claim: "groups".into(),
                scopes: ScopeNames::default(),
            }),
            ..AuthSettings::default()
        }
    }

    #[test]
    fn issuers_must_be_https_except_on_loopback() {
        let ok = |issuer: &str| Auth::new(&oauth(issuer, "https://files.example.com/mcp"), Principal::Local).is_ok();
        assert!(ok("https://id.example.com/realms/eng"));
        assert!(ok("http://127.0.0.1:8080"));
        assert!(ok("http://localhost:8080"));
        assert!(!ok("http://id.example.com"));
        assert!(!ok("ftp://127.0.0.1"));
    }

    #[tokio::test]
    async fn without_credentials_configured_everyone_is_the_open_principal() {
        let auth = Auth::none(Principal::Anonymous);
        assert!(!auth.required());
        assert_eq!(auth.authenticate(Some("whatever")).await, Ok(Principal::Anonymous));
        let tokens = AuthSettings { token: Some("a-long-enough-token".into()), ..AuthSettings::default() };
        let auth = Auth::new(&tokens, Principal::Local).unwrap();
        assert_eq!(auth.authenticate(None).await, Err(AuthFailure::Missing));
        assert_eq!(auth.authenticate(Some("a.b.c")).await, Err(AuthFailure::UnknownToken));
        assert!(matches!(auth.authenticate(Some("a-long-enough-token")).await, Ok(Principal::Token { .. })));
    }

    #[test]
    fn the_metadata_is_served_under_the_resource_path() {
        let auth = Auth::new(&oauth("https://id.example.com", "https://files.example.com/mcp"), Principal::Local);
        let auth = auth.unwrap();
        assert_eq!(
            auth.resource_metadata_url().as_deref(),
            Some("https://files.example.com/.well-known/oauth-protected-resource/mcp")
        );
        let metadata = auth.resource_metadata().unwrap();
        assert_eq!(metadata["authorization_servers"], json!(["https://id.example.com"]));
        assert_eq!(metadata["scopes_supported"], json!(["cordon:read", "cordon:write"]));
        assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
    }
}
