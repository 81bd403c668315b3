//! MCP methods: typed requests in.
//!
//! Two eras. The legacy one: `initialize` negotiates a revision (2025-11-25, or
//! 2025-06-18, 2025-03-26, 2024-11-05 when a client asks) for the session.
//! The stateless 2026-07-28 one: every request carries its revision and the
//! client's capabilities in `params._meta` (see `modern`). Revisions before
//! 2025-06-18 know neither `outputSchema` nor `structuredContent` nor tool
//! titles; those are left out for them.

use serde::Deserialize;
use serde_json::{Value, json};

use super::jsonrpc::{Code, ErrorObject};

/// The legacy revisions `initialize` negotiates, newest first.
pub const LEGACY_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The stateless revision.
pub const MODERN_VERSION: &str = "2026-07-28";

/// Every revision served, newest first (what `server/discover` lists).
pub const SUPPORTED_VERSIONS: [&str; 5] = [MODERN_VERSION, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// A protocol revision in use for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(&'static str);

impl Version {
    /// The newest legacy revision.
    pub const LATEST: Version = Version(LEGACY_VERSIONS[0]);
    /// The stateless revision.
    pub const MODERN: Version = Version(MODERN_VERSION);

    /// The client's legacy revision when supported, else the latest (the client
    /// then decides whether it can go on, as the specification says).
    pub fn negotiate(requested: &str) -> Version {
        LEGACY_VERSIONS.iter().find(|v| **v == requested).map_or(Version::LATEST, |v| Version(v))
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// Whether the revision has `structuredContent`, `outputSchema` and titles.
    pub fn structured(self) -> bool {
        self.0 >= "2025-06-18"
    }

    /// Whether this is the stateless era (results carry `resultType`).
    pub fn is_modern(self) -> bool {
        self.0 == MODERN_VERSION
    }
}

/// A `tools/call` as the client sent it, checked: the tool's name, its
/// arguments (an object) and, when the client wants progress, its token.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub arguments: Value,
    /// `params._meta.progressToken`.
    pub progress_token: Option<Value>,
}

/// A request the server understands, with its parameters checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// `roots`: the client can list its roots (`capabilities.roots`).
    Initialize {
        protocol_version: String,
        client: String,
        roots: bool,
    },
    Discover,
    Ping,
    ListTools,
    CallTool(ToolCall),
    SetLogLevel {
        level: LogLevel,
    },
    /// The files under the roots as resources, a page from `cursor` on.
    ListResources {
        cursor: Option<String>,
    },
    ListResourceTemplates,
    /// Prompts: the server has none, and says so.
    ListPrompts,
    ReadResource {
        uri: String,
    },
    GetPrompt {
        name: String,
    },
    /// Legacy era: tell the session when the resource at `uri` changes.
    Subscribe {
        uri: String,
    },
    Unsubscribe {
        uri: String,
    },
    /// Stateless era: a long-lived request whose response stream carries the
    /// notifications the filter asks for.
    Listen(Filter),
    /// The Skills extension's directory read (SEP-2640): the direct children
    /// of the directory resource `uri`, a page from `cursor` on.
    ReadDirectory {
        uri: String,
        cursor: Option<String>,
    },
    /// The Skills extension's catalog and its look-up by URI.
    ListSkills,
    GetSkill {
        uri: String,
    },
}

/// What a `subscriptions/listen` request opts in to (`SubscriptionFilter`):
/// each kind of notification only when asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Filter {
    #[serde(default)]
    pub tools_list_changed: bool,
    #[serde(default)]
    pub prompts_list_changed: bool,
    #[serde(default)]
    pub resources_list_changed: bool,
    /// `notifications/resources/updated` for these URIs.
    #[serde(default)]
    pub resource_subscriptions: Vec<String>,
}

impl Filter {
    /// The filter as the wire has it, the kinds not asked for left out.
    pub fn to_json(&self) -> Value {
        let mut out = serde_json::Map::new();
        for (key, on) in [
            ("toolsListChanged", self.tools_list_changed),
            ("promptsListChanged", self.prompts_list_changed),
            ("resourcesListChanged", self.resources_list_changed),
        ] {
            if on {
                out.insert(key.into(), true.into());
            }
        }
        if !self.resource_subscriptions.is_empty() {
            out.insert("resourceSubscriptions".into(), self.resource_subscriptions.clone().into());
        }
        Value::Object(out)
    }
}

