//! Child processes: `cordon serve` listening on a socket (stopped and reaped
//! when dropped, its log kept), a client process run with a time limit, and a
//! process's peak memory.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{REPLY_TIMEOUT, cordon_bin, shared_state_dir};

/// A `cordon serve` listening on a socket, and everything it logged. The
/// server is ended when this is dropped, also when a test fails first.
pub struct Listening {
    pub child: Reaped,
    /// What the server said it listens on (`127.0.0.1:PORT`, or `http://…/mcp`).
    pub addr: String,
    pub log: ServerLog,
}

/// A child process ended (`end`) and reaped when dropped, so that no server
/// outlives the test that started it, passed or failed.
pub struct Reaped(Option<Child>);

impl Reaped {
    /// `child`, killed and reaped when this is dropped.
    pub fn new(child: Child) -> Reaped {
        Reaped(Some(child))
    }

    /// The child, for an owner that ends it itself when dropped.
    pub fn into_child(mut self) -> Child {
        self.0.take().expect("the child is held until taken")
    }

    pub fn id(&self) -> u32 {
        self.0.as_ref().expect("the child is held until taken").id()
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            end(child);
        }
    }
}

/// Asks `child` to stop (SIGTERM); false if it could not be signalled.
pub fn sigterm(child: &Child) -> bool {
    // SAFETY: SIGTERM to a child of this process that has not been reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) == 0 }
}

/// How long a child asked to stop (SIGTERM) has before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Ends `child` and reaps it: SIGTERM first, so that a server stops in order
/// and removes what it made (its uploads directory in `/tmp` when it has no
/// state directory), then SIGKILL if it is still there after `STOP_GRACE`.
pub fn end(child: &mut Child) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    sigterm(child);
    let until = std::time::Instant::now() + STOP_GRACE;
    while std::time::Instant::now() < until {
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A server's stderr, kept line by line for failure messages.
#[derive(Clone, Default)]
pub struct ServerLog(Arc<Mutex<Vec<String>>>);

impl ServerLog {
    /// Everything logged so far.
    pub fn text(&self) -> String {
        self.0.lock().unwrap().join("\n")
    }
}

/// Starts `cordon serve` with `listen` flags (e.g. `--http 127.0.0.1:0`) on
/// `root`, and waits for the address it says it listens on. Its stderr is
/// drained for its whole life (so logging never blocks it) into the log.
pub fn spawn_listening(root: &Path, listen: &[&str], extra: &[&str]) -> Listening {
    let mut child = Command::new(cordon_bin())
        .arg("serve")
        .args(listen)
        .arg("--root")
        .arg(root)
        .arg("--state-dir")
        .arg(shared_state_dir())
        .args(extra)
        .env("RUST_LOG", "cordon=info")
        .env_remove("CORDON_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start cordon");
    let log = ServerLog::default();
    let (tx, addrs) = channel();
    let (source, lines) = (child.stderr.take().unwrap(), log.clone());
    std::thread::spawn(move || {
        for line in BufReader::new(source).lines() {
            let Ok(line) = line else { break };
            // A JSON log line (`--log-format json`) says it in its message.
            let message = serde_json::from_str::<serde_json::Value>(&line)
                .ok()
                .and_then(|v| v["message"].as_str().map(str::to_string))
                .unwrap_or_else(|| line.clone());
            if let Some((_, addr)) = message.split_once("listening on ") {
                let _ = tx.send(addr.trim().to_string());
            }
            lines.0.lock().unwrap().push(line);
        }
    });
    let addr = addrs
        .recv_timeout(REPLY_TIMEOUT)
        .unwrap_or_else(|e| panic!("cordon never said where it listens ({e}):\n{}", log.text()));
    Listening { child: Reaped(Some(child)), addr, log }
}

/// `cordon serve --http 127.0.0.1:0`, with its address read from its log; killed on drop.
pub struct HttpServer {
    child: Child,
    pub url: String,
    log: ServerLog,
}

impl HttpServer {
    pub fn start(root: &Path) -> HttpServer {
        HttpServer::start_with(root, &[])
    }

    /// `cordon serve --http` with `extra` flags (e.g. an issuer to take tokens from).
    pub fn start_with(root: &Path, extra: &[&str]) -> HttpServer {
        let Listening { child, addr: url, log } = spawn_listening(root, &["--http", "127.0.0.1:0"], extra);
        assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{url}");
        HttpServer { child: child.into_child(), url, log }
    }

    /// Everything the server logged so far, for failure messages.
    pub fn log(&self) -> String {
        self.log.text()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        end(&mut self.child);
    }
}

/// A process's peak resident memory so far (VmHWM), in KiB.
pub fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).expect("VmHWM in /proc status");
    line.trim().trim_end_matches("kB").trim().parse().unwrap()
}

/// Runs a client process in its own group, collects its output, and waits up to `timeout`; on
/// timeout kills the whole group (the client and what it started, such as a stdio server) and
/// returns `None` for the status.
pub fn run_bounded(mut command: Command, timeout: Duration) -> (Option<ExitStatus>, Vec<u8>, Vec<u8>) {
    let mut child = command
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {:?}: {e}", command.get_program()));
    let collect = |mut source: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = source.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = collect(Box::new(child.stdout.take().unwrap()));
    let stderr = collect(Box::new(child.stderr.take().unwrap()));
    let deadline = std::time::Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = Command::new("kill").arg("-KILL").arg("--").arg(format!("-{}", child.id())).status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (status, stdout.join().unwrap(), stderr.join().unwrap())
}

/// What `attempt` gives once it gives something, asked again every `every`
/// until `within` has passed; then the test fails, saying `what` (asked
/// for once, at the end, so it can show the last state).
pub fn poll<T>(
    within: Duration,
    every: Duration,
    what: impl Fn() -> String,
    mut attempt: impl FnMut() -> Option<T>,
) -> T {
    let deadline = std::time::Instant::now() + within;
    loop {
        if let Some(found) = attempt() {
            return found;
        }
        assert!(std::time::Instant::now() < deadline, "{}", what());
        std::thread::sleep(every);
    }
}
