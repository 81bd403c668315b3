//! Principals: alice (group `eng`, read-write `src/`) and the CI bot (client
//! `ci-bot`, read-only `docs/`, a few read tools, `docs/private/**` denied) on one
//! server see only their own tools, roots and results; the bot stays inside
//! `docs/` whatever path it tries; a principal no rule names gets nothing;
//! results are bound to whoever started them, on one replica and across two
//! sharing Redis; the audit trail names the principal of every record.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{AUDIENCE, Client, addr_of, audit_lines, serve};
use crate::handles::Redis;
use crate::support::issuer::{Issuer, now};
use crate::support::{Fixture, Server, cordon_bin, page_meta};

/// The static token no access rule names.
const NOBODY: &str = "nobody-token-0123456789";

/// A fixture with `src/` and `docs/` (with a private corner and a link back
/// into `src/`), and the configuration giving alice and the bot their rights.
pub fn team(fx: &Fixture) -> std::path::PathBuf {
    let root = fx.root();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("docs/private")).unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {} // SRC_SECRET\n").unwrap();
    let big: String = (0..4000).map(|i| format!("line {i} of alice's big file\n")).collect();
    std::fs::write(root.join("src/big.txt"), big).unwrap();
    std::fs::write(root.join("docs/guide.md"), "# Guide\nread me\n").unwrap();
    std::fs::write(root.join("docs/private/notes.md"), "PRIVATE_NOTE\n").unwrap();
    std::os::unix::fs::symlink("../src", root.join("docs/link")).unwrap();
    let config = fx.dir.path().join("cordon.toml");
    let digest = hex::encode(Sha256::digest(NOBODY.as_bytes()));
    let text = format!(
        r#"
[[tokens]]
name = "nobody"
sha256 = "{digest}"

[[access]]
who = {{ group = "eng" }}
roots = ["root/src:rw"]

[[access]]
who = {{ client = "ci-bot" }}
roots = ["root/docs:ro"]
tools = ["read", "grep", "glob", "list", "stat"]
deny = ["docs/private/**"]
"#
    );
    std::fs::write(&config, text).unwrap();
    config
}

fn is_error(answer: &Value) -> bool {
    answer["result"]["isError"] == true || answer.get("error").is_some()
}

