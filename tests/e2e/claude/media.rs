//! Images and binary files as the model in Claude Code reads them (issue 30, item 4): a PNG
//! reaches it as an image block (Claude Code's `image` content in the `tool_result`), and 100 KB
//! of random bytes costs it at most 2,000 characters, one sentence.

use base64::Engine as _;
use serde_json::{Value, json};

use super::api::ToolResultSeen;
use super::run::run_claude;
use super::seen::model_text;
use crate::agents::trimmed;
use crate::support::{Fixture, Rng, cordon_bin, shared_state_dir};

/// A valid 1x1 PNG.
const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

#[test]
fn claude_code_shows_the_model_an_image_and_one_sentence_for_random_bytes() {
    crate::clients::warm_cache();
    let fx = Fixture::new();
    let png = base64::engine::general_purpose::STANDARD.decode(PNG_1X1).unwrap();
    fx.write("pixel.png", &png);
    let mut rng = Rng(17);
    fx.write("noise.bin", (0..100_000).map(|_| rng.next() as u8).collect::<Vec<u8>>());
    let args = json!(["serve", "--root", fx.root(), "--state-dir", shared_state_dir()]);
    let config = json!({"mcpServers": {"cordon": {"command": cordon_bin(), "args": args}}});
    let calls = [json!({"path": "pixel.png"}), json!({"path": "noise.bin"})];
    let script = move |seen: &[ToolResultSeen]| -> Option<(String, Value)> {
        calls.get(seen.len()).map(|input| ("mcp__cordon__read".to_string(), input.clone()))
    };
    let seen = run_claude(fx.dir.path(), &config, &["mcp__cordon__read"], script);
    let shown = || seen.iter().map(|s| trimmed(&s.content.to_string(), 600)).collect::<Vec<_>>().join("\n");
    assert_eq!(seen.len(), 2, "{}", shown());
    assert!(seen.iter().all(|s| !s.is_error), "{}", shown());

    let blocks = seen[0].content.as_array().cloned().unwrap_or_default();
    let image = blocks.iter().find(|b| b["type"] == "image").unwrap_or_else(|| panic!("no image: {}", shown()));
    assert_eq!(image["source"]["media_type"], "image/png", "{}", shown());
    assert_eq!(image["source"]["data"], PNG_1X1, "{}", shown());

    let noise = model_text(&seen[1]);
    assert!(noise.chars().count() <= 2_000, "{} characters: {}", noise.chars().count(), trimmed(&noise, 600));
    assert!(noise.contains("noise.bin is a binary file"), "{}", shown());
}
