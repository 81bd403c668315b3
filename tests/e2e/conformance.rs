//! The official MCP conformance suite, run against `cordon serve --http` in both eras.
//!
//! `@modelcontextprotocol/conformance` (installed by `tests/interop/node-setup.sh`)
//! runs the scenarios a spec revision requires (`--requirements`), with
//! `tests/conformance/expected-failures.yaml` as the baseline of checks that need
//! the suite's own fixture tools, resources and prompts. Its exit status alone says
//! little (its checks are shallow, and the not-scored scenarios never affect it), so
//! each test also reads every `checks.json` the suite wrote: no check outside the
//! baseline may fail or warn, no baseline entry may have started passing, every
//! required scenario must have run, and the scenarios that matter to a file server
//! must have passed check by check. See docs/conformance.md.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{Fixture, HttpServer, node_dir, node_path, workspace};

/// The whole suite normally takes seconds; this only stops a hung run.
const SUITE_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// The suite's per-scenario timeout in milliseconds (its default is 30 s).
const SCENARIO_TIMEOUT_MS: &str = "180000";

/// What the suite says when a baselined check fails for the documented reason:
/// the fixture tool, prompt, resource or method is not there (Cordon answers an
/// unknown tool with -32602 "Unknown tool", an unknown prompt or resource with
/// "... not found", an undeclared method with -32601), or a later step of a
/// multi-round scenario had nothing to continue from. Two SEP-2322 checks do not
/// quote the error they got, only that the fixture tool's call gave no
/// InputRequiredResult; SEP-2575's tools-list-changed check calls its fixture
/// `test_trigger_tool_change` and, given any answer but -32601 (Cordon's is
/// -32602, unknown tool), reports that no tools/list_changed followed.
const FIXTURE_MISSING: &[&str] = &[
    "Unknown tool",
    "not found",
    "Not testable",
    "Prerequisite failed",
    "Expected InputRequiredResult with inputRequests and requestState",
    "Server returned JSON-RPC error instead of re-requesting via InputRequiredResult",
    "Mutated the tool list but no notifications/tools/list_changed arrived",
];

#[test]
fn conformance_2025_11_25_passes_every_applicable_scenario() {
    run_era(
        "2025-11-25",
        &[
            ("server-initialize", &["server-initialize", "server-session-id-visible-ascii", "wire-schema-valid"]),
            ("ping", &["ping", "wire-schema-valid"]),
            ("logging-set-level", &["logging-set-level", "wire-schema-valid"]),
            ("tools-list", &["tools-list", "tools-name-format", "wire-schema-valid"]),
            ("resources-list", &["resources-list", "wire-schema-valid"]),
            ("prompts-list", &["prompts-list", "wire-schema-valid"]),
            ("server-sse-multiple-streams", &["server-accepts-multiple-post-streams"]),
            ("dns-rebinding-protection", &["localhost-host-rebinding-rejected", "localhost-host-valid-accepted"]),
            // Not scored (added after the anchor release), but Cordon has legacy sessions.
            (
                "server-session-lifecycle",
                &[
                    "server-session-initialized-accepted",
                    "server-session-delete-accepted",
                    "server-session-terminated-returns-404",
                ],
            ),
        ],
        ("server-initialize", 3),
    );
}

