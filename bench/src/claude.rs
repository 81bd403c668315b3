//! Claude Code, headless, against a stand-in for the Messages API: what the
//! benchmark's agent section and the end-to-end tests both need to drive the
//! real CLI. The environment that makes a run hermetic (no account, no
//! telemetry, no setting inherited from the machine), and the model's answers
//! as the API writes them: one message, or its server-sent events. The HTTP
//! side of a stand-in is `standin`.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

/// Claude Code settings from the environment that would change what a run sees.
const INHERITED_SETTINGS: [&str; 12] = [
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_MODEL",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "MAX_MCP_OUTPUT_TOKENS",
    "ENABLE_MCP_LARGE_OUTPUT_FILES",
    "CLAUDE_CODE_MAX_OUTPUT_TOKENS",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
];

/// Where one headless run talks and keeps its files.
pub struct Headless<'a> {
    /// The stand-in's base URL (`ANTHROPIC_BASE_URL`).
    pub api_url: &'a str,
    /// A scratch `HOME` and `TMPDIR`, so nothing outside them is read or written.
    pub home: &'a Path,
    pub tmp: &'a Path,
    /// Claude Code's tool search (on by default for its users; off lists every
    /// MCP tool in each request).
    pub tool_search: bool,
}

/// Sets `command`'s environment for a hermetic headless run.
pub fn headless(command: &mut Command, run: &Headless<'_>) {
    for name in INHERITED_SETTINGS {
        command.env_remove(name);
    }
    command
        .env("ANTHROPIC_BASE_URL", run.api_url)
        .env("ANTHROPIC_API_KEY", "cordon-dummy-key")
        .env("ENABLE_TOOL_SEARCH", if run.tool_search { "true" } else { "false" })
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("HOME", run.home)
        .env("TMPDIR", run.tmp);
}

/// An assistant message of one content block, with the stop reason the block implies.
pub fn message(model: &str, block: Value) -> Value {
    let stop_reason = if block["type"] == "tool_use" { "tool_use" } else { "end_turn" };
    json!({
        "id": "msg_cordon", "type": "message", "role": "assistant", "model": model,
        "content": [block], "stop_reason": stop_reason, "stop_sequence": null,
        "usage": {"input_tokens": 1, "output_tokens": 1}
    })
}

/// The same message as the events of a streamed answer, in order.
pub fn stream_events(message: &Value) -> Vec<Value> {
    let block = &message["content"][0];
    let (start, delta) = if block["type"] == "tool_use" {
        let start = json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}});
        (start, json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}))
    } else {
        (json!({"type": "text", "text": ""}), json!({"type": "text_delta", "text": block["text"]}))
    };
    let mut head = message.clone();
    head["content"] = json!([]);
    head["stop_reason"] = Value::Null;
    let stop = json!({"stop_reason": message["stop_reason"], "stop_sequence": null});
    vec![
        json!({"type": "message_start", "message": head}),
        json!({"type": "content_block_start", "index": 0, "content_block": start}),
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": stop, "usage": {"output_tokens": 1}}),
        json!({"type": "message_stop"}),
    ]
}

/// `events` as the text of a server-sent event stream.
pub fn sse(events: &[Value]) -> String {
    events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or_default())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_call_streams_its_input_as_one_json_delta() {
        let call = message("m", json!({"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}}));
        assert_eq!(call["stop_reason"], "tool_use");
        let events = stream_events(&call);
        assert_eq!(events[2]["delta"]["partial_json"], r#"{"path":"a"}"#);
        assert_eq!(events[4]["delta"]["stop_reason"], "tool_use");
        let text = sse(&events);
        assert!(
            text.starts_with("event: message_start\ndata: ")
                && text.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
        );
    }
}
