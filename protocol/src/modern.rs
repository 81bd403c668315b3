//! The stateless 2026-07-28 era: every request carries its revision and the
//! client's capabilities in `params._meta`, there is no `initialize`, and every
//! result says what it is (`resultType`) and how long it may be cached.
//!
//! A request is checked in the order clients rely on: its `_meta` (-32602),
//! then, over HTTP, the headers that must repeat it (-32020), then whether the
//! revision is served (-32022).

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::body::Body;
use super::jsonrpc::{Code, ErrorObject};
use super::mcp::{LEGACY_VERSIONS, LogLevel, MODERN_VERSION, SUPPORTED_VERSIONS};

/// `_meta` key: the request's protocol revision.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for this request.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the least severe log message this request wants.
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// The `_meta` key of the client's name and version on every request.
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key on results: who answered.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The MCP headers of an HTTP request; stdio and TCP have none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<String>,
    /// `Mcp-Method`.
    pub method: Option<String>,
    /// `Mcp-Name`, as sent (it may be `=?base64?…?=`).
    pub name: Option<String>,
    /// Whether any of them held bytes that are not visible ASCII.
    pub malformed: bool,
    /// `Mcp-Session-Id` (legacy era), for traces.
    pub session: Option<String>,
    /// W3C `traceparent` and `tracestate`, for traces (read only when traces
    /// are on; one that is malformed is ignored, never refused).
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
}

impl Headers {
    /// Whether `MCP-Protocol-Version` names the stateless era (any revision
    /// but the legacy ones, blanks around it ignored), when the header is
    /// there: the one place a request's era is read from HTTP.
    pub fn era_named(&self) -> Option<bool> {
        self.protocol_version.as_deref().map(|v| !LEGACY_VERSIONS.contains(&v.trim()))
    }
}

/// What a stateless request says about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// Log messages wanted for this request, if any.
    pub log_level: Option<LogLevel>,
    /// The client's name, when it gave one (`clientInfo.name`).
    pub client: Option<String>,
}

/// Whether a request belongs to the stateless era: by its HTTP version header
/// when there is one, else by the revision in its `_meta`.
pub fn is_modern(method: &str, params: Option<&Value>, headers: Option<&Headers>) -> bool {
    match headers.and_then(Headers::era_named) {
        Some(modern) => modern,
        None => method != "initialize" && meta(params).is_some_and(|m| m.contains_key(PROTOCOL_VERSION)),
    }
}

fn meta(params: Option<&Value>) -> Option<&Map<String, Value>> {
    params?.get("_meta")?.as_object()
}

/// Checks a stateless request's envelope (and, over HTTP, its headers).
pub fn check(method: &str, params: Option<&Value>, headers: Option<&Headers>) -> Result<Envelope, ErrorObject> {
    let invalid = |what: &str| ErrorObject::new(Code::InvalidParams, format!("Invalid params for {method}: {what}"));
    let meta = meta(params).ok_or_else(|| invalid("`params._meta` is required in protocol revision 2026-07-28"))?;
    let version = meta
        .get(PROTOCOL_VERSION)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(&format!("`_meta` must hold the string `{PROTOCOL_VERSION}`")))?;
    if !meta.get(CLIENT_CAPABILITIES).is_some_and(Value::is_object) {
        return Err(invalid(&format!("`_meta` must hold the object `{CLIENT_CAPABILITIES}`")));
    }
    if let Some(headers) = headers {
        check_headers(method, params, version, headers)?;
    }
    if version != MODERN_VERSION {
        return Err(ErrorObject::new(Code::UnsupportedVersion, format!("Unsupported protocol version: {version}"))
            .with_data(json!({ "supported": SUPPORTED_VERSIONS, "requested": version })));
    }
    let log_level = match meta.get(LOG_LEVEL) {
        None | Some(Value::Null) => None,
        Some(level) => Some(
            serde_json::from_value(level.clone())
                .map_err(|_| invalid(&format!("`{LOG_LEVEL}` must be a log level such as \"info\"")))?,
        ),
    };
    let client = meta.get(CLIENT_INFO).and_then(|info| info.get("name")).and_then(Value::as_str).map(str::to_owned);
    Ok(Envelope { log_level, client })
}

