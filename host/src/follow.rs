//! `cordon call --all`: follows cursors to the end of a result, writing each
//! page's payload to stdout as it comes, so memory stays at one page.

use std::io::Write;
use std::process::ExitCode;

use base64::Engine as _;
use serde_json::Value;

use crate::protocol::mcp::Version;
use crate::server::Server;

/// Calls `tool` and every continuation. Without `jsonl` the payload is written
/// raw (text as is, base64 blobs decoded), so stdout receives exactly the bytes
/// of the whole result; with it, each page's MCP result is one JSON line.
pub fn follow(
    server: &std::sync::Arc<Server>,
    tool: &str,
    mut arguments: Value,
    jsonl: bool,
) -> anyhow::Result<ExitCode> {
    // Continuations carry the cursor and the caller's page size, nothing else.
    let mut paging = serde_json::Map::new();
    for name in ["max_tokens", "page_size"] {
        if let Some(value) = arguments.get(name) {
            paging.insert(name.into(), value.clone());
        }
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    loop {
        let result = match server.call_tool(
            tool,
            &arguments,
            Version::LATEST,
            None,
            &std::sync::Arc::new(crate::runtime::CallSignal::new()),
        ) {
            Ok(result) => result,
            Err(error) => {
                out.flush()?;
                eprintln!("cordon: {}", serde_json::to_string(&error)?);
                return Ok(ExitCode::from(2));
            }
        };
        if result["isError"] == Value::Bool(true) {
            out.flush()?;
            eprintln!("cordon: {}", result["content"][0]["text"].as_str().unwrap_or("the call failed"));
            return Ok(ExitCode::from(1));
        }
        let meta = &result["structuredContent"];
        if jsonl {
            serde_json::to_writer(&mut out, &result)?;
            out.write_all(b"\n")?;
        } else {
            let page = &result["_meta"][crate::results::PAGE_META];
            let blocks = page["blocks"].as_u64().unwrap_or(0) as usize;
            for block in result["content"].as_array().into_iter().flatten().take(blocks) {
                if let Some(text) = block["text"].as_str() {
                    out.write_all(text.as_bytes())?;
                } else if let Some(blob) = block["resource"]["blob"].as_str() {
                    out.write_all(&base64::engine::general_purpose::STANDARD.decode(blob)?)?;
                }
            }
        }
        match meta["next_cursor"].as_str() {
            Some(cursor) => {
                let mut next = paging.clone();
                next.insert("cursor".into(), cursor.into());
                arguments = Value::Object(next);
            }
            None => break,
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
