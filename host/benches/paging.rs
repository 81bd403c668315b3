//! Reading a large file to the end through MCP pages over stdio: MB/s, pages/s
//! and the server's peak RSS, printed as a table.
//!
//! `cargo bench --bench paging [-- --size-mib N]` (default 1024). With
//! `CORDON_BENCH_PEER=/path/to/server-filesystem/dist/index.js` the reference
//! server's `read_text_file` is also run, on growing files, to find the largest
//! it can serve and what that costs. It fails only on errors, never on speed.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const BIN: &str = env!("CARGO_BIN_EXE_cordon");
const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let size_mib: u64 = args
        .iter()
        .position(|a| a == "--size-mib")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1024);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let file = root.join("big.txt");
    let sha = write_file(&file, size_mib << 20);
    let state = dir.path().join("state");

    println!("\n| server | file | page size | pages | seconds | MB/s | pages/s | peak RSS |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for tokens in [25_000u64, 6_000] {
        let run = cordon_read(&root, &state, tokens, &sha);
        println!(
            "| Cordon | {size_mib} MiB | {tokens} tokens | {} | {:.1} | {:.1} | {:.0} | {} MiB |",
            run.pages,
            run.elapsed.as_secs_f64(),
            (size_mib as f64 * 1.048576) / run.elapsed.as_secs_f64(),
            run.pages as f64 / run.elapsed.as_secs_f64(),
            run.peak_rss_kib / 1024
        );
    }
    if let Ok(js) = std::env::var("CORDON_BENCH_PEER") {
        for mib in [1u64, 8, 64, 256, 1024].into_iter().filter(|m| *m <= size_mib) {
            let path = root.join(format!("peer-{mib}.txt"));
            write_file(&path, mib << 20);
            match peer_read(&js, &root, &path) {
                Ok((elapsed, rss, response)) => println!(
                    "| reference server | {mib} MiB | whole file | 1 | {:.2} | {:.1} | - | {} MiB (response line {} MiB) |",
                    elapsed.as_secs_f64(),
                    (mib as f64 * 1.048576) / elapsed.as_secs_f64(),
                    rss / 1024,
                    response >> 20
                ),
                Err(e) => println!("| reference server | {mib} MiB | whole file | - | - | - | - | failed: {e} |"),
            }
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// Writes `size` bytes of numbered lines; returns their SHA-256 (hex).
fn write_file(path: &Path, size: u64) -> String {
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let mut hasher = Sha256::new();
    let mut written = 0u64;
    let mut line = 0u64;
    while written < size {
        let mut text = format!("{line:012} the quick brown fox jumps over the lazy dog ünïcödé ✓\n").into_bytes();
        text.truncate((size - written) as usize);
        out.write_all(&text).unwrap();
        hasher.update(&text);
        written += text.len() as u64;
        line += 1;
    }
    out.flush().unwrap();
    hex(&hasher.finalize())
}

struct Run {
    pages: u64,
    elapsed: Duration,
    peak_rss_kib: u64,
}

fn cordon_read(root: &Path, state: &Path, tokens: u64, sha: &str) -> Run {
    let mut child = Command::new(BIN)
        .arg("serve")
        .arg("--root")
        .arg(root)
        .arg("--state-dir")
        .arg(state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::with_capacity(1 << 20, child.stdout.take().unwrap());
    let mut line = String::new();
    writeln!(stdin, "{INIT}").unwrap();
    out.read_line(&mut line).unwrap();
    let mut args = json!({"path": "big.txt", "max_tokens": tokens});
    let mut pages = 0u64;
    let start = Instant::now();
    loop {
        let request = json!({"jsonrpc": "2.0", "id": pages + 1, "method": "tools/call", "params": {"name": "read", "arguments": args}});
        writeln!(stdin, "{request}").unwrap();
        line.clear();
        out.read_line(&mut line).unwrap();
        let reply: Value = serde_json::from_str(&line).unwrap();
        let meta = &reply["result"]["structuredContent"];
        assert_eq!(reply["result"]["isError"], false, "{line}");
        pages += 1;
        match meta["next_cursor"].as_str() {
            Some(cursor) => args = json!({"cursor": cursor, "max_tokens": tokens}),
            None => {
                assert_eq!(meta["payload_sha256"], sha, "the whole-file hash on the last page");
                break;
            }
        }
    }
    let elapsed = start.elapsed();
    let peak_rss_kib = peak_rss(&child);
    drop(stdin);
    child.wait().unwrap();
    Run { pages, elapsed, peak_rss_kib }
}

fn peer_read(js: &str, root: &Path, file: &Path) -> Result<(Duration, u64, usize), String> {
    let mut child = Command::new("node")
        .arg(js)
        .arg(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    writeln!(stdin, "{INIT}").unwrap();
    out.read_line(&mut line).unwrap();
    let start = Instant::now();
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read_text_file", "arguments": {"path": file}}});
    writeln!(stdin, "{request}").map_err(|e| e.to_string())?;
    line.clear();
    let read = out.read_line(&mut line);
    let elapsed = start.elapsed();
    let rss = peak_rss(&child);
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    match read {
        Ok(0) => Err("the server closed the connection".into()),
        Ok(n) => {
            let reply: Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
            if let Some(e) = reply.get("error") {
                return Err(e.to_string().chars().take(120).collect());
            }
            if reply["result"]["isError"] == true {
                return Err(reply["result"]["content"][0]["text"].to_string().chars().take(120).collect());
            }
            Ok((elapsed, rss, n))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// VmHWM of a live child, in KiB.
fn peak_rss(child: &Child) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
