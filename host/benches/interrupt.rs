//! How late a runaway call is answered: the time from its deadline to its
//! answer, printed as a Markdown table.
//!
//! `cargo bench --bench interrupt [-- --runs N] [-- --wall-ms MS]` runs the
//! hostile test component (tests/tools/hostile) in process through
//! `Server::call_tool` with a short wall time (default 200 ms), N times (default
//! 20) for each way a guest can run away:
//! - `loop`: spinning in wasm, stopped by the epoch deadline (checked every
//!   10 ms tick);
//! - `sleep-in-host`: blocked in a WASI poll, which the epoch cannot interrupt,
//!   answered by the host timeout at the deadline plus the grace (1 s). It
//!   blocks after 120 ms (a progress report first), so the wall time must be
//!   longer than that.
//!
//! It fails only on errors (a call that is not a timeout), never on speed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cordon::limits::Limits;
use cordon::policy::{DirSpec, Mode};
use cordon::results::{Answer, Failed};
use cordon::runtime::{CallSignal, MAX_STUCK_PER_TOOL};
use cordon::server::{CallRequest, Config, Server};
use serde_json::json;

const HOSTILE: &str = env!("CORDON_HOSTILE_COMPONENT");

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str, default: u64| -> u64 {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(default)
    };
    let runs = flag("--runs", 20) as usize;
    let wall_time = Duration::from_millis(flag("--wall-ms", 200));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let mut limits = Limits::default();
    limits.call.wall_time = wall_time;
    let config = Config {
        roots: vec![DirSpec { path: root, mode: Mode::ReadOnly }],
        state_dir: Some(dir.path().join("state")),
        cursor_key: None,
        handle_store: None,
        deny: Vec::new(),
        read_only: false,
        components: vec![HOSTILE.into()],
        tools_dir: None,
        limits,
        trusted_keys: Vec::new(),
        defer_tools: false,
        resources: false,
        clients: Default::default(),
        access: Vec::new(),
        metrics: true,
        scope_names: Default::default(),
        require_signatures: false,
        audit: cordon::audit::AuditSettings {
            path: None,
            on_failure: cordon::audit::OnFailure::Closed,
            max_bytes: 1 << 24,
            keep: 1,
        },
    };

    let mut rows = Vec::new();
    for behaviour in ["loop", "sleep-in-host"] {
        let mut late = Vec::new();
        let mut server = Server::start(&config).unwrap();
        for run in 0..runs {
            // Calls left blocked in host calls count against the tool: a fresh
            // server before the tool is refused.
            if behaviour == "sleep-in-host" && run > 0 && run % MAX_STUCK_PER_TOOL == 0 {
                server = Server::start(&config).unwrap();
            }
            late.push(lateness(&server, behaviour, wall_time));
        }
        rows.push((behaviour, late));
    }

    println!("\nwall time {} ms, {runs} runs each (answer time − deadline):\n", wall_time.as_millis());
    println!("| runaway guest | stopped by | median | p90 | max |");
    println!("|---|---|---:|---:|---:|");
    for (behaviour, mut late) in rows {
        late.sort();
        let at = |q: f64| late[((late.len() - 1) as f64 * q).round() as usize];
        let by = if behaviour == "loop" { "epoch deadline" } else { "host timeout (grace 1 s)" };
        println!("| `{behaviour}` | {by} | {} | {} | {} |", fmt(at(0.5)), fmt(at(0.9)), fmt(at(1.0)));
    }
}

/// One call of `behaviour`: how long after its deadline the answer came.
fn lateness(server: &Arc<Server>, behaviour: &str, wall_time: Duration) -> Duration {
    let args = json!({ "behaviour": behaviour });
    let started = Instant::now();
    let signal = Arc::new(CallSignal::new());
    let request = CallRequest {
        tool: server.offered("hostile").unwrap(),
        arguments: &args,
        client_roots: None,
        signal: &signal,
        for_model: false,
        caller: server.local("bench"),
        client: cordon::clients::Client::default(),
        watch: None,
    };
    let answer = server.call(request).unwrap();
    let answered = started.elapsed();
    let Answer::Failed(Failed::Tool(failure)) = answer else {
        panic!("the hostile call was not a failure the model reads: {answer:?}")
    };
    assert_eq!(failure.code, "timeout", "{failure}");
    // The guest is stopped where this run measures: in wasm, or blocked in the host.
    let in_host = failure.message.contains("blocked in a host call");
    assert_eq!(in_host, behaviour == "sleep-in-host", "{failure}");
    answered.saturating_sub(wall_time)
}

fn fmt(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}
