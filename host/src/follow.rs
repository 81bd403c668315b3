//! `cordon call --all`: follows cursors to the end of a result, writing each
//! page's payload to stdout as it comes, so memory stays at one page.
//!
//! Each page runs whole on this thread, its guest work too
//! (`runtime::kept_above`), and a `Keeper` thread keeps the pages' host
//! timeout. Before, each page's guest work went to a worker thread while
//! this one looked for its result, and with the running hash's thread (see
//! `pager::aside::Running`) three threads took turns on two cores: 256 MiB at
//! 25,000-token pages took 0.29–0.42 s in a third of the runs, 0.20 s in the
//! rest.

use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;

use crate::pager::page::Block;
use crate::protocol::jsonrpc::ErrorObject;
use crate::protocol::mcp::Version;
use crate::registry::Entry;
use crate::results::{self, Answer, Failed, Fault};
use crate::runtime::{CallSignal, kept_above};
use crate::server::{CallRequest, Caller, Server, Watch};

/// How often the keeper looks at the page in progress when none is due sooner.
const LOOKS_EVERY: Duration = Duration::from_millis(50);

/// Keeps the host timeout of the pages `follow` runs on its own thread: a
/// thread of its own looks at the page in progress now and then (not once a
/// page), and one still running at its deadline plus the host grace (a guest
/// blocked in a host call) is recorded and said as the timeout, and the
/// process exits with it, leaving the blocked guest behind: the pages before
/// it are on stdout (each is flushed before the next runs), and the server's
/// own uploads directory is removed first.
struct Keeper {
    page: Arc<Mutex<Option<Arc<Kept>>>>,
}

/// The page in progress, as the keeper records it when it gives up on it.
struct Kept {
    watch: Arc<Watch>,
    tool: Entry,
    arguments: Value,
    signal: Arc<CallSignal>,
    caller: Caller,
}

impl Kept {
    fn request(&self) -> CallRequest<'_> {
        CallRequest {
            tool: self.tool.clone(),
            arguments: &self.arguments,
            client_roots: None,
            signal: &self.signal,
            for_model: false,
            caller: self.caller.clone(),
            client: crate::clients::Client::default(),
            watch: Some(&self.watch),
        }
    }
}

impl Keeper {
    fn start(server: &Arc<Server>) -> std::io::Result<Keeper> {
        let page = Arc::new(Mutex::new(None::<Arc<Kept>>));
        // Not a strong reference: the server is dropped (its uploads
        // directory removed) when `follow` is done, the keeper still running.
        let (looked, server) = (Arc::clone(&page), Arc::downgrade(server));
        let keep = move || {
            loop {
                let nap = match lock(&looked).as_ref() {
                    None => LOOKS_EVERY,
                    Some(kept) => match kept.watch.give_up_if_due(&kept.signal) {
                        Err(nap) => nap,
                        Ok(abandoned) => {
                            let Some(server) = server.upgrade() else { return };
                            let answer = server.answer_abandoned(&kept.request(), abandoned);
                            server.before_exit();
                            std::process::exit(said(answer).unwrap_or(2).into());
                        }
                    },
                };
                std::thread::sleep(nap);
            }
        };
        std::thread::Builder::new().name("cordon-keeper".into()).spawn(keep)?;
        Ok(Keeper { page })
    }

    /// Runs one page of `tool` with `arguments` here, its host timeout kept.
    fn call(&self, server: &Arc<Server>, kept: Kept) -> Result<Answer, Fault> {
        let kept = Arc::new(kept);
        *lock(&self.page) = Some(Arc::clone(&kept));
        let answer = kept_above(|| server.call(kept.request()));
        *lock(&self.page) = None;
        answer
    }
}

fn lock(page: &Mutex<Option<Arc<Kept>>>) -> MutexGuard<'_, Option<Arc<Kept>>> {
    page.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Says a call's failure on stderr; the exit code it gives (1: the tool's
/// own failure; 2: the server's, or a refusal).
fn said(answer: Result<Answer, Fault>) -> std::io::Result<u8> {
    Ok(match answer {
        Ok(Answer::Failed(Failed::Tool(failure))) => {
            eprintln!("cordon: {failure}");
            1
        }
        Ok(Answer::Failed(Failed::Server(error))) => {
            eprintln!("cordon: {}", serde_json::to_string(&error)?);
            2
        }
        Err(fault) => {
            eprintln!("cordon: {}", serde_json::to_string(&ErrorObject::from(fault))?);
            2
        }
        Ok(_) => 0,
    })
}

/// Calls `tool` and every continuation. Without `jsonl` the payload is written
/// raw (text as is, base64 blobs decoded), so stdout receives exactly the bytes
/// of the whole result; with it, each page's MCP result is one JSON line.
pub fn follow(server: &Arc<Server>, tool: &str, mut arguments: Value, jsonl: bool) -> std::io::Result<ExitCode> {
    // Each page's MCP result is for a program: in the JSON form unless asked
    // otherwise (the raw payload keeps the form's text: exact bytes for a file).
    if jsonl && arguments.get("format").is_none() {
        arguments["format"] = "json".into();
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let signal = Arc::new(CallSignal::new());
    let caller = server.local("cli");
    let entry = match server.called(tool, &caller) {
        Ok(entry) => entry,
        Err(fault) => return Ok(ExitCode::from(said(Err(fault))?)),
    };
    let keeper = Keeper::start(server)?;
    loop {
        let kept = Kept {
            watch: Watch::new(),
            tool: entry.clone(),
            arguments: arguments.clone(),
            signal: Arc::clone(&signal),
            caller: caller.clone(),
        };
        let page = match keeper.call(server, kept) {
            Ok(Answer::Page(page)) => page,
            Ok(Answer::Host(value)) => {
                // A host tool answers at once, in one piece.
                writeln!(out, "{value}")?;
                break;
            }
            failed => {
                out.flush()?;
                return Ok(ExitCode::from(said(failed)?));
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
        // Each page's bytes out before the next page runs: a keeper that
        // ends the process on it cannot flush this thread's stdout (stdout
        // writes up to a line end at once; only a page's last part line waits).
        out.flush()?;
        match next {
            Some(next) => arguments = next,
            None => break,
        }
    }
    Ok(ExitCode::SUCCESS)
}
