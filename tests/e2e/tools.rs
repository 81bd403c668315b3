//! Third-party tools: `cordon tool new/add/list/inspect/remove`, installs
//! pinned by digest, grants, hot reload with `notifications/tools/list_changed`,
//! and the example tools paged like the built-ins.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{
    Fixture, Server, cordon_bin, http_post, initialize_params, read_all, shared_state_dir, spawn_listening, workspace,
};

/// The Rust example (`tools/examples/rust`), built by the host's build script.
pub const RUST_EXAMPLE: &str = env!("CORDON_EXAMPLE_RUST_COMPONENT");

/// `cordon ARGS --tools-dir DIR` with the shared compile cache.
pub fn tool_cmd(tools: &Path, args: &[&str]) -> Output {
    Command::new(cordon_bin())
        .args(args)
        .arg("--tools-dir")
        .arg(tools)
        .arg("--state-dir")
        .arg(shared_state_dir())
        .output()
        .unwrap()
}

pub fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A server on `root` that loads the tools installed in `tools`.
pub fn serve(root: &Path, tools: &Path) -> Server {
    Server::initialized(root, &["--tools-dir", tools.to_str().unwrap()])
}

pub fn tool_names(server: &mut Server, id: i64) -> Vec<String> {
    let listed = server.request(id, "tools/list", json!({}));
    listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

/// Every item of a paged call, with the number of pages it took.
pub fn items(server: &mut Server, tool: &str, arguments: Value, max_tokens: u64) -> (Vec<Value>, usize) {
    let (payload, pages) = read_all(server, tool, arguments, max_tokens);
    let text = String::from_utf8(payload).unwrap();
    let items = serde_json::Deserializer::from_str(&text).into_iter::<Value>().map(Result::unwrap).collect();
    (items, pages.len())
}

/// A tree of sources with `n` TODO markers under `root/src`, and a file outside `src`.
fn todo_tree(fx: &Fixture, n: usize) -> PathBuf {
    let src = fx.root().join("src");
    for i in 0..n {
        let dir = src.join(format!("m{}", i % 7));
        std::fs::create_dir_all(&dir).unwrap();
        let body = format!("fn f{i}() {{}}\n// TODO item {i}: {}\nfn g() {{}}\n", "é".repeat(i % 40));
        std::fs::write(dir.join(format!("f{i:03}.rs")), body).unwrap();
    }
    fx.write("notes.txt", "TODO outside the grant\n");
    src
}

#[test]
fn the_rust_example_is_installed_pinned_granted_and_paged_like_a_builtin() {
    let fx = Fixture::new();
    let src = todo_tree(&fx, 120);
    let tools = fx.dir.path().join("tools");
    let grant = format!("ro:{}", src.display());
    let added = ok(&tool_cmd(&tools, &["tool", "add", RUST_EXAMPLE, "--grant", &grant]));
    assert!(added.contains("installed `todos`") && added.contains(&grant), "{added}");

    let listed: Value = serde_json::from_str(&ok(&tool_cmd(&tools, &["tool", "list", "--json"]))).unwrap();
    let entry = &listed["tools"][0];
    assert_eq!((entry["name"].as_str(), entry["status"].as_str()), (Some("todos"), Some("ok")), "{listed}");
    assert_eq!(entry["grants"], json!([grant]));
    let lock = std::fs::read_to_string(tools.join("cordon-tools.lock")).unwrap();
    let digest = crate::tools::sha256_file(Path::new(RUST_EXAMPLE));
    assert!(lock.contains(&digest), "the lockfile pins the component's SHA-256: {lock}");

    let inspected: Value =
        serde_json::from_str(&ok(&tool_cmd(&tools, &["tool", "inspect", "todos", "--json"]))).unwrap();
    assert_eq!(inspected["world"], "cordon-tool", "only what it uses is imported: {inspected}");
    assert_eq!(inspected["sha256"], digest);
    assert_eq!(inspected["grants"], json!([grant]));
    assert!(inspected["input_schema"]["properties"]["tags"].is_object());
    assert!(
        inspected["imports"].as_array().unwrap().iter().any(|i| i.as_str().unwrap().starts_with("wasi:filesystem/"))
    );

    let mut server = serve(&fx.root(), &tools);
    assert!(tool_names(&mut server, 1).contains(&"todos".to_string()));
    let (found, pages) = items(&mut server, "todos", json!({}), 200);
    assert_eq!(found.len(), 120, "every marker under the grant, none outside it");
    assert!(pages > 5, "a multi-page result: {pages} pages");
    assert!(found.iter().all(|item| item["path"].as_str().unwrap().starts_with(src.to_str().unwrap())));
    let mut paths: Vec<&str> = found.iter().map(|item| item["path"].as_str().unwrap()).collect();
    let in_order = paths.clone();
    paths.sort();
    assert_eq!(paths, in_order, "in path order across pages");
}

#[test]
fn an_ungranted_tool_is_denied_file_access_with_a_message_naming_the_grant() {
    let fx = Fixture::new();
    let src = todo_tree(&fx, 3);
    let tools = fx.dir.path().join("tools");
    ok(&tool_cmd(&tools, &["tool", "add", RUST_EXAMPLE]));
    let mut server = serve(&fx.root(), &tools);
    let denied = server.call(1, "todos", json!({ "path": src.to_str().unwrap() }));
    assert_eq!(denied["isError"], true, "{denied}");
    assert_eq!(denied["_meta"]["cordon/error"]["code"], "permission_denied");
    let message = denied["_meta"]["cordon/error"]["message"].as_str().unwrap();
    assert!(message.contains("`todos` is granted no directories"), "{message}");
    assert!(message.contains("--grant ro:DIR") && message.contains("cordon-tools.lock"), "{message}");
    drop(server);

    // Granted `src` only: the rest of the root stays out of reach.
    let grant = format!("ro:{}", src.display());
    ok(&tool_cmd(&tools, &["tool", "add", RUST_EXAMPLE, "--grant", &grant]));
    let mut server = serve(&fx.root(), &tools);
    let denied = server.call(2, "todos", json!({ "path": fx.root().join("notes.txt").to_str().unwrap() }));
    let message = denied["_meta"]["cordon/error"]["message"].as_str().unwrap();
    assert!(message.contains(&format!("is granted {grant}")), "{message}");
    let fine = server.call(3, "todos", json!({ "path": src.to_str().unwrap() }));
    assert_eq!(fine["isError"], false, "{fine}");
}

#[test]
fn grants_that_a_tool_cannot_use_are_refused_when_added() {
    let fx = Fixture::new();
    let tools = fx.dir.path().join("tools");
    let root = fx.root();
    let rw = tool_cmd(&tools, &["tool", "add", RUST_EXAMPLE, "--grant", &format!("rw:{}", root.display())]);
    assert_eq!(rw.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&rw.stderr).contains("only reads"), "{}", String::from_utf8_lossy(&rw.stderr));
    let missing = tool_cmd(&tools, &["tool", "add", RUST_EXAMPLE, "--grant", "ro:/no/such/dir"]);
    assert!(String::from_utf8_lossy(&missing.stderr).contains("ro:/no/such/dir"));
    let malformed = tool_cmd(&tools, &["tool", "add", RUST_EXAMPLE, "--grant", &root.display().to_string()]);
    assert!(String::from_utf8_lossy(&malformed.stderr).contains("ro:DIR"));
    let not_wasm = tool_cmd(&tools, &["tool", "add", root.join("hello.txt").to_str().unwrap()]);
    assert_eq!(not_wasm.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&not_wasm.stderr).contains("is not a usable tool"));
    let none = tool_cmd(&tools, &["tool", "remove", "todos"]);
    assert!(String::from_utf8_lossy(&none.stderr).contains("no tool named `todos`"));
    assert!(!tools.join("cordon-tools.lock").exists(), "nothing was installed by a refused add");
}

