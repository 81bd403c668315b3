//! The one module that holds `bindgen!` output, and its conversion into the
//! contract's types (`cordon_contract`, named `crate::tool` in the host).

use crate::tool::{self, Access, Budget, Chunk, ErrorCode, Fingerprint, Payload, Span, Summary, ToolError};

wasmtime::component::bindgen!({
    path: "../wit",
    world: "cordon-file-tool",
});

/// Components of either world: `cordon-tool` exports the same interface and
/// imports a subset.
pub type CordonTool = CordonFileTool;
pub type CordonToolPre<T> = CordonFileToolPre<T>;

pub use exports::cordon::tool::tool::{Guest as ToolExports, GuestChunkStream};

/// The `shards` export (world `cordon-sharded-tool`), bound apart so that a
/// component without it still links as above; the types are the ones above.
mod sharded {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "cordon-sharded-tool",
        with: { "cordon:tool/types": super::cordon::tool::types },
    });
}

/// Where a component's `tool` export is, to load it from an instance the
/// host made itself (a shard's, which also needs `shards`).
pub use CordonFileToolIndices as CordonToolIndices;
/// Where a component's `shards` export is, found once when it is loaded.
pub use sharded::exports::cordon::tool::shards::GuestIndices as ShardsIndices;

use self::cordon::tool::types as wit;

pub use self::cordon::tool::host_files::Host as HostFiles;
pub use self::cordon::tool::types::Error as WitError;
pub use self::cordon::tool::types::ErrorCode as WitErrorCode;

/// By position: both enums list the codes in WIT declaration order (the
/// generated one is `#[repr(u8)]` with implicit discriminants; the contract
/// checks its `ALL` against `wit/tool.wit`, the test below the generated enum).
impl From<wit::ErrorCode> for ErrorCode {
    fn from(code: wit::ErrorCode) -> Self {
        ErrorCode::ALL[code as usize]
    }
}

impl From<wit::Error> for ToolError {
    fn from(err: wit::Error) -> Self {
        ToolError { code: err.code.into(), message: err.message }
    }
}

impl From<wit::Access> for Access {
    fn from(access: wit::Access) -> Self {
        match access {
            wit::Access::None => Access::None,
            wit::Access::Read => Access::Read,
            wit::Access::Write => Access::Write,
        }
    }
}

impl From<wit::Chunk> for Chunk {
    fn from(chunk: wit::Chunk) -> Self {
        Chunk {
            payload: match chunk.payload {
                wit::Payload::Text(text) => Payload::Text(text),
                wit::Payload::Bytes(bytes) => Payload::Bytes(bytes),
                wit::Payload::Item(item) => Payload::Item(item),
            },
            span: chunk.span.map(|s| Span {
                start_byte: s.start_byte,
                end_byte: s.end_byte,
                lines: s.lines.map(|l| (l.start, l.end)),
            }),
            continued: chunk.continued,
            resume: chunk.resume,
        }
    }
}

impl From<wit::Fingerprint> for Fingerprint {
    fn from(f: wit::Fingerprint) -> Self {
        Fingerprint { size: f.size, mtime_ns: f.mtime_ns, identity: f.identity }
    }
}

impl From<Budget> for wit::Budget {
    fn from(b: Budget) -> Self {
        wit::Budget { bytes: b.bytes, items: b.items }
    }
}

impl TryFrom<wit::Summary> for Summary {
    type Error = super::failure::Violation;

    fn try_from(s: wit::Summary) -> Result<Self, Self::Error> {
        match serde_json::from_str::<serde_json::Value>(&s.totals) {
            Ok(totals @ serde_json::Value::Object(_)) => {
                Ok(Summary { totals, exact: s.exact, suggestions: s.suggestions })
            }
            _ => Err(super::failure::Violation::SummaryTotals),
        }
    }
}

