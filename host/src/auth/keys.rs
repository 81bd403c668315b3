//! The issuer's signing keys: found through its metadata (RFC 8414
//! `/.well-known/oauth-authorization-server`, then OpenID Connect's
//! `/.well-known/openid-configuration`) unless the key set's address is
//! configured, fetched over HTTPS (plain HTTP only on loopback), and kept.
//! A token signed with a key the set does not hold makes the set be fetched
//! again, at most once per `REFETCH` however many unknown keys arrive: keys
//! rotate without a restart, and a flood of made-up key ids does not become a
//! flood of requests to the issuer.

use std::sync::RwLock;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

/// How long after a fetch of the key set an unknown key id may fetch it again.
pub const REFETCH: Duration = Duration::from_secs(30);
/// How long a request to the issuer may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest metadata or key set document read.
const MAX_DOCUMENT: usize = 1 << 20;

/// Why the issuer's keys could not be had.
#[derive(Debug)]
pub struct FetchError {
    url: String,
    why: String,
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.url, self.why)
    }
}

impl std::error::Error for FetchError {}

/// A verification key from the set, decoded once.
struct Key {
    kid: Option<String>,
    jwk: Jwk,
    decoding: DecodingKey,
}

/// What was fetched, and when.
#[derive(Default)]
struct Fetched {
    keys: Vec<std::sync::Arc<Key>>,
    at: Option<Instant>,
    jwks_uri: Option<String>,
}

/// The issuer's key set, as last fetched.
pub struct KeySet {
    issuer: String,
    /// The key set's address when configured (`--auth-jwks`).
    configured: Option<String>,
    http: reqwest::Client,
    fetched: RwLock<Fetched>,
    /// Held while fetching, so concurrent misses make one request.
    fetching: tokio::sync::Mutex<()>,
}

impl KeySet {
    pub fn new(issuer: &str, configured: Option<&str>) -> KeySet {
        // reqwest is built without a default crypto provider: ring is installed
        // once (a second install is refused, harmlessly).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("an HTTP client with rustls and the platform's roots");
        KeySet {
            issuer: issuer.to_string(),
            configured: configured.map(str::to_string),
            http,
            fetched: RwLock::new(Fetched::default()),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    /// The key `kid` names (a token without `kid`: the set's only key that
    /// fits `alg`), usable with `alg`; the set is fetched again when the key
    /// is not in it and the last fetch is older than `REFETCH`. `Ok(None)`:
    /// no such key.
    pub async fn find(&self, kid: Option<&str>, alg: Algorithm) -> Result<Option<DecodingKey>, FetchError> {
        if let Some(found) = self.lookup(kid, alg) {
            return Ok(Some(found));
        }
        let _fetching = self.fetching.lock().await;
        // Another request may have fetched the set while this one waited.
        if let Some(found) = self.lookup(kid, alg) {
            return Ok(Some(found));
        }
        let recent = self.fetched.read().expect("keys lock").at.is_some_and(|at| at.elapsed() < REFETCH);
        if recent {
            return Ok(None);
        }
        self.fetch().await?;
        Ok(self.lookup(kid, alg))
    }

    /// Fetches the key set now (at start, so the first request does not wait).
    pub async fn refresh(&self) -> Result<(), FetchError> {
        let _fetching = self.fetching.lock().await;
        self.fetch().await
    }

    /// Fetches the key set, its address first when it has to be discovered;
    /// the time is taken as the fetch starts, so a failed one holds off the
    /// next for `REFETCH` too. Called with `fetching` held.
    async fn fetch(&self) -> Result<(), FetchError> {
        let jwks_uri = {
            let mut fetched = self.fetched.write().expect("keys lock");
            fetched.at = Some(Instant::now());
            fetched.jwks_uri.clone()
        };
        let uri = match (&self.configured, jwks_uri) {
            (Some(uri), _) => uri.clone(),
            (None, Some(uri)) => uri,
            (None, None) => {
                let uri = self.discover().await?;
                self.fetched.write().expect("keys lock").jwks_uri = Some(uri.clone());
                uri
            }
        };
        let keys = keys_of(&self.get(&uri).await?);
        tracing::info!(keys = keys.len(), uri, "fetched the issuer's key set");
        self.fetched.write().expect("keys lock").keys = keys;
        Ok(())
    }

    fn lookup(&self, kid: Option<&str>, alg: Algorithm) -> Option<DecodingKey> {
        let fetched = self.fetched.read().expect("keys lock");
        let mut fitting = fetched.keys.iter().filter(|k| fits(&k.jwk, alg));
        let key = match kid {
            Some(kid) => fitting.find(|k| k.kid.as_deref() == Some(kid))?,
            None => {
                let only = fitting.next()?;
                if fitting.next().is_some() {
                    return None;
                }
                only
            }
        };
        Some(key.decoding.clone())
    }

    /// The key set's address, from the issuer's metadata: RFC 8414's first,
    /// then OpenID Connect's. The metadata must name this issuer.
    async fn discover(&self) -> Result<String, FetchError> {
        let mut last = None;
        for url in metadata_urls(&self.issuer) {
            match self.get(&url).await {
                Ok(metadata) => {
                    if metadata.get("issuer").and_then(Value::as_str) != Some(self.issuer.as_str()) {
                        let why = "the metadata names another issuer".to_string();
                        return Err(FetchError { url, why });
                    }
                    let Some(uri) = metadata.get("jwks_uri").and_then(Value::as_str) else {
                        return Err(FetchError { url, why: "the metadata has no jwks_uri".into() });
                    };
                    return Ok(uri.to_string());
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("two metadata addresses are tried"))
    }

    /// A JSON document, bounded in size and time.
    async fn get(&self, url: &str) -> Result<Value, FetchError> {
        let fail = |why: String| FetchError { url: url.to_string(), why };
        let mut response = self.http.get(url).send().await.map_err(|e| fail(e.to_string()))?;
        if !response.status().is_success() {
            return Err(fail(format!("HTTP {}", response.status())));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| fail(e.to_string()))? {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_DOCUMENT {
                return Err(fail(format!("larger than {MAX_DOCUMENT} bytes")));
            }
        }
        serde_json::from_slice(&body).map_err(|e| fail(format!("not JSON: {e}")))
    }
}

/// Where an issuer's metadata may be: RFC 8414's well-known path inserted
/// before the issuer's path, then OpenID Connect's appended to it.
pub fn metadata_urls(issuer: &str) -> [String; 2] {
    let trimmed = issuer.trim_end_matches('/');
    let oauth = match url::Url::parse(trimmed) {
        Ok(url) if url.path() != "/" && !url.path().is_empty() => {
            let origin = url.origin().ascii_serialization();
            format!("{origin}/.well-known/oauth-authorization-server{}", url.path())
        }
        _ => format!("{trimmed}/.well-known/oauth-authorization-server"),
    };
    [oauth, format!("{trimmed}/.well-known/openid-configuration")]
}

/// The signature keys of a key set document; a key that cannot be used
/// (another type, an encryption key, a malformed one) is left out.
fn keys_of(document: &Value) -> Vec<std::sync::Arc<Key>> {
    let listed = document.get("keys").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut keys = Vec::new();
    for value in listed {
        let Ok(jwk) = serde_json::from_value::<Jwk>(value) else { continue };
        if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))) {
            continue;
        }
        if matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
            continue; // a shared secret is never a public key
        }
        let Ok(decoding) = DecodingKey::from_jwk(&jwk) else { continue };
        keys.push(std::sync::Arc::new(Key { kid: jwk.common.key_id.clone(), jwk, decoding }));
    }
    keys
}

