//! MCP over TCP: the same newline-delimited framing as stdio, one session per
//! connection, behind a credential.
//!
//! The first line a client sends must be its credential alone on the line (a
//! static token, or an OAuth access token when an issuer is configured; see
//! `auth`); only then are requests read, as its principal. A wrong or missing
//! one is answered with one `-32001` error line and the connection is closed.
//! A first line that looks like HTTP (`GET `, `POST `, …, or a `Host:` header)
//! closes the connection at once with nothing written, so a web page that
//! reaches the port cannot drive the server.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use crate::audit::Who;
use crate::auth::Auth;
use crate::limits::FIXED;
use crate::results::faults::refusal::Refusal;
use crate::server::Server;
use crate::session::Session;

/// What the first line of a connection is.
#[derive(Debug, PartialEq, Eq)]
pub enum Greeting<'a> {
    /// A credential, to check.
    Credential(&'a str),
    /// An HTTP request: close without answering.
    Http,
}

/// Classifies a connection's first line (without its newline).
pub fn greet(line: &[u8]) -> Greeting<'_> {
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
    Greeting::Credential(std::str::from_utf8(given).unwrap_or_default())
}

/// Accepts connections on `addr` until the process ends; each must present
/// a credential `auth` accepts.
pub async fn serve(server: Arc<Server>, addr: SocketAddr, auth: Arc<Auth>) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    tracing::info!("listening on {}", listener.local_addr()?);
    auth.warm().await;
    loop {
        let (stream, peer) = accept(&listener).await?;
        let (server, auth) = (Arc::clone(&server), Arc::clone(&auth));
        tokio::spawn(async move {
            tracing::debug!(%peer, "connection");
            if let Err(e) = connection(server, stream, peer, &auth).await {
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

async fn connection(server: Arc<Server>, stream: TcpStream, peer: SocketAddr, auth: &Auth) -> std::io::Result<()> {
    let who = Who { peer: Some(peer.to_string()), ..Who::new("tcp") };
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut first = Vec::new();
    (&mut reader).take(FIXED.token_line_bytes).read_until(b'\n', &mut first).await?;
    let line = first.strip_suffix(b"\n").unwrap_or(&first);
    let credential = match greet(line) {
        Greeting::Http => {
            tracing::warn!("an HTTP request reached the TCP port; closed");
            return Ok(());
        }
        Greeting::Credential(credential) => credential,
    };
    match auth.authenticate(Some(credential)).await {
        Ok(principal) => {
            let max_line = server.limits().max_line_bytes;
            let caller = server.caller(&principal, who);
            super::lines::serve(reader, write, Session::duplex(server, caller), max_line).await;
            Ok(())
        }
        Err(failure) => {
            server.refused(&who, failure.reason(), None, failure.to_string());
            write.write_all(format!("{}\n", Refusal::LineToken.body()).as_bytes()).await?;
            write.shutdown().await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_line_is_the_credential() {
        assert_eq!(greet(b"s3cret"), Greeting::Credential("s3cret"));
        assert_eq!(greet(b"s3cret\r"), Greeting::Credential("s3cret"));
        assert_eq!(greet(b"\xff\xfe"), Greeting::Credential(""), "not UTF-8: no credential");
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
            assert_eq!(greet(line), Greeting::Http, "{}", String::from_utf8_lossy(line));
        }
    }
}