#[test]
fn conformance_2026_07_28_passes_every_applicable_scenario() {
    run_era(
        "2026-07-28",
        &[
            (
                "server-stateless",
                &[
                    "sep-2575-request-meta-invalid-missing-meta",
                    "sep-2575-request-meta-invalid-missing-protocol-version",
                    "sep-2575-request-meta-invalid-missing-client-capabilities",
                    "sep-2575-http-server-meta-invalid-400",
                    "sep-2575-request-meta-client-info-optional",
                    "sep-2575-server-implements-discover",
                    "sep-2575-server-identifies-in-result-meta",
                    "sep-2575-server-declares-prompts-in-discover",
                    "sep-2575-discover-capabilities-match-handlers",
                    "sep-2575-server-unsupported-version-error",
                    "sep-2575-http-server-unsupported-version-400",
                    "sep-2575-http-server-header-mismatch-400",
                    "sep-2575-http-server-method-not-found-404-initialize",
                    "sep-2575-http-server-method-not-found-404-ping",
                    "sep-2575-http-server-method-not-found-404-logging-setlevel",
                    "sep-2575-http-server-method-not-found-404-resources-subscribe",
                    "sep-2575-http-server-method-not-found-404-resources-unsubscribe",
                    "sep-2575-http-server-method-not-found-404",
                    "sep-2575-http-server-error-jsonrpc-id",
                    "sep-2575-server-sends-subscription-ack",
                    "sep-2575-server-tags-subscription-id",
                    "sep-2575-server-honors-notification-filter",
                ],
            ),
            (
                "caching",
                &[
                    "sep-2549-tools-list-caching-hints",
                    "sep-2549-prompts-list-caching-hints",
                    "sep-2549-resources-list-caching-hints",
                    "sep-2549-resources-templates-list-caching-hints",
                    "sep-2549-resources-read-caching-hints",
                    "sep-2549-ttl-non-negative",
                    "sep-2549-cache-scope-valid",
                    "wire-schema-valid",
                ],
            ),
            ("tools-list", &["tools-list", "tools-name-format", "tools-list-deterministic-order", "wire-schema-valid"]),
            ("resources-list", &["resources-list", "wire-schema-valid"]),
            ("prompts-list", &["prompts-list", "wire-schema-valid"]),
            (
                "sep-2164-resource-not-found",
                &["sep-2164-no-empty-contents", "sep-2164-error-code", "sep-2164-data-uri"],
            ),
            ("server-sse-multiple-streams", &["server-accepts-multiple-post-streams"]),
            ("dns-rebinding-protection", &["localhost-host-rebinding-rejected", "localhost-host-valid-accepted"]),
            ("input-required-result-unsupported-methods", &["sep-2322-not-on-unsupported-requests"]),
            (
                "input-required-result-validate-input",
                &["sep-2322-validate-input-responses", "sep-2322-error-on-protocol-error"],
            ),
            // Not scored (pending in the suite), but Cordon implements SEP-2243's headers.
            (
                "http-header-validation",
                &[
                    "sep-2243-server-reject-invalid-headers",
                    "sep-2243-server-reject-error-code",
                    "sep-2243-server-accepts-whitespace-header-value",
                    "sep-2243-header-name-case-insensitive",
                    "wire-schema-valid",
                ],
            ),
        ],
        // server-stateless: 30 checks; 4 need fixture tools, the tools-list-changed one
        // its fixture trigger, and the prompts-list-changed one is skipped (no prompts to change).
        ("server-stateless", 24),
    );
}

