//! A stand-in for a model's HTTP API on loopback, the part every stand-in
//! shares (Claude Code's Messages API, Codex's Responses API): a listener that
//! serves each connection on a thread of its own, one HTTP/1.1 request read
//! whole, one reply written and the connection closed.

use std::io::{BufRead, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// A loopback listener that serves each connection on a thread of its own,
/// until it is dropped: where a stand-in for the Messages API listens.
pub struct Loopback {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Loopback {
    /// Listens on a free loopback port and hands each connection to `serve`.
    pub fn start(serve: impl Fn(TcpStream) + Send + Sync + 'static) -> std::io::Result<Loopback> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let (stopped, serve) = (Arc::clone(&stop), Arc::new(serve));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let serve = Arc::clone(&serve);
                std::thread::spawn(move || serve(stream));
            }
        });
        Ok(Loopback { addr, stop })
    }

    /// Its base URL (for `ANTHROPIC_BASE_URL`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// A stand-in: a [`Loopback`] listener whose connections share one state
/// (the conversation it plays and records); stops when dropped.
pub struct StandIn<S> {
    listener: Loopback,
    state: Arc<Mutex<S>>,
}

impl<S: Send + 'static> StandIn<S> {
    /// Listens on a free loopback port and hands each connection to `serve`
    /// with the shared state.
    pub fn start(state: S, serve: fn(TcpStream, &Mutex<S>)) -> std::io::Result<StandIn<S>> {
        let state = Arc::new(Mutex::new(state));
        let shared = Arc::clone(&state);
        let listener = Loopback::start(move |stream| serve(stream, &shared))?;
        Ok(StandIn { listener, state })
    }

    /// Its base URL.
    pub fn url(&self) -> String {
        self.listener.url()
    }

    /// The shared state (also after a connection's thread panicked holding it).
    pub fn state(&self) -> MutexGuard<'_, S> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// One HTTP request as a stand-in reads it.
#[derive(Debug)]
pub struct Request {
    pub method: String,
    /// The request target, query included.
    pub path: String,
    pub body: Vec<u8>,
}

impl Request {
    /// The path without its query.
    pub fn route(&self) -> &str {
        self.path.split('?').next().unwrap_or_default()
    }
}

/// Reads one HTTP/1.1 request: the head, then a `Content-Length` or chunked body.
pub fn read_request(reader: &mut impl BufRead) -> std::io::Result<Request> {
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut start = line.split_whitespace().map(str::to_string);
    let (Some(method), Some(path)) = (start.next(), start.next()) else {
        return Err(std::io::Error::other(format!("not an HTTP request: {line:?}")));
    };
    let (mut length, mut chunked) = (0, false);
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else { continue };
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().unwrap_or(0),
            "transfer-encoding" => chunked = value.contains("chunked"),
            _ => {}
        }
    }
    let body = if chunked { read_chunked(reader)? } else { read_exactly(reader, length)? };
    Ok(Request { method, path, body })
}

/// Reads `length` bytes.
fn read_exactly(reader: &mut impl BufRead, length: usize) -> std::io::Result<Vec<u8>> {
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(body)
}

/// Reads a chunked body to its last chunk (trailers skipped).
fn read_chunked(reader: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let (mut body, mut line) = (Vec::new(), String::new());
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let size = line.split(';').next().and_then(|s| usize::from_str_radix(s.trim(), 16).ok()).unwrap_or(0);
        if size == 0 {
            while reader.read_line(&mut line)? > 0 && !line.trim().is_empty() {
                line.clear();
            }
            return Ok(body);
        }
        body.extend(read_exactly(reader, size)?);
        reader.read_line(&mut line)?;
    }
}

/// Writes a reply (`status` such as "200 OK", a body of `content_type`) and
/// closes the exchange.
pub fn write_reply(out: &mut impl Write, status: &str, content_type: &str, body: &str) -> std::io::Result<()> {
    write!(out, "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nCache-Control: no-cache\r\n")?;
    write!(out, "Content-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_read_whole_with_a_length_or_in_chunks() {
        let plain = b"POST /v1/messages?beta=true HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}";
        let request = read_request(&mut &plain[..]).unwrap();
        assert_eq!(
            (request.method.as_str(), request.route(), request.body.as_slice()),
            ("POST", "/v1/messages", &b"{}"[..])
        );
        let chunked = b"POST /r HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(read_request(&mut &chunked[..]).unwrap().body, b"abcde");
        assert!(read_request(&mut &b"\r\n"[..]).is_err(), "no request line");
    }
}
