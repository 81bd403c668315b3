//! A stand-in for the Anthropic Messages API on loopback that plays the model:
//! each turn of Claude Code's main loop (a request that carries `tools`) gets
//! the script's next `tool_use`, or a short closing text when the script is
//! done; every `tool_result` the next request carries is recorded exactly as
//! Claude Code forwards it. Requests without tools (titles and the like) get a
//! short text. One HTTP request per connection, `Connection: close`.

use crate::claude::{message, sse, stream_events};
use crate::standin::{StandIn, read_request, write_reply};
use std::collections::{HashMap, HashSet};
use std::io::BufReader;
use std::net::TcpStream;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};

/// Main-loop turns after which the stand-in ends the conversation (a runaway script).
const MAX_TURNS: usize = 40;

/// One `tool_result` as Claude Code forwarded it, with the call it answers.
#[derive(Clone, Debug)]
pub struct Seen {
    /// The tool the model called (`mcp__cordon__read`, `Read`, …).
    pub tool: String,
    pub input: Value,
    pub is_error: bool,
    /// The block's `content` as sent: a string, or an array of content blocks.
    pub content: Value,
}

/// The model's next move, given the results so far and the tools the request offers: a call
/// (tool name, input), or `None` to end the turn with a short text.
pub type Script = Box<dyn FnMut(&[Seen], &[Value]) -> Option<(String, Value)> + Send>;

/// What the stand-in saw of one conversation.
#[derive(Default)]
pub struct Transcript {
    /// The `tools` of the first main-loop request, as sent.
    pub first_tools: Vec<Value>,
    pub seen: Vec<Seen>,
    /// Whether the script ended the conversation with its closing text.
    pub finished: bool,
    /// What went wrong on the model's side (a call not offered, a runaway script, …).
    pub problems: Vec<String>,
    /// One line per HTTP request, for error messages.
    pub requests: Vec<String>,
}

struct State {
    script: Script,
    /// The calls the model made, by `tool_use` id.
    calls: HashMap<String, (String, Value)>,
    /// The ids whose results are recorded.
    recorded: HashSet<String>,
    transcript: Transcript,
}

impl State {
    /// The model's answer to one `/v1/messages` body.
    fn reply_to(&mut self, request: &Value) -> Value {
        let model = request["model"].as_str().unwrap_or("claude");
        let tools = request["tools"].as_array().cloned().unwrap_or_default();
        if tools.is_empty() {
            return message(model, json!({"type": "text", "text": "Benchmark"}));
        }
        if self.transcript.first_tools.is_empty() {
            self.transcript.first_tools = tools.clone();
        }
        self.record(&request["messages"]);
        if self.transcript.finished {
            self.transcript.problems.push("a main-loop request after the closing text".into());
        }
        let next = if self.calls.len() >= MAX_TURNS {
            self.transcript.problems.push(format!("the script was still calling tools after {MAX_TURNS} turns"));
            None
        } else {
            (self.script)(&self.transcript.seen, &tools)
        };
        let offered = |name: &str| tools.iter().any(|t| t["name"] == name);
        match next {
            Some((tool, input)) if offered(&tool) => {
                let id = format!("toolu_bench_{:03}", self.calls.len());
                self.calls.insert(id.clone(), (tool.clone(), input.clone()));
                message(model, json!({"type": "tool_use", "id": id, "name": tool, "input": input}))
            }
            other => {
                if let Some((tool, _)) = other {
                    self.transcript.problems.push(format!("the script called {tool}, which Claude Code did not offer"));
                }
                self.transcript.finished = true;
                message(model, json!({"type": "text", "text": "Done."}))
            }
        }
    }

    /// Records the `tool_result` blocks of the last user message not recorded yet.
    fn record(&mut self, messages: &Value) {
        let last_user = messages.as_array().into_iter().flatten().rev().find(|m| m["role"] == "user");
        let blocks = last_user.and_then(|m| m["content"].as_array()).into_iter().flatten();
        for block in blocks.filter(|b| b["type"] == "tool_result") {
            let id = block["tool_use_id"].as_str().unwrap_or_default();
            // Each request repeats the whole conversation: a result is recorded once.
            let Some((tool, input)) = self.calls.get(id).filter(|_| self.recorded.insert(id.to_string())) else {
                continue;
            };
            let (is_error, content) = (block["is_error"] == true, block["content"].clone());
            self.transcript.seen.push(Seen { tool: tool.clone(), input: input.clone(), is_error, content });
        }
    }
}

/// Answers one connection: one request, one reply, then close.
fn serve(stream: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let asked = read_request(&mut reader)?;
    let (method, path, body) = (asked.method.as_str(), asked.route(), &asked.body);
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let (status, kind, text) = {
        let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
        state.transcript.requests.push(format!("{method} {path} stream={}", request["stream"]));
        match (method, path) {
            ("POST", "/v1/messages") => {
                let message = state.reply_to(&request);
                if request["stream"] == true {
                    ("200 OK", "text/event-stream", sse(&stream_events(&message)))
                } else {
                    ("200 OK", "application/json", message.to_string())
                }
            }
            ("POST", "/v1/messages/count_tokens") => {
                ("200 OK", "application/json", json!({"input_tokens": body.len() / 4}).to_string())
            }
            _ => {
                let error = json!({"type": "error", "error": {"type": "not_found_error", "message": "not served"}});
                ("404 Not Found", "application/json", error.to_string())
            }
        }
    };
    write_reply(&mut &stream, status, kind, &text)
}

/// The stand-in: a loopback listener and a thread per connection; stops when dropped.
pub struct MessagesApi(StandIn<State>);

impl MessagesApi {
    pub fn start(script: Script) -> std::io::Result<MessagesApi> {
        let state =
            State { script, calls: HashMap::new(), recorded: HashSet::new(), transcript: Transcript::default() };
        // A connection that fails mid-answer is Claude Code's to retry.
        let serve_quietly = |stream, state: &Mutex<State>| {
            let _ = serve(stream, state);
        };
        Ok(MessagesApi(StandIn::start(state, serve_quietly)?))
    }

    /// The base URL for `ANTHROPIC_BASE_URL`.
    pub fn url(&self) -> String {
        self.0.url()
    }

    /// What the stand-in saw so far (taken: the stand-in keeps an empty transcript).
    pub fn take(&self) -> Transcript {
        std::mem::take(&mut self.0.state().transcript)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plays_one_call_then_records_its_result_and_closes() {
        let script: Script = Box::new(|seen, _| seen.is_empty().then(|| ("Read".into(), json!({"file_path": "/x"}))));
        let mut state =
            State { script, calls: HashMap::new(), recorded: HashSet::new(), transcript: Transcript::default() };
        let tools = json!([{"name": "Read", "description": "d", "input_schema": {}}]);
        let first = state.reply_to(&json!({"tools": tools, "messages": [{"role": "user", "content": "go"}]}));
        assert_eq!(first["content"][0]["name"], "Read");
        let id = first["content"][0]["id"].clone();
        let result = json!([{"type": "tool_result", "tool_use_id": id, "content": "1\tline"}]);
        let messages = json!([{"role": "user", "content": "go"}, {"role": "user", "content": result}]);
        let last = state.reply_to(&json!({"tools": tools, "messages": messages}));
        assert_eq!(last["stop_reason"], "end_turn");
        assert_eq!(state.transcript.seen.len(), 1);
        assert_eq!(state.transcript.seen[0].content, "1\tline");
        assert!(state.transcript.finished && state.transcript.problems.is_empty());
        assert!(sse(&stream_events(&first)).contains("input_json_delta"));
    }
}