/// Runs the suite for `era` against a fresh server and checks its results.
/// `must_pass`: scenarios that must have run with each named check reported and
/// SUCCESS (and, like every scenario, no failing check outside the baseline).
/// `floor`: a scenario and the least number of SUCCESS checks it must report, against
/// checks silently turning into SKIPPED or INFO.
fn run_era(era: &str, must_pass: &[(&str, &[&str])], floor: (&str, usize)) {
    let fixture = Fixture::new();
    let server = HttpServer::start(&fixture.root());
    let node = node_dir();
    let conformance = node.join("node_modules/.bin/conformance");
    let baseline_file = workspace().join("tests/conformance/expected-failures.yaml");
    let baseline = Baseline::read(&baseline_file);
    let out = tempfile::tempdir().unwrap();
    let results_dir = out.path().join("results");

    let started = Instant::now();
    let (status, log) = run_with_timeout(
        Command::new(&conformance)
            .arg("server")
            .args(["--url", &server.url, "--requirements", era, "--timeout", SCENARIO_TIMEOUT_MS])
            .arg("-o")
            .arg(&results_dir)
            .arg("--expected-failures")
            .arg(&baseline_file)
            .env("PATH", node_path())
            .current_dir(out.path()),
        &out.path().join("suite.log"),
    );
    let elapsed = started.elapsed();

    let results = read_results(&results_dir);
    let required = required_scenarios(&node, era);
    let mut problems = Vec::new();

    // Every scenario the requirement set scores was run.
    for scenario in &required {
        if !results.contains_key(scenario) {
            problems.push(format!("required scenario {scenario} was not run (no checks.json)"));
        }
    }

    // No check outside the baseline failed or warned; no baseline entry passes now.
    for (scenario, checks) in &results {
        let worst = worst_by_id(checks);
        if baseline.whole.contains(scenario) {
            if !worst.values().any(|c| is_bad(c)) {
                problems.push(format!("stale baseline entry {scenario}: no failing or warning check now"));
            }
            continue;
        }
        for (id, check) in &worst {
            let expected = baseline.checks.contains(&(scenario.clone(), id.clone()));
            if is_bad(check) && !expected {
                problems.push(format!(
                    "{scenario}:{id} {}: {}",
                    check["status"].as_str().unwrap_or("?"),
                    check["errorMessage"].as_str().unwrap_or("(no errorMessage)")
                ));
            } else if expected && check["status"] == "SUCCESS" {
                problems.push(format!("stale baseline entry {scenario}:{id}: it passes now"));
            } else if expected && is_bad(check) {
                let message = check["errorMessage"].as_str().unwrap_or("");
                if !FIXTURE_MISSING.iter().any(|m| message.contains(m)) {
                    problems
                        .push(format!("{scenario}:{id} fails, as expected, but not for want of a fixture: {message}"));
                }
            }
        }
        for (s, id) in &baseline.checks {
            if s == scenario && !worst.contains_key(id) {
                problems.push(format!("baseline entry {s}:{id} names a check the scenario did not report"));
            }
        }
    }

    // The scenarios a file server is measured by ran and passed, check by check.
    for (scenario, ids) in must_pass {
        let Some(checks) = results.get(*scenario) else {
            problems.push(format!("{scenario} was not run"));
            continue;
        };
        let worst = worst_by_id(checks);
        for id in *ids {
            match worst.get(*id) {
                Some(check) if check["status"] == "SUCCESS" => {}
                Some(check) => problems.push(format!(
                    "{scenario}:{id} is {}, not SUCCESS: {}",
                    check["status"].as_str().unwrap_or("?"),
                    check["errorMessage"].as_str().unwrap_or("(no errorMessage)")
                )),
                None => problems.push(format!("{scenario} did not report the check {id}")),
            }
        }
    }
    let (scenario, least) = floor;
    let successes =
        results.get(scenario).map_or(0, |checks| checks.iter().filter(|c| c["status"] == "SUCCESS").count());
    if successes < least {
        problems.push(format!("{scenario}: {successes} SUCCESS checks, expected at least {least}"));
    }

    // A summary, shown with --nocapture and on failure.
    let passed = required.iter().filter(|s| results.get(*s).is_some_and(|c| passes(c))).count();
    let baselined: Vec<&String> = required.iter().filter(|s| results.get(*s).is_some_and(|c| !passes(c))).collect();
    eprintln!(
        "conformance {era}: {status} in {:.1}s; of {} required scenarios {passed} pass with no failing or \
         warning check, and these report failures (suite fixtures): {baselined:?}",
        elapsed.as_secs_f64(),
        required.len(),
    );

    if !status.success() {
        problems.push(format!("the suite exited with {status} (its baseline check failed)"));
    }
    assert!(
        problems.is_empty(),
        "conformance {era} against {}:\n  {}\n\n--- suite output (tail) ---\n{}\n--- cordon stderr (tail) ---\n{}",
        server.url,
        problems.join("\n  "),
        tail(&log, 80),
        tail(&server.log(), 40),
    );
}

/// Runs `command` with stdout and stderr to `log_path`, killing it after
/// `SUITE_TIMEOUT`; its exit status and output.
fn run_with_timeout(command: &mut Command, log_path: &Path) -> (std::process::ExitStatus, String) {
    let log = std::fs::File::create(log_path).unwrap();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("start the conformance suite ({e}): {command:?}"));
    let deadline = Instant::now() + SUITE_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the conformance suite did not finish in {SUITE_TIMEOUT:?}:\n{}",
                tail(&std::fs::read_to_string(log_path).unwrap_or_default(), 80)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    (status, std::fs::read_to_string(log_path).unwrap_or_default())
}

