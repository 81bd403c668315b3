//! Reading a large file to the end through MCP pages over stdio: MB/s and the
//! server's peak RSS, Cordon with its default and its largest page, against the
//! reference server reading growing files whole until it fails.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::contenders::cordon_serve;
use crate::corpus::Corpus;
use crate::mcp::{Launch, Server, tool_error};
use crate::report::{Report, Table};
use crate::stats::{count, median, mib_from_kib, ratio, sig3, size};
use crate::{Options, WATCHDOG};

/// Cordon's largest page (`--max-page-tokens`' default).
const MAX_PAGE: u64 = 25_000;
/// Where TypeScript-SDK clients close the connection.
const TS_CLIENT_LIMIT: usize = 10 << 20;

/// One read to the end.
#[derive(Clone, Copy, Debug)]
struct Run {
    elapsed: Duration,
    pages: u64,
    rss_kib: u64,
    largest_message: usize,
}

/// The reference server on one file size.
struct PeerFile<'a> {
    bytes: u64,
    path: &'a Path,
    runs: Vec<Run>,
    failure: Option<(String, u64)>,
}

pub fn run(opts: &Options, corpus: &Corpus, report: &mut Report) -> Result<()> {
    let peer = opts.peers.peer(&[&corpus.big_root]);
    let mut peer_files: Vec<PeerFile> = corpus
        .peer_files
        .iter()
        .map(|(bytes, path)| PeerFile { bytes: *bytes, path, runs: Vec::new(), failure: None })
        .collect();
    let (mut largest, mut default) = (Vec::new(), Vec::new());
    for _ in 0..opts.runs {
        largest.push(cordon_read(opts, corpus, Some(MAX_PAGE))?);
        default.push(cordon_read(opts, corpus, None)?);
        let Some(peer) = &peer else { continue };
        // Growing sizes until the first failure; a size that failed is not tried again.
        for file in peer_files.iter_mut() {
            if file.failure.is_some() {
                break;
            }
            match peer_read(peer, file.path, file.bytes)? {
                Ok(run) => file.runs.push(run),
                Err(failure) => {
                    file.failure = Some(failure);
                    break;
                }
            }
        }
    }

    let mut table = Table::new(
        &format!("Reading a {} file to the end", size(corpus.big_bytes)),
        &[
            "server",
            "file",
            "page",
            "pages",
            "seconds",
            "MB/s",
            "pages/s",
            "largest message",
            "peak RSS",
            &format!("Cordon ({}-token pages) speed vs this row", count(MAX_PAGE)),
        ],
    );
    table.intro.push(format!(
        "Over stdio, one fresh server per run, timed from the first `tools/call` to the last answer; the client \
         parses every page and follows `next_cursor`, and checks that the pages add up to the file's {} bytes and \
         that the last page's `payload_sha256` is the file's. Peak RSS is the server's VmHWM. The reference server \
         (`read_text_file`) has no pagination: it answers with the whole file in one message (the text twice, in \
         `content` and `structuredContent`), so it tries growing files and stops at the first failure. MB = 10⁶ \
         bytes. Median of {} run(s).",
        count(corpus.big_bytes),
        opts.runs
    ));
    let best = mbs(corpus.big_bytes, &largest);
    for (label, runs) in [
        (format!("{} tokens (the maximum)", count(MAX_PAGE)), &largest),
        ("6,000 tokens (the default)".to_string(), &default),
    ] {
        table.row(row("Cordon", corpus.big_bytes, &label, runs, best));
    }
    if peer.is_none() {
        table.notes.push(crate::startup::missing_peer_note());
    }
    let mut tried_all = true;
    for file in &peer_files {
        if !file.runs.is_empty() {
            table.row(row("reference server", file.bytes, "whole file", &file.runs, best));
        }
        if let Some((message, rss)) = &file.failure {
            let mut cells = vec!["reference server".into(), size(file.bytes), "whole file".into()];
            cells.extend(["-", "-", "-", "-", "-"].map(String::from));
            cells.push(mib_from_kib(*rss));
            cells.push(format!("fails: {message}"));
            table.row(cells);
        }
        if file.runs.is_empty() && file.failure.is_none() {
            tried_all = false;
        }
    }
    if peer.is_some() && !tried_all {
        table.notes.push("Larger files were not tried after the reference server's first failure.".into());
    }
    if peer_files.iter().any(|f| f.runs.iter().any(|r| r.largest_message > TS_CLIENT_LIMIT)) {
        table.notes.push(
            "A message above 10 MiB makes TypeScript-SDK clients (the Inspector, many desktop clients) close the \
             connection, so those reference-server rows are out of reach for them; Cordon's pages stay far below."
                .into(),
        );
    }
    report.push(table);
    Ok(())
}

