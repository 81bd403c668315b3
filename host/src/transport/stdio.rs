//! MCP over the process's stdin and stdout. Logs go to stderr only.
//!
//! A client that starts the server gives it a pipe or a socket for each (a
//! FIFO from Python's and Rust's process APIs, a socket pair from Node's):
//! those are made non-blocking and polled by the runtime itself, so a request
//! read and its answer written take no thread of their own. Anything else (a
//! terminal, a file) goes through tokio's stdin and stdout, which read and
//! write on its blocking pool.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::UnixStream;
use tokio::net::unix::pipe;

use crate::audit::Who;
use crate::auth::Principal;
use crate::server::Server;
use crate::session::Session;

/// Serves one session on stdin/stdout until stdin closes.
pub async fn serve(server: Arc<Server>) {
    let max_line = server.limits().max_line_bytes;
    // The client is the process that started this one, run by the local user.
    let who = Who { peer: Some(format!("pid {}", std::os::unix::process::parent_id())), ..Who::new("stdio") };
    let caller = server.caller(&Principal::Local, who);
    super::lines::serve(input(), output(), Session::duplex(server, caller), max_line).await;
}

/// What an end of the process's standard streams is.
enum End {
    /// A pipe (FIFO).
    Pipe(File),
    /// A socket (a socket pair's end).
    Socket(std::os::unix::net::UnixStream),
    /// A terminal, a file, or an end that could not be looked at.
    Other,
}

impl End {
    /// What `fd` is, as a second descriptor of the same open file.
    fn of(fd: BorrowedFd<'_>) -> End {
        let Ok(owned) = fd.try_clone_to_owned() else { return End::Other };
        let file = File::from(owned);
        match file.metadata().map(|m| m.file_type()) {
            Ok(kind) if kind.is_fifo() => End::Pipe(file),
            Ok(kind) if kind.is_socket() => End::Socket(OwnedFd::from(file).into()),
            _ => End::Other,
        }
    }
}

/// Stdin as the session reads it.
fn input() -> Box<dyn AsyncRead + Unpin + Send> {
    let polled: std::io::Result<Box<dyn AsyncRead + Unpin + Send>> = match End::of(std::io::stdin().as_fd()) {
        End::Pipe(file) => pipe::Receiver::from_file(file).map(|r| Box::new(r) as _),
        End::Socket(socket) => socket_end(socket).map(|s| Box::new(s) as _),
        End::Other => return Box::new(tokio::io::stdin()),
    };
    polled.unwrap_or_else(|e| {
        tracing::debug!("stdin read through the blocking pool: {e}");
        Box::new(tokio::io::stdin())
    })
}

/// Stdout as the session writes it.
fn output() -> Box<dyn AsyncWrite + Unpin + Send> {
    let polled: std::io::Result<Box<dyn AsyncWrite + Unpin + Send>> = match End::of(std::io::stdout().as_fd()) {
        End::Pipe(file) => pipe::Sender::from_file(file).map(|s| Box::new(s) as _),
        End::Socket(socket) => socket_end(socket).map(|s| Box::new(s) as _),
        End::Other => return Box::new(tokio::io::stdout()),
    };
    polled.unwrap_or_else(|e| {
        tracing::debug!("stdout written through the blocking pool: {e}");
        Box::new(tokio::io::stdout())
    })
}

/// A socket end, non-blocking, polled by the runtime.
fn socket_end(socket: std::os::unix::net::UnixStream) -> std::io::Result<UnixStream> {
    socket.set_nonblocking(true)?;
    UnixStream::from_std(socket)
}
