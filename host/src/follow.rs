//! `cordon call --all`: follows cursors to the end of a result, writing each
//! page's payload to stdout as it comes, so memory stays at one page.

use std::io::Write;
use std::process::ExitCode;

use serde_json::Value;

use crate::pager::page::Block;
use crate::protocol::jsonrpc::ErrorObject;
use crate::protocol::mcp::Version;
use crate::results::{self, Answer, Failed};
use crate::server::{CallRequest, Server};

/// Calls `tool` and every continuation. Without `jsonl` the payload is written
/// raw (text as is, base64 blobs decoded), so stdout receives exactly the bytes
/// of the whole result; with it, each page's MCP result is one JSON line.
pub fn follow(
    server: &std::sync::Arc<Server>,
    tool: &str,
    mut arguments: Value,
    jsonl: bool,
) -> std::io::Result<ExitCode> {
    // Each page's MCP result is for a program: in the JSON form unless asked
    // otherwise (the raw payload keeps the form's text: exact bytes for a file).
    if jsonl && arguments.get("format").is_none() {
        arguments["format"] = "json".into();
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let signal = std::sync::Arc::new(crate::runtime::CallSignal::new());
    let caller = server.local("cli");
    let entry = match server.called(tool, &caller) {
        Ok(entry) => entry,
        Err(fault) => {
            eprintln!("cordon: {}", serde_json::to_string(&ErrorObject::from(fault))?);
            return Ok(ExitCode::from(2));
        }
    };
    loop {
        let request = CallRequest {
            tool: entry.clone(),
            arguments: &arguments,
            client_roots: None,
            signal: &signal,
            for_model: false,
            caller: caller.clone(),
            client: crate::clients::Client::default(),
            watch: None,
        };
        let page = match server.call(request) {
            Ok(Answer::Page(page)) => page,
            Ok(Answer::Host(value)) => {
                // A host tool answers at once, in one piece.
                writeln!(out, "{value}")?;
                break;
            }
            Ok(Answer::Failed(failure)) => {
                out.flush()?;
                return Ok(match failure {
                    Failed::Tool(failure) => {
                        eprintln!("cordon: {failure}");
                        ExitCode::from(1)
                    }
                    Failed::Server(error) => {
                        eprintln!("cordon: {}", serde_json::to_string(&error)?);
                        ExitCode::from(2)
                    }
                });
            }
            Err(fault) => {
                out.flush()?;
                eprintln!("cordon: {}", serde_json::to_string(&ErrorObject::from(fault))?);
                return Ok(ExitCode::from(2));
            }
        };
        // Continuations carry the cursor and the caller's page size, nothing else.
        let next = page.continue_with.clone();
        if jsonl {
            out.write_all(results::call_result(*page, Version::LATEST).into_json().as_bytes())?;
            out.write_all(b"\n")?;
        } else {
            for block in &page.blocks {
                match block {
                    Block::Text(text) => out.write_all(text.as_bytes())?,
                    Block::Bytes(raw) => out.write_all(raw)?,
                }
            }
        }
        match next {
            Some(next) => arguments = next,
            None => break,
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