#[test]
fn a_tampered_component_is_refused_at_start_with_both_digests() {
    let fx = Fixture::new();
    let tools = fx.dir.path().join("tools");
    ok(&tool_cmd(&tools, &["tool", "add", RUST_EXAMPLE]));
    let installed = tools.join("todos.wasm");
    let mut bytes = std::fs::read(&installed).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&installed, &bytes).unwrap();
    let serve = tool_cmd(&tools, &["serve", "--root", fx.root().to_str().unwrap()]);
    assert_eq!(serve.status.code(), Some(2), "the server refuses to start");
    let stderr = String::from_utf8_lossy(&serve.stderr);
    assert!(
        stderr.contains("tool `todos` is refused") && stderr.contains(&crate::tools::sha256_file(&installed)),
        "{stderr}"
    );
    assert!(stderr.contains(&crate::tools::sha256_file(Path::new(RUST_EXAMPLE))), "names the pinned digest: {stderr}");
    let listed = tool_cmd(&tools, &["tool", "list"]);
    assert_eq!(listed.status.code(), Some(1), "list reports the mismatch");
    assert!(String::from_utf8_lossy(&listed.stdout).contains("is refused"));
    ok(&tool_cmd(&tools, &["tool", "remove", "todos"]));
    assert!(!installed.exists());
}

