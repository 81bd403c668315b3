//! Small-call throughput and latency: concurrent clients issuing small reads
//! for a fixed time, Cordon against the reference server (calls/s, p50, p99).

use std::collections::HashMap;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use serde_json::{Value, json};

use crate::Options;
use crate::contenders::cordon_serve;
use crate::corpus::Corpus;
use crate::mcp::{Launch, Server};
use crate::report::{Report, Table};
use crate::stats::{median, mib_from_kib, percentile, ratio, secs};

/// One timed run of one configuration.
#[derive(Clone, Debug, Default)]
struct Sample {
    calls_per_sec: f64,
    p50: f64,
    p99: f64,
    rss_kib: u64,
    /// The servers' CPU time (user and system, every thread) per call, in
    /// seconds: the cost of a call, told apart from the machine's noise.
    cpu_per_call: f64,
}

#[derive(Default)]
struct Samples(Vec<Sample>);

impl Samples {
    fn median(&self, f: fn(&Sample) -> f64) -> f64 {
        median(&self.0.iter().map(f).collect::<Vec<_>>())
    }

    fn cells(&self) -> [String; 5] {
        if self.0.is_empty() {
            return ["not run".into(), "-".into(), "-".into(), "-".into(), "-".into()];
        }
        [
            format!("{:.0}", self.median(|s| s.calls_per_sec)),
            secs(self.median(|s| s.p50)),
            secs(self.median(|s| s.p99)),
            secs(self.median(|s| s.cpu_per_call)),
            mib_from_kib(self.median(|s| s.rss_kib as f64) as u64),
        ]
    }
}

