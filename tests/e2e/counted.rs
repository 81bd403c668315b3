//! A model's first page counts the whole result (see `pager::count`): read
//! ahead on the page's own stream, the tool runs once and the next pages come
//! from what was kept; past the share of the parked budget, the tool runs a
//! second time to count. Both ways page exactly the same result and count it
//! as the pages show it.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::corpus;
use crate::support::{Server, poll, read_all, request, spawn_listening};

/// A TCP server with a metrics listener on `root` with `extra` flags, and the
/// metrics' address.
fn serve(root: &Path, extra: &[&str]) -> (crate::support::Listening, String) {
    let mut flags = vec!["--no-audit", "--metrics", "127.0.0.1:0"];
    flags.extend(extra);
    let served = spawn_listening(root, &["--tcp", "127.0.0.1:0", "--token", crate::support::TOKEN], &flags);
    let address = || {
        let text = served.log.text();
        text.split_once("metrics on http://").map(|(_, rest)| rest.split('/').next().unwrap_or_default().to_string())
    };
    let missing = || format!("no metrics address in the log:\n{}", served.log.text());
    let metrics = poll(Duration::from_secs(30), Duration::from_millis(50), missing, address);
    (served, metrics)
}

/// How many first pages were counted `way`, as `/metrics` says.
fn counted(metrics: &str, way: &str) -> u64 {
    let body = String::from_utf8(request(metrics, "GET", "/metrics", &[], b"").body).unwrap();
    let series = format!("cordon_first_page_count_duration_seconds_count{{way=\"{way}\"}} ");
    body.lines().find_map(|l| l.strip_prefix(series.as_str())).map_or(0, |n| n.parse().unwrap())
}

/// The sum of `key` over every page's metadata.
fn sum(pages: &[Value], key: &str) -> u64 {
    pages.iter().map(|p| p["_meta"]["cordon/page"][key].as_u64().unwrap()).sum()
}

#[test]
fn a_counted_first_page_is_searched_once_and_both_ways_page_and_count_the_same() {
    let dir = tempfile::tempdir().unwrap();
    corpus::generate(dir.path(), 400, 33);
    let root = dir.path().canonicalize().unwrap();
    // The default share of the parked budget holds this result; 1 MiB's does not.
    let ways = [
        ("read_ahead", &["--count-ms", "25000"][..]),
        ("run_again", &["--count-ms", "25000", "--max-parked-mib", "1"]),
    ];
    for format in ["json", "text"] {
        let args = json!({"pattern": "fn ", "format": format});
        let mut seen: Vec<Vec<u8>> = Vec::new();
        for (way, flags) in ways {
            let (served, metrics) = serve(&root, flags);
            let mut session = Server::connect_tcp(&served.addr, None);
            session.handshake();
            let (payload, pages) = read_all(&mut session, "grep", args.clone(), 200);
            assert!(pages.len() > 3, "{format}, {way}: several pages");
            assert_eq!(counted(&metrics, way), 1, "{format}: counted by the way `{way}`");
            let other = if way == "read_ahead" { "run_again" } else { "read_ahead" };
            assert_eq!(counted(&metrics, other), 0, "{format}: not counted `{other}` too");
            let (items, bytes) = (sum(&pages, "items"), sum(&pages, "bytes"));
            match format {
                "json" => {
                    let whole = &pages[0]["structuredContent"]["whole"];
                    assert_eq!(whole["exact"], true, "{way}: {whole}");
                    assert_eq!((whole["items"].as_u64(), whole["bytes"].as_u64()), (Some(items), Some(bytes)), "{way}");
                }
                _ => {
                    let footer = pages[0]["content"].as_array().unwrap().last().unwrap()["text"].as_str().unwrap();
                    let said = format!("of {items} items in");
                    assert!(footer.contains(&said), "{way}: {said} in {footer}");
                    // The bytes of the text as the pages render it, headings and all.
                    let tokens = format!("(~{} tokens in all)", bytes.div_ceil(4));
                    assert!(footer.contains(&tokens), "{way}: {tokens} in {footer}");
                }
            }
            seen.push(payload);
        }
        let off = {
            let (served, _) = serve(&root, &["--count-ms", "0"]);
            let mut session = Server::connect_tcp(&served.addr, None);
            session.handshake();
            read_all(&mut session, "grep", args.clone(), 200).0
        };
        assert!(seen.iter().all(|payload| *payload == off), "{format}: the pages equal those of an uncounted result");
    }
}