#[test]
fn tools_list_changed_is_sent_on_add_and_remove_while_serving() {
    let fx = Fixture::new();
    todo_tree(&fx, 2);
    let tools = fx.dir.path().join("tools");
    let mut server = serve(&fx.root(), &tools);
    let before = tool_names(&mut server, 1);
    assert!(!before.contains(&"todos".to_string()));
    let grant = format!("ro:{}", fx.root().display());
    ok(&tool_cmd(&tools, &["tool", "add", RUST_EXAMPLE, "--grant", &grant]));
    assert_eq!(server.recv()["method"], "notifications/tools/list_changed");
    assert!(tool_names(&mut server, 2).contains(&"todos".to_string()));
    let found = server.call(3, "todos", json!({}));
    assert_eq!(found["isError"], false, "{found}");

    ok(&tool_cmd(&tools, &["tool", "remove", "todos"]));
    assert_eq!(server.recv()["method"], "notifications/tools/list_changed");
    assert_eq!(tool_names(&mut server, 4), before);
    let gone = server.request(5, "tools/call", json!({ "name": "todos", "arguments": {} }));
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    let init = server.request(6, "initialize", initialize_params("2025-11-25"));
    assert_eq!(init["result"]["capabilities"]["tools"]["listChanged"], true);
}

#[test]
fn a_tool_changed_while_serving_is_refused_and_the_previous_set_kept() {
    let fx = Fixture::new();
    let tools = fx.dir.path().join("tools");
    ok(&tool_cmd(&tools, &["tool", "add", RUST_EXAMPLE]));
    let mut server = serve(&fx.root(), &tools);
    assert!(tool_names(&mut server, 1).contains(&"todos".to_string()));
    // A lockfile that pins another digest: the reload is refused, nothing changes.
    let lock = tools.join("cordon-tools.lock");
    let text = std::fs::read_to_string(&lock).unwrap();
    let digest = crate::tools::sha256_file(Path::new(RUST_EXAMPLE));
    std::fs::write(&lock, text.replace(&digest, &"0".repeat(64))).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(tool_names(&mut server, 2).contains(&"todos".to_string()), "the verified tool stays");
    let called = server.call(3, "todos", json!({}));
    assert_eq!(called["_meta"]["cordon/error"]["code"], "permission_denied", "{called}");
}