/// What is wrong with a manifest as the guest wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestError {
    /// The name is not 1-64 of `[a-z0-9_-]` not starting with `-`.
    Name(String),
    /// A schema (`which`) is not JSON (`error`: serde_json's words).
    NotJson { which: &'static str, error: String },
    /// A schema (`which`) is not a JSON Schema of `"type": "object"`.
    NotObjectSchema(&'static str),
}

impl std::fmt::Display for ManifestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ManifestError::Name(name) => {
                write!(f, "tool name `{name}` must be 1-64 of [a-z0-9_-], not starting with `-`")
            }
            ManifestError::NotJson { which, error } => write!(f, "{which} is not JSON: {error}"),
            ManifestError::NotObjectSchema(which) => {
                write!(f, "{which} must be a JSON Schema with \"type\": \"object\"")
            }
        }
    }
}

/// The manifest as the guest wrote it, before the registry checks it.
pub struct RawManifest(pub wit::Manifest);

impl RawManifest {
    /// Checks the manifest and converts it; the error says what is wrong.
    pub fn check(self) -> Result<tool::Manifest, ManifestError> {
        let m = self.0;
        if !tool::valid_name(&m.name) {
            return Err(ManifestError::Name(m.name));
        }
        let schema = |which: &'static str, text: &str| -> Result<serde_json::Value, ManifestError> {
            let value: serde_json::Value =
                serde_json::from_str(text).map_err(|e| ManifestError::NotJson { which, error: e.to_string() })?;
            if value.get("type").and_then(|t| t.as_str()) != Some("object") {
                return Err(ManifestError::NotObjectSchema(which));
            }
            Ok(value)
        };
        Ok(tool::Manifest {
            input_schema: schema("input-schema", &m.input_schema)?,
            output_schema: schema("output-schema", &m.output_schema)?,
            name: m.name,
            version: m.version,
            title: m.title,
            description: m.description,
            access: m.access.into(),
            read_only: m.read_only,
            destructive: m.destructive,
            idempotent: m.idempotent,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_wit_error_code_converts_to_the_code_of_the_same_name() {
        use wit::ErrorCode as W;
        let generated = [
            W::InvalidArgument,
            W::NotFound,
            W::PermissionDenied,
            W::Conflict,
            W::TooLarge,
            W::Stale,
            W::Io,
            W::Unsupported,
            W::Internal,
        ];
        assert_eq!(generated.len(), ErrorCode::ALL.len());
        for (i, wit) in generated.into_iter().enumerate() {
            assert_eq!(wit as usize, i);
            // `ErrorCode::TooLarge` (the generated Debug) → `too_large`.
            let debug = format!("{wit:?}");
            let camel = debug.rsplit("::").next().unwrap().trim_end_matches(|c: char| !c.is_alphanumeric());
            let snake: String = camel
                .chars()
                .enumerate()
                .flat_map(|(j, c)| {
                    let sep = (j > 0 && c.is_uppercase()).then_some('_');
                    sep.into_iter().chain(c.to_lowercase())
                })
                .collect();
            assert_eq!(ErrorCode::from(wit).as_str(), snake, "{debug}");
        }
    }

    #[test]
    fn a_manifest_with_a_bad_name_or_schema_is_refused_saying_which() {
        let raw = |name: &str, input: &str| {
            RawManifest(wit::Manifest {
                name: name.into(),
                version: "1".into(),
                title: String::new(),
                description: String::new(),
                input_schema: input.into(),
                output_schema: r#"{"type":"object"}"#.into(),
                access: wit::Access::Read,
                read_only: true,
                destructive: false,
                idempotent: true,
            })
        };
        let object = r#"{"type":"object"}"#;
        assert_eq!(raw("ok-tool", object).check().map(|m| m.name), Ok("ok-tool".to_string()));
        for bad in ["-flag", "Upper", "", &"x".repeat(65)] {
            assert_eq!(raw(bad, object).check().unwrap_err(), ManifestError::Name(bad.to_string()), "{bad}");
        }
        assert!(matches!(raw("t", "{").check(), Err(ManifestError::NotJson { which: "input-schema", .. })));
        assert_eq!(
            raw("t", r#"{"type":"array"}"#).check().unwrap_err(),
            ManifestError::NotObjectSchema("input-schema")
        );
    }
}
