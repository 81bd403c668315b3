//! The arguments the host owns in every tool call, in one place: their names
//! (which no tool may declare), the schema clients are shown for them, and
//! their parsing, once, into typed [`HostArgs`] beside the tool's own
//! arguments.
//!
//! Paging: `cursor`, `max_tokens`, `page_size`, and `format` (the compact
//! text a model reads, or JSON items for programs). Uploads: a tool takes staged
//! content when its input schema has a `staged` property; clients are shown
//! `upload_id`, `size` and `sha256` in its place (see `staging`).

use std::fmt;

use serde_json::{Map, Value, json};

use crate::tool::Manifest;

/// The argument names the host owns in every tool's input: paging and uploads.
pub const RESERVED: [&str; 5] = ["cursor", "max_tokens", "page_size", "format", "upload_id"];

/// The first name the host owns that the tool's own input schema declares.
pub fn reserved_argument(manifest: &Manifest) -> Option<&'static str> {
    let props = manifest.input_schema.get("properties")?.as_object()?;
    RESERVED.into_iter().find(|name| props.contains_key(*name))
}

/// Whether a tool takes staged uploads: its input schema has `staged`.
pub fn takes_uploads(manifest: &Manifest) -> bool {
    manifest.input_schema["properties"].get("staged").is_some()
}

/// How a page shows a tool's items.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Form {
    /// Compact text for a model (see `results::model::compact`): the default.
    #[default]
    Text,
    /// One JSON item per line, every field, for programs.
    Json,
}

impl Form {
    /// The form a call's `arguments` ask for: JSON only when `format` says
    /// so (a continuation keeps its first page's form, which the page knows).
    pub fn asked(arguments: &Value) -> Form {
        if arguments.get("format").and_then(Value::as_str) == Some("json") { Form::Json } else { Form::Text }
    }
}

/// The paging options of one call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Paging {
    pub cursor: Option<String>,
    pub max_tokens: Option<u64>,
    pub page_size: Option<u64>,
    /// As asked; a cursor continues in the form its first page had.
    pub format: Option<Form>,
}

impl Paging {
    /// The arguments a continuation is called with: `cursor` (a signed
    /// cursor, or the short handle that names one) and the page size asked
    /// for; the cursor holds the rest.
    pub fn continue_with(&self, cursor: String) -> Value {
        let mut next = Map::new();
        next.insert("cursor".into(), Value::String(cursor));
        let asked = [("max_tokens", self.max_tokens), ("page_size", self.page_size)];
        for (name, value) in asked {
            if let Some(value) = value {
                next.insert(name.into(), value.into());
            }
        }
        Value::Object(next)
    }
}

/// A staged upload named by a call, with what checks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadRef {
    pub id: String,
    pub size: u64,
    pub sha256: String,
}

/// The host's part of one call's arguments.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostArgs {
    pub paging: Paging,
    pub upload: Option<UploadRef>,
}

/// An argument the host owns that is malformed; the call is refused before
/// any tool runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgumentError {
    /// `name` is not what it must be (`expected`).
    NotA { name: &'static str, expected: &'static str },
    /// `staged` is given, but only the server sets it.
    Staged,
    /// `name` (`size` or `sha256`) is given without `upload_id`.
    WithoutUpload(&'static str),
    /// An `upload_id` for a tool that takes none.
    NoUploads { tool: String },
    /// An `upload_id` without the `size` and `sha256` that check it.
    Unchecked,
}

impl fmt::Display for ArgumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgumentError::NotA { name, expected } => write!(f, "`{name}` must be {expected}"),
            ArgumentError::Staged => f.write_str("`staged` is set by the server; pass `upload_id` instead"),
            ArgumentError::WithoutUpload(name) => write!(f, "`{name}` goes with `upload_id`"),
            ArgumentError::NoUploads { tool } => write!(f, "tool `{tool}` does not take uploads"),
            ArgumentError::Unchecked => {
                f.write_str("`upload_id` needs `size` (bytes) and `sha256` to check the upload")
            }
        }
    }
}

impl std::error::Error for ArgumentError {}

/// Splits a call's `arguments` for the tool `manifest` into the host's part
/// and the tool's own arguments. Paging is parsed for every call (a cursor
/// alone continues a result); the upload arguments only where the tool takes
/// uploads (elsewhere `size` and `sha256` are the tool's own).
pub fn split(manifest: &Manifest, arguments: &Value) -> Result<(HostArgs, Map<String, Value>), ArgumentError> {
    let mut args: Map<String, Value> = arguments.as_object().cloned().unwrap_or_default();
    let paging = take_paging(&mut args)?;
    let upload = take_upload(manifest, &mut args)?;
    Ok((HostArgs { paging, upload }, args))
}

