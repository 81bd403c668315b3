//! Start-up: from spawning the server to its first `tools/list` answer and to
//! its first answered `read` of a small file, cold (an empty state directory:
//! Cordon compiles its tools) and warm (the compile cache present), beside the
//! reference server.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::Options;
use crate::contenders::cordon_serve;
use crate::corpus::Corpus;
use crate::mcp::{Launch, Server, initialize_params};
use crate::report::{Report, Table};
use crate::stats::{median_secs, ratio, secs};

pub fn run(opts: &Options, corpus: &Corpus, report: &mut Report) -> Result<()> {
    let root: &Path = &corpus.small_root;
    let warm = cordon_serve(&opts.cordon, &[root], &opts.state_dir, &[]);
    let peer = opts.peers.peer(&[root]);
    let file = root.join("small.txt");
    let ours_read = Read { tool: "read", arguments: json!({ "path": "small.txt" }) };
    let theirs_read = Read { tool: "read_text_file", arguments: json!({ "path": file }) };
    let (mut cold_t, mut warm_t, mut peer_t) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ours, mut theirs) = (0, 0);
    for run in 0..opts.runs {
        let fresh = std::env::temp_dir().join(format!("cordon-bench-cold-{}-{run}", std::process::id()));
        let _ = std::fs::remove_dir_all(&fresh);
        let cold = cordon_serve(&opts.cordon, &[root], &fresh, &[]);
        let measured = first_answers(&cold, &ours_read);
        let _ = std::fs::remove_dir_all(&fresh);
        let first = measured?;
        ours = first.tools;
        cold_t.push(first);
        warm_t.push(first_answers(&warm, &ours_read)?);
        if let Some(peer) = &peer {
            let first = first_answers(peer, &theirs_read)?;
            theirs = first.tools;
            peer_t.push(first);
        }
    }
    let mut table = Table::new(
        "Start-up",
        &[
            "spawn to",
            "Cordon, median",
            "Cordon, min – max",
            "reference server, median",
            "Cordon speed vs reference (×, >1: Cordon faster)",
        ],
    );
    table.intro.push(format!(
        "The client writes `initialize`, `notifications/initialized` and `tools/list` at once and waits for \
         the `tools/list` answer, then calls `read` (the reference server: `read_text_file`) on a {}-byte file \
         and waits for its answer; the server is then closed. Cordon lists {ours} tools; the reference server \
         lists {theirs}. Cold: an empty `--state-dir`: Cordon lists its built-in tools from the manifests \
         built with it and compiles each component in the background, a call compiling its own tool first \
         if it comes before (the operating system's file cache stays warm); warm: the compile cache from \
         earlier runs. The reference server has no compile cache: its one measurement is shown on both rows.",
        crate::corpus::SMALL.len()
    ));
    type Case<'a> = (&'a str, &'a [First], fn(&First) -> Duration);
    let cases: [Case; 4] = [
        ("cold: the first `tools/list` answer", &cold_t, |f| f.list),
        ("cold: the first answered `read`", &cold_t, |f| f.read),
        ("warm: the first `tools/list` answer", &warm_t, |f| f.list),
        ("warm: the first answered `read`", &warm_t, |f| f.read),
    ];
    for (label, samples, which) in cases {
        let times: Vec<Duration> = samples.iter().map(which).collect();
        let peer_times: Vec<Duration> = peer_t.iter().map(which).collect();
        let (median, peer_median) = (median_secs(&times), median_secs(&peer_times));
        let (min, max) = (times.iter().min().copied(), times.iter().max().copied());
        let range = match (min, max) {
            (Some(a), Some(b)) => format!("{} – {}", secs(a.as_secs_f64()), secs(b.as_secs_f64())),
            _ => "-".into(),
        };
        let peer_cell = if peer.is_some() { secs(peer_median) } else { "not run".into() };
        table.row(vec![label.into(), secs(median), range, peer_cell, ratio(peer_median, median)]);
    }
    if peer.is_none() {
        table.notes.push(missing_peer_note());
    }
    report.push(table);
    Ok(())
}

/// Why the reference server was not run.
pub fn missing_peer_note() -> String {
    "The reference server was not run: Node or `@modelcontextprotocol/server-filesystem` is not installed \
     (a full run installs it into `target/interop/peer`)."
        .into()
}

/// A small read, as one server names it.
struct Read {
    tool: &'static str,
    arguments: Value,
}

/// The times from spawning a server to its first answers, and how many tools
/// it listed.
struct First {
    list: Duration,
    read: Duration,
    tools: usize,
}

/// Spawns `launch` and times it to the `tools/list` answer and then to the
/// answer of `read`.
fn first_answers(launch: &Launch, read: &Read) -> Result<First> {
    let start = Instant::now();
    let mut server = Server::spawn(launch)?;
    let _watchdog = server.watchdog(crate::WATCHDOG);
    server.send_request("initialize", initialize_params())?;
    server.notify("notifications/initialized")?;
    let list = server.send_request("tools/list", json!({}))?;
    let reply = answer(&mut server, list, &launch.name)?;
    let list = start.elapsed();
    let tools = reply["result"]["tools"].as_array().map(Vec::len).unwrap_or(0);
    if tools == 0 {
        bail!("{}: tools/list answered without tools: {}", launch.name, short(&reply));
    }
    let call = server.send_request("tools/call", json!({ "name": read.tool, "arguments": read.arguments }))?;
    let reply = answer(&mut server, call, &launch.name)?;
    let read_at = start.elapsed();
    if reply["result"]["isError"] == json!(true) || reply.get("error").is_some() {
        bail!("{}: the first read failed: {}", launch.name, short(&reply));
    }
    server.finish();
    Ok(First { list, read: read_at, tools })
}

/// The response to request `id`; an error answer to another request fails.
fn answer(server: &mut Server, id: u64, name: &str) -> Result<Value> {
    loop {
        let reply = server.recv_response()?;
        if reply["id"] == json!(id) {
            return Ok(reply);
        }
        if let Some(error) = reply.get("error") {
            bail!("{name}: initialize failed: {error}");
        }
    }
}

fn short(value: &Value) -> String {
    value.to_string().chars().take(300).collect()
}
