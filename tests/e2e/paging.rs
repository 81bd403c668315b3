//! The continuation engine end to end: pages put back together are exactly the
//! unpaged result at any budget; cursors are signed, bound and checked; parked
//! streams that are gone are reopened with identical output.

use std::process::Command;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::{
    Fixture, Rng, Server, cordon_bin, json_form, next_cursor, page_meta, payload, read_all, shared_state_dir, text,
};

/// Generated files that stress the edges: unicode, CRLF, no final newline,
/// empty, invalid UTF-8, and one 5 MB line.
fn generated_files(fx: &Fixture) -> Vec<(String, Vec<u8>)> {
    let mut rng = Rng(0x5eed);
    let mut unicode = String::new();
    for i in 0..3000 {
        let words = ["naïve", "日本語", "🎉🎉", "\t", "\"q\"", "\\", "\u{1}", "é"];
        for _ in 0..rng.range(0, 12) {
            unicode.push_str(words[rng.range(0, 7) as usize]);
            unicode.push(' ');
        }
        unicode.push_str(if i % 7 == 0 { "\r\n" } else { "\n" });
    }
    let mut binary: Vec<u8> = (0..20_000).map(|_| rng.next() as u8).collect();
    binary.extend_from_slice("tail ✓".as_bytes());
    let files = vec![
        ("unicode.txt".to_string(), unicode.into_bytes()),
        ("crlf.txt".to_string(), "windows line\r\n".repeat(2000).into_bytes()),
        ("no-final-newline.txt".to_string(), b"first\nsecond\nthird without newline".to_vec()),
        ("empty.txt".to_string(), Vec::new()),
        ("binary.bin".to_string(), binary),
        ("one-line-5mb.txt".to_string(), "ü0123456789abcdef".repeat(5 * 1024 * 1024 / 18).into_bytes()),
    ];
    for (name, bytes) in &files {
        fx.write(name, bytes);
    }
    files
}

#[test]
fn pages_concatenate_to_the_file_byte_for_byte_at_random_budgets() {
    let fx = Fixture::new();
    let files = generated_files(&fx);
    let mut server = Server::initialized(&fx.root(), &[]);
    let mut rng = Rng(42);
    for (name, bytes) in &files {
        let budgets: Vec<u64> = if bytes.len() > 1_000_000 {
            vec![25_000, rng.range(4_000, 24_000)]
        } else {
            (0..3).map(|_| rng.range(1, 3000)).collect()
        };
        for max_tokens in budgets {
            let (got, pages) = read_all(&mut server, "read", json!({"format": "json",  "path": name }), max_tokens);
            assert!(got == *bytes, "{name} at max_tokens {max_tokens}: {} bytes back of {}", got.len(), bytes.len());
            let last = &pages.last().unwrap()["structuredContent"];
            assert_eq!(last["complete"], true);
            let whole = &page_meta(pages.last().unwrap())["payload_sha256"];
            assert_eq!(*whole, hex(&Sha256::digest(bytes)), "{name}: whole-result hash");
            let mut at = 0usize;
            for page in &pages {
                let bytes = page_meta(page)["bytes"].as_u64().unwrap();
                assert!(bytes <= max_tokens.max(1) * 4, "{name}: a page of {bytes} bytes at {max_tokens} tokens");
                let chunks = page_meta(page)["chunks"].as_array().unwrap();
                // Each chunk's digest is of its own bytes, whether the page's
                // thread took it or another one as the page was made (chunks
                // of 32 KiB and more).
                for chunk in chunks {
                    let end = at + chunk["bytes"].as_u64().unwrap() as usize;
                    assert_eq!(chunk["sha256"], hex(&Sha256::digest(&got[at..end])), "{name}: chunk at byte {at}");
                    at = end;
                }
                let chunk_bytes: u64 = chunks.iter().map(|c| c["bytes"].as_u64().unwrap()).sum();
                assert_eq!(chunk_bytes, bytes, "{name}: the chunks are the page");
            }
        }
    }
}

