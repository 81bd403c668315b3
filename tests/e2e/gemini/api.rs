//! A stand-in for the Gemini API (`generativelanguage.googleapis.com`, `v1beta`) on loopback: it
//! plays the model from a script and records every `functionResponse` Gemini CLI sends back, with
//! the parts it sends beside it (an image), exactly as the model would read them.

use std::collections::HashMap;
use std::io::BufReader;
use std::net::TcpStream;
use std::sync::Mutex;

use cordon_bench::standin::{StandIn, read_request, write_reply};
use serde_json::{Value, json};

use crate::support::REPLY_TIMEOUT;

/// Main-loop turns after which the stand-in stops the conversation (a runaway script).
const MAX_TURNS: usize = 60;

/// What Gemini CLI puts before the name of a tool of the MCP server named `cordon`.
pub(super) const PREFIX: &str = "mcp_cordon_";

/// The text of the model's answer to a side request: a JSON object that every one of Gemini CLI's
/// side requests parses (each reads its own fields): the router's classifier
/// (`complexity_reasoning`, `complexity_score`: a simple task, so the main loop runs on a flash
/// model), the next-speaker check and the loop detector.
const SIDE_ANSWER: &str = r#"{"complexity_reasoning":"a simple task","complexity_score":10,"reasoning":"done","next_speaker":"user","unproductive_state_analysis":"none","unproductive_state_confidence":0}"#;

/// The model's next move: call one of Cordon's tools (`read`, `grep`, …) with these arguments.
pub(super) type Move = (&'static str, Value);

/// One tool result as Gemini CLI forwarded it to the model, with the call it answers.
#[derive(Clone, Debug)]
pub(super) struct Seen {
    pub(super) call_id: String,
    /// The Cordon tool the model called (`read`, …), without Gemini CLI's prefix.
    pub(super) tool: String,
    pub(super) arguments: Value,
    /// `functionResponse.response`: `{"output": "…"}` for a result Gemini CLI took.
    pub(super) response: Value,
    /// The parts the model got with it: the `functionResponse`'s own `parts` and the parts after
    /// it in the same turn (an image's `inlineData`).
    pub(super) parts: Vec<Value>,
}

/// The model's next move given every result seen so far, or `None` for its final answer.
pub(super) type Script = Box<dyn FnMut(&[Seen]) -> Option<Move> + Send>;

/// The model's side of one conversation: the script, what Gemini CLI sent back, and anything the
/// stand-in could not make sense of.
pub(super) struct Conversation {
    script: Script,
    /// The calls the model made, by id: the tool and its arguments.
    calls: HashMap<String, (String, Value)>,
    pub(super) seen: Vec<Seen>,
    /// One line per HTTP request, for failure messages.
    pub(super) requests: Vec<String>,
    pub(super) problems: Vec<String>,
    pub(super) finished: bool,
    /// The names of the functions declared in the first main-loop request.
    pub(super) first_tools: Vec<String>,
    /// The model each main-loop request named (the path's `models/{model}`).
    pub(super) main_models: Vec<String>,
}

/// The names of the functions a request declares.
fn declared(request: &Value) -> Vec<String> {
    let tools = request["tools"].as_array().into_iter().flatten();
    let declarations = tools.flat_map(|t| t["functionDeclarations"].as_array().cloned().unwrap_or_default());
    declarations.filter_map(|d| d["name"].as_str().map(str::to_string)).collect()
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
            main_models: Vec::new(),
        }
    }

    /// The part that answers one `generateContent` request: `SIDE_ANSWER` for a side request (no
    /// Cordon tool declared), else the script's next move or, when it is done, a final text.
    fn reply_to(&mut self, model: &str, request: &Value) -> Value {
        let tools = declared(request);
        if !tools.iter().any(|t| t.starts_with(PREFIX)) {
            return json!({"text": SIDE_ANSWER});
        }
        if self.first_tools.is_empty() {
            self.first_tools = tools;
        }
        self.main_models.push(model.to_string());
        self.record(&request["contents"]);
        if self.finished {
            self.problems.push("a main-loop request after the final answer".into());
        }
        let next = if self.calls.len() >= MAX_TURNS {
            self.problems.push(format!("the script was still calling tools after {MAX_TURNS} turns"));
            None
        } else {
            (self.script)(&self.seen)
        };
        let Some((tool, arguments)) = next else {
            self.finished = true;
            return json!({"text": "Done."});
        };
        let id = format!("call_e2e_{:03}", self.calls.len());
        self.calls.insert(id.clone(), (tool.to_string(), arguments.clone()));
        json!({"functionCall": {"id": id, "name": format!("{PREFIX}{tool}"), "args": arguments}})
    }

    /// Records the function responses in a request's `contents` that were not recorded yet, in
    /// order, each with the parts that came with it.
    fn record(&mut self, contents: &Value) {
        for content in contents.as_array().into_iter().flatten().filter(|c| c["role"] == "user") {
            let parts = content["parts"].as_array().cloned().unwrap_or_default();
            let Some(at) = parts.iter().position(|p| p.get("functionResponse").is_some()) else { continue };
            let response = &parts[at]["functionResponse"];
            let id = response["id"].as_str().unwrap_or_default();
            if self.seen.iter().any(|s| s.call_id == id) {
                continue;
            }
            let Some((tool, arguments)) = self.calls.get(id).cloned() else {
                self.problems.push(format!("a result for a call the model never made: {content}"));
                continue;
            };
            if parts.iter().filter(|p| p.get("functionResponse").is_some()).count() > 1 {
                self.problems.push(format!("several results in one turn: {content}"));
            }
            let own = response["parts"].as_array().cloned().unwrap_or_default();
            let beside = parts[at + 1..].iter().cloned();
            self.seen.push(Seen {
                call_id: id.to_string(),
                tool,
                arguments,
                response: response["response"].clone(),
                parts: own.into_iter().chain(beside).collect(),
            });
        }
    }
}

