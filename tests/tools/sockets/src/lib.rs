//! Cordon's `sockets` test tool: a tool that opens a TCP connection with the
//! standard library (`std::net::TcpStream::connect`), which on
//! `wasm32-wasip2` goes through `wasi:sockets`, so the component imports
//! `wasi:sockets/tcp` and friends. The end-to-end suite checks that the host
//! refuses such a component, or, if it is loaded, that its connection fails:
//! a tool reaches the network only through `wasi:http`, within its grants.
//!
//! `open` tries the connection to [`TARGET`] and returns what happened as one
//! item, `{"target", "connected", "error", "kind"}`, which `info` repeats. The
//! description of the outcome is plain Rust, unit-tested natively;
//! `component` wires it to the WIT exports when built for `wasm32-wasip2`.

use serde_json::json;

#[cfg(target_arch = "wasm32")]
mod component;

/// The tool's name as clients call it.
pub const NAME: &str = "sockets";
/// The tool's version, bound into every cursor.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The tool's title.
pub const TITLE: &str = "Sockets test tool";
/// What the tool does, for a model choosing a tool.
pub const DESCRIPTION: &str = "Test tool: tries to open a TCP connection to 127.0.0.1:9 itself (wasi:sockets) and says what happened. Never call it.";
/// Where the tool tries to connect: the discard port on loopback, so nothing
/// is sent anywhere even where the connection is allowed.
pub const TARGET: &str = "127.0.0.1:9";

/// Tries the connection and describes what happened.
pub fn attempt() -> serde_json::Value {
    outcome(std::net::TcpStream::connect(TARGET).map(drop))
}

/// What a connection attempt came to, as the tool's item and `info`:
/// `{"target", "connected", "error": message or null, "kind": the
/// `io::ErrorKind` (Debug) or null}`.
pub fn outcome(result: std::io::Result<()>) -> serde_json::Value {
    match result {
        Ok(()) => json!({ "target": TARGET, "connected": true, "error": null, "kind": null }),
        Err(e) => json!({
            "target": TARGET,
            "connected": false,
            "error": e.to_string(),
            "kind": format!("{:?}", e.kind()),
        }),
    }
}

/// The piece of `item` (a JSON text) from byte `from` that fits `budget`
/// bytes (at least 4), cut on a character boundary, and the byte just after
/// it: an item larger than the host's budget goes as `continued` pieces.
pub fn piece(item: &str, from: usize, budget: usize) -> (&str, usize) {
    let from = from.min(item.len());
    let mut end = (from + budget.max(4)).min(item.len());
    while !item.is_char_boundary(end) {
        end -= 1;
    }
    (&item[from..end], end)
}

/// Parses a resume position: the byte offset into the item; anything else
/// is an error sentence.
pub fn position(resume: Option<&str>) -> Result<usize, String> {
    match resume {
        None => Ok(0),
        Some(text) => text.parse().map_err(|_| format!("malformed resume position `{text}`")),
    }
}

/// The JSON Schema of the arguments: none.
pub fn input_schema() -> serde_json::Value {
    json!({ "type": "object", "properties": {}, "additionalProperties": false })
}

/// The JSON Schema of `info`: the outcome.
pub fn output_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "target": { "type": "string" },
            "connected": { "type": "boolean" },
            "error": { "type": ["string", "null"] },
            "kind": { "type": ["string", "null"] }
        },
        "required": ["target", "connected", "error", "kind"]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Error, ErrorKind};

    #[test]
    fn a_refused_connection_says_why() {
        let said = outcome(Err(Error::new(ErrorKind::PermissionDenied, "access denied")));
        assert_eq!(
            said,
            json!({ "target": "127.0.0.1:9", "connected": false, "error": "access denied", "kind": "PermissionDenied" })
        );
    }

    #[test]
    fn the_item_is_cut_into_pieces_within_the_budget_on_character_boundaries() {
        let item = r#"{"error":"é€"}"#;
        let mut pieces = Vec::new();
        let mut at = 0;
        while at < item.len() {
            let (text, end) = piece(item, at, 4);
            assert!(!text.is_empty() && text.len() <= 4, "{text:?}");
            pieces.push(text);
            at = end;
        }
        assert_eq!(pieces.concat(), item);
        assert_eq!(piece(item, item.len(), 4), ("", item.len()));
        assert_eq!(piece(item, 0, 1 << 20), (item, item.len()));
    }

    #[test]
    fn positions_are_byte_offsets() {
        assert_eq!(position(None), Ok(0));
        assert_eq!(position(Some("17")), Ok(17));
        assert!(position(Some("x")).unwrap_err().contains("malformed"));
    }

    #[test]
    fn a_made_connection_says_so() {
        assert_eq!(outcome(Ok(())), json!({ "target": TARGET, "connected": true, "error": null, "kind": null }));
    }

    #[test]
    fn the_outcome_has_the_fields_the_output_schema_requires() {
        let said = outcome(Err(Error::from(ErrorKind::ConnectionRefused)));
        for key in output_schema()["required"].as_array().unwrap() {
            assert!(said.get(key.as_str().unwrap()).is_some(), "{key}");
        }
        assert_eq!(said["kind"], "ConnectionRefused");
    }
}
