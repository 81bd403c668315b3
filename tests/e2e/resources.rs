//! Files as resources and change notifications, driven by the official Python
//! MCP SDK (`tests/interop/python_resources.py`) over stdio and Streamable
//! HTTP, in both eras: the list across pages, text, binary and a 1 MiB file
//! read through continued URIs, a denied file absent and refused, updates
//! within a second of a write, a rename over and a delete, none for a denied
//! file, a bounded count for a burst of 2,000 writes, and (stateless era)
//! `notifications/tools/list_changed` on the listen stream after `cordon tool add`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use sha2::Digest;

use crate::support::{Fixture, HttpServer, Rng, cordon_bin, python_with_mcp, run_bounded, shared_state_dir, workspace};
use crate::tools::RUST_EXAMPLE;

/// The large file: 1 MiB, read page by page in pages of `PAGE_TOKENS`, so
/// that it takes over a hundred pages.
const BIG: usize = 1 << 20;

/// The servers' pages (`--max-page-tokens`, and the defaults under it): about 8 KB.
const PAGE_TOKENS: &str = "2000";

/// The servers' page limits, with `PAGE_TOKENS`.
const PAGES: [&str; 6] =
    ["--max-page-tokens", PAGE_TOKENS, "--page-tokens", PAGE_TOKENS, "--file-page-tokens", PAGE_TOKENS];

/// Files in `many/`.
const MANY: usize = 1500;

/// How often a file written again and again is told of at most: once per
/// 50 ms window (a burst of 2,000 writes may bring one per window it
/// spans, however long the machine takes to write them, and one more at each
/// end).
const BURST_WINDOW_S: f64 = 0.05;

fn sha256(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// The served tree: what the script reads and changes, and what it must not see.
struct Tree {
    fx: Fixture,
    text: Vec<u8>,
    image: Vec<u8>,
    big_sha256: String,
}

fn tree() -> Tree {
    let fx = Fixture::new();
    let text = "resources: ünïcödé\nline two\n".as_bytes().to_vec();
    fx.write("text.txt", &text);
    let mut rng = Rng(35);
    let image: Vec<u8> = (0..70_000).map(|_| rng.next() as u8).collect();
    fx.write("image.bin", &image);
    let big: Vec<u8> = (0..BIG / 8).flat_map(|_| rng.next().to_le_bytes()).collect();
    fx.write("big.bin", &big);
    fx.write("secret.pem", "-----BEGIN KEY-----\n");
    fx.write("watched.txt", "first\n");
    for dir in [".hidden", "docs"] {
        std::fs::create_dir(fx.root().join(dir)).unwrap();
    }
    fx.write(".hidden/skip.txt", "hidden\n");
    fx.write("docs/guide.md", "# guide\n");
    // Enough files that the list takes more than one page.
    std::fs::create_dir(fx.root().join("many")).unwrap();
    for i in 0..MANY {
        fx.write(&format!("many/file-{i:04}.txt"), "x\n");
    }
    Tree { fx, text, image, big_sha256: sha256(&big) }
}

fn uri(path: &Path) -> String {
    url::Url::from_file_path(path).unwrap().to_string()
}

/// Runs the script; what it saw.
fn drive(mode: &str, transport_args: &[String], tools: &Path) -> Value {
    let mut command = Command::new(python_with_mcp());
    command.arg(workspace().join("tests/interop/python_resources.py")).arg(mode).args(transport_args);
    let add =
        json!([cordon_bin(), "tool", "add", RUST_EXAMPLE, "--tools-dir", tools, "--state-dir", shared_state_dir()]);
    command.env("CORDON_TEST_TOOL_ADD", add.to_string());
    let (status, stdout, stderr) = run_bounded(command, Duration::from_secs(20 * 60));
    let stderr = String::from_utf8_lossy(&stderr);
    assert!(status.is_some_and(|s| s.success()), "python client failed ({status:?}):\n{stderr}");
    serde_json::from_slice(&stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&stdout)))
}

