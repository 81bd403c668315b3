//! Real MCP clients in both eras: the Python SDK, the Inspector CLI and rmcp, over stdio and HTTP.
//!
//! Every client lists the tools, then reads a file of many pages with a small `max_tokens`,
//! following `next_cursor` to the end: the pages put together must be the file, byte for byte.
//!
//! - Python `mcp` (2.3.0, `mcp.Client`, via tests/interop/python_eras.py): `mode="legacy"` (the
//!   initialize handshake, 2025-11-25), `mode="2026-07-28"` (stateless, no probe) and `mode="auto"`
//!   (probes `server/discover`; against Cordon it must settle on 2026-07-28), each over stdio and
//!   over Streamable HTTP.
//! - The Inspector CLI (`mcp-inspector --cli`, the TypeScript SDK underneath, legacy era), over stdio
//!   (a fresh server per invocation, so paging also shows that cursors outlive the process) and over
//!   Streamable HTTP (one server for every invocation).
//! - rmcp (Rust), in auto lifecycle mode (must settle on 2026-07-28) and in initialize mode, over a
//!   child process and over Streamable HTTP.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Once;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::{Value, json};
use sha2::Digest;

use crate::support::issuer::Issuer;
use crate::support::{
    Fixture, HttpServer, cordon_bin, node_dir, node_path, page_meta, payload, python_with_mcp, run_bounded,
    shared_state_dir, workspace,
};

/// How long one client run (a client process with its server, or an rmcp session) may take.
/// Generous: the suite must pass on a slow, busy machine.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(300);

const LEGACY: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";

fn sha256_hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `big.txt` (multi-byte characters, CRLF line ends) of `lines` lines into the fixture's root,
/// after warming the compile cache (every test starts here, before any server).
fn paged_file(fx: &Fixture, client: &str, lines: usize) -> String {
    warm_cache();
    let text: String = (0..lines).map(|i| format!("{i}: read by {client}, ünïcödé ✓\r\n")).collect();
    fx.write("big.txt", &text);
    text
}

/// Compiles the tools into the shared state dir once, before any client starts a server: the
/// auto modes of the Python SDK and rmcp give a stdio server 10 s to answer their `server/discover`
/// probe before falling back to the legacy handshake (Claude Code gives a server 30 s to connect),
/// and cold compiles by many servers at once on a busy machine could take longer.
pub(crate) fn warm_cache() {
    static WARM: Once = Once::new();
    WARM.call_once(|| {
        let out = Command::new(cordon_bin()).args(["tools", "--json", "--state-dir"]).arg(shared_state_dir()).output();
        let out = out.expect("run cordon tools");
        assert!(out.status.success(), "cordon tools failed: {}", String::from_utf8_lossy(&out.stderr));
    });
}

/// Runs a client process to completion (its own process group, killed as a whole after
/// `CLIENT_TIMEOUT`) and returns its stdout and stderr; panics unless it exits 0.
fn run(command: Command, what: &str) -> (Vec<u8>, String) {
    let (status, stdout, stderr) = run_bounded(command, CLIENT_TIMEOUT);
    let stderr = String::from_utf8_lossy(&stderr).into_owned();
    let Some(status) = status else { panic!("{what} did not finish within {CLIENT_TIMEOUT:?}; stderr:\n{stderr}") };
    assert!(
        status.success(),
        "{what} failed ({status}); stderr:\n{stderr}\nstdout:\n{}",
        String::from_utf8_lossy(&stdout)
    );
    (stdout, stderr)
}

// ---------------------------------------------------------------------------------------------
// Python `mcp` SDK

/// Runs tests/interop/python_eras.py in `mode` over `transport` and checks what it saw.
fn python_client(mode: &str, transport: &str) {
    python_client_as(mode, transport, None);
}

