//! Cursor forgery, beyond `paging.rs` (one flipped byte, a foreign key, another
//! tool, changed arguments, expiry, a file changed between pages): every bit of
//! a real cursor flipped; cursors cut short, empty, huge or not base64; cursors
//! re-signed with a wrong key; cursors of each paging tool given to every other
//! tool; replays; and cursors validly signed with a leaked key, which still
//! cannot leave the roots. A forged cursor never yields a page it should not.

use std::collections::HashMap;
use std::fs;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::{CANARY, Fixture, Server, page_meta, payload};

const KEY_HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn key() -> Vec<u8> {
    (0..KEY_HEX.len()).step_by(2).map(|i| u8::from_str_radix(&KEY_HEX[i..i + 2], 16).unwrap()).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A cursor's body, as the server wrote it.
fn body(cursor: &str) -> Value {
    let (body, _) = cursor.strip_prefix("c1.").unwrap().split_once('.').unwrap();
    serde_json::from_slice(&B64.decode(body).unwrap()).unwrap()
}

/// A cursor carrying `body`, signed with `key` (the server's format:
/// `c1.<base64url body>.<base64url HMAC-SHA256 of the encoded body>`).
fn sign(body: &Value, key: &[u8]) -> String {
    let body = B64.encode(serde_json::to_vec(body).unwrap());
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap();
    mac.update(body.as_bytes());
    format!("c1.{body}.{}", B64.encode(mac.finalize().into_bytes()))
}

/// The fixture with a multi-page file, and a server signing with `KEY_HEX`.
fn setup() -> (Fixture, Server) {
    let fx = Fixture::new();
    fx.write("a.txt", "a\n".repeat(5000));
    std::os::unix::fs::symlink(fx.outside(), fx.root().join("link-out")).unwrap();
    let server = Server::initialized(&fx.root(), &["--cursor-key", KEY_HEX]);
    (fx, server)
}

/// The page's signed cursor (`_meta`), which these attacks take apart; the
/// model's `next_cursor` is a handle that maps to it.
fn next_cursor(result: &Value) -> String {
    assert_eq!(result["isError"], false, "{result}");
    page_meta(result)["cursor"].as_str().unwrap_or_else(|| panic!("no cursor: {result}")).to_string()
}

/// Asserts an `invalid_cursor` refusal, with one of `reasons` (any if empty).
fn assert_invalid_cursor(reply: &Value, reasons: &[&str], what: &str) {
    assert!(reply.get("result").is_none(), "{what}: a forged cursor gave a page: {reply}");
    assert_eq!(reply["error"]["code"], -32602, "{what}: {reply}");
    assert_eq!(reply["error"]["data"]["error"], "invalid_cursor", "{what}: {reply}");
    let reason = reply["error"]["data"]["reason"].as_str().unwrap_or("");
    assert!(reasons.is_empty() || reasons.contains(&reason), "{what}: reason `{reason}` not in {reasons:?}: {reply}");
}

/// Sends the calls in batches without waiting, then matches the replies by id.
fn pipelined(server: &mut Server, calls: &[(&str, Value)]) -> Vec<Value> {
    let mut replies = Vec::with_capacity(calls.len());
    for (batch, chunk) in calls.chunks(128).enumerate() {
        let base = 100_000 + batch as i64 * 1000;
        for (i, (tool, args)) in chunk.iter().enumerate() {
            let params = json!({"name": tool, "arguments": args});
            server
                .send_json(&json!({"jsonrpc": "2.0", "id": base + i as i64, "method": "tools/call", "params": params}));
        }
        let mut by_id = HashMap::new();
        while by_id.len() < chunk.len() {
            let reply = server.recv();
            by_id.insert(reply["id"].as_i64().unwrap_or_else(|| panic!("a reply without an id: {reply}")), reply);
        }
        replies.extend((0..chunk.len()).map(|i| by_id.remove(&(base + i as i64)).unwrap()));
    }
    replies
}

#[test]
fn every_bit_flip_of_a_real_cursor_is_refused_and_never_pages() {
    let (_fx, mut server) = setup();
    let first = server.call(1, "read", json!({"format": "json", "path": "a.txt", "max_tokens": 50}));
    let second = server.call(2, "read", json!({"format": "json", "cursor": next_cursor(&first), "max_tokens": 50}));
    let cursor = next_cursor(&second);
    assert!(cursor.len() > 256, "a real cursor: {cursor}");
    let (mut text_flips, mut raw_flips) = (Vec::new(), Vec::new());
    for (i, bit) in (0..cursor.len()).flat_map(|i| (0..8).map(move |bit| (i, bit))) {
        let mut bytes = cursor.clone().into_bytes();
        bytes[i] ^= 1 << bit;
        match String::from_utf8(bytes) {
            Ok(flipped) => text_flips.push(((i, bit), flipped)),
            Err(e) => raw_flips.push(((i, bit), e.into_bytes())),
        }
    }
    let calls: Vec<(&str, Value)> =
        text_flips.iter().map(|(_, c)| ("read", json!({"format": "json", "cursor": c}))).collect();
    for (((i, bit), _), reply) in text_flips.iter().zip(pipelined(&mut server, &calls)) {
        assert_invalid_cursor(&reply, &[], &format!("bit {bit} of byte {i} flipped"));
    }
    // A flip that leaves ASCII cannot travel in a JSON string: sent raw, the
    // line is not UTF-8 and is refused as such.
    for ((i, bit), flipped) in &raw_flips {
        let mut line =
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read","arguments":{"cursor":""#
                .to_vec();
        line.extend_from_slice(flipped);
        line.extend_from_slice(b"\"}}}\n");
        server.send_raw(&line);
        let reply = server.recv();
        assert!(reply.get("result").is_none(), "bit {bit} of byte {i}: {reply}");
        assert_eq!(reply["error"]["code"], -32700, "bit {bit} of byte {i}: {reply}");
    }
    assert_eq!(text_flips.len() + raw_flips.len(), cursor.len() * 8);
    let genuine = server.call(3, "read", json!({"format": "json", "cursor": cursor, "max_tokens": 50}));
    assert_eq!(page_meta(&genuine)["index"], 2, "the real cursor still works: {genuine}");
}

#[test]
fn truncated_empty_huge_and_garbled_cursors_are_refused() {
    let (_fx, mut server) = setup();
    let first = server.call(1, "read", json!({"format": "json", "path": "a.txt", "max_tokens": 50}));
    let cursor = next_cursor(&first);
    let (body_part, mac_part) = cursor.strip_prefix("c1.").unwrap().split_once('.').unwrap();
    let mut garbled: Vec<(String, String)> =
        (0..cursor.len()).map(|n| (format!("cut to {n}"), cursor[..n].to_string())).collect();
    let standard = |s: &str| s.replace('-', "+").replace('_', "/");
    for (what, forged) in [
        ("1 MB of base64", format!("c1.{}.{mac_part}", "A".repeat(1 << 20))),
        ("the real cursor with 1 MB appended", format!("{cursor}{}", "A".repeat(1 << 20))),
        ("1 MB of non-base64", format!("c1.{}", "!".repeat(1 << 20))),
        ("no prefix", format!("{body_part}.{mac_part}")),
        ("another version", format!("c2.{body_part}.{mac_part}")),
        ("an upper-case prefix", format!("C1.{body_part}.{mac_part}")),
        ("no signature", format!("c1.{body_part}")),
        ("an empty signature", format!("c1.{body_part}.")),
        ("an empty body", format!("c1..{mac_part}")),
        ("punctuation", "c1.!!!.???".to_string()),
        ("the standard base64 alphabet", format!("c1.{}.{}", standard(body_part), standard(mac_part))),
        ("padding added", format!("c1.{body_part}==.{mac_part}=")),
        ("a space inside", format!("c1.{} {}.{mac_part}", &body_part[..10], &body_part[10..])),
        ("a trailing newline", format!("{cursor}\n")),
        ("percent-encoded", cursor.replace('.', "%2E")),
        ("a third part", format!("{cursor}.{mac_part}")),
        ("non-ASCII inside", format!("c1.{}é{}.{mac_part}", &body_part[..10], &body_part[10..])),
        ("the signature of another cursor", format!("c1.{body_part}.{}", B64.encode([7u8; 32]))),
        ("body and signature swapped", format!("c1.{mac_part}.{body_part}")),
    ] {
        // (A cursor with neither `-` nor `_` reads the same in both alphabets.)
        if forged != cursor {
            garbled.push((what.to_string(), forged));
        }
    }
    let calls: Vec<(&str, Value)> =
        garbled.iter().map(|(_, c)| ("read", json!({"format": "json", "cursor": c}))).collect();
    for ((what, _), reply) in garbled.iter().zip(pipelined(&mut server, &calls)) {
        assert_invalid_cursor(&reply, &["malformed", "bad_signature"], what);
    }
    // Not a string at all: refused before any tool runs.
    for (i, value) in [json!(12345), json!(true), json!({"c": 1}), json!([cursor])].into_iter().enumerate() {
        let reply =
            server.request(10 + i as i64, "tools/call", json!({"name": "read", "arguments": {"cursor": value}}));
        assert_eq!(reply["error"]["code"], -32602, "cursor {value}: {reply}");
    }
    let genuine = server.call(20, "read", json!({"format": "json", "cursor": cursor, "max_tokens": 50}));
    assert_eq!(page_meta(&genuine)["index"], 1);
}

#[test]
fn a_cursor_re_signed_with_another_key_is_refused_whatever_key_it_claims() {
    let (_fx, mut server) = setup();
    let first = server.call(1, "read", json!({"format": "json", "path": "a.txt", "max_tokens": 50}));
    let cursor = next_cursor(&first);
    let mut forged = body(&cursor);
    let wrong_key = [0x42u8; 32];
    // Claiming this server's key id, but signed with another key: altered.
    let claiming = sign(&forged, &wrong_key);
    let reply = server.request(2, "tools/call", json!({"name": "read", "arguments": {"cursor": claiming}}));
    assert_invalid_cursor(&reply, &["bad_signature"], "this server's key id, another key's signature");
    // Claiming the other key's id: foreign.
    forged["k"] = json!(hex(&Sha256::digest(wrong_key)[..4]));
    let foreign = sign(&forged, &wrong_key);
    let reply = server.request(3, "tools/call", json!({"name": "read", "arguments": {"cursor": foreign}}));
    assert_invalid_cursor(&reply, &["foreign_key"], "another key's id and signature");
    // A shorter key that is a prefix of the real one signs nothing.
    let short = sign(&body(&cursor), &key()[..16]);
    let reply = server.request(4, "tools/call", json!({"name": "read", "arguments": {"cursor": short}}));
    assert_invalid_cursor(&reply, &["bad_signature"], "a prefix of the key");
}

#[test]
fn a_cursor_of_each_paging_tool_is_refused_by_every_other_tool_and_with_other_arguments() {
    let (fx, mut server) = setup();
    for i in 0..40 {
        fx.write(&format!("sub/f{i:02}.txt"), format!("needle {i}\n").repeat(20));
    }
    let made = [
        ("read", json!({"format": "json", "path": "a.txt"}), json!({"path": "a.txt", "start_line": 1})),
        ("grep", json!({"pattern": "needle", "path": "sub"}), json!({"pattern": "needles", "path": "sub"})),
        ("glob", json!({"pattern": "**/*.txt"}), json!({"pattern": "**/*.md"})),
        ("list", json!({"path": "sub"}), json!({"path": "sub", "depth": 2})),
    ];
    let tools = ["read", "grep", "glob", "list", "stat", "write", "edit", "move", "mkdir"];
    for (id, (tool, args, changed)) in made.iter().enumerate() {
        let mut first = args.clone();
        first["max_tokens"] = json!(20);
        let cursor = next_cursor(&server.call(id as i64, tool, first));
        for other in tools.iter().filter(|t| *t != tool) {
            let reply = server.request(100, "tools/call", json!({"name": other, "arguments": {"cursor": cursor}}));
            assert_invalid_cursor(&reply, &["other_tool"], &format!("a {tool} cursor given to {other}"));
        }
        // The host's own upload tool pages nothing: a cursor there is no page either.
        let upload = json!({"name": "upload", "arguments": {"action": "start", "cursor": cursor}});
        let reply = server.request(101, "tools/call", upload);
        assert!(reply.get("error").is_some() || reply["result"]["isError"] == true, "upload with a cursor: {reply}");
        let mut other_args = changed.clone();
        other_args["cursor"] = json!(cursor);
        let reply = server.request(102, "tools/call", json!({"name": tool, "arguments": other_args}));
        assert_invalid_cursor(&reply, &["arguments_changed"], &format!("a {tool} cursor with other arguments"));
        let mut same = args.clone();
        same["cursor"] = json!(cursor);
        assert_eq!(server.call(103, tool, same)["isError"], false, "{tool}: the same arguments are accepted");
    }
}

#[test]
fn replaying_a_cursor_after_the_file_was_replaced_is_stale_never_shifted() {
    let (fx, mut server) = setup();
    let path = fx.root().join("a.txt");
    let first = server.call(1, "read", json!({"format": "json", "path": "a.txt", "max_tokens": 50}));
    let cursor = next_cursor(&first);
    // A replay of an unchanged file is the same page, every time.
    let once = server.call(2, "read", json!({"format": "json", "cursor": cursor, "max_tokens": 50}));
    let again = server.call(3, "read", json!({"format": "json", "cursor": cursor, "max_tokens": 50}));
    assert_eq!(payload(&once), payload(&again));
    assert_eq!(once["structuredContent"]["start_byte"], again["structuredContent"]["start_byte"]);

    // Same size, same mtime, new bytes, another inode: the identity tells.
    let mtime = fs::metadata(&path).unwrap().modified().unwrap();
    let replacement = fx.root().join("replacement.tmp");
    fs::write(&replacement, "b\n".repeat(5000)).unwrap();
    fs::File::options().write(true).open(&replacement).unwrap().set_modified(mtime).unwrap();
    fs::rename(&replacement, &path).unwrap();
    assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), mtime);
    let replayed = server.call(4, "read", json!({"format": "json", "cursor": cursor, "max_tokens": 50}));
    assert_eq!(
        replayed["_meta"]["cordon/error"]["code"], "stale",
        "replaced under the same size and mtime: {replayed}"
    );
    // And from another server with the same key (the stream is not parked there).
    let mut replica = Server::initialized(&fx.root(), &["--cursor-key", KEY_HEX]);
    let replayed = replica.call(5, "read", json!({"format": "json", "cursor": cursor, "max_tokens": 50}));
    assert_eq!(replayed["_meta"]["cordon/error"]["code"], "stale", "on a replica: {replayed}");

    // Rewritten in place, same size, one second later: stale too.
    let first = server.call(6, "read", json!({"format": "json", "path": "a.txt", "max_tokens": 50}));
    let cursor = next_cursor(&first);
    fs::write(&path, "c\n".repeat(5000)).unwrap();
    let later = SystemTime::now() + Duration::from_secs(1);
    fs::File::options().write(true).open(&path).unwrap().set_modified(later).unwrap();
    let replayed = server.call(7, "read", json!({"format": "json", "cursor": cursor, "max_tokens": 50}));
    assert_eq!(replayed["_meta"]["cordon/error"]["code"], "stale", "rewritten in place: {replayed}");
}