/// Whether `jwk` may check a signature made with `alg`: its type and curve
/// are the algorithm's, and the algorithm it names, if any, is `alg`.
fn fits(jwk: &Jwk, alg: Algorithm) -> bool {
    if let Some(named) = jwk.common.key_algorithm
        && format!("{named:?}") != format!("{alg:?}")
    {
        return false;
    }
    match (&jwk.algorithm, alg) {
        (AlgorithmParameters::RSA(_), Algorithm::RS256 | Algorithm::RS384 | Algorithm::RS512) => true,
        (AlgorithmParameters::RSA(_), Algorithm::PS256 | Algorithm::PS384 | Algorithm::PS512) => true,
        (AlgorithmParameters::EllipticCurve(ec), Algorithm::ES256) => ec.curve == EllipticCurve::P256,
        (AlgorithmParameters::EllipticCurve(ec), Algorithm::ES384) => ec.curve == EllipticCurve::P384,
        (AlgorithmParameters::OctetKeyPair(okp), Algorithm::EdDSA) => okp.curve == EllipticCurve::Ed25519,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_is_looked_for_where_rfc_8414_and_openid_connect_put_it() {
        assert_eq!(
            metadata_urls("https://id.example.com"),
            [
                "https://id.example.com/.well-known/oauth-authorization-server",
                "https://id.example.com/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            metadata_urls("https://id.example.com/realms/eng/"),
            [
                "https://id.example.com/.well-known/oauth-authorization-server/realms/eng",
                "https://id.example.com/realms/eng/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn only_signature_keys_of_the_right_type_and_curve_are_used() {
        let ec = json!({ "kty": "EC", "crv": "P-256", "kid": "ec", "use": "sig",
            "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" });
        let enc = json!({ "kty": "EC", "crv": "P-256", "kid": "enc", "use": "enc",
            "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" });
        let secret = json!({ "kty": "oct", "kid": "hs", "k": "c2VjcmV0" });
        let odd = json!({ "kty": "XYZ", "kid": "odd" });
        let keys = keys_of(&json!({ "keys": [ec, enc, secret, odd] }));
        let kids: Vec<_> = keys.iter().map(|k| k.kid.clone().unwrap()).collect();
        assert_eq!(kids, ["ec"]);
        assert!(fits(&keys[0].jwk, Algorithm::ES256));
        assert!(!fits(&keys[0].jwk, Algorithm::ES384), "another curve");
        assert!(!fits(&keys[0].jwk, Algorithm::RS256), "another type");
        assert!(!fits(&keys[0].jwk, Algorithm::HS256), "never a MAC with a public key");
    }
}
