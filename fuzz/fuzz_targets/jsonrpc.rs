//! The protocol edge (the `cordon-protocol` crate, `protocol/`): arbitrary bytes as a JSON-RPC line,
//! then the typed MCP request in both eras and the stateless envelope. Nothing
//! panics; every answer the server would write is JSON that echoes the id.

#![no_main]

use cordon_fuzz::framing::HEAD_BYTES;
use cordon_fuzz::protocol::jsonrpc::{self, Id, Message};
use cordon_fuzz::protocol::mcp::Request;
use cordon_fuzz::protocol::modern::{self, Headers};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

/// Checks that `answer` is JSON carrying `id`: exactly for strings and
/// integers; a fractional or huge number comes back as the nearest float
/// (serde_json parses those to within one unit in the last place).
fn assert_echoes(answer: &str, id: Option<&Id>) {
    let value: Value = serde_json::from_str(answer).expect("every answer is JSON");
    match id {
        Some(Id::Number(n)) if !(n.is_i64() || n.is_u64()) => {
            let (sent, echoed) = (n.as_f64().unwrap(), value["id"].as_f64().expect("a number id"));
            assert!(sent.is_finite() && (sent - echoed).abs() <= sent.abs() * 4.0 * f64::EPSILON, "{sent} {echoed}");
        }
        _ => assert_eq!(value["id"], json!(id), "the id is echoed as it came"),
    }
}

fn typed(method: &str, params: Option<&Value>) {
    for modern in [false, true] {
        let _ = Request::parse(method, params.cloned(), modern);
    }
    let headers = Headers {
        protocol_version: Some(method.chars().take(16).collect()),
        method: Some(method.to_string()),
        name: params.and_then(|p| p.get("name")).and_then(Value::as_str).map(str::to_owned),
        ..Headers::default()
    };
    for headers in [None, Some(&headers)] {
        let _ = modern::is_modern(method, params, headers);
        let _ = modern::check(method, params, headers);
    }
}

fuzz_target!(|data: &[u8]| {
    // The id of an over-long line is read from its head alone.
    let salvaged = jsonrpc::salvage_id(&data[..data.len().min(HEAD_BYTES)]);
    if let Some(id) = &salvaged {
        assert_echoes(&jsonrpc::failure(Some(id), &jsonrpc::ErrorObject::new(jsonrpc::Code::InvalidRequest, "x")), Some(id));
    }
    match jsonrpc::parse(data) {
        Ok(Message::Request { id, method, params }) => {
            assert_echoes(&jsonrpc::success(&id, json!({})), Some(&id));
            typed(&method, params.as_ref());
        }
        Ok(Message::Notification { method, params }) => typed(&method, params.as_ref()),
        Ok(Message::Response { id, .. }) => assert!(matches!(id, Id::Number(_) | Id::String(_))),
        Err(rejected) => {
            assert_echoes(&jsonrpc::failure(rejected.id.as_ref(), &rejected.error), rejected.id.as_ref());
        }
    }
});
