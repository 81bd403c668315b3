//! Streamable HTTP: the latency of a small tool call on one keep-alive
//! connection, in both protocol eras, with the `Accept` header SDK clients
//! send (`application/json, text/event-stream`, so a tool call is answered as
//! an SSE stream), and the throughput of 64 connections at once; each with no
//! authentication and with an OAuth access token (a JWT whose ES256 signature,
//! issuer, audience and expiry the server checks on every request).

use std::process::{Child, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::Options;
use crate::contenders::cordon_serve;
use crate::corpus::{Corpus, SMALL};
use crate::issuer::{AUDIENCE, Issuer};
use crate::report::{Report, Table};
use crate::stats::{median, percentile, secs};

/// Connections in the concurrent run.
const CONNECTIONS: usize = 64;

/// The protocol eras, as the requests of each must be made.
#[derive(Clone, Copy, Debug)]
enum Era {
    /// 2025-11-25: a session from `initialize`, named in `Mcp-Session-Id`.
    Legacy,
    /// 2026-07-28: stateless, each request carrying its own headers and `_meta`.
    Modern,
}

impl Era {
    fn name(self) -> &'static str {
        match self {
            Era::Legacy => "2025-11-25 (sessions)",
            Era::Modern => "2026-07-28 (stateless)",
        }
    }
}

/// One client connection (a keep-alive agent) in one era.
struct Client {
    agent: ureq::Agent,
    url: String,
    era: Era,
    /// Sent as `Authorization: Bearer …` when the server wants one.
    bearer: Option<String>,
    session: Option<String>,
    next_id: u64,
}

impl Client {
    fn connect(serving: &Serving, era: Era) -> Result<Client> {
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let (url, bearer) = (serving.url.clone(), serving.bearer.clone());
        let mut client = Client { agent, url, era, bearer, session: None, next_id: 1 };
        if let Era::Legacy = era {
            let params = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "cordon-bench", "version": "0"}});
            let (session, _) =
                client.post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}))?;
            client.session = Some(session.context("initialize gave no Mcp-Session-Id")?);
            client.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        }
        Ok(client)
    }

    /// Posts one message; the session header the answer set, and its body.
    fn post(&mut self, message: &Value) -> Result<(Option<String>, String)> {
        let mut request = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        if let Some(token) = &self.bearer {
            request = request.header("Authorization", &format!("Bearer {token}"));
        }
        match self.era {
            Era::Legacy => {
                request = request.header("MCP-Protocol-Version", "2025-11-25");
                if let Some(session) = &self.session {
                    request = request.header("Mcp-Session-Id", session);
                }
            }
            Era::Modern => {
                request = request.header("MCP-Protocol-Version", "2026-07-28");
                if let Some(method) = message["method"].as_str() {
                    request = request.header("Mcp-Method", method);
                }
                if let Some(name) = message["params"]["name"].as_str() {
                    request = request.header("Mcp-Name", name);
                }
            }
        }
        let mut response = request.send(message.to_string()).context("POST /mcp")?;
        let session = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let body = response.body_mut().read_to_string().context("reading the answer")?;
        Ok((session, body))
    }

    /// One `read` of the small file, timed; an error unless the file's text came back.
    fn read_small(&mut self) -> Result<Duration> {
        let id = self.next_id;
        self.next_id += 1;
        let mut params = json!({"name": "read", "arguments": {"path": "small.txt", "format": "json"}});
        if let Era::Modern = self.era {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "cordon-bench", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            });
        }
        let start = Instant::now();
        let (_, body) = self.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}))?;
        let elapsed = start.elapsed();
        let expected = serde_json::to_string(SMALL)?;
        if !body.contains(expected.trim_matches('"')) {
            bail!("a small read did not return the file: {}", body.chars().take(300).collect::<String>());
        }
        Ok(elapsed)
    }
}

