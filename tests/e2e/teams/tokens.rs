//! Access tokens: every bad one refused with 401 before anything runs, in
//! both eras; a token without the write scope refused a write with 403;
//! keys that rotate without a restart, and a flood of unknown key ids that
//! does not become a flood of requests to the issuer.

use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::{Value, json};

use super::{AUDIENCE, Client, addr_of, audit_lines, serve};
use crate::support::Fixture;
use crate::support::issuer::{Issuer, now};

const METADATA: &str = "https://cordon.test/.well-known/oauth-protected-resource/mcp";

/// `token` with its payload changed (`sub` made `admin`), its signature kept.
fn tampered_payload(token: &str) -> String {
    let parts: Vec<&str> = token.split('.').collect();
    let mut claims: Value = serde_json::from_slice(&B64.decode(parts[1]).unwrap()).unwrap();
    claims["sub"] = json!("admin");
    format!("{}.{}.{}", parts[0], B64.encode(claims.to_string()), parts[2])
}

/// `token` with one byte of its signature changed.
fn tampered_signature(token: &str) -> String {
    let (head, signature) = token.rsplit_once('.').unwrap();
    let mut bytes = B64.decode(signature).unwrap();
    bytes[10] ^= 0x01;
    format!("{head}.{}", B64.encode(bytes))
}

