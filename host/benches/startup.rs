//! Start-up and small-call latency, printed as a table.
//!
//! `cargo bench --bench startup [-- --calls N]` measures:
//! - cold start: `cordon tools` with an empty compile cache (compiles the tools);
//! - warm start: spawning `cordon serve` to its first `tools/list` answer;
//! - a small `read` call, in process (`Server::call_tool`) and over stdio
//!   (request written, response read), median and p99 over N calls.
//!
//! With `CORDON_BENCH_PEER=/path/to/server-filesystem/dist/index.js` (npm
//! `@modelcontextprotocol/server-filesystem`) the two stdio rows are also measured
//! for that reference server, alternating with Cordon, and the ratio printed.
//!
//! It fails only on errors, never on speed.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cordon::policy::RootSpec;
use cordon::protocol::mcp::Version;
use cordon::server::{Config, Limits, Server};
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_cordon");

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let calls: usize = args
        .iter()
        .position(|a| a == "--calls")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    let runs = 7;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("small.txt"), "a small file\nof two lines\n").unwrap();
    let state = dir.path().join("state");

    let mut rows = Vec::new();

    let cold: Vec<Duration> = (0..runs)
        .map(|i| {
            let fresh = dir.path().join(format!("cold-{i}"));
            time_command(Command::new(BIN).args(["tools", "--state-dir"]).arg(&fresh))
        })
        .collect();
    rows.push(("cold start (compile), `cordon tools`", summarize(cold)));

    time_command(Command::new(BIN).args(["tools", "--state-dir"]).arg(&state));
    let warm_tools: Vec<Duration> =
        (0..runs).map(|_| time_command(Command::new(BIN).args(["tools", "--state-dir"]).arg(&state))).collect();
    rows.push(("warm start, `cordon tools`", summarize(warm_tools)));

    let cordon = Contender::cordon(&root, &state);
    let peer = std::env::var("CORDON_BENCH_PEER").ok().map(|js| Contender::peer(&js, &root));
    let mut warm = Vec::new();
    let mut peer_warm = Vec::new();
    for _ in 0..runs {
        warm.push(first_tools_list(&cordon));
        if let Some(peer) = &peer {
            peer_warm.push(first_tools_list(peer));
        }
    }

    let config = Config {
        roots: vec![RootSpec { path: root.clone(), mode: cordon::policy::Mode::ReadOnly }],
        state_dir: Some(state.clone()),
        cursor_key: None,
        components: Vec::new(),
        deny: Vec::new(),
        read_only: false,
        limits: Limits::default(),
    };
    let server = Server::start(&config).unwrap();
    let args = json!({"path": "small.txt"});
    let in_process: Vec<Duration> = (0..calls)
        .map(|_| {
            let t = Instant::now();
            let result = server
                .call_tool(
                    "read",
                    &args,
                    Version::LATEST,
                    None,
                    &std::sync::Arc::new(cordon::runtime::CallSignal::new()),
                )
                .unwrap();
            let elapsed = t.elapsed();
            assert_eq!(result["isError"], false);
            elapsed
        })
        .collect();
    rows.push(("small read, in process (Server::call_tool)", summarize(in_process)));
    let stdio = stdio_calls(&cordon, calls);
    let peer_stdio = peer.as_ref().map(|peer| stdio_calls(peer, calls));

    println!("\n| measurement | runs | median | p99 | min |");
    println!("|---|---:|---:|---:|---:|");
    for (name, s) in rows {
        println!("| {name} | {} | {} | {} | {} |", s.n, fmt(s.median), fmt(s.p99), fmt(s.min));
    }
    println!("\n| over stdio | Cordon median | Cordon p99 | peer median | peer p99 | peer / Cordon (median) |");
    println!("|---|---:|---:|---:|---:|---:|");
    let pairs = [
        ("warm start to first tools/list answer", warm, peer_warm),
        ("small read, request to response", stdio, peer_stdio.unwrap_or_default()),
    ];
    for (name, ours, theirs) in pairs {
        let ours = summarize(ours);
        if theirs.is_empty() {
            println!("| {name} | {} | {} | (no peer) | | |", fmt(ours.median), fmt(ours.p99));
        } else {
            let theirs = summarize(theirs);
            let ratio = theirs.median.as_secs_f64() / ours.median.as_secs_f64();
            println!(
                "| {name} | {} | {} | {} | {} | {ratio:.2}x |",
                fmt(ours.median),
                fmt(ours.p99),
                fmt(theirs.median),
                fmt(theirs.p99)
            );
        }
    }
}

/// A server to measure over stdio: how to start it and how to call a small read.
struct Contender {
    program: String,
    args: Vec<String>,
    call: String,
}

impl Contender {
    fn cordon(root: &std::path::Path, state: &std::path::Path) -> Contender {
        Contender {
            program: BIN.into(),
            args: vec![
                "serve".into(),
                "--root".into(),
                root.display().to_string(),
                "--state-dir".into(),
                state.display().to_string(),
            ],
            call: r#""name":"read","arguments":{"path":"small.txt"}"#.into(),
        }
    }

    fn peer(js: &str, root: &std::path::Path) -> Contender {
        let file = root.join("small.txt").canonicalize().unwrap();
        Contender {
            program: "node".into(),
            args: vec![js.into(), root.display().to_string()],
            call: format!(r#""name":"read_text_file","arguments":{{"path":{:?}}}"#, file.display().to_string()),
        }
    }

    fn spawn(&self) -> std::process::Child {
        Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }
}

struct Summary {
    n: usize,
    median: Duration,
    p99: Duration,
    min: Duration,
}

fn summarize(mut samples: Vec<Duration>) -> Summary {
    samples.sort();
    let n = samples.len();
    Summary { n, median: samples[n / 2], p99: samples[(n * 99 / 100).min(n - 1)], min: samples[0] }
}

fn fmt(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{:.1} µs", d.as_secs_f64() * 1e6)
    } else {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    }
}

fn time_command(cmd: &mut Command) -> Duration {
    let t = Instant::now();
    let out = cmd.stdout(Stdio::null()).stderr(Stdio::null()).status().unwrap();
    assert!(out.success());
    t.elapsed()
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;

fn first_tools_list(server: &Contender) -> Duration {
    let t = Instant::now();
    let mut child = server.spawn();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    writeln!(stdin, "{INIT}").unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list"}}"#).unwrap();
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    let elapsed = t.elapsed();
    assert!(line.contains("\"tools\""), "{line}");
    drop(stdin);
    child.wait().unwrap();
    elapsed
}

fn stdio_calls(server: &Contender, calls: usize) -> Vec<Duration> {
    let mut child = server.spawn();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    writeln!(stdin, "{INIT}").unwrap();
    out.read_line(&mut line).unwrap();
    let samples = (0..calls)
        .map(|i| {
            let t = Instant::now();
            writeln!(stdin, r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{{}}}}}"#, i + 1, server.call)
                .unwrap();
            stdin.flush().unwrap();
            line.clear();
            out.read_line(&mut line).unwrap();
            let elapsed = t.elapsed();
            assert!(line.contains(r#""result""#) && !line.contains(r#""isError":true"#), "{line}");
            elapsed
        })
        .collect();
    drop(stdin);
    child.wait().unwrap();
    samples
}
