//! MCP over the process's stdin and stdout. Logs go to stderr only.
//!
//! A client that starts the server gives it a pipe or a socket for each (a
//! FIFO from Python's and Rust's process APIs, a socket pair from Node's):
//! those are made non-blocking and polled by the runtime itself, so a request
//! read and its answer written take no thread of their own. Anything else (a
//! terminal, a file) goes through tokio's stdin and stdout, which read and
//! write on its blocking pool.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
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

/// Stdin as the session reads it.
fn input() -> Box<dyn AsyncRead + Unpin + Send> {
    match End::of(std::io::stdin().as_fd(), pipe::Receiver::from_owned_fd) {
        End::Pipe(pipe) => Box::new(pipe),
        End::Socket(socket) => Box::new(socket),
        End::Other => Box::new(tokio::io::stdin()),
    }
}

/// Stdout as the session writes it.
fn output() -> Box<dyn AsyncWrite + Unpin + Send> {
    match End::of(std::io::stdout().as_fd(), pipe::Sender::from_owned_fd) {
        End::Pipe(pipe) => {
            widen(pipe.as_fd());
            Box::new(pipe)
        }
        End::Socket(socket) => Box::new(socket),
        End::Other => Box::new(tokio::io::stdout()),
    }
}

/// What the pipe to the client holds before a write waits for it to read
/// (Linux gives a pipe 64 KiB): an answer at the largest page of the JSON
/// form (about 200 KiB, the page's text in `content` and again in
/// `structuredContent`) is then written whole at once, and the client reads
/// it while the server goes on, instead of the two taking turns 64 KiB at a
/// time.
const PIPE_BYTES: libc::c_int = 1 << 20;

/// Makes the pipe to the client hold `PIPE_BYTES`, or as much as this user
/// may (`/proc/sys/fs/pipe-max-size`); a pipe that cannot grow stays as it is.
fn widen(pipe: BorrowedFd<'_>) {
    let mut bytes = PIPE_BYTES;
    while bytes > 64 << 10 {
        // SAFETY: `F_SETPIPE_SZ` takes an int and changes only the capacity
        // of the pipe `pipe` is an end of; it fails on anything else.
        if unsafe { libc::fcntl(pipe.as_raw_fd(), libc::F_SETPIPE_SZ, bytes) } >= 0 {
            return;
        }
        bytes /= 4;
    }
    tracing::debug!("the pipe to the client keeps its size: {}", std::io::Error::last_os_error());
}

/// What one of the process's ends is, as the runtime can poll it.
enum End<P> {
    /// A pipe, as tokio's pipe end `P`.
    Pipe(P),
    Socket(UnixStream),
    /// A terminal, a file, or an end that could not be registered.
    Other,
}

impl<P> End<P> {
    /// `fd` as a pipe end (`as_pipe` refuses anything but a pipe open for its
    /// direction), else as a socket, else neither.
    fn of(fd: BorrowedFd<'_>, as_pipe: impl FnOnce(OwnedFd) -> std::io::Result<P>) -> End<P> {
        if let Some(pipe) = second(fd).and_then(|fd| as_pipe(fd).ok()) {
            return End::Pipe(pipe);
        }
        socket_end(fd).map_or(End::Other, End::Socket)
    }
}

/// A second descriptor of the open file `fd` is (tokio's pipe ends check
/// that it is a pipe, open for their direction, before they take it).
fn second(fd: BorrowedFd<'_>) -> Option<OwnedFd> {
    fd.try_clone_to_owned().ok()
}

/// `fd` as a Unix socket polled by the runtime, when it is one (asking for
/// its address fails for any other file).
fn socket_end(fd: BorrowedFd<'_>) -> Option<UnixStream> {
    let socket = std::os::unix::net::UnixStream::from(second(fd)?);
    socket.local_addr().ok()?;
    socket.set_nonblocking(true).ok()?;
    UnixStream::from_std(socket).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capacity(fd: BorrowedFd<'_>) -> libc::c_int {
        // SAFETY: `F_GETPIPE_SZ` only reads the pipe's capacity.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETPIPE_SZ) }
    }

    #[test]
    fn the_pipe_to_the_client_holds_a_largest_page_answer_and_other_files_are_left_alone() {
        let (_reader, writer) = std::io::pipe().unwrap();
        assert_eq!(capacity(writer.as_fd()), 64 << 10, "Linux's default");
        widen(writer.as_fd());
        let max: libc::c_int = std::fs::read_to_string("/proc/sys/fs/pipe-max-size").unwrap().trim().parse().unwrap();
        assert!(capacity(writer.as_fd()) >= PIPE_BYTES.min(max), "{}", capacity(writer.as_fd()));
        let file = tempfile::tempfile().unwrap();
        widen(file.as_fd());
        assert_eq!(capacity(file.as_fd()), -1, "not a pipe: nothing to widen");
    }
}