pub fn run(opts: &Options, corpus: &Corpus, report: &mut Report) -> Result<()> {
    let root = corpus.small_root.as_path();
    let cordon = cordon_serve(&opts.cordon, &[root], &opts.state_dir, &[]);
    let unaudited = cordon_serve(&opts.cordon, &[root], &opts.state_dir, &["--no-audit"]);
    let uncounted = cordon_serve(&opts.cordon, &[root], &opts.state_dir, &["--no-metrics"]);
    let collector = crate::collector::Collector::start()?;
    let traced = cordon_serve(&opts.cordon, &[root], &opts.state_dir, &["--otlp-endpoint", &collector.url]);
    let ours = ("read", json!({"path": "small.txt"}));
    let peer = opts.peers.peer(&[root]);
    let file = root.join("small.txt");
    let theirs = ("read_text_file", json!({"path": file}));
    let seconds = Duration::from_secs_f64(opts.seconds);
    let n = opts.clients;
    let (mut peers, mut pipelined) = (Samples::default(), Samples::default());
    // Cordon's variants run in an order that turns with each run, so that none
    // always runs first or after the same one; the costs below are ratios of
    // runs made side by side.
    let variants = [&cordon, &unaudited, &uncounted, &traced];
    let mut samples: [Samples; 4] = Default::default();
    // The reference server runs right after Cordon's default variant, so
    // that each run's pair is measured side by side (the machine's speed,
    // and the reference server's, drift from run to run).
    for run in 0..opts.runs {
        for turn in 0..variants.len() {
            let at = (turn + run) % variants.len();
            samples[at].0.push(sequential(variants[at], n, seconds, &ours)?);
            if let (0, Some(peer)) = (at, &peer) {
                peers.0.push(sequential(peer, n, seconds, &theirs)?);
            }
        }
        pipelined.0.push(in_flight(&cordon, n, seconds, &ours)?);
    }

    let [processes, without_audit, without_metrics, with_traces] = samples;
    let mut table = Table::new(
        "Small-call throughput and latency",
        &["configuration", "calls/s", "latency p50", "latency p99", "server CPU per call", "peak RSS per server"],
    );
    table.intro.push(format!(
        "{n} concurrent clients issue small reads (a {}-byte file: `read` for Cordon, `read_text_file` for the \
         reference server) for {} s per run; latency is request written to answer read; a server's CPU per call is the user and system time of \
         its process (every thread, from `/proc`, in 10 ms ticks) over the run, divided by the calls it answered. The reference server \
         speaks stdio only, so each client has its own server process, and Cordon is measured the same way; \
         Cordon is also measured with one session carrying {n} calls in flight, and without its audit trail \
         (`--no-audit`; by default every call appends a chained line to the audit log under a file lock, shared \
         by the {n} processes; the records of one process's calls in flight share a write), without counting metrics (`--no-metrics`), and with traces exported \
         (`--otlp-endpoint`, to a stand-in collector on loopback that accepts every export). Median of {} run(s).",
        crate::corpus::SMALL.len(),
        opts.seconds,
        opts.runs
    ));
    let mut push = |label: String, samples: &Samples| {
        let mut cells = vec![label];
        cells.extend(samples.cells());
        table.row(cells);
    };
    push(format!("Cordon: {n} processes, one client each"), &processes);
    push(format!("reference server: {n} processes, one client each"), &peers);
    push(format!("Cordon: 1 process, one session, {n} calls in flight"), &pipelined);
    push(format!("Cordon: {n} processes, one client each, no audit trail"), &without_audit);
    push(format!("Cordon: {n} processes, one client each, no metrics"), &without_metrics);
    push(format!("Cordon: {n} processes, one client each, traces exported"), &with_traces);
    if let Some(share) = paired(&processes, &without_audit, |s| s.calls_per_sec) {
        let cpu = paired(&processes, &without_audit, |s| s.cpu_per_call).unwrap_or_else(|| "not known".into());
        table.notes.push(format!(
            "Audit cost: with the audit trail (the default) Cordon makes {share} of the calls/s it makes with \
             `--no-audit` run beside it (goal: at least 95 %); its servers' CPU per call is {cpu} of theirs."
        ));
    }
    if let Some(share) = paired(&processes, &without_metrics, |s| s.calls_per_sec) {
        table.notes.push(format!(
            "Metrics cost: with metrics counted (the default) Cordon makes {share} of the calls/s it makes with \
             `--no-metrics` run beside it (goal: at least 98 %)."
        ));
    }
    if let Some(share) = paired(&with_traces, &processes, |s| s.calls_per_sec) {
        let (exports, bytes) = collector.received();
        table.notes.push(format!(
            "Traces cost: with every call traced and exported Cordon makes {share} of the calls/s it makes with \
             traces off (the default) run beside it (goal: at least 90 %); the stand-in collector, on the same \
             cores, received {exports} exports, {:.1} MiB.",
            bytes as f64 / (1024.0 * 1024.0)
        ));
    }
    if let Some(calls) = times(&processes, &peers, |s| s.calls_per_sec) {
        let cpu = times(&peers, &processes, |s| s.cpu_per_call).unwrap_or_else(|| "not known".into());
        table.notes.push(format!(
            "Against the reference server, run right after it each time: Cordon's calls/s are {calls} of its \
             calls/s ({n} processes each); the reference server's CPU per call is {cpu} of Cordon's."
        ));
    }
    if peer.is_some() {
        let (c, p) = (&processes, &peers);
        table.row(vec![
            format!("Cordon speed vs reference ({n} processes each; ×, >1: Cordon faster)"),
            ratio(c.median(|s| s.calls_per_sec), p.median(|s| s.calls_per_sec)),
            ratio(p.median(|s| s.p50), c.median(|s| s.p50)),
            ratio(p.median(|s| s.p99), c.median(|s| s.p99)),
            ratio(p.median(|s| s.cpu_per_call), c.median(|s| s.cpu_per_call)),
            ratio(p.median(|s| s.rss_kib as f64), c.median(|s| s.rss_kib as f64)),
        ]);
    } else {
        table.notes.push(crate::startup::missing_peer_note());
    }
    report.push(table);
    Ok(())
}

