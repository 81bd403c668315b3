//! An independent client: the official Python MCP SDK drives the real binary.

use std::process::Command;

use serde_json::Value;
use sha2::Digest;

use crate::support::{CANARY, Fixture, cordon_bin, python_with_mcp, shared_state_dir, workspace};

#[test]
fn python_sdk_client_lists_tools_and_reads_a_file() {
    let fx = Fixture::new();
    let content = "from python: ünïcödé\nline two\n";
    fx.write("py.txt", content);
    let big: String = (0..3000).map(|i| format!("{i}: paged through the Python SDK ✓\r\n")).collect();
    fx.write("big.txt", &big);
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";
    fx.write("shot.png", png);
    let blob: Vec<u8> = (0..40_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 9) as u8).collect();
    fx.write("blob.bin", &blob);
    let out = Command::new(python_with_mcp())
        .arg(workspace().join("tests/interop/python_client.py"))
        .arg(cordon_bin())
        .arg(fx.root())
        .arg(shared_state_dir())
        .arg("py.txt")
        .arg("../outside.txt")
        .arg("big.txt")
        .arg("shot.png")
        .arg("blob.bin")
        .output()
        .unwrap();
    assert!(out.status.success(), "python client failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["protocol_version"], "2025-11-25");
    assert_eq!(seen["server"], "cordon");
    assert!(seen["tools"].as_array().unwrap().iter().any(|t| t == "read"));
    assert_eq!(seen["read_has_output_schema"], false, "no outputSchema: text reaches models as text");
    let numbered: String = content.lines().enumerate().map(|(i, line)| format!("{}\t{line}\n", i + 1)).collect();
    assert_eq!(seen["text"], numbered, "the text form: numbered lines, as cat -n");
    assert_eq!(seen["text_structured"], Value::Null, "the text form has no structured content");
    assert_eq!(seen["exact_text"], content, "the JSON form: the bytes exactly");
    assert_eq!(seen["exact_mirrored"], true, "the JSON form's one text block is its structured content: {seen}");
    assert_eq!(seen["is_error"], false);
    assert_eq!(seen["structured"]["size"], content.len());
    assert_eq!(seen["denied_is_error"], true);
    assert_eq!(seen["denied_structured"], Value::Null, "a failure in the text form is text: {seen}");
    assert_eq!(seen["denied_meta"]["cordon/error"]["code"], "permission_denied", "and its code in _meta");
    assert!(!seen.to_string().contains(CANARY));
    assert!(seen["paged_pages"].as_u64().unwrap() > 10, "{seen}");
    let sha: String = sha2::Sha256::digest(big.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(seen["paged_sha256"], sha, "the pages put together are the file");
    assert_eq!(seen["paged_reported_sha256"], sha);
    let sha_of = |bytes: &[u8]| -> String { sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect() };
    assert_eq!(seen["image_blocks"], serde_json::json!(["image", "text"]), "{seen}");
    assert_eq!(seen["image_mime"], "image/png");
    assert_eq!(seen["image_sha256"], sha_of(png));
    assert!(seen["binary_text"].as_str().unwrap().starts_with("blob.bin is a binary file"), "{seen}");
    assert_eq!(seen["binary_sha256"], sha_of(&blob), "the JSON form's pages put together are the file");
    assert_eq!(seen["binary_reported_sha256"], sha_of(&blob));
    assert_eq!(seen["binary_chunks_ok"], true, "every chunk's hash is its bytes'");
}
