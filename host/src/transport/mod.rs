//! Transports: thin adapters that move frames between a byte stream and a
//! `Session`. None of them handles requests itself.

pub mod http;
pub mod lines;
pub mod ops;
pub mod stdio;
pub mod tcp;

/// Turns Nagle's algorithm off on an accepted connection, so each write goes
/// out at once. Answers leave in several small writes (an SSE stream's
/// headers, its events and its end; a line and its flush), and with Nagle's
/// algorithm the last of them waits for the client's delayed ACK: about 40 ms
/// per response on loopback. A socket that refuses is used as it is.
pub(crate) fn no_delay(stream: &tokio::net::TcpStream) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::warn!("could not set TCP_NODELAY on a connection: {e}");
    }
}