/// The severity of a log message (RFC 5424 levels, least severe first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParams {
    protocol_version: String,
    #[serde(default)]
    client_info: Option<ClientInfo>,
    #[serde(default)]
    capabilities: Option<Value>,
}

#[derive(Deserialize)]
struct ClientInfo {
    name: String,
    #[serde(default)]
    version: String,
}

#[derive(Deserialize)]
struct CallToolParams {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default, rename = "_meta")]
    meta: Option<RequestMeta>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequestMeta {
    /// A string or a number; anything else is ignored.
    #[serde(default)]
    progress_token: Option<Value>,
}

#[derive(Deserialize)]
struct SetLevelParams {
    level: LogLevel,
}

#[derive(Deserialize)]
struct UriParams {
    uri: String,
}

#[derive(Deserialize)]
struct NameParams {
    name: String,
}

#[derive(Deserialize)]
struct CursorParams {
    #[serde(default)]
    cursor: Option<String>,
}

#[derive(Deserialize)]
struct DirectoryParams {
    uri: String,
    #[serde(default)]
    cursor: Option<String>,
}

#[derive(Deserialize)]
struct ListenParams {
    notifications: Filter,
}

/// Methods the stateless era removed: not found there.
const LEGACY_ONLY: [&str; 5] =
    ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"];

