//! What a tool is: the WIT `access` and `manifest`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The filesystem access a tool needs to do its work (WIT `access`); in JSON
/// `"none"`, `"read"` or `"write"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// The tool touches no files; it gets no preopens.
    None,
    /// The tool only reads; every root is preopened read-only.
    Read,
    /// The tool creates or changes files; read-write roots are preopened
    /// read-write and read-only roots read-only.
    Write,
}

/// What a tool is, as the host lists it to clients (WIT `manifest`, with the
/// schemas parsed). The host checks a guest's manifest when it loads the tool:
/// a valid name, schemas that are JSON objects. In JSON (the form the host
/// embeds for its built-in tools, known at build time) the fields keep these
/// names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The tool's name as clients call it: 1 to 64 lowercase letters, digits,
    /// `_` and `-`, not starting with `-` (see [`valid_name`]).
    pub name: String,
    /// The tool's version (semver). It is bound into every cursor, so a new
    /// version never resumes an old version's position.
    pub version: String,
    /// A short human-readable title.
    pub title: String,
    /// What the tool does, written for a language model choosing a tool.
    pub description: String,
    /// The JSON Schema (draft 2020-12, `"type": "object"`) of the call's arguments.
    pub input_schema: Value,
    /// The JSON Schema (`"type": "object"`) of the metadata object the tool
    /// reports through `info`.
    pub output_schema: Value,
    /// The filesystem access the tool needs.
    pub access: Access,
    /// A call never changes anything (MCP `readOnlyHint`).
    pub read_only: bool,
    /// A call may delete or overwrite data (MCP `destructiveHint`).
    pub destructive: bool,
    /// Repeating a call with the same arguments has no further effect (MCP
    /// `idempotentHint`).
    pub idempotent: bool,
}

/// Whether `name` can name a tool: 1 to 64 lowercase letters, digits, `_`
/// and `-`, not starting with `-` (a name is also a file name and a command
/// line argument). The one rule, for the host's load and install checks and
/// for tool authors.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with('-')
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

impl Manifest {
    /// A tool that only reads: read access; read-only, not destructive,
    /// idempotent. Schemas default to any object until [`Manifest::with_schemas`].
    pub fn reader(name: &str, version: &str, title: &str, description: &str) -> Manifest {
        Manifest::new(name, version, title, description, Access::Read, (true, false, true))
    }

    /// A tool that changes files: write access, not read-only; whether it is
    /// `destructive` (may overwrite or delete) and `idempotent` as given.
    pub fn writer(
        name: &str,
        version: &str,
        title: &str,
        description: &str,
        destructive: bool,
        idempotent: bool,
    ) -> Manifest {
        Manifest::new(name, version, title, description, Access::Write, (false, destructive, idempotent))
    }

    /// Sets the input schema and the output (`info`) schema.
    pub fn with_schemas(mut self, input_schema: Value, output_schema: Value) -> Manifest {
        self.input_schema = input_schema;
        self.output_schema = output_schema;
        self
    }

    /// A manifest with `access` and the hints (read-only, destructive,
    /// idempotent); both schemas accept any object.
    fn new(
        name: &str,
        version: &str,
        title: &str,
        description: &str,
        access: Access,
        hints: (bool, bool, bool),
    ) -> Manifest {
        let any_object = serde_json::json!({ "type": "object" });
        Manifest {
            name: name.into(),
            version: version.into(),
            title: title.into(),
            description: description.into(),
            input_schema: any_object.clone(),
            output_schema: any_object,
            access,
            read_only: hints.0,
            destructive: hints.1,
            idempotent: hints.2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_constructors_set_access_and_hints() {
        let reader = Manifest::reader("r", "1.0.0", "R", "reads");
        assert_eq!(
            (reader.access, reader.read_only, reader.destructive, reader.idempotent),
            (Access::Read, true, false, true)
        );
        let writer = Manifest::writer("w", "1.0.0", "W", "writes", true, false);
        assert_eq!(
            (writer.access, writer.read_only, writer.destructive, writer.idempotent),
            (Access::Write, false, true, false)
        );
        assert_eq!(writer.input_schema, json!({ "type": "object" }));
    }

    #[test]
    fn a_manifest_round_trips_through_json_with_access_in_lowercase() {
        let writer = Manifest::writer("w", "1.0.0", "W", "writes", true, false);
        let text = serde_json::to_string(&writer).unwrap();
        assert!(text.contains(r#""access":"write""#), "{text}");
        assert_eq!(serde_json::from_str::<Manifest>(&text).unwrap(), writer);
        let mut extra: Value = serde_json::from_value(serde_json::to_value(&writer).unwrap()).unwrap();
        extra["surprise"] = json!(1);
        assert!(serde_json::from_value::<Manifest>(extra).is_err(), "an unknown field is refused");
    }
}
