//! Start-up: from spawning the server to its first `tools/list` answer, cold
//! (an empty state directory: Cordon compiles its tools) and warm (the compile
//! cache present), beside the reference server.

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
    let (mut cold_t, mut warm_t, mut peer_t) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ours, mut theirs) = (0, 0);
    for run in 0..opts.runs {
        let fresh = std::env::temp_dir().join(format!("cordon-bench-cold-{}-{run}", std::process::id()));
        let _ = std::fs::remove_dir_all(&fresh);
        let cold = cordon_serve(&opts.cordon, &[root], &fresh, &[]);
        let measured = first_tools_list(&cold);
        let _ = std::fs::remove_dir_all(&fresh);
        let (t, n) = measured?;
        cold_t.push(t);
        ours = n;
        let (t, _) = first_tools_list(&warm)?;
        warm_t.push(t);
        if let Some(peer) = &peer {
            let (t, n) = first_tools_list(peer)?;
            peer_t.push(t);
            theirs = n;
        }
    }
    let mut table = Table::new(
        "Start-up",
        &[
            "spawn to the first `tools/list` answer",
            "Cordon, median",
            "Cordon, min – max",
            "reference server, median",
            "Cordon speed vs reference (×, >1: Cordon faster)",
        ],
    );
    table.intro.push(format!(
        "The client writes `initialize`, `notifications/initialized` and `tools/list` at once and waits for \
         the `tools/list` answer; the server is then closed. Cordon lists {ours} tools; the reference server \
         lists {theirs}. Cold: an empty `--state-dir`, so Cordon compiles every built-in tool (the operating \
         system's file cache stays warm); warm: the compile cache from earlier runs. The reference server has \
         no compile cache: its one measurement is shown on both rows."
    ));
    let peer_median = median_secs(&peer_t);
    for (label, samples) in
        [("cold: empty state directory (compiles the tools)", &cold_t), ("warm: compile cache present", &warm_t)]
    {
        let median = median_secs(samples);
        let (min, max) = (samples.iter().min().copied(), samples.iter().max().copied());
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

/// Spawns `launch` and times it to the `tools/list` answer; returns the time
/// and the number of tools.
fn first_tools_list(launch: &Launch) -> Result<(Duration, usize)> {
    let start = Instant::now();
    let mut server = Server::spawn(launch)?;
    let _watchdog = server.watchdog(crate::WATCHDOG);
    server.send_request("initialize", initialize_params())?;
    server.notify("notifications/initialized")?;
    let list = server.send_request("tools/list", json!({}))?;
    let reply = loop {
        let reply = server.recv_response()?;
        if reply["id"] == json!(list) {
            break reply;
        }
        if let Some(error) = reply.get("error") {
            bail!("{}: initialize failed: {error}", launch.name);
        }
    };
    let elapsed = start.elapsed();
    let tools = reply["result"]["tools"].as_array().map(Vec::len).unwrap_or(0);
    if tools == 0 {
        bail!("{}: tools/list answered without tools: {}", launch.name, short(&reply));
    }
    server.finish();
    Ok((elapsed, tools))
}

fn short(value: &Value) -> String {
    value.to_string().chars().take(300).collect()
}