impl Request {
    /// Types a request of the legacy era (`modern` false) or the stateless one;
    /// an unknown method (or one the era lacks) is -32601, bad params -32602.
    pub fn parse(method: &str, params: Option<Value>, modern: bool) -> Result<Request, ErrorObject> {
        let params = params.unwrap_or_else(|| json!({}));
        let bad =
            |e: serde_json::Error| ErrorObject::new(Code::InvalidParams, format!("Invalid params for {method}: {e}"));
        let not_found = || ErrorObject::new(Code::MethodNotFound, format!("Method not found: {method}"));
        if (modern && LEGACY_ONLY.contains(&method)) || (!modern && method == "server/discover") {
            return Err(not_found());
        }
        match method {
            "initialize" => {
                let p: InitializeParams = serde_json::from_value(params).map_err(bad)?;
                let client =
                    p.client_info.map_or_else(|| "unknown client".into(), |c| format!("{} {}", c.name, c.version));
                let roots = p.capabilities.as_ref().and_then(|c| c.get("roots")).is_some_and(Value::is_object);
                Ok(Request::Initialize { protocol_version: p.protocol_version, client, roots })
            }
            "server/discover" => Ok(Request::Discover),
            "ping" => Ok(Request::Ping),
            "tools/list" => Ok(Request::ListTools),
            "tools/call" => {
                let p: CallToolParams = serde_json::from_value(params).map_err(bad)?;
                let arguments = match p.arguments {
                    None | Some(Value::Null) => json!({}),
                    Some(args @ Value::Object(_)) => args,
                    Some(_) => {
                        return Err(ErrorObject::new(
                            Code::InvalidParams,
                            "Invalid params for tools/call: `arguments` must be an object",
                        ));
                    }
                };
                let progress_token = p.meta.and_then(|m| m.progress_token).filter(|t| t.is_string() || t.is_number());
                Ok(Request::CallTool(ToolCall { name: p.name, arguments, progress_token }))
            }
            "logging/setLevel" => {
                let p: SetLevelParams = serde_json::from_value(params).map_err(bad)?;
                Ok(Request::SetLogLevel { level: p.level })
            }
            "resources/list" => {
                let p: CursorParams = serde_json::from_value(params).map_err(bad)?;
                Ok(Request::ListResources { cursor: p.cursor })
            }
            "resources/templates/list" => Ok(Request::ListResourceTemplates),
            "prompts/list" => Ok(Request::ListPrompts),
            "resources/read" => {
                let p: UriParams = serde_json::from_value(params).map_err(bad)?;
                Ok(Request::ReadResource { uri: p.uri })
            }
            "resources/subscribe" | "resources/unsubscribe" => {
                let UriParams { uri } = serde_json::from_value(params).map_err(bad)?;
                Ok(if method == "resources/subscribe" {
                    Request::Subscribe { uri }
                } else {
                    Request::Unsubscribe { uri }
                })
            }
            "subscriptions/listen" if modern => {
                let p: ListenParams = serde_json::from_value(params).map_err(bad)?;
                Ok(Request::Listen(p.notifications))
            }
            "resources/directory/read" => {
                let p: DirectoryParams = serde_json::from_value(params).map_err(bad)?;
                Ok(Request::ReadDirectory { uri: p.uri, cursor: p.cursor })
            }
            "skills/list" => Ok(Request::ListSkills),
            "skills/get" => {
                let p: UriParams = serde_json::from_value(params).map_err(bad)?;
                Ok(Request::GetSkill { uri: p.uri })
            }
            "prompts/get" => {
                let p: NameParams = serde_json::from_value(params).map_err(bad)?;
                Ok(Request::GetPrompt { name: p.name })
            }
            _ => Err(not_found()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_negotiate_to_the_clients_or_the_latest() {
        assert_eq!(Version::negotiate("2025-03-26").as_str(), "2025-03-26");
        assert_eq!(Version::negotiate("1999-01-01"), Version::LATEST);
        assert!(Version::negotiate("2025-06-18").structured());
        assert!(!Version::negotiate("2024-11-05").structured());
    }

    #[test]
    fn each_era_has_its_own_methods() {
        for removed in LEGACY_ONLY {
            assert_eq!(
                Request::parse(removed, Some(json!({})), true).unwrap_err().code,
                Code::MethodNotFound,
                "{removed}"
            );
        }
        assert_eq!(Request::parse("server/discover", None, false).unwrap_err().code, Code::MethodNotFound);
        assert_eq!(Request::parse("server/discover", None, true), Ok(Request::Discover));
        assert!(Version::MODERN.is_modern() && Version::MODERN.structured() && !Version::LATEST.is_modern());
    }

    #[test]
    fn requests_are_typed_or_refused() {
        assert_eq!(Request::parse("ping", None, false), Ok(Request::Ping));
        assert_eq!(Request::parse("nope", None, false).unwrap_err().code, Code::MethodNotFound);
        assert_eq!(Request::parse("initialize", Some(json!({})), false).unwrap_err().code, Code::InvalidParams);
        let call = Request::parse("tools/call", Some(json!({"name": "read"})), false).unwrap();
        assert_eq!(
            call,
            Request::CallTool(ToolCall { name: "read".into(), arguments: json!({}), progress_token: None })
        );
        let call =
            Request::parse("tools/call", Some(json!({"name": "read", "_meta": {"progressToken": 7}})), false).unwrap();
        assert!(matches!(call, Request::CallTool(ToolCall { progress_token: Some(t), .. }) if t == json!(7)));
        let level = Request::parse("logging/setLevel", Some(json!({"level": "warning"})), false).unwrap();
        assert_eq!(level, Request::SetLogLevel { level: LogLevel::Warning });
        let bad = Request::parse("logging/setLevel", Some(json!({"level": "loud"})), false);
        assert_eq!(bad.unwrap_err().code, Code::InvalidParams);
        let bad = Request::parse("tools/call", Some(json!({"name": "read", "arguments": [1]})), false);
        assert_eq!(bad.unwrap_err().code, Code::InvalidParams);
    }

    #[test]
    fn resource_requests_carry_their_cursor_uri_and_filter() {
        let list = Request::parse("resources/list", Some(json!({"cursor": "c1"})), false).unwrap();
        assert_eq!(list, Request::ListResources { cursor: Some("c1".into()) });
        let sub = Request::parse("resources/subscribe", Some(json!({"uri": "file:///a"})), false).unwrap();
        assert_eq!(sub, Request::Subscribe { uri: "file:///a".into() });
        let bad = Request::parse("resources/subscribe", Some(json!({})), false);
        assert_eq!(bad.unwrap_err().code, Code::InvalidParams);
        let listen = json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": ["file:///a"]}});
        let Request::Listen(filter) = Request::parse("subscriptions/listen", Some(listen), true).unwrap() else {
            panic!("a listen request")
        };
        assert!(filter.tools_list_changed && !filter.resources_list_changed);
        assert_eq!(filter.to_json(), json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///a"]}));
        // Legacy sessions have no listen; the filter is required.
        assert_eq!(
            Request::parse("subscriptions/listen", Some(json!({})), false).unwrap_err().code,
            Code::MethodNotFound
        );
        assert_eq!(
            Request::parse("subscriptions/listen", Some(json!({})), true).unwrap_err().code,
            Code::InvalidParams
        );
    }
}