/// A `GenerateContentResponse` of one part.
fn response_of(part: Value) -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
        "modelVersion": "cordon-e2e",
    })
}

/// The model and the method of a `v1beta` path: `/v1beta/models/{model}:{method}`.
fn model_method(path: &str) -> Option<(&str, &str)> {
    path.strip_prefix("/v1beta/models/")?.split_once(':')
}

/// Answers one connection: `generateContent` and `streamGenerateContent` play the model,
/// `countTokens` counts one token; anything else is a 404.
fn serve(stream: TcpStream, conversation: &Mutex<Conversation>) {
    let _ = stream.set_read_timeout(Some(REPLY_TIMEOUT));
    let Ok(mut reader) = stream.try_clone().map(BufReader::new) else { return };
    // A connection opened and closed without a request is no error.
    let Ok(request) = read_request(&mut reader) else { return };
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let mut conversation = conversation.lock().unwrap();
    let tools = declared(&body).len();
    conversation.requests.push(format!("{} {} tools={tools}", request.method, request.path));
    let post = request.method == "POST";
    let _ = match model_method(request.route()).filter(|_| post) {
        Some((model, method @ ("generateContent" | "streamGenerateContent"))) => {
            let streamed = method == "streamGenerateContent";
            if streamed && !request.path.contains("alt=sse") {
                conversation.problems.push(format!("a stream not asked for as server-sent events: {}", request.path));
            }
            let reply = response_of(conversation.reply_to(model, &body));
            drop(conversation);
            if streamed {
                write_reply(&mut &stream, "200 OK", "text/event-stream", &format!("data: {reply}\r\n\r\n"))
            } else {
                write_reply(&mut &stream, "200 OK", "application/json", &reply.to_string())
            }
        }
        Some((_, "countTokens")) => {
            drop(conversation);
            write_reply(&mut &stream, "200 OK", "application/json", r#"{"totalTokens":1}"#)
        }
        _ => {
            drop(conversation);
            let message = format!("the stand-in does not serve {}", request.path);
            let error = json!({"error": {"code": 404, "message": message, "status": "NOT_FOUND"}});
            write_reply(&mut &stream, "404 Not Found", "application/json", &error.to_string())
        }
    };
}

/// The stand-in for the Gemini API: a loopback listener, a thread per connection, the
/// conversation they share; stops on drop.
pub(super) type GeminiApi = StandIn<Conversation>;

/// Starts the stand-in for the Gemini API, playing `script`.
pub(super) fn start(script: Script) -> GeminiApi {
    StandIn::start(Conversation::new(script), serve).expect("a loopback port for the Gemini API")
}