/// The server, serving HTTP on a free loopback port until dropped, and the
/// token its clients send, when it wants one.
struct Serving {
    child: Child,
    url: String,
    bearer: Option<String>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `cordon serve --http` on a free port, taking `issuer`'s tokens when given.
fn serve(opts: &Options, corpus: &Corpus, issuer: Option<&Issuer>) -> Result<Serving> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let addr = format!("127.0.0.1:{port}");
    let mut flags = vec!["--http", &addr];
    if let Some(issuer) = issuer {
        flags.extend(["--auth-issuer", &issuer.url, "--auth-jwks", &issuer.jwks, "--auth-audience", AUDIENCE]);
    }
    let launch = cordon_serve(&opts.cordon, &[&corpus.small_root], &opts.state_dir, &flags);
    let child = launch.command().stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn()?;
    let bearer = issuer.map(|i| i.token.clone());
    let serving = Serving { child, url: format!("http://{addr}/mcp"), bearer };
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(&addr).is_err() {
        if Instant::now() > deadline {
            bail!("cordon serve --http {addr} did not listen within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(serving)
}

/// `calls` sequential calls on one connection: (p50, p99) in seconds.
fn sequential(serving: &Serving, era: Era, calls: usize) -> Result<(f64, f64)> {
    let mut client = Client::connect(serving, era)?;
    client.read_small()?; // warm: the connection and the tool's first instance
    let mut times: Vec<f64> =
        (0..calls).map(|_| client.read_small().map(|d| d.as_secs_f64())).collect::<Result<_>>()?;
    times.sort_by(f64::total_cmp);
    Ok((median(&times), percentile(&times, 99.0)))
}

/// `CONNECTIONS` clients calling for `seconds`: (calls/s, p50, p99, errors).
fn concurrent(serving: &Serving, era: Era, seconds: Duration) -> Result<(f64, f64, f64, usize)> {
    let barrier = Arc::new(Barrier::new(CONNECTIONS));
    let clients: Vec<Client> = (0..CONNECTIONS).map(|_| Client::connect(serving, era)).collect::<Result<_>>()?;
    let threads: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || -> (Vec<f64>, usize) {
                barrier.wait();
                let (start, mut times, mut errors) = (Instant::now(), Vec::new(), 0);
                while start.elapsed() < seconds {
                    match client.read_small() {
                        Ok(d) => times.push(d.as_secs_f64()),
                        Err(_) => errors += 1,
                    }
                }
                (times, errors)
            })
        })
        .collect();
    let (mut times, mut errors) = (Vec::new(), 0);
    for thread in threads {
        let (t, e) = thread.join().map_err(|_| anyhow::anyhow!("a client thread panicked"))?;
        times.extend(t);
        errors += e;
    }
    times.sort_by(f64::total_cmp);
    let rate = times.len() as f64 / seconds.as_secs_f64();
    Ok((rate, median(&times), percentile(&times, 99.0), errors))
}

pub fn run(opts: &Options, corpus: &Corpus, report: &mut Report) -> Result<()> {
    let issuer = Issuer::start()?;
    let open = serve(opts, corpus, None)?;
    let guarded = serve(opts, corpus, Some(&issuer))?;
    let calls = if opts.smoke { 50 } else { 1000 };
    let seconds = Duration::from_secs_f64(opts.seconds.min(5.0));
    let mut table = Table::new(
        "Streamable HTTP",
        &[
            "era",
            "auth",
            "one connection: p50",
            "p99",
            &format!("{CONNECTIONS} connections: calls/s"),
            "p50",
            "p99",
            "errors",
        ],
    );
    table.intro.push(format!(
        "A `tools/call` reading a {}-byte file over Streamable HTTP on loopback, with `Accept: application/json, \
         text/event-stream` (as the SDK clients send it: the answer is an SSE stream). One keep-alive connection making \
         {calls} calls one after another (after one to warm up), then {CONNECTIONS} connections calling for {:.0} s. \
         Each era with no authentication, then as an OAuth resource server: every request carries an access token \
         (an ES256 JWT) that the server checks (signature, issuer, audience, expiry) against the key set it fetched \
         at start. The two servers' rows alternate within each run. Median of {} run(s).",
        SMALL.len(),
        seconds.as_secs_f64(),
        opts.runs
    ));
    for era in [Era::Legacy, Era::Modern] {
        let mut rows = [Measured::default(), Measured::default()];
        for _ in 0..opts.runs {
            for (serving, row) in [&open, &guarded].into_iter().zip(rows.iter_mut()) {
                let (p50, p99) = sequential(serving, era, calls)?;
                let (rate, c50, c99, e) = concurrent(serving, era, seconds)?;
                row.p50.push(p50);
                row.p99.push(p99);
                row.rate.push(rate);
                row.cp50.push(c50);
                row.cp99.push(c99);
                row.errors += e;
            }
        }
        for (auth, row) in ["none", "JWT (ES256)"].into_iter().zip(&rows) {
            table.row(vec![
                era.name().into(),
                auth.into(),
                secs(median(&row.p50)),
                secs(median(&row.p99)),
                format!("{:.0}", median(&row.rate)),
                secs(median(&row.cp50)),
                secs(median(&row.cp99)),
                row.errors.to_string(),
            ]);
            if row.errors > 0 {
                let what =
                    format!("{} ({auth}): {} calls failed with {CONNECTIONS} connections", era.name(), row.errors);
                report.error("http", what);
            }
        }
        let [none, jwt] = &rows;
        table.notes.push(format!(
            "{}: with tokens checked, one connection's p50 is {:+.3} ms and {CONNECTIONS} connections make {:.1} % of \
             the calls/s without (goals: within 0.1 ms, at least 90 %).",
            era.name(),
            (median(&jwt.p50) - median(&none.p50)) * 1e3,
            100.0 * median(&jwt.rate) / median(&none.rate).max(f64::MIN_POSITIVE)
        ));
    }
    table.notes.push("Goal: p50 ≤ 2 ms on one connection, in both eras.".into());
    report.push(table);
    drop((open, guarded));
    Ok(())
}

/// One row's measurements over the runs.
#[derive(Default)]
struct Measured {
    p50: Vec<f64>,
    p99: Vec<f64>,
    rate: Vec<f64>,
    cp50: Vec<f64>,
    cp99: Vec<f64>,
    errors: usize,
}
