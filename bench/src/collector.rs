//! An OpenTelemetry collector stand-in for the traced rows: accepts every
//! OTLP/HTTP export (reads the whole request, answers 200 with an empty
//! response), keeps nothing, counts what it was sent.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Result;

/// The stand-in's address and what it received.
pub struct Collector {
    /// Its base URL, for `--otlp-endpoint`.
    pub url: String,
    exports: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
}

impl Collector {
    /// Listens on loopback, serving each connection on a thread of its own
    /// (for the life of the process).
    pub fn start() -> Result<Collector> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}", listener.local_addr()?);
        let (exports, bytes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let counts = (Arc::clone(&exports), Arc::clone(&bytes));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let counts = (Arc::clone(&counts.0), Arc::clone(&counts.1));
                std::thread::spawn(move || serve(stream, &counts.0, &counts.1));
            }
        });
        Ok(Collector { url, exports, bytes })
    }

    /// Exports received so far, and their bodies' bytes.
    pub fn received(&self) -> (u64, u64) {
        (self.exports.load(Ordering::Relaxed), self.bytes.load(Ordering::Relaxed))
    }
}

/// Answers every request of one connection (kept alive as the client asks).
fn serve(stream: TcpStream, exports: &AtomicU64, bytes: &AtomicU64) {
    let Ok(mut writer) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line == "\r\n" => break,
                Ok(_) => {
                    if let Some((name, value)) = line.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        exports.fetch_add(1, Ordering::Relaxed);
        bytes.fetch_add(length as u64, Ordering::Relaxed);
        let answer = "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}