/// `python_client`, over HTTP holding an access token from `issuer` (alice's,
/// from its real client-credentials grant) when one is given.
fn python_client_as(mode: &str, transport: &str, issuer: Option<&Issuer>) {
    let fx = Fixture::new();
    let text = paged_file(&fx, &format!("python {mode} over {transport}"), 800);
    let mut command = Command::new(python_with_mcp());
    command.arg(workspace().join("tests/interop/python_eras.py")).args([mode, transport]);
    let server = match transport {
        "stdio" => {
            command.arg(cordon_bin()).arg(fx.root()).arg(shared_state_dir());
            None
        }
        "http" => {
            let server = match issuer {
                None => HttpServer::start(&fx.root()),
                Some(issuer) => {
                    command.env("CORDON_TEST_BEARER", issuer.token("alice", crate::teams::AUDIENCE, None));
                    let flags = ["--auth-issuer", &issuer.url, "--auth-audience", crate::teams::AUDIENCE];
                    HttpServer::start_with(&fx.root(), &flags)
                }
            };
            command.arg(&server.url);
            Some(server)
        }
        _ => unreachable!("transport {transport}"),
    };
    command.args(["big.txt", "300"]);
    let (stdout, stderr) = run(command, &format!("the Python client ({mode} over {transport})"));
    let server_log = server.as_ref().map(HttpServer::log).unwrap_or_default();
    let seen: Value = serde_json::from_slice(&stdout).unwrap_or_else(|e| {
        panic!("the Python client printed no JSON ({e}):\n{}\n{stderr}", String::from_utf8_lossy(&stdout))
    });
    let context = format!("{seen}\nclient stderr:\n{stderr}\nserver log:\n{server_log}");

    let era = if mode == "legacy" { LEGACY } else { MODERN };
    assert_eq!(seen["protocol_version"], era, "negotiated era: {context}");
    if mode != MODERN {
        // A pinned modern mode adopts a synthesized discover result, so only the
        // handshake and the probe learn who the server is.
        assert_eq!(seen["server"], "cordon", "{context}");
        assert_eq!(seen["has_tools_capability"], true, "{context}");
    }
    let tools = seen["tools"].as_array().unwrap();
    for tool in ["read", "list", "grep", "glob", "stat", "write", "edit"] {
        assert!(tools.iter().any(|t| t == tool), "no {tool}: {context}");
    }
    assert_eq!(seen["read_has_output_schema"], false, "no outputSchema, so text reaches models: {context}");

    let pages = seen["pages"].as_u64().unwrap() as usize;
    assert!(pages > 10, "the read should span many pages: {context}");
    let completes = seen["completes"].as_array().unwrap();
    assert_eq!(completes.len(), pages, "{context}");
    assert!(completes[..pages - 1].iter().all(|c| c == false), "only the last page is complete: {context}");
    assert_eq!(completes[pages - 1], true, "{context}");
    assert!(seen["is_errors"].as_array().unwrap().iter().all(|e| e == false), "{context}");
    assert_eq!(seen["cursors_distinct"], true, "{context}");
    let sha = sha256_hex(text.as_bytes());
    assert_eq!(seen["size"], text.len(), "{context}");
    assert_eq!(seen["sha256"], sha, "the pages put together are the file: {context}");
    assert_eq!(seen["reported_sha256"], sha, "{context}");
}

#[test]
fn python_legacy_over_stdio() {
    python_client("legacy", "stdio");
}

#[test]
fn python_2026_over_stdio() {
    python_client(MODERN, "stdio");
}

#[test]
fn python_auto_over_stdio_picks_2026() {
    python_client("auto", "stdio");
}

#[test]
fn python_legacy_over_http() {
    python_client("legacy", "http");
}

#[test]
fn python_2026_over_http() {
    python_client(MODERN, "http");
}

#[test]
fn python_legacy_and_2026_over_http_with_an_access_token() {
    let issuer = Issuer::start();
    python_client_as("legacy", "http", Some(&issuer));
    python_client_as(MODERN, "http", Some(&issuer));
}

#[test]
fn python_auto_over_http_picks_2026() {
    python_client("auto", "http");
}

// ---------------------------------------------------------------------------------------------
// The Inspector CLI

/// Runs `mcp-inspector --cli TARGET... METHOD_ARGS...` and parses the JSON result it prints.
fn inspector(home: &Path, target: &[&std::ffi::OsStr], method: &[&str]) -> Value {
    let mut command = Command::new(node_dir().join("node_modules/.bin/mcp-inspector"));
    command.arg("--cli").args(target).args(method).env("PATH", node_path()).env("HOME", home);
    let (stdout, stderr) = run(command, &format!("the Inspector CLI ({method:?})"));
    serde_json::from_slice(&stdout).unwrap_or_else(|e| {
        panic!("the Inspector printed no JSON ({e}):\n{}\n{stderr}", String::from_utf8_lossy(&stdout))
    })
}