fn mbs(bytes: u64, runs: &[Run]) -> f64 {
    let secs = median(&runs.iter().map(|r| r.elapsed.as_secs_f64()).collect::<Vec<_>>());
    if secs > 0.0 { bytes as f64 / 1e6 / secs } else { 0.0 }
}

fn row(server: &str, bytes: u64, page: &str, runs: &[Run], best: f64) -> Vec<String> {
    let secs = median(&runs.iter().map(|r| r.elapsed.as_secs_f64()).collect::<Vec<_>>());
    let pages = runs.first().map_or(0, |r| r.pages);
    let rss = median(&runs.iter().map(|r| r.rss_kib as f64).collect::<Vec<_>>()) as u64;
    let largest = runs.iter().map(|r| r.largest_message).max().unwrap_or(0);
    let speed = mbs(bytes, runs);
    vec![
        server.into(),
        size(bytes),
        page.into(),
        count(pages),
        sig3(secs),
        sig3(speed),
        if pages > 1 { format!("{:.0}", pages as f64 / secs) } else { "-".into() },
        message_size(largest),
        mib_from_kib(rss),
        ratio(best, speed),
    ]
}

fn message_size(bytes: usize) -> String {
    if bytes < 1 << 20 { format!("{} KiB", bytes.div_ceil(1024)) } else { format!("{} MiB", bytes >> 20) }
}

/// Reads the big file through Cordon's pages, `tokens` per page (the
/// server's default when `None`).
fn cordon_read(opts: &Options, corpus: &Corpus, tokens: Option<u64>) -> Result<Run> {
    let launch = cordon_serve(&opts.cordon, &[&corpus.big_root], &opts.state_dir, &[]);
    let mut server = Server::start(&launch)?;
    let _watchdog = server.watchdog(WATCHDOG);
    let paging = |mut args: Value| {
        if let Some(tokens) = tokens {
            args["max_tokens"] = tokens.into();
        }
        args
    };
    let mut args = paging(json!({"path": corpus.big, "format": "json"}));
    let (mut pages, mut bytes) = (0u64, 0u64);
    let start = Instant::now();
    loop {
        let result = server.call("read", args)?;
        let (meta, page) = (&result["structuredContent"], &result["_meta"]["cordon/page"]);
        pages += 1;
        bytes += page["bytes"].as_u64().unwrap_or(0);
        match meta["next_cursor"].as_str() {
            Some(cursor) => args = paging(json!({"cursor": cursor})),
            None => {
                if page["payload_sha256"] != json!(corpus.big_sha256) {
                    bail!(
                        "the last page's payload_sha256 is {}, not the file's {}",
                        page["payload_sha256"],
                        corpus.big_sha256
                    );
                }
                break;
            }
        }
    }
    let elapsed = start.elapsed();
    if bytes != corpus.big_bytes {
        bail!("the pages carried {bytes} bytes, not the file's {}", corpus.big_bytes);
    }
    let run = Run { elapsed, pages, rss_kib: server.peak_rss_kib(), largest_message: server.largest_line() };
    server.finish();
    Ok(run)
}

/// The reference server reading `path` whole: the run, or why it failed (and
/// its peak RSS by then). Errors only when the server does not start.
fn peer_read(launch: &Launch, path: &Path, bytes: u64) -> Result<Result<Run, (String, u64)>> {
    let mut server = Server::start(launch)?;
    let _watchdog = server.watchdog(WATCHDOG);
    let start = Instant::now();
    let id = server.send_request("tools/call", json!({"name": "read_text_file", "arguments": {"path": path}}))?;
    let line = loop {
        match server.recv_owned() {
            // Skip notifications and anything else that is not this answer.
            Ok(line) if line.len() < 4096 && !line.contains(&format!("\"id\":{id}")) => continue,
            other => break other,
        }
    };
    let elapsed = start.elapsed();
    let rss_kib = server.peak_rss_kib();
    drop(server);
    let line = match line {
        Ok(line) => line,
        Err(e) => return Ok(Err((format!("{e:#}"), rss_kib))),
    };
    let reply: Value = match serde_json::from_str(&line) {
        Ok(reply) => reply,
        Err(e) => return Ok(Err((format!("an answer that is not JSON ({e})"), rss_kib))),
    };
    if let Some(error) = reply.get("error") {
        let message = error["message"].as_str().map_or_else(|| error.to_string(), str::to_string);
        return Ok(Err((format!("\"{}\"", message.chars().take(120).collect::<String>()), rss_kib)));
    }
    if reply["result"]["isError"] == true {
        return Ok(Err((format!("\"{}\"", tool_error(&reply["result"])), rss_kib)));
    }
    let text = reply["result"]["content"][0]["text"].as_str().map_or(0, str::len) as u64;
    if text != bytes {
        return Ok(Err((format!("returned {text} bytes of {bytes}"), rss_kib)));
    }
    Ok(Ok(Run { elapsed, pages: 1, rss_kib, largest_message: line.len() }))
}