/// The checks of each scenario run: `DIR/server-<scenario>-<timestamp>/checks.json`.
fn read_results(dir: &Path) -> BTreeMap<String, Vec<Value>> {
    let mut results = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return results };
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        // The timestamp is `-YYYY-MM-DDTHH-MM-SS-mmmZ`, 25 characters.
        let scenario = name
            .strip_prefix("server-")
            .filter(|rest| rest.len() > 25 && rest.ends_with('Z') && rest.as_bytes()[rest.len() - 25] == b'-')
            .map(|rest| rest[..rest.len() - 25].to_string())
            .unwrap_or_else(|| panic!("unexpected result folder {}", path.display()));
        let file = path.join("checks.json");
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let checks: Vec<Value> =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not a checks array: {e}", file.display()));
        assert!(results.insert(scenario.clone(), checks).is_none(), "{scenario} ran twice");
    }
    results
}

/// Each check id's worst report (FAILURE > WARNING > SUCCESS > the rest), as the
/// suite judges a baseline; INFO reports are left out.
fn worst_by_id(checks: &[Value]) -> BTreeMap<String, &Value> {
    let rank = |c: &Value| match c["status"].as_str() {
        Some("FAILURE") => 3,
        Some("WARNING") => 2,
        Some("SUCCESS") => 1,
        _ => 0,
    };
    let mut worst: BTreeMap<String, &Value> = BTreeMap::new();
    for check in checks.iter().filter(|c| c["status"] != "INFO") {
        let id = check["id"].as_str().expect("a check id").to_string();
        if worst.get(&id).is_none_or(|w| rank(check) >= rank(w)) {
            worst.insert(id, check);
        }
    }
    worst
}

fn is_bad(check: &Value) -> bool {
    check["status"] == "FAILURE" || check["status"] == "WARNING"
}

/// Passes as the suite counts it (at least one SUCCESS, no FAILURE) and, stricter,
/// with no WARNING either.
fn passes(checks: &[Value]) -> bool {
    checks.iter().any(|c| c["status"] == "SUCCESS") && !checks.iter().any(is_bad)
}

/// The expected-failures file: whole scenarios, and `scenario:check-id` pairs.
struct Baseline {
    whole: BTreeSet<String>,
    checks: BTreeSet<(String, String)>,
}

impl Baseline {
    fn read(path: &Path) -> Baseline {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut baseline = Baseline { whole: BTreeSet::new(), checks: BTreeSet::new() };
        for entry in yaml_list(&text, "server") {
            match entry.split_once(':') {
                Some((scenario, id)) => baseline.checks.insert((scenario.to_string(), id.to_string())),
                None => baseline.whole.insert(entry),
            };
        }
        assert!(!baseline.whole.is_empty() && !baseline.checks.is_empty(), "{} looks empty", path.display());
        baseline
    }
}

/// The scenarios the suite's requirement set for `era` scores (its `server:` list).
fn required_scenarios(node: &Path, era: &str) -> Vec<String> {
    let path: PathBuf = node.join(format!("node_modules/@modelcontextprotocol/conformance/requirements/{era}.yaml"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let list = yaml_list(&text, "server");
    assert!(list.len() >= 20, "{}: only {} server scenarios", path.display(), list.len());
    list
}

/// The plain-scalar items of the top-level block list `key:` in a simple YAML
/// file (comments and blank lines skipped).
fn yaml_list(text: &str, key: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let content = line.split(" #").next().unwrap().trim_end();
        if content.trim_start().starts_with('#') || content.trim().is_empty() {
            continue;
        }
        if !content.starts_with(' ') && !content.starts_with('-') {
            inside = content == format!("{key}:");
            continue;
        }
        if inside && let Some(item) = content.trim_start().strip_prefix("- ") {
            items.push(item.trim().trim_matches(['\'', '"']).to_string());
        }
    }
    items
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