/// Lists the tools and pages through `big.txt` with the Inspector CLI, one invocation per call;
/// lists the resources and reads `big.txt` (`resource`, its URI) as one.
fn inspector_client(target: &[&std::ffi::OsStr], text: &str, resource: &str, server: Option<&HttpServer>) {
    let home = tempfile::tempdir().unwrap();
    let log = || server.map(HttpServer::log).unwrap_or_default();

    let listed = inspector(home.path(), target, &["--method", "tools/list"]);
    let tools = listed["tools"].as_array().unwrap_or_else(|| panic!("no tools: {listed}\n{}", log()));
    for tool in ["read", "list", "grep", "glob", "stat", "write", "edit"] {
        let found = tools.iter().find(|t| t["name"] == tool).unwrap_or_else(|| panic!("no {tool}: {listed}"));
        assert_eq!(found["inputSchema"]["type"], "object", "{found}");
        assert!(found["description"].as_str().is_some_and(|d| !d.is_empty()), "{found}");
    }
    let read = tools.iter().find(|t| t["name"] == "read").unwrap();
    assert!(read.get("outputSchema").is_none(), "{read}");

    let resources = inspector(home.path(), target, &["--method", "resources/list"]);
    let listed = resources["resources"].as_array().unwrap_or_else(|| panic!("no resources: {resources}\n{}", log()));
    assert!(listed.iter().any(|r| r["uri"] == resource), "{resources}");
    let attached = inspector(home.path(), target, &["--method", "resources/read", "--uri", resource]);
    let contents = &attached["contents"][0];
    assert_eq!(contents["mimeType"], "text/plain; charset=utf-8", "{attached}");
    assert_eq!(contents["text"], text, "a file under a page reads whole: {attached}");

    // Values of --tool-arg are parsed as JSON when they can be: `max_tokens=400` is a number,
    // a path or a cursor (`c1.…`) stays a string.
    let mut args = vec!["path=big.txt".to_string(), "format=json".to_string()];
    let mut out = Vec::new();
    let mut pages = 0;
    loop {
        let mut method = vec!["--method", "tools/call", "--tool-name", "read", "--tool-arg"];
        method.extend(args.iter().map(String::as_str));
        method.push("max_tokens=400");
        let result = inspector(home.path(), target, &method);
        assert_eq!(result["isError"], false, "page {pages}: {result}\n{}", log());
        out.extend(payload(&result));
        pages += 1;
        let structured = &result["structuredContent"];
        match structured["next_cursor"].as_str() {
            Some(cursor) => {
                assert_eq!(structured["complete"], false, "{result}");
                args = vec![format!("cursor={cursor}")];
            }
            None => {
                assert_eq!(structured["complete"], true, "{result}");
                assert_eq!(page_meta(&result)["payload_sha256"], sha256_hex(text.as_bytes()), "{result}");
                break;
            }
        }
        assert!(pages < 100, "runaway paging");
    }
    assert!(pages >= 3, "the read should span several pages, not {pages}");
    assert_eq!(String::from_utf8(out).unwrap(), text, "the pages put together are the file");
}

#[test]
fn inspector_cli_over_stdio() {
    let fx = Fixture::new();
    let text = paged_file(&fx, "the inspector over stdio", 250);
    let (root, state) = (fx.root(), shared_state_dir());
    let target = [cordon_bin().as_ref(), "serve".as_ref(), "--root".as_ref(), root.as_os_str()];
    let target = [&target[..], &["--state-dir".as_ref(), state.as_os_str()]].concat();
    let resource = url::Url::from_file_path(root.join("big.txt")).unwrap().to_string();
    inspector_client(&target, &text, &resource, None);
}

#[test]
fn inspector_cli_over_http() {
    let fx = Fixture::new();
    let text = paged_file(&fx, "the inspector over http", 250);
    let server = HttpServer::start(&fx.root());
    let target = [server.url.as_ref(), "--transport".as_ref(), "http".as_ref()];
    let resource = url::Url::from_file_path(fx.root().join("big.txt")).unwrap().to_string();
    inspector_client(&target, &text, &resource, Some(&server));
}

// ---------------------------------------------------------------------------------------------
// rmcp (Rust)

fn auto() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    }
}

