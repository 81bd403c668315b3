//! A small blocking MCP client over a child process's stdio (newline-delimited
//! JSON-RPC), for Cordon and the reference server alike.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};

/// The protocol version the harness asks for (both servers speak it).
pub const PROTOCOL: &str = "2025-11-25";

/// How to start a stdio MCP server.
#[derive(Clone, Debug)]
pub struct Launch {
    /// A short name for messages (`cordon`, `peer`).
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

impl Launch {
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args);
        cmd
    }
}

/// A running server and its stdio.
pub struct Server {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    out: BufReader<ChildStdout>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    next_id: u64,
    line: String,
    largest_line: usize,
}

impl Server {
    /// Starts the server with piped stdio; its stderr is drained, the last
    /// lines kept for error messages.
    pub fn spawn(launch: &Launch) -> Result<Server> {
        let mut child = launch
            .command()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {} ({})", launch.name, launch.program.display()))?;
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let (source, tail) = (child.stderr.take().expect("piped stderr"), Arc::clone(&stderr));
        std::thread::spawn(move || drain(source, &tail));
        Ok(Server {
            name: launch.name.clone(),
            stdin: child.stdin.take(),
            out: BufReader::with_capacity(1 << 20, child.stdout.take().expect("piped stdout")),
            child,
            stderr,
            next_id: 1,
            line: String::new(),
            largest_line: 0,
        })
    }

