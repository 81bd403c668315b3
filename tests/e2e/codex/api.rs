//! A stand-in for the OpenAI Responses API on loopback: it plays the model from a script and
//! records every tool output Codex sends back (`function_call_output`, `tool_search_output`).

use std::collections::HashMap;
use std::io::BufReader;
use std::net::TcpStream;
use std::sync::Mutex;

use cordon_bench::claude::sse;
use cordon_bench::standin::{StandIn, read_request, write_reply};
use serde_json::{Value, json};

use crate::support::REPLY_TIMEOUT;

/// Main-loop turns after which the stand-in stops the conversation (a runaway script).
const MAX_TURNS: usize = 60;

/// The namespace Codex gives the tools of the MCP server named `cordon`.
pub(super) const NAMESPACE: &str = "mcp__cordon";

/// The name under which a `tool_search` is recorded among the results.
pub(super) const TOOL_SEARCH: &str = "tool_search";

/// The model's next move.
#[derive(Clone, Debug)]
pub(super) enum Move {
    /// Call one of Cordon's tools (`read`, `grep`, …) with these arguments.
    Call(&'static str, Value),
    /// Search the deferred tools (Codex's client-side `tool_search`).
    Search(&'static str),
}

/// One tool output as Codex forwarded it to the model, with the call it answers.
#[derive(Clone, Debug)]
pub(super) struct Seen {
    pub(super) call_id: String,
    /// The tool the model called (`read`, …), or `tool_search`.
    pub(super) tool: String,
    /// The call's arguments (a search's `{"query": …}`).
    pub(super) arguments: Value,
    /// `function_call_output.output` (a string, or a list of `input_text`/`input_image` items), or
    /// a `tool_search_output`'s `tools`.
    pub(super) output: Value,
}

/// The model's next move given every output seen so far, or `None` for its final answer.
pub(super) type Script = Box<dyn FnMut(&[Seen]) -> Option<Move> + Send>;

/// The model's side of one conversation: the script, what Codex sent back, and anything the
/// stand-in could not make sense of.
pub(super) struct Conversation {
    script: Script,
    /// The calls the model made, by `call_id`: the tool and its arguments.
    calls: HashMap<String, (String, Value)>,
    pub(super) seen: Vec<Seen>,
    /// One line per HTTP request, for failure messages.
    pub(super) requests: Vec<String>,
    pub(super) problems: Vec<String>,
    pub(super) finished: bool,
    /// The `tools` of the first request: every definition the model is sent up front.
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

    /// The output item that answers one `/v1/responses` request: a short text for a side request
    /// (no `tools`), else the script's next move or, when it is done, a final message.
    fn reply_to(&mut self, request: &Value) -> Value {
        let Some(tools) = request["tools"].as_array().filter(|t| !t.is_empty()) else {
            return assistant_message("Cordon");
        };
        if self.first_tools.is_empty() {
            self.first_tools = tools.clone();
        }
        self.record(&request["input"]);
        if self.finished {
            self.problems.push("a main-loop request after the final answer".into());
        }
        let next = if self.calls.len() >= MAX_TURNS {
            self.problems.push(format!("the script was still calling tools after {MAX_TURNS} turns"));
            None
        } else {
            (self.script)(&self.seen)
        };
        let call_id = format!("call_e2e_{:03}", self.calls.len());
        match next {
            Some(Move::Call(tool, arguments)) => {
                self.calls.insert(call_id.clone(), (tool.to_string(), arguments.clone()));
                json!({
                    "type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id,
                    "name": tool, "namespace": NAMESPACE, "arguments": arguments.to_string(),
                })
            }
            Some(Move::Search(query)) => {
                let arguments = json!({"query": query});
                self.calls.insert(call_id.clone(), (TOOL_SEARCH.to_string(), arguments.clone()));
                json!({
                    "type": "tool_search_call", "id": format!("ts_{call_id}"), "call_id": call_id,
                    "status": "completed", "execution": "client", "arguments": arguments,
                })
            }
            None => {
                self.finished = true;
                assistant_message("Done.")
            }
        }
    }

    /// Records the outputs in a request's `input` that were not recorded yet, in order.
    fn record(&mut self, input: &Value) {
        let outputs = input.as_array().into_iter().flatten().filter(|item| {
            let kind = item["type"].as_str().unwrap_or_default();
            kind == "function_call_output" || kind == "tool_search_output"
        });
        for item in outputs {
            let id = item["call_id"].as_str().unwrap_or_default();
            if self.seen.iter().any(|s| s.call_id == id) {
                continue;
            }
            let Some((tool, arguments)) = self.calls.get(id).cloned() else {
                self.problems.push(format!("an output for a call the model never made: {item}"));
                continue;
            };
            let output = if tool == TOOL_SEARCH { item["tools"].clone() } else { item["output"].clone() };
            self.seen.push(Seen { call_id: id.to_string(), tool, arguments, output });
        }
    }
}

/// An assistant message of one text.
fn assistant_message(text: &str) -> Value {
    json!({
        "type": "message", "id": "msg_e2e", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    })
}

/// A streamed response of one output item, as the Responses API sends it: Codex takes a stream
/// without `response.completed` for an error.
fn response_events(item: &Value) -> Vec<Value> {
    let usage = json!({
        "input_tokens": 1, "input_tokens_details": null, "output_tokens": 1,
        "output_tokens_details": null, "total_tokens": 2,
    });
    vec![
        json!({"type": "response.created", "response": {"id": "resp_e2e"}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        json!({"type": "response.completed", "response": {"id": "resp_e2e", "usage": usage}}),
    ]
}

/// Answers one connection: `POST /v1/responses` plays the model; anything else is a 404.
fn serve(stream: TcpStream, conversation: &Mutex<Conversation>) {
    let _ = stream.set_read_timeout(Some(REPLY_TIMEOUT));
    let Ok(mut reader) = stream.try_clone().map(BufReader::new) else { return };
    // A connection opened and closed without a request is no error.
    let Ok(request) = read_request(&mut reader) else { return };
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let mut conversation = conversation.lock().unwrap();
    let tools = body["tools"].as_array().map_or(0, Vec::len);
    let line = format!("{} {} stream={} tools={tools}", request.method, request.path, body["stream"]);
    conversation.requests.push(line);
    let path = request.route();
    let _ = if request.method == "POST" && path == "/v1/responses" {
        if body["stream"] != true {
            conversation.problems.push(format!("a request not streamed: stream={}", body["stream"]));
        }
        let item = conversation.reply_to(&body);
        drop(conversation);
        write_reply(&mut &stream, "200 OK", "text/event-stream", &sse(&response_events(&item)))
    } else {
        drop(conversation);
        let error = json!({"error": {"message": format!("the stand-in does not serve {path}"), "type": "not_found"}});
        write_reply(&mut &stream, "404 Not Found", "application/json", &error.to_string())
    };
}

/// The stand-in for the Responses API: a loopback listener, a thread per connection, the
/// conversation they share; stops on drop.
pub(super) type ResponsesApi = StandIn<Conversation>;

/// Starts the stand-in for the Responses API, playing `script`.
pub(super) fn start(script: Script) -> ResponsesApi {
    StandIn::start(Conversation::new(script), serve).expect("a loopback port for the Responses API")
}