/// Lists the tools and pages through `big.txt` over an established rmcp session.
async fn rmcp_session(client: &RunningService<RoleClient, ClientConfig>, text: &str, era: &str) {
    let info = client.peer_info().expect("the server's info after start-up");
    assert_eq!(info.protocol_version.as_str(), era, "negotiated era: {info:?}");
    assert_eq!(info.server_info.as_ref().map(|s| s.name.as_str()), Some("cordon"), "{info:?}");
    assert!(info.capabilities.tools.is_some(), "{info:?}");

    let tools = client.list_all_tools().await.expect("tools/list");
    for tool in ["read", "list", "grep", "glob", "stat", "write", "edit"] {
        assert!(tools.iter().any(|t| t.name == tool), "no {tool}: {tools:?}");
    }
    let read = tools.iter().find(|t| t.name == "read").unwrap();
    assert!(read.output_schema.is_none(), "{read:?}");

    let mut args = json!({"path": "big.txt", "format": "json"});
    let mut out = Vec::new();
    let mut pages = 0;
    loop {
        args["max_tokens"] = 300.into();
        let params = CallToolRequestParams::new("read").with_arguments(args.as_object().unwrap().clone());
        let result = client.call_tool(params).await.unwrap_or_else(|e| panic!("tools/call page {pages}: {e}"));
        let result = serde_json::to_value(&result).unwrap();
        assert_eq!(result["isError"], false, "page {pages}: {result}");
        out.extend(payload(&result));
        pages += 1;
        let structured = &result["structuredContent"];
        match structured["next_cursor"].as_str() {
            Some(cursor) => {
                assert_eq!(structured["complete"], false, "{result}");
                args = json!({ "cursor": cursor });
            }
            None => {
                assert_eq!(structured["complete"], true, "{result}");
                assert_eq!(page_meta(&result)["payload_sha256"], sha256_hex(text.as_bytes()), "{result}");
                break;
            }
        }
        assert!(pages < 1000, "runaway paging");
    }
    assert!(pages > 10, "the read should span many pages, not {pages}");
    assert_eq!(String::from_utf8(out).unwrap(), text, "the pages put together are the file");
}

/// Starts rmcp in `lifecycle` over `transport` ("stdio": cordon as its child process, or
/// "http"), checks the session and closes it.
fn rmcp_client(transport: &str, lifecycle: ClientLifecycleMode, era: &str) {
    let fx = Fixture::new();
    let text = paged_file(&fx, &format!("rmcp over {transport}"), 800);
    let server = (transport == "http").then(|| HttpServer::start(&fx.root()));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let session = async {
        let client = match &server {
            None => {
                let mut command = tokio::process::Command::new(cordon_bin());
                command.arg("serve").arg("--root").arg(fx.root()).arg("--state-dir").arg(shared_state_dir());
                command.kill_on_drop(true);
                let (child, _) =
                    TokioChildProcess::builder(command).stderr(Stdio::null()).spawn().expect("start cordon");
                ClientConfig::default().serve_with_lifecycle(child, lifecycle).await
            }
            Some(server) => {
                // reqwest is built with rustls but no default crypto provider (the
                // server's choice, unified into this build): ring, as the server uses.
                let _ = rustls::crypto::ring::default_provider().install_default();
                let transport = StreamableHttpClientTransport::from_uri(server.url.as_str());
                ClientConfig::default().serve_with_lifecycle(transport, lifecycle).await
            }
        };
        let client = client.unwrap_or_else(|e| {
            panic!("rmcp start-up over {transport}: {e}\n{}", server.as_ref().map(HttpServer::log).unwrap_or_default())
        });
        rmcp_session(&client, &text, era).await;
        client.cancel().await.expect("close the rmcp session");
    };
    runtime.block_on(async {
        tokio::time::timeout(CLIENT_TIMEOUT, session).await.expect("the rmcp session timed out");
    });
}

#[test]
fn rmcp_auto_over_stdio_picks_2026() {
    rmcp_client("stdio", auto(), MODERN);
}

#[test]
fn rmcp_auto_over_http_picks_2026() {
    rmcp_client("http", auto(), MODERN);
}

#[test]
fn rmcp_initialize_over_stdio() {
    rmcp_client("stdio", ClientLifecycleMode::Initialize, LEGACY);
}

#[test]
fn rmcp_initialize_over_http() {
    rmcp_client("http", ClientLifecycleMode::Initialize, LEGACY);
}