#[test]
fn every_bad_token_is_refused_with_401_and_changes_nothing_in_both_eras() {
    let issuer = Issuer::start();
    let fx = Fixture::new();
    let log = fx.dir.path().join("audit.log");
    let server = serve(&fx.root(), &issuer, &["--audit-log", log.to_str().unwrap()]);
    let addr = addr_of(&server);
    let good = issuer.token("alice", AUDIENCE, None);
    let now = now();
    let claims = |patch: Value| {
        let mut claims = json!({"iss": issuer.url, "sub": "alice", "aud": AUDIENCE, "iat": now, "exp": now + 600,
                                "scope": "cordon:read cordon:write", "client_id": "alice"});
        for (k, v) in patch.as_object().unwrap() {
            claims[k] = v.clone();
        }
        claims
    };
    let signed = |patch: Value| issuer.sign(json!({}), claims(patch), "ES256");
    let bad: Vec<(&str, String, &str)> = vec![
        ("expired past the leeway", signed(json!({"exp": now - 120})), "expired"),
        ("not yet valid", signed(json!({"nbf": now + 300})), "not_yet_valid"),
        ("wrong issuer", signed(json!({"iss": "http://127.0.0.1:1"})), "wrong_issuer"),
        ("wrong audience", signed(json!({"aud": "https://other.test/mcp"})), "wrong_audience"),
        ("tampered payload", tampered_payload(&good), "bad_signature"),
        ("tampered signature", tampered_signature(&good), "bad_signature"),
        ("alg none", issuer.sign(json!({}), claims(json!({})), "none"), "bad_algorithm"),
        ("HS256 keyed with the public key", issuer.sign(json!({}), claims(json!({})), "hs256-public"), "bad_algorithm"),
        ("unknown kid", issuer.sign(json!({"kid": "nobody-knows"}), claims(json!({})), "ES256"), "unknown_key"),
        ("a token for another resource", issuer.token("alice", "https://other.test/mcp", None), "wrong_audience"),
        ("not a token", "not-a-token-at-all".to_string(), "malformed_token"),
    ];
    for (what, token, _) in &bad {
        for modern in [false, true] {
            let mut client = Client::new(&addr, Some(token), modern);
            let response = match modern {
                false => client.initialize(),
                true => client.post_to(
                    "/mcp",
                    "tools/call",
                    json!({"name": "write",
                    "arguments": {"path": "planted.txt", "content": "x"}}),
                ),
            };
            assert_eq!(response.status, 401, "{what} (modern: {modern})");
            let challenge = response.header("www-authenticate").unwrap_or_default();
            assert!(
                challenge.contains(&format!("resource_metadata=\"{METADATA}\""))
                    && challenge.contains("error=\"invalid_token\""),
                "{what}: {challenge}"
            );
            assert!(!String::from_utf8_lossy(&response.body).contains("signature"), "no detail for an attacker");
        }
    }
    // No token at all: a challenge without an error (RFC 6750 §3.1); one in the query: refused.
    let missing = Client::new(&addr, None, true).post_to("/mcp", "tools/list", json!({}));
    assert_eq!(missing.status, 401);
    assert_eq!(missing.header("www-authenticate"), Some(format!("Bearer resource_metadata=\"{METADATA}\"").as_str()));
    let in_query =
        Client::new(&addr, None, true).post_to(&format!("/mcp?access_token={good}"), "tools/list", json!({}));
    assert_eq!(in_query.status, 401, "a token in the query string");
    assert!(!fx.root().join("planted.txt").exists(), "a refused request changed nothing");
    // The good token, and tokens signed with RSA and EdDSA keys, are served in both eras.
    for alg in ["ES256", "RS256", "EdDSA"] {
        let token = issuer.token_alg("alice", AUDIENCE, None, alg);
        for modern in [false, true] {
            let answer = Client::new(&addr, Some(&token), modern).call("read", json!({"path": "hello.txt"}));
            assert_eq!(answer["result"]["isError"], false, "{alg}: {answer}");
        }
    }
    // The metrics on the HTTP listener are behind the same credentials; health is not.
    assert_eq!(crate::support::request(&addr, "GET", "/metrics", &[], b"").status, 401);
    let bearer = [("Authorization", format!("Bearer {good}"))];
    assert_eq!(crate::support::request(&addr, "GET", "/metrics", &bearer, b"").status, 200);
    assert_eq!(crate::support::request(&addr, "GET", "/healthz", &[], b"").status, 200);
    let metadata = crate::support::request(&addr, "GET", "/.well-known/oauth-protected-resource/mcp", &[], b"");
    let metadata: Value = serde_json::from_slice(&metadata.body).unwrap();
    assert_eq!(metadata["resource"], AUDIENCE);
    assert_eq!(metadata["authorization_servers"], json!([issuer.url]));
    assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
    drop(server);
    let records = audit_lines(&log);
    let reasons: Vec<&str> =
        records.iter().filter(|r| r["event"] == "refused").map(|r| r["reason"].as_str().unwrap()).collect();
    for (what, _, reason) in &bad {
        assert!(reasons.iter().filter(|r| *r == reason).count() >= 2, "{what}: {reason} in {reasons:?}");
    }
    assert!(reasons.contains(&"missing_token") && reasons.contains(&"token_in_query"), "{reasons:?}");
    let refusal = records.iter().find(|r| r["reason"] == "expired").unwrap();
    assert!(refusal["who"]["peer"].as_str().unwrap().starts_with("127.0.0.1:"), "the peer is recorded: {refusal}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(&good[..40]), "no token in the audit log");
}

#[test]
fn a_read_only_token_is_refused_a_write_with_403_and_still_reads() {
    let issuer = Issuer::start();
    let fx = Fixture::new();
    let server = serve(&fx.root(), &issuer, &["--no-audit"]);
    let token = issuer.token("reader", AUDIENCE, None);
    for modern in [false, true] {
        let mut client = Client::new(&addr_of(&server), Some(&token), modern);
        let tools = client.tool_names();
        assert!(tools.contains(&"read".to_string()) && !tools.contains(&"write".to_string()), "{tools:?}");
        let response = client.post_to(
            "/mcp",
            "tools/call",
            json!({"name": "write",
            "arguments": {"path": "w.txt", "content": "x"}}),
        );
        assert_eq!(response.status, 403, "modern: {modern}");
        assert_eq!(
            response.header("www-authenticate"),
            Some(
                format!(
                    "Bearer resource_metadata=\"{METADATA}\", error=\"insufficient_scope\", scope=\"cordon:write\""
                )
                .as_str()
            )
        );
        let error: Value = serde_json::from_str(&response.messages()[0]).unwrap();
        assert_eq!(error["error"]["data"]["error"], "insufficient_scope", "{error}");
        let read = client.call("read", json!({"path": "hello.txt"}));
        assert_eq!(read["result"]["isError"], false, "{read}");
    }
    assert!(!fx.root().join("w.txt").exists());
}

#[test]
fn keys_rotate_without_a_restart_and_unknown_kids_do_not_hammer_the_issuer() {
    let issuer = Issuer::start();
    let fx = Fixture::new();
    let started = Instant::now();
    let server = serve(&fx.root(), &issuer, &["--no-audit"]);
    let addr = addr_of(&server);
    let token = issuer.token("alice", AUDIENCE, None);
    assert_eq!(
        Client::new(&addr, Some(&token), true).call("read", json!({"path": "hello.txt"}))["result"]["isError"],
        false
    );
    let before = issuer.jwks_requests();
    let claims = json!({"iss": issuer.url, "sub": "alice", "aud": AUDIENCE, "exp": now() + 600});
    for n in 0..1000 {
        let forged = issuer.sign(json!({"kid": format!("flood-{n}")}), claims.clone(), "ES256");
        let response = Client::new(&addr, Some(&forged), true).post_to("/mcp", "tools/list", json!({}));
        assert_eq!(response.status, 401);
    }
    let flood = issuer.jwks_requests() - before;
    assert!(flood <= 1, "1,000 unknown key ids fetched the key set {flood} times");
    assert!(issuer.metadata_requests() <= 2, "the issuer's metadata is looked up once (RFC 8414, else OpenID)");
    // A rotated key is found without a restart: at its first token once the
    // refetch interval (30 s since the last fetch) has passed.
    std::thread::sleep(Duration::from_secs(31).saturating_sub(started.elapsed()));
    let kid = issuer.rotate(None);
    let rotated = issuer.token("alice", AUDIENCE, None);
    let header: Value = serde_json::from_slice(&B64.decode(rotated.split('.').next().unwrap()).unwrap()).unwrap();
    assert_eq!(header["kid"], kid.as_str());
    let deadline = Instant::now() + Duration::from_secs(40);
    let answer = loop {
        let answer = Client::new(&addr, Some(&rotated), true).call("read", json!({"path": "hello.txt"}));
        if answer["result"]["isError"] == false || Instant::now() > deadline {
            break answer;
        }
        std::thread::sleep(Duration::from_secs(2));
    };
    assert_eq!(answer["result"]["isError"], false, "the rotated key is fetched: {answer}");
    assert_eq!(
        Client::new(&addr, Some(&token), true).call("read", json!({"path": "hello.txt"}))["result"]["isError"],
        false,
        "the old key still works"
    );
}