/// The HTTP headers must repeat the body: revision, method, and the name of
/// what `tools/call`, `resources/read` and `prompts/get` address.
fn check_headers(method: &str, params: Option<&Value>, version: &str, headers: &Headers) -> Result<(), ErrorObject> {
    let mismatch = |what: String| ErrorObject::new(Code::HeaderMismatch, format!("Header mismatch: {what}"));
    if headers.malformed {
        return Err(mismatch("an MCP header holds characters that are not visible ASCII".into()));
    }
    match headers.protocol_version.as_deref().map(str::trim) {
        None => return Err(mismatch("the MCP-Protocol-Version header is missing".into())),
        Some(given) if given != version => {
            return Err(mismatch(format!("MCP-Protocol-Version is `{given}` but `_meta` says `{version}`")));
        }
        Some(_) => {}
    }
    match headers.method.as_deref().map(str::trim) {
        None => return Err(mismatch("the Mcp-Method header is missing".into())),
        Some(given) if given != method => {
            return Err(mismatch(format!("Mcp-Method is `{given}` but the request is `{method}`")));
        }
        Some(_) => {}
    }
    let field = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return Ok(()),
    };
    let expected = params.and_then(|p| p.get(field)).and_then(Value::as_str).unwrap_or_default();
    let given =
        headers.name.as_deref().ok_or_else(|| mismatch(format!("the Mcp-Name header is missing for {method}")))?;
    let given = decode_header(given.trim()).ok_or_else(|| mismatch("Mcp-Name holds malformed base64".into()))?;
    if given != expected {
        return Err(mismatch(format!("Mcp-Name is `{given}` but the request's {field} is `{expected}`")));
    }
    Ok(())
}

/// A header value, decoded when it is `=?base64?…?=`; `None` when that is malformed.
fn decode_header(value: &str) -> Option<String> {
    match value.strip_prefix("=?base64?").and_then(|v| v.strip_suffix("?=")) {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(value.to_string()),
    }
}

/// Stamps a result for the stateless era: `resultType`, the server's identity
/// in `_meta`, and, on results a client may cache, caching hints (private, not
/// to be reused: tools can change with the server's configuration).
pub fn stamp(result: &mut Value, cacheable: bool) {
    let Some(obj) = result.as_object_mut() else { return };
    obj.insert("resultType".into(), "complete".into());
    let meta = obj.entry("_meta").or_insert_with(|| json!({}));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(SERVER_INFO.into(), server_info());
    }
    if cacheable {
        obj.insert("ttlMs".into(), 0.into());
        obj.insert("cacheScope".into(), "private".into());
    }
}

