//! An access-token issuer for the benchmark's authenticated rows: a P-256
//! key made for this benchmark (nothing it signs is accepted anywhere else),
//! its key set served on loopback for the server to fetch, and a token
//! signed with it. Cordon then checks a real ES256 signature on every request.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;

/// The benchmark's signing key (PKCS#8), generated with
/// `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`.
const KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg7PUbB+iA0chV+LdV
8AMsEEmoRh40daW9wecc3+QyQeahRANCAAQ1gcKiaWx4av3R+ypuSj8VQCdXvavD
HdnE18eAvbUM6g8PyE3h6alDXf7xItfAlg4kgGYGMw3F6kb3pmUPKCIT
-----END PRIVATE KEY-----
";

/// The resource the server under test is, for the token's audience.
pub const AUDIENCE: &str = "https://bench.cordon.test/mcp";

/// The issuer: where its key set is, and a token it signed.
pub struct Issuer {
    /// `http://127.0.0.1:PORT`: the token's `iss`.
    pub url: String,
    /// Where the key set is served (`--auth-jwks`).
    pub jwks: String,
    /// A token for `AUDIENCE` with both scopes, valid for an hour.
    pub token: String,
}

impl Issuer {
    /// Serves the key set from a thread of its own (for the life of the process).
    pub fn start() -> Result<Issuer> {
        let key = EncodingKey::from_ec_pem(KEY.as_bytes()).context("the benchmark's key")?;
        let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).context("the key's JWK")?;
        jwk.common.key_id = Some("bench-1".into());
        let document = serde_json::to_string(&JwkSet { keys: vec![jwk] })?;
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}", listener.local_addr()?);
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let mut head = [0u8; 4096];
                let _ = stream.read(&mut head);
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{document}",
                    document.len()
                );
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        let claims = json!({"iss": url, "sub": "bench", "aud": AUDIENCE, "iat": now, "exp": now + 3600,
                            "scope": "cordon:read cordon:write", "client_id": "cordon-bench"});
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some("bench-1".into());
        let token = jsonwebtoken::encode(&header, &claims, &key).context("sign the benchmark's token")?;
        Ok(Issuer { jwks: format!("{url}/jwks"), url, token })
    }
}