#[test]
fn a_multi_page_result_carries_a_footer_a_summary_and_a_cursor() {
    let fx = Fixture::new();
    let lines: String = (1..=2000).map(|i| format!("line {i}\n")).collect();
    fx.write("lines.txt", &lines);
    let mut server = Server::initialized(&fx.root(), &[]);
    let first = server.call(1, "read", json!({"format": "json", "path": "lines.txt", "max_tokens": 100}));
    let meta = &first["structuredContent"];
    assert_eq!(meta["complete"], false);
    assert_eq!(page_meta(&first)["index"], 0);
    assert!(page_meta(&first)["bytes"].as_u64().unwrap() <= 400);
    assert_eq!(meta["summary"]["totals"]["bytes"], lines.len());
    assert_eq!(json_form(&first), *meta, "the one text block is the structured content's JSON");
    let left = lines.len() as u64 - page_meta(&first)["bytes"].as_u64().unwrap();
    assert_eq!(meta["remaining"]["bytes"], left, "{meta}");
    assert!(!meta["summary"]["suggestions"].as_array().unwrap().is_empty());
    assert!(lines.starts_with(text(&first)), "the structured text is the payload, exactly");
    let cursor = meta["next_cursor"].as_str().unwrap();
    assert!(cursor.starts_with("h1_") && cursor.len() <= 64, "the model copies a short handle: {cursor}");
    let signed = page_meta(&first)["cursor"].as_str().unwrap();
    // The text form: the payload, then a footer naming the handle.
    let shown = server.call(10, "read", json!({"path": "lines.txt", "max_tokens": 100, "line_numbers": false}));
    let blocks = shown["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 2, "the payload, then the footer: {shown}");
    assert!(lines.starts_with(blocks[0]["text"].as_str().unwrap()), "the first block is the payload, exactly");
    let footer = blocks[1]["text"].as_str().unwrap();
    let handle = page_meta(&shown)["handle"].as_str().unwrap();
    assert!(footer.contains(handle) && footer.contains("`read`") && footer.contains("more bytes"), "{footer}");
    assert!(!footer.contains(page_meta(&shown)["cursor"].as_str().unwrap()), "the signed cursor is in _meta: {footer}");
    let second = server.call(2, "read", json!({"format": "json", "cursor": cursor, "max_tokens": 100}));
    assert_eq!(page_meta(&second)["index"], 1);
    let by_cursor = server.call(20, "read", json!({"format": "json", "cursor": signed, "max_tokens": 100}));
    assert_eq!(payload(&by_cursor), payload(&second), "the handle and its signed cursor continue alike");
    assert!(second["structuredContent"].get("summary").is_none(), "only the first page carries the summary");
    let lines_per_page = server.call(3, "read", json!({"format": "json", "path": "lines.txt", "page_size": 10}));
    assert_eq!(text(&lines_per_page), (1..=10).map(|i| format!("line {i}\n")).collect::<String>());
    assert_eq!(page_meta(&lines_per_page)["items"], 10);
}

#[test]
fn the_fixture_tools_item_stream_pages_exactly_at_random_budgets() {
    let fx = Fixture::new();
    let fixture = env!("CORDON_FIXTURE_COMPONENT");
    let mut server = Server::initialized(&fx.root(), &["--component", fixture]);
    let mut rng = Rng(7);
    for mode in ["items", "text"] {
        for seed in [1u64, 2] {
            let args = json!({"count": 300, "seed": seed, "mode": mode, "max_item_bytes": 3000});
            let (reference, _) = read_all(&mut server, "fixture", args.clone(), 25_000);
            assert!(!reference.is_empty());
            for _ in 0..3 {
                let tokens = rng.range(1, 2000);
                let (got, _) = read_all(&mut server, "fixture", args.clone(), tokens);
                assert!(got == reference, "{mode}/{seed} at {tokens} tokens differs from the unpaged result");
            }
        }
    }
}

#[test]
fn cursors_that_are_tampered_foreign_misused_or_expired_are_refused() {
    let fx = Fixture::new();
    fx.write("a.txt", "a\n".repeat(5000));
    fx.write("b.txt", "b\n".repeat(5000));
    let fixture = env!("CORDON_FIXTURE_COMPONENT");
    // A state directory of its own: a server sharing the handle store could
    // sweep the expired handle away before this one is asked about it.
    let state = tempfile::tempdir().unwrap();
    let state = state.path().to_str().unwrap();
    let args = ["--component", fixture, "--cursor-ttl-secs", "1", "--state-dir", state];
    let mut server = Server::initialized(&fx.root(), &args);
    let first = server.call(1, "read", json!({"format": "json", "path": "a.txt", "max_tokens": 50}));
    let cursor = page_meta(&first)["cursor"].as_str().unwrap().to_string();
    let handle = next_cursor(&first).unwrap().to_string();
    let refused = |server: &mut Server, id: i64, tool: &str, args: Value, reason: &str| {
        let reply = server.request(id, "tools/call", json!({"name": tool, "arguments": args}));
        assert_eq!(reply["error"]["code"], -32602, "{reason}: {reply}");
        assert_eq!(reply["error"]["data"]["error"], "invalid_cursor", "{reply}");
        assert_eq!(reply["error"]["data"]["reason"], reason, "{reply}");
    };
    let mut tampered = cursor.clone().into_bytes();
    let at = tampered.len() / 2;
    tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    refused(&mut server, 2, "read", json!({"format": "json", "cursor": tampered}), "bad_signature");
    refused(&mut server, 3, "fixture", json!({"cursor": cursor}), "other_tool");
    refused(&mut server, 4, "read", json!({"format": "json", "cursor": cursor, "path": "b.txt"}), "arguments_changed");
    let same_args = server.call(5, "read", json!({"format": "json", "cursor": cursor, "path": "a.txt"}));
    assert_eq!(same_args["isError"], false, "identical arguments are accepted");
    let mut mistyped = handle.clone().into_bytes();
    let at = mistyped.len() - 3;
    mistyped[at] = if mistyped[at] == b'0' { b'1' } else { b'0' };
    let mistyped = String::from_utf8(mistyped).unwrap();
    refused(&mut server, 7, "read", json!({"format": "json", "cursor": mistyped}), "unknown_handle");
    refused(&mut server, 8, "fixture", json!({"cursor": handle}), "other_tool");
    std::thread::sleep(std::time::Duration::from_millis(2100));
    refused(&mut server, 6, "read", json!({"format": "json", "cursor": cursor}), "expired");
    refused(&mut server, 9, "read", json!({"format": "json", "cursor": handle}), "expired");
}

#[test]
fn a_cursor_signed_with_another_key_is_foreign() {
    let fx = Fixture::new();
    fx.write("a.txt", "a\n".repeat(5000));
    let key_a = "11".repeat(32);
    let key_b = "22".repeat(32);
    let mut one = Server::initialized(&fx.root(), &["--cursor-key", &key_a]);
    let first = one.call(1, "read", json!({"format": "json", "path": "a.txt", "max_tokens": 50}));
    let cursor = next_cursor(&first).unwrap().to_string();
    let mut two = Server::initialized(&fx.root(), &["--cursor-key", &key_b]);
    let reply = two.request(2, "tools/call", json!({"name": "read", "arguments": {"cursor": cursor}}));
    assert_eq!(reply["error"]["data"]["reason"], "foreign_key", "{reply}");
    let mut replica = Server::initialized(&fx.root(), &["--cursor-key", &key_a]);
    let next = replica.call(3, "read", json!({"format": "json", "cursor": cursor, "max_tokens": 50}));
    assert_eq!(page_meta(&next)["index"], 1, "a replica with the same key continues");
}

#[test]
fn a_file_changed_between_pages_is_stale_never_shifted() {
    let fx = Fixture::new();
    let path = fx.write("changing.txt", "x\n".repeat(5000));
    let mut server = Server::initialized(&fx.root(), &[]);
    let first = server.call(1, "read", json!({"format": "json", "path": "changing.txt", "max_tokens": 100}));
    let cursor = next_cursor(&first).unwrap().to_string();
    std::fs::write(&path, "y\n".repeat(6000)).unwrap();
    let next = server.call(2, "read", json!({"format": "json", "cursor": cursor}));
    assert_eq!(next["isError"], true);
    assert_eq!(next["_meta"]["cordon/error"]["code"], "stale", "{next}");
    assert!(text(&next).contains("start again"), "{next}");

    let first = server.call(3, "read", json!({"format": "json", "path": "changing.txt", "max_tokens": 100}));
    let cursor = next_cursor(&first).unwrap().to_string();
    std::fs::remove_file(&path).unwrap();
    let gone = server.call(4, "read", json!({"format": "json", "cursor": cursor}));
    assert_eq!(gone["_meta"]["cordon/error"]["code"], "stale", "{gone}");
}

#[test]
fn evicted_streams_are_reopened_with_identical_output() {
    let fx = Fixture::new();
    let a: String = (0..3000).map(|i| format!("a{i} ünï\n")).collect();
    let b: String = (0..3000).map(|i| format!("b{i} 日本\r\n")).collect();
    fx.write("a.txt", &a);
    fx.write("b.txt", &b);
    let mut server = Server::initialized(&fx.root(), &["--max-sessions", "1"]);
    let (mut got_a, mut got_b) = (Vec::new(), Vec::new());
    let mut args_a = json!({"path": "a.txt", "max_tokens": 300, "format": "json"});
    let mut args_b = json!({"path": "b.txt", "max_tokens": 300, "format": "json"});
    let mut id = 0;
    let (mut done_a, mut done_b) = (false, false);
    while !(done_a && done_b) {
        for (args, got, done) in [(&mut args_a, &mut got_a, &mut done_a), (&mut args_b, &mut got_b, &mut done_b)] {
            if *done {
                continue;
            }
            id += 1;
            let page = server.call(id, "read", args.clone());
            got.extend(payload(&page));
            match next_cursor(&page).as_deref() {
                Some(cursor) => *args = json!({"cursor": cursor, "max_tokens": 300}),
                None => *done = true,
            }
        }
    }
    assert!(got_a == a.as_bytes() && got_b == b.as_bytes(), "interleaved reads with one live stream");
}

#[test]
fn a_restart_between_pages_continues_with_identical_output() {
    let fx = Fixture::new();
    let content: String = (0..4000).map(|i| format!("{i}: ✓ restart\n")).collect();
    fx.write("r.txt", &content);
    let state = tempfile::tempdir().unwrap();
    let state_arg = state.path().to_str().unwrap();
    let mut got = Vec::new();
    let mut args = json!({"path": "r.txt", "max_tokens": 2000, "format": "json"});
    for round in 0.. {
        // A new server process for every page, sharing only the state directory.
        let mut server = Server::initialized(&fx.root(), &["--state-dir", state_arg]);
        let page = server.call(round, "read", args.clone());
        got.extend(payload(&page));
        match next_cursor(&page).as_deref() {
            Some(cursor) => args = json!({"cursor": cursor, "max_tokens": 2000}),
            None => break,
        }
        assert!(round < 100);
    }
    assert!(got == content.as_bytes());
}

#[test]
fn call_all_streams_the_whole_result_exactly() {
    let fx = Fixture::new();
    let mut bytes: Vec<u8> = "all ✓\n".repeat(50_000).into_bytes();
    bytes.extend_from_slice(b"\xff\xfe raw tail");
    fx.write("all.bin", &bytes);
    let root = fx.root();
    let run = |max_tokens: u32, extra: &[&str]| {
        Command::new(cordon_bin())
            .args(["call", "read", "--root", root.to_str().unwrap(), "--json"])
            .arg(json!({"path": "all.bin", "max_tokens": max_tokens}).to_string())
            .arg("--state-dir")
            .arg(shared_state_dir())
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(1000, &["--all"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout == bytes, "stdout is the file, exactly");
    let out = run(1000, &["--all", "--jsonl"]);
    let pages: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(pages.len() > 50, "{} pages", pages.len());
    let joined: Vec<u8> = pages.iter().flat_map(payload).collect();
    assert!(joined == bytes);
    // At the largest page each piece is hashed into the running hash on
    // another thread while the next is pulled: the whole's hash is the same.
    assert!(run(25_000, &["--all"]).stdout == bytes, "stdout is the file, exactly");
    let out = run(25_000, &["--all", "--jsonl"]);
    let pages: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(pages.len() > 2, "{} pages", pages.len());
    assert_eq!(page_meta(pages.last().unwrap())["payload_sha256"], hex(&Sha256::digest(&bytes)));
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn byte_ranges_page_exactly_and_the_footer_counts_what_remains() {
    let fx = Fixture::new();
    let content: String = (0..5000).map(|i| format!("{i} é\n")).collect();
    fx.write("range.txt", &content);
    let mut server = Server::initialized(&fx.root(), &[]);
    let (got, pages) = read_all(
        &mut server,
        "read",
        json!({"format": "json", "path": "range.txt", "start_byte": 1001, "end_byte": 20001}),
        500,
    );
    assert!(got == content.as_bytes()[1001..20001], "a byte range, paged, is exactly those bytes");
    assert!(pages.len() > 5);
    let first = &pages[0];
    assert!(first["structuredContent"].get("start_line").is_none(), "lines are unknown mid-file");
    let end = first["structuredContent"]["end_byte"].as_u64().unwrap();
    assert_eq!(first["structuredContent"]["remaining"]["bytes"], 20001 - end, "{first}");
    let shown =
        server.call(9, "read", json!({"path": "range.txt", "start_byte": 1001, "end_byte": 20001, "max_tokens": 500}));
    let footer = shown["content"].as_array().unwrap().last().unwrap()["text"].as_str().unwrap().to_string();
    assert!(footer.contains(&format!("about {} more bytes", 20001 - end)), "the text form's footer: {footer}");
}

#[test]
fn deeply_nested_items_are_truncated_with_markers() {
    let fx = Fixture::new();
    let fixture = env!("CORDON_FIXTURE_COMPONENT");
    let mut server = Server::initialized(&fx.root(), &["--component", fixture, "--max-depth", "3"]);
    let (got, _) = read_all(&mut server, "fixture", json!({"count": 5, "depth": 10, "max_item_bytes": 20}), 25_000);
    let text = String::from_utf8(got).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    for line in lines {
        let item: Value = serde_json::from_str(line).unwrap();
        assert!(line.contains("items truncated]"), "{line}");
        assert!(depth(&item) <= 3, "{line}");
    }
    let (shallow, _) = read_all(&mut server, "fixture", json!({"count": 5, "depth": 1, "max_item_bytes": 20}), 25_000);
    assert!(!String::from_utf8(shallow).unwrap().contains("truncated"));
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

#[test]
fn paging_a_large_file_keeps_the_servers_memory_bounded() {
    let fx = Fixture::new();
    let path = fx.root().join("large.txt");
    {
        use std::io::Write;
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let line = "a line of a large file, paged through and never held whole ✓\n".as_bytes();
        for _ in 0..(128 << 20) / line.len() {
            out.write_all(line).unwrap();
        }
    }
    let size = std::fs::metadata(&path).unwrap().len();
    // Every tool loaded first: the growth measured is the paging's.
    let mut server = Server::initialized(&fx.root(), &["--compile-first"]);
    let baseline = server.peak_rss_kib();
    let mut args = json!({"path": "large.txt", "max_tokens": 25_000, "format": "json"});
    let mut total = 0u64;
    for id in 1.. {
        let page = server.call(id, "read", args.clone());
        total += page_meta(&page)["bytes"].as_u64().unwrap();
        match next_cursor(&page).as_deref() {
            Some(cursor) => args = json!({"cursor": cursor, "max_tokens": 25_000}),
            None => break,
        }
    }
    assert_eq!(total, size);
    let grew_mib = server.peak_rss_kib().saturating_sub(baseline) / 1024;
    assert!(grew_mib < 48, "peak RSS grew by {grew_mib} MiB while paging a {} MiB file", size >> 20);
}