#[test]
fn tool_new_makes_a_crate_that_builds_installs_and_pages() {
    let fx = Fixture::new();
    let path = cordon_on_path(&fx);
    let new = || {
        let mut command = Command::new("cordon");
        command.env("PATH", &path).current_dir(fx.dir.path()).args(["tool", "new", "line-numbers", "--dir", "demo"]);
        command.output().unwrap()
    };
    let crate_dir = fx.dir.path().join("demo");
    let said = ok(&new());
    assert!(said.contains("created the tool crate `line-numbers`"), "{said}");
    assert!(crate_dir.join("src/lib.rs").is_file() && crate_dir.join("README.md").is_file());
    assert!(String::from_utf8_lossy(&new().stderr).contains("not empty"), "an existing crate is never overwritten");
    // The SDK is inside the crate: nothing names the checkout.
    let manifest = std::fs::read_to_string(crate_dir.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("path = \"vendor/cordon/tools/sdk\""), "{manifest}");
    let workspace_path = workspace().display().to_string();
    for file in ["Cargo.toml", "vendor/cordon/tools/sdk/Cargo.toml", "vendor/cordon/contract/Cargo.toml"] {
        let text = std::fs::read_to_string(crate_dir.join(file)).unwrap();
        assert!(!text.contains(&workspace_path) && !text.contains("workspace = true"), "{file}:\n{text}");
    }
    assert!(crate_dir.join("vendor/cordon/wit/tool.wit").is_file() && crate_dir.join("Cargo.lock").is_file());

    // Built like a tool author would, offline (the vendored lockfile pins what
    // Cordon was built with), reusing the guests' build.
    let guests = Path::new(RUST_EXAMPLE).ancestors().nth(3).unwrap();
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let build = Command::new(cargo)
        .args(["build", "--offline", "--release", "--target", "wasm32-wasip2"])
        .current_dir(&crate_dir)
        .env("CARGO_TARGET_DIR", guests)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", String::from_utf8_lossy(&build.stderr));
    let component = guests.join("wasm32-wasip2/release/line_numbers.wasm");

    let lines: String = (1..=400).map(|i| format!("line {i}{}\n", if i % 3 == 0 { " TODO" } else { "" })).collect();
    fx.write("notes.txt", &lines);
    let tools = fx.dir.path().join("tools");
    ok(&tool_cmd(
        &tools,
        &["tool", "add", component.to_str().unwrap(), "--grant", &format!("ro:{}", fx.root().display())],
    ));
    let mut server = serve(&fx.root(), &tools);
    let (found, pages) = items(&mut server, "line-numbers", json!({ "path": "notes.txt", "contains": "TODO" }), 100);
    assert_eq!(found.len(), 133);
    assert!(pages > 3, "{pages} pages");
    assert_eq!(found[0], json!({ "line": 3, "text": "line 3 TODO" }));
}

/// A PATH on which `cordon` is the binary alone, copied away from the checkout
/// it was built in (into the fixture's `bin/`).
pub fn cordon_on_path(fx: &Fixture) -> std::ffi::OsString {
    let bin = fx.dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::fs::copy(cordon_bin(), bin.join("cordon")).unwrap();
    // A process another test forks while the copy is open for writing holds
    // that descriptor until it execs, and the copy cannot run meanwhile
    // (ETXTBSY). Once it has run once, no such descriptor is left.
    for _ in 0..100 {
        match Command::new(bin.join("cordon")).arg("--version").output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(Duration::from_millis(20))
            }
            ran => {
                assert!(ran.unwrap().status.success(), "the copied binary runs");
                break;
            }
        }
    }
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&rest))).unwrap()
}

/// The SHA-256 of a file, hex.
pub fn sha256_file(path: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

#[test]
fn tools_list_changed_reaches_a_legacy_http_session_on_its_get_stream() {
    use std::io::{Read, Write};

    let fx = Fixture::new();
    let tools = fx.dir.path().join("tools");
    let server = spawn_listening(&fx.root(), &["--http", "127.0.0.1:0"], &["--tools-dir", tools.to_str().unwrap()]);
    let addr = server.addr.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params("2025-11-25") });
    let init = http_post(&addr, &[], init.to_string().as_bytes());
    let session = init.header("mcp-session-id").expect("a legacy session").to_string();
    let headers = [("Mcp-Session-Id", session.clone()), ("MCP-Protocol-Version", "2025-11-25".to_string())];
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(http_post(&addr, &headers, initialized.to_string().as_bytes()).status, 202);

    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let get = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\
         MCP-Protocol-Version: 2025-11-25\r\n\r\n"
    );
    stream.write_all(get.as_bytes()).unwrap();
    let mut seen = Vec::new();
    let mut read_until = |needle: &str, seen: &mut Vec<u8>| {
        let mut buffer = [0u8; 4096];
        while !String::from_utf8_lossy(seen).contains(needle) {
            let n = stream.read(&mut buffer).unwrap_or_else(|e| panic!("waiting for {needle}: {e}"));
            assert!(n > 0, "the stream ended before {needle}: {}", String::from_utf8_lossy(seen));
            seen.extend_from_slice(&buffer[..n]);
        }
    };
    read_until("\r\n\r\n", &mut seen);
    let head = String::from_utf8_lossy(&seen).to_string();
    assert!(head.starts_with("HTTP/1.1 200") && head.contains("text/event-stream"), "{head}");
    ok(&tool_cmd(&tools, &["tool", "add", RUST_EXAMPLE]));
    read_until("notifications/tools/list_changed", &mut seen);
    drop(server);
}