/// `stamp` for a result on its way out: a tree is stamped in place; fields
/// are appended to a written one (which has none of them yet).
pub fn stamp_body(result: &mut Body, cacheable: bool) {
    match result {
        Body::Tree(value) => stamp(value, cacheable),
        Body::Written(written) => {
            written.append(SERVER_INFO, &server_info().to_string(), true);
            written.append("resultType", r#""complete""#, false);
            if cacheable {
                written.append("ttlMs", "0", false);
                written.append("cacheScope", r#""private""#, false);
            }
        }
    }
}

/// The server's name and version.
pub fn server_info() -> Value {
    json!({ "name": "cordon", "title": "Cordon", "version": env!("CARGO_PKG_VERSION") })
}

/// The `server/discover` result, before stamping.
pub fn discover_result(capabilities: Value, instructions: &str) -> Value {
    json!({ "supportedVersions": SUPPORTED_VERSIONS, "capabilities": capabilities, "instructions": instructions })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(meta: Value) -> Value {
        json!({ "_meta": meta })
    }

    fn full() -> Value {
        params(json!({ PROTOCOL_VERSION: MODERN_VERSION, CLIENT_CAPABILITIES: {} }))
    }

    fn http(version: &str, method: &str, name: Option<&str>) -> Headers {
        Headers {
            protocol_version: Some(version.into()),
            method: Some(method.into()),
            name: name.map(Into::into),
            ..Headers::default()
        }
    }

    #[test]
    fn the_era_comes_from_the_header_or_else_the_meta() {
        assert!(is_modern("tools/list", Some(&full()), None));
        assert!(!is_modern("tools/list", Some(&json!({"_meta": {"progressToken": 1}})), None));
        assert!(!is_modern("initialize", Some(&full()), None));
        assert!(is_modern("initialize", None, Some(&http("2026-07-28", "initialize", None))));
        assert!(is_modern("tools/list", None, Some(&http("v999.0.0", "tools/list", None))));
        assert!(!is_modern("tools/list", Some(&full()), Some(&http("2025-11-25", "tools/list", None))));
    }

    #[test]
    fn the_envelope_is_checked_meta_then_headers_then_version() {
        let code = |method: &str, p: Value, h: Option<Headers>| check(method, Some(&p), h.as_ref()).unwrap_err().code;
        assert_eq!(code("tools/list", json!({}), None), Code::InvalidParams);
        assert_eq!(code("tools/list", params(json!({ CLIENT_CAPABILITIES: {} })), None), Code::InvalidParams);
        assert_eq!(code("tools/list", params(json!({ PROTOCOL_VERSION: MODERN_VERSION })), None), Code::InvalidParams);
        let v999 = params(json!({ PROTOCOL_VERSION: "v999.0.0", CLIENT_CAPABILITIES: {} }));
        // The header is compared with `_meta` before the revision is judged.
        assert_eq!(
            code("tools/list", v999.clone(), Some(http(MODERN_VERSION, "tools/list", None))),
            Code::HeaderMismatch
        );
        assert_eq!(
            code("tools/list", v999.clone(), Some(http("v999.0.0", "tools/list", None))),
            Code::UnsupportedVersion
        );
        let e = check("tools/list", Some(&v999), None).unwrap_err();
        assert_eq!(e.data.unwrap()["requested"], "v999.0.0");
        assert_eq!(code("tools/list", full(), Some(http(MODERN_VERSION, "prompts/list", None))), Code::HeaderMismatch);
        assert_eq!(code("tools/list", full(), Some(http(MODERN_VERSION, "TOOLS/LIST", None))), Code::HeaderMismatch);
        let with_level =
            params(json!({ PROTOCOL_VERSION: MODERN_VERSION, CLIENT_CAPABILITIES: {}, LOG_LEVEL: "loud" }));
        assert_eq!(code("tools/list", with_level, None), Code::InvalidParams);
    }

    #[test]
    fn mcp_name_must_match_and_may_be_base64() {
        let mut call = full();
        call["name"] = "read".into();
        let ok = |name: &str| check("tools/call", Some(&call), Some(&http(MODERN_VERSION, "tools/call", Some(name))));
        assert!(ok("read").is_ok());
        assert!(ok("  read  ").is_ok());
        assert!(ok("=?base64?cmVhZA==?=").is_ok());
        assert_eq!(ok("grep").unwrap_err().code, Code::HeaderMismatch);
        assert_eq!(ok("=?base64?cmVhZA?=").unwrap_err().code, Code::HeaderMismatch);
        let missing = check("tools/call", Some(&call), Some(&http(MODERN_VERSION, "tools/call", None)));
        assert_eq!(missing.unwrap_err().code, Code::HeaderMismatch);
    }

    #[test]
    fn results_are_stamped_with_their_type_identity_and_cache_hints() {
        let mut listed = json!({ "tools": [] });
        stamp(&mut listed, true);
        assert_eq!(listed["resultType"], "complete");
        assert_eq!((listed["ttlMs"].clone(), listed["cacheScope"].clone()), (json!(0), json!("private")));
        assert_eq!(listed["_meta"][SERVER_INFO]["name"], "cordon");
        let mut called = json!({ "content": [] });
        stamp(&mut called, false);
        assert!(called.get("ttlMs").is_none() && called["resultType"] == "complete");
    }

    #[test]
    fn a_written_result_is_stamped_as_its_tree_would_be() {
        use crate::body::Written;
        for cacheable in [false, true] {
            let tree = json!({ "content": [], "_meta": { "cordon/page": { "index": 0 } } });
            let text = tree.to_string();
            let mut written = Body::Written(Written::new(text.clone(), Some(text.len() - 2)));
            let mut stamped = tree.clone();
            stamp(&mut stamped, cacheable);
            stamp_body(&mut written, cacheable);
            assert_eq!(written.into_json(), stamped.to_string(), "the same fields in the same order");
        }
    }
}