/// `clients` server processes, each driven by one client thread calling
/// `tool` back to back for `length`.
fn sequential(launch: &Launch, clients: usize, length: Duration, call: &(&str, Value)) -> Result<Sample> {
    let mut servers = Vec::new();
    for _ in 0..clients {
        let mut server = Server::start(launch)?;
        server.call(call.0, call.1.clone())?;
        servers.push(server);
    }
    let barrier = Arc::new(Barrier::new(clients + 1));
    let threads: Vec<_> = servers
        .into_iter()
        .map(|mut server| {
            let (barrier, (tool, args)) = (Arc::clone(&barrier), (call.0.to_string(), call.1.clone()));
            std::thread::spawn(move || -> Result<(Vec<f64>, u64, f64)> {
                let _watchdog = server.watchdog(crate::WATCHDOG);
                barrier.wait();
                let cpu_before = server.cpu_seconds();
                let deadline = Instant::now() + length;
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    let start = Instant::now();
                    server.call(&tool, args.clone())?;
                    latencies.push(start.elapsed().as_secs_f64());
                }
                let (rss, cpu) = (server.peak_rss_kib(), server.cpu_seconds() - cpu_before);
                server.finish();
                Ok((latencies, rss, cpu))
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    let mut all = Vec::new();
    let (mut rss, mut cpu) = (Vec::new(), 0.0);
    for thread in threads {
        let (latencies, peak, used) = thread.join().map_err(|_| anyhow!("a client thread panicked"))??;
        all.extend(latencies);
        rss.push(peak as f64);
        cpu += used;
    }
    Ok(sample(all, start.elapsed(), median(&rss) as u64, cpu))
}

/// One server, one session, `in_flight` calls outstanding at all times for
/// `length`.
fn in_flight(launch: &Launch, in_flight: usize, length: Duration, call: &(&str, Value)) -> Result<Sample> {
    let mut server = Server::start(launch)?;
    let _watchdog = server.watchdog(crate::WATCHDOG);
    server.call(call.0, call.1.clone())?;
    let cpu_before = server.cpu_seconds();
    let params = json!({"name": call.0, "arguments": call.1});
    let mut sent: HashMap<u64, Instant> = HashMap::new();
    let mut latencies = Vec::new();
    let start = Instant::now();
    let deadline = start + length;
    for _ in 0..in_flight {
        let id = server.send_request("tools/call", params.clone())?;
        sent.insert(id, Instant::now());
    }
    while !sent.is_empty() {
        let reply = server.recv_response()?;
        let id = reply["id"].as_u64().ok_or_else(|| anyhow!("an answer without a numeric id"))?;
        let Some(at) = sent.remove(&id) else { bail!("an answer to an unknown id {id}") };
        latencies.push(at.elapsed().as_secs_f64());
        if reply.get("error").is_some() || reply["result"]["isError"] == true {
            bail!("a small read failed: {}", reply.to_string().chars().take(300).collect::<String>());
        }
        if Instant::now() < deadline {
            let id = server.send_request("tools/call", params.clone())?;
            sent.insert(id, Instant::now());
        }
    }
    let elapsed = start.elapsed();
    let (rss, cpu) = (server.peak_rss_kib(), server.cpu_seconds() - cpu_before);
    server.finish();
    Ok(sample(latencies, elapsed, rss, cpu))
}

/// `a`'s figure `of` (calls/s, CPU per call) over `b`'s, run by run (runs
/// made side by side); empty when either was not run.
fn ratios(a: &Samples, b: &Samples, of: fn(&Sample) -> f64) -> Vec<f64> {
    (a.0.iter().zip(&b.0)).filter(|(a, b)| of(b) > 0.0 && of(a) > 0.0).map(|(a, b)| of(a) / of(b)).collect()
}

/// `ratios` as a share: the median, then each run's; `None` when either was
/// not run.
fn paired(a: &Samples, b: &Samples, of: fn(&Sample) -> f64) -> Option<String> {
    let shares: Vec<f64> = ratios(a, b, of).into_iter().map(|r| 100.0 * r).collect();
    if shares.is_empty() {
        return None;
    }
    let each: Vec<String> = shares.iter().map(|s| format!("{s:.1}")).collect();
    Some(format!("{:.1} % (median of the runs' ratios: {} %)", median(&shares), each.join(", ")))
}

/// `ratios` as a factor: the median, then each run's; `None` when either was
/// not run.
fn times(a: &Samples, b: &Samples, of: fn(&Sample) -> f64) -> Option<String> {
    let factors = ratios(a, b, of);
    if factors.is_empty() {
        return None;
    }
    let each: Vec<String> = factors.iter().map(|f| format!("{f:.2}")).collect();
    Some(format!("{:.2}× (median of the runs' ratios: {}×)", median(&factors), each.join(", ")))
}

/// A run's figures from its calls' latencies, its length, the servers' peak
/// RSS and the CPU seconds they used.
fn sample(mut latencies: Vec<f64>, elapsed: Duration, rss_kib: u64, cpu: f64) -> Sample {
    latencies.sort_by(f64::total_cmp);
    Sample {
        cpu_per_call: cpu / latencies.len().max(1) as f64,
        calls_per_sec: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50: percentile(&latencies, 50.0),
        p99: percentile(&latencies, 99.0),
        rss_kib,
    }
}