    /// Starts the server and completes the initialize handshake.
    pub fn start(launch: &Launch) -> Result<Server> {
        let mut server = Server::spawn(launch)?;
        server.initialize()?;
        Ok(server)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `initialize`, then `notifications/initialized`.
    pub fn initialize(&mut self) -> Result<Value> {
        let result = self.request("initialize", initialize_params())?;
        self.notify("notifications/initialized")?;
        Ok(result)
    }

    /// Writes one message as a line.
    pub fn send(&mut self, message: &Value) -> Result<()> {
        let stdin = self.stdin.as_mut().ok_or_else(|| anyhow!("{}: stdin closed", self.name))?;
        let mut bytes = serde_json::to_vec(message)?;
        bytes.push(b'\n');
        stdin.write_all(&bytes).with_context(|| format!("writing to {}{}", self.name, self.tail()))?;
        Ok(())
    }

    pub fn notify(&mut self, method: &str) -> Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "method": method}))
    }

    /// Sends a request with a fresh id; returns the id.
    pub fn send_request(&mut self, method: &str, params: Value) -> Result<u64> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    /// The next raw line (without its newline); an error when the server
    /// closed its output.
    pub fn recv_line(&mut self) -> Result<&str> {
        self.line.clear();
        let n = self.out.read_line(&mut self.line).with_context(|| format!("reading from {}", self.name))?;
        if n == 0 {
            bail!("{} closed the connection{}", self.name, self.tail());
        }
        self.largest_line = self.largest_line.max(n);
        Ok(self.line.trim_end_matches(['\n', '\r']))
    }

    /// The next raw line, owned (for very long lines: no copy).
    pub fn recv_owned(&mut self) -> Result<String> {
        self.recv_line()?;
        let mut line = std::mem::take(&mut self.line);
        line.truncate(line.trim_end_matches(['\n', '\r']).len());
        Ok(line)
    }

    /// The next response (a message with an id and no method), parsed.
    /// Notifications are skipped; requests from the server are refused.
    pub fn recv_response(&mut self) -> Result<Value> {
        loop {
            let line = self.recv_line()?;
            let message: Value = match serde_json::from_str(line) {
                Ok(message) => message,
                Err(e) => {
                    let line: String = line.chars().take(200).collect();
                    bail!("{} wrote a line that is not JSON ({e}): {line}", self.name);
                }
            };
            match (message.get("id"), message.get("method")) {
                (Some(_), None) => return Ok(message),
                (Some(id), Some(_)) => {
                    let id = id.clone();
                    self.send(
                        &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "not supported"}}),
                    )?;
                }
                _ => {}
            }
        }
    }

    /// Sends a request and waits for its response; the `result`, or an error
    /// for a JSON-RPC error.
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.send_request(method, params)?;
        loop {
            let mut reply = self.recv_response()?;
            if reply["id"] != json!(id) {
                continue;
            }
            if let Some(error) = reply.get("error") {
                bail!("{}: {method} failed: {error}", self.name);
            }
            return Ok(reply["result"].take());
        }
    }

    /// Calls a tool; its result, or an error when it is a tool error.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Result<Value> {
        let result = self.request("tools/call", json!({"name": tool, "arguments": arguments}))?;
        if result["isError"] == true {
            bail!("{}: {tool} failed: {}", self.name, tool_error(&result));
        }
        Ok(result)
    }

    /// The longest line received so far, in bytes.
    pub fn largest_line(&self) -> usize {
        self.largest_line
    }

    /// The server's peak resident memory so far (VmHWM), in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        peak_rss_kib(self.child.id())
    }

    /// The CPU time the server has used so far, all its threads, user and
    /// system (see `cpu_seconds`).
    pub fn cpu_seconds(&self) -> f64 {
        cpu_seconds(self.child.id())
    }

    /// Kills the server if it has not exited `after` from now (a hung read
    /// then ends with an error); the returned guard cancels it when dropped.
    pub fn watchdog(&self, after: Duration) -> Watchdog {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let pid = self.child.id() as libc::pid_t;
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(after) {
                // The child is not reaped before the guard is dropped, so the pid is still ours.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        });
        Watchdog(Some(tx))
    }

    /// Closes stdin and waits (up to 10 s, then kills) for the server to exit.
    pub fn finish(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The last lines the server wrote on stderr, as a suffix for messages.
    fn tail(&self) -> String {
        let lines = self.stderr.lock().unwrap();
        if lines.is_empty() {
            String::new()
        } else {
            format!("; its stderr ends with: {}", lines.iter().cloned().collect::<Vec<_>>().join(" | "))
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Cancels a [`Server::watchdog`] when dropped.
pub struct Watchdog(#[allow(dead_code)] Option<std::sync::mpsc::Sender<()>>);

/// The `initialize` parameters: no client capabilities (no roots, no sampling).
pub fn initialize_params() -> Value {
    json!({"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "cordon-bench", "version": "0"}})
}

/// A tool error's sentence (the first text block), shortened.
pub fn tool_error(result: &Value) -> String {
    let text = result["content"][0]["text"].as_str().unwrap_or("(no text)");
    text.chars().take(200).collect()
}

/// The cursor that continues a result: the JSON's `next_cursor` in the JSON
/// form, else the short handle in `_meta` that the text form's footer names.
pub fn next_cursor(result: &Value) -> Option<String> {
    let meta = &result["_meta"]["cordon/page"];
    let structured = result["structuredContent"]["next_cursor"].as_str();
    structured.or_else(|| meta["handle"].as_str()).or_else(|| meta["cursor"].as_str()).map(str::to_owned)
}

/// A page's payload as text: in the JSON form its structured content's
/// `text`, or each of its `items` on a line; in the text form its content
/// blocks but Cordon's footer (the first `_meta["cordon/page"].blocks`).
pub fn payload_text(result: &Value) -> String {
    let meta = &result["_meta"]["cordon/page"];
    if meta["form"] == "json" {
        let shown = &result["structuredContent"];
        if let Some(text) = shown["text"].as_str() {
            return text.to_owned();
        }
        let items = shown["items"].as_array().into_iter().flatten();
        return items.map(|item| format!("{item}\n")).collect();
    }
    let blocks = meta["blocks"].as_u64().unwrap_or(0) as usize;
    let mut out = String::new();
    for block in result["content"].as_array().into_iter().flatten().take(blocks) {
        if let Some(text) = block["text"].as_str() {
            out.push_str(text);
        }
    }
    out
}

/// VmHWM of a live process, in KiB (0 when it is gone).
pub fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The user and system CPU time of a live process, all threads, in seconds
/// (`/proc/PID/stat`, counted in clock ticks: 10 ms here); 0 when it is gone.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command, which is in parentheses and may hold spaces.
    let Some((_, fields)) = stat.rsplit_once(')') else { return 0.0 };
    let ticks: u64 = fields.split_whitespace().skip(11).take(2).filter_map(|t| t.parse::<u64>().ok()).sum();
    // SAFETY: sysconf reads a constant of the system.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    ticks as f64 / per_second as f64
}

/// Keeps the last 20 lines of a stream.
fn drain(source: impl Read, tail: &Mutex<VecDeque<String>>) {
    for line in BufReader::new(source).lines() {
        let Ok(line) = line else { break };
        let mut tail = tail.lock().unwrap();
        if tail.len() == 20 {
            tail.pop_front();
        }
        tail.push_back(line.chars().take(300).collect());
    }
}