#[test]
fn a_validly_signed_cursor_still_cannot_leave_the_roots_or_repeat_a_write() {
    // As if the key had leaked: cursors the server accepts as its own, whose
    // arguments point outside. The tools re-resolve every path inside the
    // sandbox, so the canary stays out of reach.
    let (fx, mut server) = setup();
    let first = server.call(1, "read", json!({"format": "json", "path": "a.txt", "max_tokens": 50}));
    let template = body(&next_cursor(&first));
    let outside = fx.outside().display().to_string();
    let mut forged = Vec::new();
    for (tool, args, resume) in [
        ("read", json!({"format": "json", "path": "../outside.txt"}), "0:1"),
        ("read", json!({"format": "json", "path": outside}), "0:1"),
        ("read", json!({"format": "json", "path": "link-out"}), "0:1"),
        ("read", json!({"format": "json", "path": "a.txt"}), "999999999:1"),
        ("read", json!({"format": "json", "path": "a.txt"}), "not a position"),
        ("grep", json!({"pattern": "CANAR[Y]", "path": ".."}), ""),
        ("list", json!({"path": "../root_evil"}), ""),
        ("glob", json!({"pattern": "*", "path": "/"}), ""),
        ("stat", json!({"format": "json", "path": "../outside.txt"}), ""),
    ] {
        let mut body = template.clone();
        body["t"] = json!(tool);
        body["a"] = json!(args.to_string());
        body["r"] = json!(resume);
        body["s"] = json!(1);
        forged.push((tool, sign(&body, &key())));
        body["f"] = Value::Null;
        forged.push((tool, sign(&body, &key())));
    }
    for (i, (tool, cursor)) in forged.iter().enumerate() {
        let reply = server.request(10 + i as i64, "tools/call", json!({"name": tool, "arguments": {"cursor": cursor}}));
        assert!(!reply.to_string().contains(CANARY), "{tool}: a signed cursor leaked the canary: {reply}");
        let refused = reply.get("error").is_some() || reply["result"]["isError"] == true;
        assert!(refused, "{tool}: a forged cursor pointing outside gave a page: {reply}");
    }
    // A write's resume position carries its result: a forged one is only
    // echoed back, the write is never done (again).
    let mut body = template.clone();
    body["t"] = json!("write");
    body["a"] = json!(json!({"path": "../outside.txt", "content": "pwned"}).to_string());
    body["r"] = json!(r#"br{"path":"forged"}"#);
    body["f"] = Value::Null;
    let reply =
        server.request(50, "tools/call", json!({"name": "write", "arguments": {"cursor": sign(&body, &key())}}));
    assert!(!reply.to_string().contains("pwned"), "{reply}");
    assert_eq!(fs::read_to_string(fx.outside()).unwrap(), CANARY);
    assert!(!fx.root().join("forged").exists());
}

/// Every window of `len` bytes of `haystack` that also occurs in `needle`.
fn shared_windows(haystack: &[u8], needle: &[u8], len: usize) -> usize {
    haystack.windows(len).filter(|w| needle.windows(len).any(|n| n == *w)).count()
}

#[test]
fn a_cursor_carries_no_byte_of_the_file_it_pages() {
    let fx = Fixture::new();
    let secret = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n";
    let text: String = (0..40).map(|n| format!("line {n:02} {secret}")).collect();
    fs::write(fx.root().join("env.txt"), &text).unwrap();
    let mut server = Server::initialized(&fx.root(), &[]);
    // Pages that end inside a 64-byte block, so the running hash holds bytes of it.
    for max_tokens in [7, 19, 33] {
        let page = server.call(
            1,
            "read",
            json!({"format": "json", "path": "env.txt", "format": "json", "max_tokens": max_tokens}),
        );
        let cursor = page_meta(&page)["cursor"].as_str().expect("a next page").to_string();
        let body = body(&cursor);
        let plain = body.to_string();
        assert!(!plain.contains("wJalr") && !plain.contains("AWS_"), "the cursor's body shows the file: {plain}");
        let sealed = B64.decode(body["hs"].as_str().expect("a sealed hash state")).unwrap();
        assert_eq!(shared_windows(&sealed, text.as_bytes(), 8), 0, "the hash state shows the file");
        let resumed = server.call(2, "read", json!({"format": "json", "cursor": cursor, "max_tokens": 25_000}));
        let whole = [payload(&page), payload(&resumed)].concat();
        assert_eq!(String::from_utf8(whole).unwrap(), text, "the sealed state still pages exactly");
    }
}