fn take_paging(args: &mut Map<String, Value>) -> Result<Paging, ArgumentError> {
    let bad = |name, expected| ArgumentError::NotA { name, expected };
    let count = |v: Option<Value>, name: &'static str| match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            n.as_u64().filter(|n| *n > 0).map(Some).ok_or_else(|| bad(name, "a positive integer"))
        }
        Some(_) => Err(bad(name, "a positive integer")),
    };
    let cursor = match args.remove("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(_) => return Err(bad("cursor", "a string (as returned in next_cursor)")),
    };
    let max_tokens = count(args.remove("max_tokens"), "max_tokens")?;
    let page_size = count(args.remove("page_size"), "page_size")?;
    let format = match args.remove("format") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s == "text" => Some(Form::Text),
        Some(Value::String(s)) if s == "json" => Some(Form::Json),
        Some(_) => return Err(bad("format", "\"text\" or \"json\"")),
    };
    Ok(Paging { cursor, max_tokens, page_size, format })
}

fn take_upload(manifest: &Manifest, args: &mut Map<String, Value>) -> Result<Option<UploadRef>, ArgumentError> {
    if args.contains_key("staged") {
        return Err(ArgumentError::Staged);
    }
    let Some(id) = args.remove("upload_id") else {
        for name in ["size", "sha256"] {
            if args.contains_key(name) && takes_uploads(manifest) {
                return Err(ArgumentError::WithoutUpload(name));
            }
        }
        return Ok(None);
    };
    if !takes_uploads(manifest) {
        return Err(ArgumentError::NoUploads { tool: manifest.name.clone() });
    }
    let id = id.as_str().ok_or(ArgumentError::NotA { name: "upload_id", expected: "a string" })?.to_string();
    let size = args.remove("size").and_then(|v| v.as_u64());
    let sha256 = args.remove("sha256").and_then(|v| v.as_str().map(str::to_owned));
    match (size, sha256) {
        (Some(size), Some(sha256)) => Ok(Some(UploadRef { id, size, sha256 })),
        _ => Err(ArgumentError::Unchecked),
    }
}

/// The keyword of a tool's output schema that says its answer is one item,
/// never paged (`"x-cordon-pages": false`): clients are shown no paging
/// options for it, only `format`.
pub const PAGES_KEYWORD: &str = "x-cordon-pages";

/// Whether a tool's output is paged: unless its output schema says it is not.
pub fn pages(manifest: &Manifest) -> bool {
    manifest.output_schema.get(PAGES_KEYWORD).and_then(Value::as_bool) != Some(false)
}

