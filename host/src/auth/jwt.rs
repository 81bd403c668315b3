//! OAuth access tokens as JWTs (RFC 9068), checked with the issuer's keys:
//! an asymmetric signature only (RSA, ECDSA, EdDSA: never `none`, never a MAC,
//! which a public key would make forgeable), by a key of the algorithm's own
//! type from the issuer's set; the issuer; an audience that holds this
//! server's resource URI (RFC 8707); `exp` and `nbf` with `LEEWAY`; a subject.
//!
//! A client sends the same token with every request until it expires, so a
//! token that passed is remembered (by its SHA-256) until its `exp` and
//! accepted again without checking its signature: one hash and a lookup
//! instead of an ECDSA or RSA verification per request.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::AuthFailure;
use super::keys::KeySet;
use super::principal::Subject;
use super::scopes::ScopeNames;

/// The clock skew allowed on `exp` and `nbf`, in seconds.
pub const LEEWAY: u64 = 60;

/// The algorithms a token may be signed with: public-key signatures only.
const ASYMMETRIC: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Where tokens come from and who they must be for (`[auth]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct OauthSettings {
    /// The issuer, exactly as its tokens' `iss` says it.
    pub issuer: String,
    /// This server's resource URI (e.g. `https://files.example.com/mcp`),
    /// which a token's `aud` must hold.
    pub audience: String,
    /// The key set's address, when the issuer's metadata should not be
    /// looked up.
    pub jwks: Option<String>,
    /// The claim that lists a subject's groups.
    #[serde(default = "groups_claim")]
    pub groups_claim: String,
    /// What the read and write scopes are called.
    #[serde(default)]
    pub scopes: ScopeNames,
}

fn groups_claim() -> String {
    "groups".into()
}

/// The most tokens remembered as verified at once.
const REMEMBERED: usize = 4096;

/// Checks access tokens from one issuer for one resource.
pub struct Verifier {
    settings: OauthSettings,
    keys: KeySet,
    /// Tokens that passed, by their SHA-256: their subject and `exp`.
    passed: Mutex<HashMap<[u8; 32], (Subject, u64)>>,
}

impl Verifier {
    pub fn new(settings: OauthSettings) -> Verifier {
        let keys = KeySet::new(&settings.issuer, settings.jwks.as_deref());
        Verifier { settings, keys, passed: Mutex::new(HashMap::new()) }
    }

    pub fn settings(&self) -> &OauthSettings {
        &self.settings
    }

    pub fn keys(&self) -> &KeySet {
        &self.keys
    }

    /// The subject of `token`, or why it is not accepted.
    pub async fn verify(&self, token: &str) -> Result<Subject, AuthFailure> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if let Some((subject, exp)) = self.passed.lock().expect("passed lock").get(&digest)
            && now <= exp.saturating_add(LEEWAY)
        {
            return Ok(subject.clone());
        }
        let (subject, exp) = self.check(token).await?;
        let mut passed = self.passed.lock().expect("passed lock");
        if passed.len() >= REMEMBERED {
            passed.retain(|_, (_, exp)| now <= exp.saturating_add(LEEWAY));
            if passed.len() >= REMEMBERED {
                passed.clear();
            }
        }
        passed.insert(digest, (subject.clone(), exp));
        Ok(subject)
    }

    /// Checks `token` in full: its subject and `exp`.
    async fn check(&self, token: &str) -> Result<(Subject, u64), AuthFailure> {
        let (alg, kid) = header_of(token)?;
        let key = match self.keys.find(kid.as_deref(), alg).await {
            Ok(Some(key)) => key,
            Ok(None) => return Err(AuthFailure::UnknownKey),
            Err(e) => {
                tracing::warn!("the issuer's keys cannot be fetched: {e}");
                return Err(AuthFailure::IssuerUnreachable);
            }
        };
        let mut validation = Validation::new(alg);
        validation.leeway = LEEWAY;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[&self.settings.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation).map_err(|e| failure(&e))?;
        let claims = data.claims;
        let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_string);
        let subject = text("sub").filter(|s| !s.is_empty()).ok_or(AuthFailure::Malformed)?;
        let groups = match claims.get(&self.settings.groups_claim) {
            Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).map(str::to_string).collect(),
            Some(Value::String(one)) => vec![one.clone()],
            _ => Vec::new(),
        };
        let exp = claims.get("exp").and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f as u64)));
        let exp = exp.ok_or(AuthFailure::Malformed)?;
        let subject = Subject {
            issuer: self.settings.issuer.clone(),
            subject,
            client: text("client_id").or_else(|| text("azp")),
            groups,
            scopes: self.settings.scopes.granted(&claims),
        };
        Ok((subject, exp))
    }
}

/// The algorithm and key id a token's header names; an algorithm that is
/// not a public-key signature (`none`, a MAC) is refused before any key is
/// looked at.
fn header_of(token: &str) -> Result<(Algorithm, Option<String>), AuthFailure> {
    let mut parts = token.split('.');
    let (Some(head), Some(_), Some(_), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(AuthFailure::Malformed);
    };
    let header: Map<String, Value> =
        B64.decode(head).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).ok_or(AuthFailure::Malformed)?;
    let named = header.get("alg").and_then(Value::as_str).ok_or(AuthFailure::Malformed)?;
    let alg = ASYMMETRIC.into_iter().find(|a| format!("{a:?}") == named).ok_or(AuthFailure::BadAlgorithm)?;
    if header.contains_key("crit") {
        // No critical extension is understood here (RFC 7515 §4.1.11).
        return Err(AuthFailure::Malformed);
    }
    let kid = header.get("kid").and_then(Value::as_str).map(str::to_string);
    Ok((alg, kid))
}

/// Why jsonwebtoken refused a token, as an authentication failure.
fn failure(error: &jsonwebtoken::errors::Error) -> AuthFailure {
    match error.kind() {
        ErrorKind::InvalidSignature => AuthFailure::BadSignature,
        ErrorKind::ExpiredSignature => AuthFailure::Expired,
        ErrorKind::ImmatureSignature => AuthFailure::NotYetValid,
        ErrorKind::InvalidIssuer => AuthFailure::WrongIssuer,
        ErrorKind::InvalidAudience => AuthFailure::WrongAudience,
        ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm | ErrorKind::UnsupportedAlgorithm => {
            AuthFailure::BadAlgorithm
        }
        _ => AuthFailure::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(header: &str) -> String {
        format!("{}.e30.c2ln", B64.encode(header))
    }

    #[test]
    fn only_public_key_signatures_get_past_the_header() {
        assert_eq!(header_of(&token(r#"{"alg":"ES256","kid":"k1"}"#)), Ok((Algorithm::ES256, Some("k1".into()))));
        assert_eq!(header_of(&token(r#"{"alg":"EdDSA"}"#)), Ok((Algorithm::EdDSA, None)));
        for refused in ["none", "HS256", "HS512", "None", "es256"] {
            let header = format!(r#"{{"alg":"{refused}"}}"#);
            assert_eq!(header_of(&token(&header)), Err(AuthFailure::BadAlgorithm), "{refused}");
        }
        assert_eq!(header_of(&token(r#"{"alg":"RS256","crit":["b64"]}"#)), Err(AuthFailure::Malformed));
        assert_eq!(header_of("a.b"), Err(AuthFailure::Malformed));
        assert_eq!(header_of("a.b.c.d"), Err(AuthFailure::Malformed));
        assert_eq!(header_of(&token("not json")), Err(AuthFailure::Malformed));
    }
}
