//! The `Server` client: a `cordon serve` it started (over stdio, TCP or HTTP,
//! or through a wrapper) or one started elsewhere, spoken to line by line in
//! JSON-RPC.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

use super::input::{HttpInput, ModernLines};
use super::{Listening, cordon_bin, peak_rss_kib, shared_state_dir, spawn_listening};

/// Generous: the suite must pass on a slow, busy machine.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(120);

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
    /// Starts `cordon serve --root ROOT` (with `extra` flags and the shared
    /// state dir) with one end of a socket pair as its stdin and stdout, as
    /// Node's process API starts a child; the client speaks over the other.
    pub fn start_on_socket(root: &Path, extra: &[&str]) -> Server {
        let (ours, theirs) = UnixStream::pair().expect("a socket pair");
        let stdin = Stdio::from(OwnedFd::from(theirs.try_clone().expect("a second descriptor")));
        let mut command = Command::new(cordon_bin());
        command.arg("serve").arg("--root").arg(root).arg("--state-dir").arg(shared_state_dir()).args(extra);
        command.stdin(stdin).stdout(Stdio::from(OwnedFd::from(theirs))).stderr(Stdio::null());
        let child = command.spawn().unwrap_or_else(|e| panic!("start cordon: {e}"));
        // The child's end is closed here once `command` goes: only the child holds it.
        drop(command);
        let lines = read_lines(ours.try_clone().expect("a second descriptor"));
        Server { child: Some(child), input: Some(Box::new(WriteHalf(ours))), lines }
    }

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
    /// Closes the server's input, as a client that leaves does.
    pub fn close_input(&mut self) {
        drop(self.input.take());
    }

    pub fn finish(mut self) -> bool {
        drop(self.input.take());
        self.process().wait().unwrap().success()
    }
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

    /// Asks the server to stop with SIGTERM and waits for it to end.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        assert!(super::process::sigterm(self.process()), "SIGTERM cordon");
        self.process().wait().expect("reap cordon")
    }

    /// Kills the server with SIGKILL (no chance to clean up) and reaps it.
    pub fn kill_9(mut self) {
        self.process().kill().expect("SIGKILL cordon");
        self.process().wait().expect("reap cordon");
    }
}

/// The writing side of a socket: dropping it ends the peer's input (its
/// reading side stays open for the replies).
struct WriteHalf(UnixStream);

impl Write for WriteHalf {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.write(bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl Drop for WriteHalf {
    fn drop(&mut self) {
        let _ = self.0.shutdown(Shutdown::Write);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            super::process::end(child);
        }
    }
}

pub fn initialize_params(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "cordon-e2e", "version": "0"}
    })
}