/// Builds an example tool with its build script (which installs its build
/// tools on first use and prints the component's path), once per run.
pub fn example(lang: &str) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<(String, PathBuf)>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = built.iter().find(|(l, _)| l == lang) {
        return path.clone();
    }
    let script = workspace().join(format!("tools/examples/{lang}/build.sh"));
    let out = Command::new("bash").arg(&script).stdin(std::process::Stdio::null()).output().unwrap();
    let path = PathBuf::from(ok(&out).trim());
    assert!(path.is_file(), "{} printed {}", script.display(), path.display());
    built.push((lang.to_string(), path.clone()));
    path
}

#[test]
fn the_python_example_reads_a_granted_csv_in_pages_exactly() {
    let fx = Fixture::new();
    let data = fx.root().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let mut csv = String::from("id,name,note\n");
    for i in 0..1500 {
        let note = match i % 5 {
            0 => format!("\"line one\nline two {i}\""),
            1 => format!("\"comma, and \"\"quotes\"\" {i}\""),
            2 => format!("ünïcödé {}", "é".repeat(i % 50)),
            _ => format!("plain {i}"),
        };
        csv.push_str(&format!("{i},name {i},{note}\n"));
    }
    std::fs::write(data.join("rows.csv"), &csv).unwrap();
    let tools = fx.dir.path().join("tools");
    ok(&tool_cmd(
        &tools,
        &[
            "tool",
            "add",
            example("python").to_str().unwrap(),
            "--grant",
            &format!("ro:{}", data.display()),
            "--stub-sockets",
        ],
    ));
    let mut server = serve(&fx.root(), &tools);
    assert!(tool_names(&mut server, 1).contains(&"csv_rows".to_string()));
    let (rows, pages) = items(&mut server, "csv_rows", json!({ "path": data.join("rows.csv").to_str().unwrap() }), 300);
    assert_eq!(rows.len(), 1500);
    assert!(pages > 10, "{pages} pages");
    assert_eq!(rows[0], json!({ "id": "0", "name": "name 0", "note": "line one\nline two 0" }));
    assert_eq!(rows[1]["note"], "comma, and \"quotes\" 1");
    assert_eq!(rows[1497]["note"], format!("ünïcödé {}", "é".repeat(1497 % 50)));
    let (narrow, _) = items(
        &mut server,
        "csv_rows",
        json!({ "path": data.join("rows.csv").to_str().unwrap(), "columns": ["id"] }),
        2000,
    );
    assert_eq!(narrow[1499], json!({ "id": "1499" }));
    let denied = server.call(2, "csv_rows", json!({ "path": fx.root().join("hello.txt").to_str().unwrap() }));
    assert_eq!(denied["_meta"]["cordon/error"]["code"], "permission_denied", "{denied}");
}

#[test]
fn the_javascript_example_pages_primes_exactly() {
    let fx = Fixture::new();
    let tools = fx.dir.path().join("tools");
    ok(&tool_cmd(&tools, &["tool", "add", example("javascript").to_str().unwrap()]));
    let mut server = serve(&fx.root(), &tools);
    assert!(tool_names(&mut server, 1).contains(&"primes".to_string()));
    let (primes, pages) = items(&mut server, "primes", json!({ "below": 100000 }), 2000);
    assert_eq!(primes.len(), 9592, "the primes below 100000");
    assert!(pages > 5, "{pages} pages");
    assert_eq!(primes[0], json!({ "index": 0, "prime": 2 }));
    assert_eq!(primes[9591]["prime"], 99991);
    let bad = server.call(2, "primes", json!({ "below": 1 }));
    assert_eq!(bad["isError"], true, "{bad}");
}