/// A tool's input schema as clients see it: the paging options added (only
/// `format` where the answer is one item), and `staged` replaced by the
/// upload arguments. The descriptions are short: every conversation pays
/// for them.
pub fn advertise(manifest: &Manifest) -> Value {
    let mut schema = manifest.input_schema.clone();
    // A cursor alone continues a result, so what a paging tool requires is
    // said in words, not in `required`: clients that check arguments against
    // the schema (Gemini CLI) would refuse the continuation the footer
    // offers. The tool still refuses a first call without them.
    let required = match pages(manifest) {
        true => schema.as_object_mut().and_then(|s| s.remove("required")),
        false => None,
    };
    let Some(props) =
        schema.as_object_mut().and_then(|s| s.entry("properties").or_insert_with(|| json!({})).as_object_mut())
    else {
        return schema;
    };
    let names: Vec<String> = required
        .iter()
        .flat_map(Value::as_array)
        .flatten()
        .map(|n| format!("`{}`", n.as_str().unwrap_or_default()))
        .collect();
    let cursor = match names.as_slice() {
        [] => "Continue a result: the cursor its last page gave.".to_string(),
        [one] => format!("Continue a result: the cursor its last page gave. Without it, {one} is required."),
        many => {
            format!("Continue a result: the cursor its last page gave. Without it, {} are required.", many.join(", "))
        }
    };
    let paging = [
        ("cursor", json!({ "type": "string", "description": cursor })),
        ("max_tokens", json!({ "type": "integer", "minimum": 1, "description": "Page size in tokens." })),
        ("page_size", json!({ "type": "integer", "minimum": 1, "description": "Most items (or lines) per page." })),
    ];
    if pages(manifest) {
        for (name, schema) in paging {
            props.entry(name).or_insert(schema);
        }
    }
    let format = json!({
        "enum": ["text", "json"],
        "description": "json: every field and exact bytes, for programs. Default text."
    });
    props.entry("format").or_insert(format);
    if props.remove("staged").is_some() {
        props.insert("upload_id".into(), json!({ "type": "string", "description": "Commit a staged upload (see the `upload` tool) instead of giving content." }));
        props.insert(
            "size".into(),
            json!({ "type": "integer", "minimum": 0, "description": "With upload_id: the upload's total bytes, checked." }),
        );
        props.insert(
            "sha256".into(),
            json!({ "type": "string", "description": "With upload_id: the upload's SHA-256, checked." }),
        );
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(properties: Value) -> Manifest {
        Manifest {
            name: "t".into(),
            version: "1".into(),
            title: String::new(),
            description: String::new(),
            input_schema: json!({ "type": "object", "properties": properties }),
            output_schema: json!({ "type": "object" }),
            access: crate::tool::Access::Write,
            read_only: false,
            destructive: false,
            idempotent: false,
        }
    }

    #[test]
    fn paging_is_taken_out_of_the_tools_arguments() {
        let plain = manifest(json!({}));
        let (host, args) =
            split(&plain, &json!({"path": "a", "cursor": "c1.x", "max_tokens": 10, "page_size": 3})).unwrap();
        assert_eq!(
            host.paging,
            Paging { cursor: Some("c1.x".into()), max_tokens: Some(10), page_size: Some(3), format: None }
        );
        let (host, _) = split(&plain, &json!({"format": "json"})).unwrap();
        assert_eq!(host.paging.format, Some(Form::Json));
        assert_eq!(Value::Object(args), json!({"path": "a"}));
        let (host, _) = split(&plain, &json!({"cursor": null})).unwrap();
        assert_eq!(host, HostArgs::default());
        for bad in [
            json!({"cursor": 5}),
            json!({"max_tokens": 0}),
            json!({"page_size": "x"}),
            json!({"max_tokens": -1}),
            json!({"format": "xml"}),
        ] {
            assert!(matches!(split(&plain, &bad), Err(ArgumentError::NotA { .. })), "{bad}");
        }
    }

    #[test]
    fn an_upload_is_named_checked_and_only_for_tools_that_take_one() {
        let writer = manifest(json!({ "staged": { "type": "string" } }));
        let plain = manifest(json!({}));
        let call = json!({"path": "f", "upload_id": "u1", "size": 3, "sha256": "ab"});
        let (host, args) = split(&writer, &call).unwrap();
        assert_eq!(host.upload, Some(UploadRef { id: "u1".into(), size: 3, sha256: "ab".into() }));
        assert_eq!(Value::Object(args), json!({"path": "f"}));
        assert_eq!(split(&plain, &call), Err(ArgumentError::NoUploads { tool: "t".into() }));
        assert_eq!(split(&writer, &json!({"upload_id": "u1"})), Err(ArgumentError::Unchecked));
        assert_eq!(split(&writer, &json!({"size": 3})), Err(ArgumentError::WithoutUpload("size")));
        assert_eq!(split(&plain, &json!({"staged": "/x"})), Err(ArgumentError::Staged));
        let (_, args) = split(&plain, &json!({"size": 3})).unwrap();
        assert_eq!(Value::Object(args), json!({"size": 3}), "`size` is a plain tool's own");
    }

    #[test]
    fn the_schema_shows_paging_and_uploads_in_place_of_staged() {
        let writer = manifest(json!({ "staged": { "type": "string" } }));
        let props = advertise(&writer)["properties"].as_object().cloned().unwrap();
        let mut names: Vec<&str> = props.keys().map(String::as_str).collect();
        names.sort();
        assert_eq!(names, ["cursor", "format", "max_tokens", "page_size", "sha256", "size", "upload_id"]);
        let mut one = manifest(json!({}));
        one.output_schema = json!({ "type": "object", PAGES_KEYWORD: false });
        let props = advertise(&one)["properties"].as_object().cloned().unwrap();
        assert_eq!(props.keys().collect::<Vec<_>>(), ["format"], "one item: no paging options");
        assert_eq!(reserved_argument(&manifest(json!({ "page_size": {} }))), Some("page_size"));
        assert_eq!(reserved_argument(&writer), None);
    }

    #[test]
    fn a_paging_tool_says_what_it_requires_in_words_so_a_cursor_alone_passes_a_schema_check() {
        let mut reader = manifest(json!({ "path": { "type": "string" } }));
        reader.input_schema["required"] = json!(["path"]);
        let shown = advertise(&reader);
        assert!(shown.get("required").is_none(), "{shown}");
        let said = shown["properties"]["cursor"]["description"].as_str().unwrap();
        assert!(said.ends_with("Without it, `path` is required."), "{said}");
        reader.output_schema = json!({ "type": "object", PAGES_KEYWORD: false });
        assert_eq!(advertise(&reader)["required"], json!(["path"]), "a tool that does not page keeps it");
    }
}
