//! A loopback HTTP/1.1 server standing in for the API a tool is granted (and
//! for one it must never reach): it counts the connections it accepts and
//! answers a few paths, one request per connection. It stops when dropped.
//!
//! - `GET /hello`: a short text body.
//! - `GET /bytes/N`: N bytes of `x`.
//! - `GET /redirect?to=URL`: `302` to URL.
//! - `GET /slow`: a body that never ends, one byte every 100 ms.
//! - `POST /upload`: reads the body (`Content-Length` or chunked), answers its size.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

/// What `GET /hello` answers.
pub const HELLO: &str = "hello from the granted API\n";

/// A running loopback web server.
pub struct WebServer {
    pub port: u16,
    connections: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl WebServer {
    pub fn start() -> WebServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (counted, stopping) = (Arc::clone(&connections), Arc::clone(&stop));
        thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                counted.fetch_add(1, Ordering::SeqCst);
                let stopping = Arc::clone(&stopping);
                thread::spawn(move || {
                    let _ = answer(stream, &stopping);
                });
            }
        });
        WebServer { port, connections, stop }
    }

    /// `http://127.0.0.1:PORT` and `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The connections it has accepted.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then sees the flag and ends.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn answer(stream: TcpStream, stop: &AtomicBool) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or_default().to_string(), parts.next().unwrap_or("/").to_string());
    let (mut length, mut chunked) = (0usize, false);
    loop {
        let mut header = String::new();
        reader.read_line(&mut header)?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':').unwrap_or((header, ""));
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().unwrap_or(0),
            "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
            _ => {}
        }
    }
    let mut out = stream;
    let reply = |out: &mut TcpStream, status: &str, extra: &str, body: &[u8]| -> std::io::Result<()> {
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n",
            body.len()
        );
        out.write_all(head.as_bytes())?;
        out.write_all(body)
    };
    match (method.as_str(), target.as_str()) {
        ("GET", "/hello") => reply(&mut out, "200 OK", "", HELLO.as_bytes()),
        ("GET", "/slow") => {
            out.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n")?;
            while !stop.load(Ordering::SeqCst) {
                out.write_all(b"s")?;
                thread::sleep(Duration::from_millis(100));
            }
            Ok(())
        }
        ("GET", t) if t.starts_with("/bytes/") => {
            let n: usize = t["/bytes/".len()..].parse().unwrap_or(0);
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\ncontent-length: {n}\r\nconnection: close\r\n\r\n"
            );
            out.write_all(head.as_bytes())?;
            let block = [b'x'; 8192];
            let mut left = n;
            while left > 0 {
                let k = left.min(block.len());
                out.write_all(&block[..k])?;
                left -= k;
            }
            Ok(())
        }
        ("GET", t) if t.starts_with("/redirect?to=") => {
            let to = &t["/redirect?to=".len()..];
            reply(&mut out, "302 Found", &format!("location: {to}\r\n"), b"")
        }
        ("POST", "/upload") => {
            let received = if chunked { read_chunked(&mut reader)? } else { read_exactly(&mut reader, length)? };
            reply(&mut out, "200 OK", "", format!("received {received} bytes\n").as_bytes())
        }
        _ => reply(&mut out, "404 Not Found", "", b"no such path\n"),
    }
}

fn read_exactly(reader: &mut impl Read, length: usize) -> std::io::Result<usize> {
    std::io::copy(&mut reader.take(length as u64), &mut std::io::sink()).map(|n| n as usize)
}

fn read_chunked(reader: &mut impl BufRead) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let mut size = String::new();
        reader.read_line(&mut size)?;
        let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
        if n == 0 {
            return Ok(total);
        }
        total += read_exactly(reader, n)?;
        let mut crlf = String::new();
        reader.read_line(&mut crlf)?;
    }
}
