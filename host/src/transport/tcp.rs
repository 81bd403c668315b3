//! MCP over TCP: the same newline-delimited framing as stdio, one session per
//! connection, behind a token.
//!
//! The first line a client sends must be the server's token, alone on the line;
//! only then are requests read. A wrong or missing token is answered with one
//! `-32001` error line and the connection is closed. A first line that looks
//! like HTTP (`GET `, `POST `, …, or a `Host:` header) closes the connection at
//! once with nothing written, so a web page that reaches the port cannot drive
//! the server.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use crate::audit::Who;
use crate::limits::FIXED;
use crate::results::faults::refusal::Refusal;
use crate::server::Server;
use crate::session::Session;

/// What the first line of a connection is.
#[derive(Debug, PartialEq, Eq)]
pub enum Greeting {
    /// The right token: serve the session.
    Authorized,
    /// Something else: refuse with an error line.
    Refused,
    /// An HTTP request: close without answering.
    Http,
}

/// Classifies a connection's first line against `token`.
pub fn greet(line: &[u8], token: &str) -> Greeting {
    const HTTP: [&[u8]; 9] =
        [b"GET ", b"POST ", b"PUT ", b"HEAD ", b"OPTIONS ", b"DELETE ", b"PATCH ", b"CONNECT ", b"TRACE "];
    let lower = line.to_ascii_lowercase();
    if HTTP.iter().any(|m| line.starts_with(m))
        || lower.starts_with(b"host:")
        || lower.windows(7).any(|w| w == b"http/1.")
    {
        return Greeting::Http;
    }
    let given = line.strip_suffix(b"\r").unwrap_or(line);
    if constant_time_eq(given, token.as_bytes()) { Greeting::Authorized } else { Greeting::Refused }
}

pub(super) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Accepts connections on `addr` until the process ends.
pub async fn serve(server: Arc<Server>, addr: SocketAddr, token: String) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    tracing::info!("listening on {}", listener.local_addr()?);
    let token: Arc<str> = token.into();
    loop {
        let (stream, peer) = accept(&listener).await?;
        let (server, token) = (Arc::clone(&server), Arc::clone(&token));
        tokio::spawn(async move {
            tracing::debug!(%peer, "connection");
            if let Err(e) = connection(server, stream, peer, &token).await {
                tracing::debug!(%peer, "connection ended: {e}");
            }
        });
    }
}

/// The next connection, set to send each write at once (see `no_delay`).
async fn accept(listener: &TcpListener) -> std::io::Result<(TcpStream, SocketAddr)> {
    let (stream, peer) = listener.accept().await?;
    super::no_delay(&stream);
    Ok((stream, peer))
}

async fn connection(server: Arc<Server>, stream: TcpStream, peer: SocketAddr, token: &str) -> std::io::Result<()> {
    let who = Who { peer: Some(peer.to_string()), ..Who::new("tcp") };
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut first = Vec::new();
    (&mut reader).take(FIXED.token_line_bytes).read_until(b'\n', &mut first).await?;
    let line = first.strip_suffix(b"\n").unwrap_or(&first);
    match greet(line, token) {
        Greeting::Http => {
            tracing::warn!("an HTTP request reached the TCP port; closed");
            Ok(())
        }
        Greeting::Refused => {
            let refusal = Refusal::LineToken;
            if let Some(reason) = refusal.audit_reason() {
                server.refused(&who, reason, None, "the first line was not the server's token".into());
            }
            write.write_all(format!("{}\n", refusal.body()).as_bytes()).await?;
            write.shutdown().await
        }
        Greeting::Authorized => {
            let max_line = server.limits().max_line_bytes;
            let who = Who { token_id: Some(Who::token_id(token)), ..who };
            super::lines::serve(reader, write, Session::duplex(server, who), max_line).await;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_line_is_the_token_or_the_connection_is_refused() {
        assert_eq!(greet(b"s3cret", "s3cret"), Greeting::Authorized);
        assert_eq!(greet(b"s3cret\r", "s3cret"), Greeting::Authorized);
        assert_eq!(greet(b"s3cre", "s3cret"), Greeting::Refused);
        assert_eq!(greet(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, "s3cret"), Greeting::Refused);
        assert_eq!(greet(b"", "s3cret"), Greeting::Refused);
    }

    /// The mechanism behind answers without a 40 ms stall: every accepted
    /// connection has Nagle's algorithm off.
    #[tokio::test]
    async fn accepted_connections_send_each_write_at_once() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let _client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (stream, _) = accept(&listener).await.unwrap();
        assert!(stream.nodelay().unwrap(), "TCP_NODELAY is set");
    }

    #[test]
    fn http_is_recognized_before_anything_runs() {
        for line in [&b"POST /mcp HTTP/1.1"[..], b"GET / HTTP/1.0", b"Host: 127.0.0.1", b"OPTIONS * HTTP/1.1"] {
            assert_eq!(greet(line, "s3cret"), Greeting::Http, "{}", String::from_utf8_lossy(line));
        }
    }
}
