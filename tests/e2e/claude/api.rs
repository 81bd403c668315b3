//! A stand-in for the Anthropic Messages API on loopback: it plays the model from a script and
//! records every `tool_result` Claude Code sends back.

use cordon_bench::claude::{message, stream_events};
use cordon_bench::standin::{Request, StandIn, read_request};
use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::support::REPLY_TIMEOUT;

/// Main-loop turns after which the stand-in stops the conversation (a runaway script).
const MAX_TURNS: usize = 60;

/// One `tool_result` as Claude Code forwarded it to the model, with the call it answers.
#[derive(Clone, Debug)]
pub(super) struct ToolResultSeen {
    pub(super) tool_use_id: String,
    /// The tool the model called, e.g. `mcp__cordon__read`.
    pub(super) tool: String,
    pub(super) input: Value,
    pub(super) is_error: bool,
    /// The block's `content` as sent: a string, or an array of content blocks.
    pub(super) content: Value,
}

/// The model's next move, given every result seen so far: a tool call, or `None` for the final answer.
pub(super) type Script = Box<dyn FnMut(&[ToolResultSeen]) -> Option<(String, Value)> + Send>;

/// The model's side of one conversation: the script, what Claude Code sent back, and anything
/// the stand-in could not make sense of.
pub(super) struct Conversation {
    script: Script,
    /// The calls the model made, by `tool_use` id.
    calls: HashMap<String, (String, Value)>,
    pub(super) seen: Vec<ToolResultSeen>,
    /// One line per HTTP request, for failure messages.
    pub(super) requests: Vec<String>,
    pub(super) problems: Vec<String>,
    pub(super) finished: bool,
    /// The `tools` of the first main-loop request: every definition the model is sent.
    pub(super) first_tools: Vec<Value>,
}

impl Conversation {
    fn new(script: Script) -> Conversation {
        Conversation {
            script,
            calls: HashMap::new(),
            seen: Vec::new(),
            requests: Vec::new(),
            problems: Vec::new(),
            finished: false,
            first_tools: Vec::new(),
        }
    }

    /// The model's answer to one `/v1/messages` request: a short text for a side request (its
    /// `tools` name no MCP tool), else the script's next call or, when it is done, a final text.
    fn reply_to(&mut self, request: &Value) -> Value {
        let model = request["model"].as_str().unwrap_or("claude");
        let tools: Vec<&str> =
            request["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).collect();
        if !tools.iter().any(|t| t.starts_with("mcp__")) {
            return message(model, json!({"type": "text", "text": "Cordon"}));
        }
        if self.first_tools.is_empty() {
            self.first_tools = request["tools"].as_array().cloned().unwrap_or_default();
        }
        self.record(&request["messages"]);
        if self.finished {
            self.problems.push("a main-loop request after the final answer".into());
        }
        let next = if self.calls.len() >= MAX_TURNS {
            self.problems.push(format!("the script was still calling tools after {MAX_TURNS} turns"));
            None
        } else {
            (self.script)(&self.seen)
        };
        match next {
            Some((tool, input)) if tools.contains(&tool.as_str()) => {
                let id = format!("toolu_e2e_{:03}", self.calls.len());
                self.calls.insert(id.clone(), (tool.clone(), input.clone()));
                message(model, json!({"type": "tool_use", "id": id, "name": tool, "input": input}))
            }
            other => {
                if let Some((tool, _)) = other {
                    self.problems.push(format!("the script called {tool}, which Claude Code did not offer: {tools:?}"));
                }
                self.finished = true;
                message(model, json!({"type": "text", "text": "Done."}))
            }
        }
    }

    /// Records the `tool_result` blocks of the last user message that were not recorded yet.
    fn record(&mut self, messages: &Value) {
        let last_user = messages.as_array().into_iter().flatten().rev().find(|m| m["role"] == "user");
        let blocks = last_user.and_then(|m| m["content"].as_array()).into_iter().flatten();
        for block in blocks.filter(|b| b["type"] == "tool_result") {
            let id = block["tool_use_id"].as_str().unwrap_or_default().to_string();
            if self.seen.iter().any(|s| s.tool_use_id == id) {
                continue;
            }
            let Some((tool, input)) = self.calls.get(&id).cloned() else {
                self.problems.push(format!("a tool_result for a call the model never made: {block}"));
                continue;
            };
            let (is_error, content) = (block["is_error"] == true, block["content"].clone());
            self.seen.push(ToolResultSeen { tool_use_id: id, tool, input, is_error, content });
        }
    }
}

/// An answer: a JSON body with its status, or a stream of events.
pub(super) enum Reply {
    Json(u16, Value),
    Events(Vec<Value>),
}

/// Writes a reply and closes the exchange (`Connection: close`).
fn write_reply(out: &mut impl Write, reply: &Reply) -> std::io::Result<()> {
    match reply {
        Reply::Json(status, body) => {
            let (body, reason) = (body.to_string(), if *status == 200 { "OK" } else { "Not Found" });
            let head = format!("HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n");
            write!(out, "{head}Content-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())?;
        }
        Reply::Events(events) => {
            write!(out, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n")?;
            write!(out, "Connection: close\r\n\r\n")?;
            for event in events {
                write!(out, "event: {}\ndata: {event}\n\n", event["type"].as_str().unwrap_or_default())?;
            }
        }
    }
    out.flush()
}

/// The stand-in's answer to one request: `/v1/messages` (streamed or not) plays the model,
/// `count_tokens` estimates, anything else is a harmless 404.
fn answer(conversation: &Mutex<Conversation>, request: &Request) -> Reply {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let mut conversation = conversation.lock().unwrap();
    let mcp_tools = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("mcp__")));
    let line = format!("{} {} stream={} mcp_tools={}", request.method, request.path, body["stream"], mcp_tools.count());
    conversation.requests.push(line);
    match (request.method.as_str(), request.route()) {
        ("POST", "/v1/messages") => {
            let message = conversation.reply_to(&body);
            if body["stream"] == true { Reply::Events(stream_events(&message)) } else { Reply::Json(200, message) }
        }
        ("POST", "/v1/messages/count_tokens") => Reply::Json(200, json!({"input_tokens": request.body.len() / 4})),
        (method, path) => {
            let error = format!("the stand-in for the Messages API does not serve {method} {path}");
            Reply::Json(404, json!({"type": "error", "error": {"type": "not_found_error", "message": error}}))
        }
    }
}

/// Answers one connection: one request, one reply.
fn serve(stream: TcpStream, conversation: &Mutex<Conversation>) {
    let _ = stream.set_read_timeout(Some(REPLY_TIMEOUT));
    let Ok(mut reader) = stream.try_clone().map(BufReader::new) else { return };
    // A connection opened and closed without a request is no error.
    if let Ok(request) = read_request(&mut reader) {
        let _ = write_reply(&mut &stream, &answer(conversation, &request));
    }
}

/// The stand-in for the Messages API: a loopback listener, a thread per connection, the
/// conversation they share; stops on drop.
pub(super) type MessagesApi = StandIn<Conversation>;

/// Starts the stand-in for the Messages API, playing `script`.
pub(super) fn start(script: Script) -> MessagesApi {
    StandIn::start(Conversation::new(script), serve).expect("a loopback port for the Messages API")
}