#[test]
fn each_principal_sees_only_its_tools_and_roots_and_the_bot_stays_inside_docs() {
    let issuer = Issuer::start();
    let fx = Fixture::new();
    let config = team(&fx);
    let log = fx.dir.path().join("audit.log");
    let server =
        serve(&fx.root(), &issuer, &["--config", config.to_str().unwrap(), "--audit-log", log.to_str().unwrap()]);
    let addr = addr_of(&server);
    let root = fx.root();
    let (src, docs) = (root.join("src"), root.join("docs"));
    let alice_token = issuer.token("alice", AUDIENCE, None);
    let bot_token = issuer.token("ci-bot", AUDIENCE, None);
    for modern in [false, true] {
        let mut alice = Client::new(&addr, Some(&alice_token), modern);
        let mut bot = Client::new(&addr, Some(&bot_token), modern);
        let tools = alice.tool_names();
        assert!(tools.contains(&"write".to_string()) && tools.contains(&"edit".to_string()), "{tools:?}");
        let mut bot_tools = bot.tool_names();
        bot_tools.sort();
        assert_eq!(bot_tools, ["glob", "grep", "list", "read", "stat"], "only what the bot's rule lists");
        if !modern {
            let said = alice.initialize().body;
            let said = String::from_utf8_lossy(&said).to_string();
            assert!(said.contains(&format!("{} (read-write)", src.display())) && !said.contains("docs"), "{said}");
            let said = String::from_utf8_lossy(&bot.initialize().body).to_string();
            assert!(said.contains(&format!("{} (read-only)", docs.display())) && !said.contains("/src"), "{said}");
        }
        let wrote = alice.call("write", json!({"path": src.join("new.txt"), "content": "by alice\n"}));
        assert!(!is_error(&wrote), "{wrote}");
        assert!(is_error(&alice.call("read", json!({"path": docs.join("guide.md")}))), "alice has no docs");
        assert!(!is_error(&bot.call("read", json!({"path": docs.join("guide.md")}))));
        // Every way out of docs/ stays shut for the bot.
        for escape in [
            src.join("main.rs"),
            docs.join("../src/main.rs"),
            docs.join("link/main.rs"),
            docs.join("private/notes.md"),
            root.join("hello.txt"),
            fx.outside(),
        ] {
            let answer = bot.call("read", json!({"path": escape}));
            assert!(is_error(&answer), "the bot read {}: {answer}", escape.display());
            assert!(!answer.to_string().contains("SRC_SECRET") && !answer.to_string().contains("PRIVATE_NOTE"));
        }
        for (tool, args) in [
            ("grep", json!({"pattern": "SRC_SECRET|PRIVATE_NOTE", "path": docs})),
            ("grep", json!({"pattern": "SRC_SECRET", "path": root})),
            ("glob", json!({"pattern": "**/*.rs", "path": docs})),
            ("list", json!({"path": docs.join("link")})),
        ] {
            let answer = bot.call(tool, args.clone());
            let text = answer.to_string();
            assert!(
                !text.contains("SRC_SECRET") && !text.contains("main.rs") && !text.contains("PRIVATE_NOTE"),
                "{tool} {args}: {text}"
            );
        }
        let write = bot.call("write", json!({"path": docs.join("x.md"), "content": "x"}));
        assert_eq!(write["error"]["data"]["error"], "no_access", "{write}");
        assert!(write["error"]["message"].as_str().unwrap().contains("client ci-bot"), "{write}");
        let mut nobody = Client::new(&addr, Some(NOBODY), modern);
        assert!(nobody.tool_names().is_empty(), "a principal no rule names gets no tool");
        let refused = nobody.call("read", json!({"path": root.join("hello.txt")}));
        assert!(
            refused["error"]["message"].as_str().unwrap().contains("no access rule of this server names you"),
            "{refused}"
        );
    }
    assert!(!docs.join("x.md").exists());
    drop(server);
    let records = audit_lines(&log);
    let calls: Vec<&Value> = records.iter().filter(|r| r["event"] == "call").collect();
    assert!(calls.iter().all(|c| c["who"]["principal"]["kind"] == "oauth"), "every call names its principal");
    assert!(calls.iter().any(
        |c| c["who"]["principal"] == json!({"kind": "oauth", "iss": issuer.url, "sub": "alice", "client": "alice"})
    ));
    let refused: Vec<&Value> = records.iter().filter(|r| r["event"] == "refused").collect();
    assert!(
        refused.iter().any(|r| r["reason"] == "no_access" && r["who"]["principal"]["sub"] == "ci-bot"),
        "{refused:?}"
    );
    assert!(refused.iter().any(|r| r["who"]["principal"] == json!({"kind": "token", "token": "nobody"})));
    let verified = Command::new(cordon_bin()).args(["audit", "verify"]).arg(&log).output().unwrap();
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stdout));
    let shown = Command::new(cordon_bin()).args(["audit", "show", "--who", "ci-bot"]).arg(&log).output().unwrap();
    let shown = String::from_utf8(shown.stdout).unwrap();
    assert!(!shown.is_empty() && shown.lines().all(|l| l.contains("\"sub\":\"ci-bot\"")), "{shown}");
}

/// Alice's big read, one page in: its handle and signed cursor.
fn first_page(client: &mut Client, path: &Path) -> (String, String) {
    let page = client.call("read", json!({"path": path, "max_tokens": 500}));
    let meta = page_meta(&page["result"]);
    let handle = meta["handle"].as_str().unwrap_or_else(|| panic!("a handle: {page}")).to_string();
    (handle, meta["cursor"].as_str().unwrap().to_string())
}

#[test]
fn results_belong_to_whoever_started_them_on_one_replica_and_across_two() {
    let issuer = Issuer::start();
    let fx = Fixture::new();
    let config = team(&fx);
    let redis = Redis::start();
    let key = "00112233445566778899aabbccddeeff";
    let store = redis.url();
    let flags = ["--config", config.to_str().unwrap(), "--no-audit", "--handle-store", &store, "--cursor-key", key];
    let (one, two) = (serve(&fx.root(), &issuer, &flags), serve(&fx.root(), &issuer, &flags));
    let (alice_token, bot_token) = (issuer.token("alice", AUDIENCE, None), issuer.token("ci-bot", AUDIENCE, None));
    let big = fx.root().join("src/big.txt");
    let mut alice = Client::new(&addr_of(&one), Some(&alice_token), true);
    let (handle, cursor) = first_page(&mut alice, &big);
    for replica in [&one, &two] {
        let mut bot = Client::new(&addr_of(replica), Some(&bot_token), true);
        for continuation in [&handle, &cursor] {
            let refused = bot.call("read", json!({"cursor": continuation}));
            assert_eq!(refused["error"]["data"]["reason"], "other_principal", "{refused}");
            assert!(!refused.to_string().contains("big.txt"), "the bot learns nothing of the result: {refused}");
        }
    }
    let mut alice_elsewhere = Client::new(&addr_of(&two), Some(&alice_token), true);
    let next = alice_elsewhere.call("read", json!({"cursor": handle}));
    assert_eq!(next["result"]["isError"], false, "alice continues on the other replica: {next}");
    assert!(next.to_string().contains("line "), "{next}");
}

