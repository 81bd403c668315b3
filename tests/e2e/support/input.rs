//! Where a [`Server`](super::Server) writes its lines when it is not plain
//! stdio or TCP: stdio in the stateless 2026-07-28 era (each request given its
//! `_meta`), and HTTP (each line one POST, its answers sent back as lines).

use std::io::Write;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::http_post;

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
pub(super) struct ModernLines {
    pub(super) inner: Box<dyn Write + Send>,
    pub(super) buffer: Vec<u8>,
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
pub(super) struct HttpInput {
    pub(super) addr: String,
    pub(super) buffer: Vec<u8>,
    pub(super) session: Arc<Mutex<Option<String>>>,
    pub(super) modern: bool,
    pub(super) tx: Sender<String>,
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