/// The files of the `list` tool's walk of the root (every level, no hidden entry), as URIs.
fn list_walk(root: &Path) -> Vec<String> {
    let arguments = json!({ "path": root, "depth": 32, "hidden": false, "format": "json" });
    let out = Command::new(cordon_bin())
        .args(["call", "list", "--all", "--deny", "*.pem", "--root"])
        .arg(root)
        .arg("--state-dir")
        .arg(shared_state_dir())
        .arg("--json")
        .arg(arguments.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let items = serde_json::Deserializer::from_slice(&out.stdout).into_iter::<Value>().map(Result::unwrap);
    let files = items.filter(|item| item["type"] == "file");
    files.map(|item| uri(Path::new(item["path"].as_str().unwrap()))).collect()
}

fn check(tree: &Tree, seen: &Value, walk: &[String], modern: bool) {
    let root = tree.fx.root();
    assert_eq!(walk.len(), MANY + 7, "{walk:?}");
    assert!(!walk.iter().any(|u| u.ends_with(".pem") || u.contains("/.hidden/")));
    assert_eq!(seen["listed"], json!(walk), "the list's walk: every file, path order, no hidden or denied one");
    assert!(seen["list_pages"].as_u64().unwrap() > 1, "listed across pages: {}", seen["list_pages"]);
    assert_eq!(seen["templates"], json!(["file:///{+path}"]));
    if !modern {
        assert_eq!(seen["resources_capability"], json!({"subscribe": true, "list_changed": false}));
    }
    let text = &seen["text.txt"];
    assert_eq!(
        (text["sha256"].as_str(), text["mime"].as_str()),
        (Some(&*sha256(&tree.text)), Some("text/plain; charset=utf-8"))
    );
    let image = &seen["image.bin"];
    assert_eq!(image["sha256"], sha256(&tree.image), "a blob of exact bytes");
    assert_eq!(image["mime"], "application/octet-stream");
    let big = &seen["big.bin"];
    assert_eq!((big["size"].as_u64(), big["sha256"].as_str()), (Some(BIG as u64), Some(&*tree.big_sha256)));
    assert_eq!(big["reported_sha256"], tree.big_sha256, "the last page's hash of every page");
    assert!(big["pages"].as_u64().unwrap() > 100, "read through continued URIs: {}", big["pages"]);
    assert_eq!(seen["denied_read"]["code"], -32602, "{seen}");
    assert!(seen["denied_read"]["message"].as_str().unwrap().contains("denied by the server's rule `*.pem`"));
    if modern {
        let honored = json!([uri(&root.join("watched.txt")), uri(&root)]);
        assert_eq!(seen["honored"], honored, "the denied file is left out of the acknowledgment");
        let after = seen["tools_after"].as_array().unwrap();
        assert!(seen["tools_changed_s"].is_number() && after.contains(&json!("todos")), "{seen}");
    } else {
        assert_eq!(seen["denied_subscribe"]["code"], -32602, "{seen}");
    }
    let changes = &seen["changes"];
    for change in ["write_s", "rename_s", "delete_s"] {
        let took = changes[change].as_f64().unwrap_or_else(|| panic!("no notification for the {change}: {seen}"));
        assert!(took < 1.0, "{change}: {took} s");
    }
    assert_eq!(changes["pem_named"], json!([]), "no change of a denied file is told");
    let burst = changes["burst_notifications"].as_u64().unwrap();
    let took = changes["burst_s"].as_f64().unwrap();
    let most = (took / BURST_WINDOW_S).ceil() as u64 + 2;
    assert!((1..=most).contains(&burst), "2,000 writes in {took:.2} s brought {burst} notifications (at most {most})");
}

fn stdio(mode: &str) {
    let tree = tree();
    let tools = tree.fx.dir.path().join("tools");
    let root = tree.fx.root();
    let mut args: Vec<String> = vec!["stdio".into(), root.display().to_string(), "--".into()];
    let serve = [cordon_bin(), "serve", "--root", root.to_str().unwrap(), "--deny", "*.pem"];
    let serve = serve.into_iter().chain(PAGES).chain(["--tools-dir"]);
    args.extend(serve.map(|s| s.to_string()));
    args.extend([tools.display().to_string(), "--state-dir".into(), shared_state_dir().display().to_string()]);
    let walk = list_walk(&root);
    let seen = drive(mode, &args, &tools);
    check(&tree, &seen, &walk, mode != "legacy");
}

fn http(mode: &str) {
    let tree = tree();
    let tools = tree.fx.dir.path().join("tools");
    let root = tree.fx.root();
    let args = [&["--deny", "*.pem", "--tools-dir", tools.to_str().unwrap()], &PAGES[..]].concat();
    let server = HttpServer::start_with(&root, &args);
    let args = vec!["http".into(), root.display().to_string(), server.url.clone()];
    let walk = list_walk(&root);
    let seen = drive(mode, &args, &tools);
    check(&tree, &seen, &walk, mode != "legacy");
}

#[test]
fn python_sdk_resources_over_stdio_in_a_legacy_session() {
    stdio("legacy");
}

#[test]
fn python_sdk_resources_over_stdio_stateless() {
    stdio("2026-07-28");
}

#[test]
fn python_sdk_resources_over_http_in_a_legacy_session() {
    http("legacy");
}

#[test]
fn python_sdk_resources_over_http_stateless() {
    http("2026-07-28");
}

#[test]
fn a_directory_reads_as_its_direct_children_and_a_file_does_not() {
    let fx = Fixture::new();
    fx.write("key.pem", "secret");
    fx.write(".env", "hidden");
    let mut server = crate::support::Server::modern_stdio(&fx.root(), &["--deny", "*.pem"]);
    let discovered = server.request(1, "server/discover", json!({}));
    let extensions = &discovered["result"]["capabilities"]["extensions"];
    assert_eq!(extensions["io.modelcontextprotocol/skills"], json!({"directoryRead": true}), "{discovered}");
    let read = server.request(2, "resources/directory/read", json!({"uri": uri(&fx.root())}));
    let children = read["result"]["resources"].as_array().unwrap_or_else(|| panic!("{read}"));
    let shown: Vec<(&str, Option<&str>)> =
        children.iter().map(|c| (c["name"].as_str().unwrap(), c["mimeType"].as_str())).collect();
    assert_eq!(
        shown,
        vec![("hello.txt", Some("text/plain")), ("sub", Some("inode/directory"))],
        "no hidden or denied entry"
    );
    let sub = children[1]["uri"].as_str().unwrap().to_string();
    let deeper = server.request(3, "resources/directory/read", json!({"uri": sub}));
    assert_eq!(deeper["result"]["resources"][0]["uri"], uri(&fx.root().join("sub/inner.txt")), "{deeper}");
    let file = server.request(4, "resources/directory/read", json!({"uri": uri(&fx.root().join("hello.txt"))}));
    assert_eq!(file["error"]["code"], -32602, "{file}");
    let outside = server.request(5, "resources/directory/read", json!({"uri": uri(fx.dir.path())}));
    assert_eq!(outside["error"]["data"]["code"], "permission_denied", "{outside}");
    assert_eq!(server.request(6, "skills/list", json!({}))["result"]["skills"], json!([]));
    let skill = server.request(7, "skills/get", json!({"uri": "skill://demo/SKILL.md"}));
    assert_eq!(skill["error"]["code"], -32602, "{skill}");
}

#[test]
fn a_page_that_is_not_the_last_names_where_the_file_goes_on_for_the_model_too() {
    let fx = Fixture::new();
    let text: String = (0..4000).map(|i| format!("line {i}: the continuation engine pages it\n")).collect();
    fx.write("long.txt", &text);
    let mut server = crate::support::Server::initialized(
        &fx.root(),
        &["--max-page-tokens", "4000", "--page-tokens", "2000", "--file-page-tokens", "2000"],
    );
    let (mut read, mut pages, mut next) = (String::new(), 0, Some(uri(&fx.root().join("long.txt"))));
    while let Some(at) = next.take() {
        pages += 1;
        let reply = server.request(pages + 1, "resources/read", json!({ "uri": at }));
        let result = &reply["result"];
        let contents = result["contents"].as_array().unwrap_or_else(|| panic!("{reply}"));
        read.push_str(contents[0]["text"].as_str().unwrap());
        next = result["_meta"]["cordon/page"]["next_uri"].as_str().map(str::to_string);
        match &next {
            Some(next) => {
                assert_eq!(contents.len(), 2, "the page, then where the file goes on");
                assert_eq!(
                    (&contents[1]["uri"], &contents[1]["_meta"]["cordon/continuation"]),
                    (&json!(next), &json!(true))
                );
                assert!(contents[1]["text"].as_str().unwrap().contains(next.as_str()));
            }
            None => assert_eq!(contents.len(), 1, "the last page is the page alone"),
        }
    }
    assert!(pages > 5, "{pages} pages");
    assert_eq!(read, text, "the pages put together are the file");
    let other = uri(&fx.root().join("hello.txt"));
    let first = server.request(900, "resources/read", json!({ "uri": uri(&fx.root().join("long.txt")) }));
    let next = first["result"]["_meta"]["cordon/page"]["next_uri"].as_str().unwrap();
    let moved = next.replace(&uri(&fx.root().join("long.txt")), &other);
    let refused = server.request(901, "resources/read", json!({ "uri": moved }));
    assert_eq!(refused["error"]["data"]["code"], "invalid_argument", "a cursor continues its own file: {refused}");
}