#[test]
fn tcp_takes_an_access_token_or_a_static_token_as_its_first_line() {
    let issuer = Issuer::start();
    let fx = Fixture::new();
    let config = team(&fx);
    let flags = [
        "--auth-issuer",
        issuer.url.as_str(),
        "--auth-audience",
        AUDIENCE,
        "--config",
        config.to_str().unwrap(),
        "--no-audit",
    ];
    let tcp = crate::support::spawn_listening(&fx.root(), &["--tcp", "127.0.0.1:0"], &flags);
    let bot = issuer.token("ci-bot", AUDIENCE, None);
    let mut session = Server::connect_tcp(&tcp.addr, Some(format!("{bot}\n").as_bytes()));
    session.handshake();
    let listed = session.request(2, "tools/list", json!({}));
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"read") && !names.contains(&"write"), "{names:?}");
    let refused = Server::connect_tcp(&tcp.addr, Some(b"eyJhbGciOiJub25lIn0.e30.\n"));
    let answer: Value = serde_json::from_str(&refused.recv_or_closed().expect("a refusal")).unwrap();
    assert_eq!(answer["error"]["code"], -32001, "{answer}");
    let mut nobody = Server::connect_tcp(&tcp.addr, Some(format!("{NOBODY}\n").as_bytes()));
    nobody.handshake();
    assert_eq!(nobody.request(2, "tools/list", json!({}))["result"]["tools"], json!([]));
    // An access token with many groups (a few KiB) fits the first line's limit.
    let mut groups: Vec<String> = (0..300).map(|i| format!("team-{i:04}")).collect();
    groups.push("eng".into());
    let claims = json!({"iss": issuer.url, "sub": "alice", "aud": AUDIENCE, "exp": now() + 600,
                        "scope": "cordon:read", "client_id": "alice", "groups": groups});
    let long = issuer.sign(json!({}), claims, "ES256");
    assert!(long.len() > 4096, "{} bytes", long.len());
    let mut alice = Server::connect_tcp(&tcp.addr, Some(format!("{long}\n").as_bytes()));
    alice.handshake();
    let names = alice.request(2, "tools/list", json!({}))["result"]["tools"].to_string();
    assert!(names.contains("\"read\""), "alice (group eng) is served: {names}");
}

#[test]
fn http_off_loopback_without_authentication_refuses_to_start() {
    let fx = Fixture::new();
    let out = Command::new(cordon_bin())
        .args(["serve", "--http", "0.0.0.0:0", "--no-audit", "--root"])
        .arg(fx.root())
        .env_remove("CORDON_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    for flag in ["--auth-issuer", "--token", "[[tokens]]", "--insecure-no-auth"] {
        assert!(said.contains(flag), "{flag} named in: {said}");
    }
}

#[test]
fn http_off_loopback_with_insecure_no_auth_serves_anyone_as_anonymous() {
    let fx = Fixture::new();
    let log = fx.dir.path().join("audit.log");
    let flags = ["--insecure-no-auth", "--audit-log", log.to_str().unwrap()];
    let server = crate::support::spawn_listening(&fx.root(), &["--http", "0.0.0.0:0"], &flags);
    let port = server.addr.trim_end_matches("/mcp").rsplit(':').next().unwrap().to_string();
    let mut client = Client::new(&format!("127.0.0.1:{port}"), None, true);
    assert_eq!(client.call("read", json!({"path": "hello.txt"}))["result"]["isError"], false);
    drop(server);
    let records = audit_lines(&log);
    let call = records.iter().find(|r| r["event"] == "call").expect("a call record");
    assert_eq!(call["who"]["principal"], json!({"kind": "anonymous"}), "{call}");
}
