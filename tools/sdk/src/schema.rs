//! The JSON Schema of a path argument, written once for every tool.
//!
//! A path argument is a non-empty string (an empty one names nothing; see
//! [`paths::resolve`](crate::paths::resolve)) with a short description. The
//! descriptions tools share are the constants here, so that the same prose is
//! not retyped in each tool's schema: the definitions a client is shown stay
//! the same, byte for byte (keys in the order written here).

use serde_json::{Value, json};

/// The description of a path argument that names something inside the granted
/// roots (`read`'s, `stat`'s, `write`'s, `move`'s `from`, …).
pub const IN_A_ROOT: &str = "Relative to the first root, or absolute inside a root.";

/// The description of an optional path argument naming the directory a call
/// works in, the first root when absent (`list`'s and `glob`'s `path`).
pub const DIRECTORY: &str = "Directory (default: the first root).";

/// The schema of a path argument described by `description`:
/// `{"type": "string", "minLength": 1, "description": description}`, to put
/// under its name in the arguments' `properties`.
pub fn path_property(description: &str) -> Value {
    json!({ "type": "string", "minLength": 1, "description": description })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_property_is_the_text_the_tools_wrote_literally() {
        let text = path_property(IN_A_ROOT).to_string();
        let literal =
            r#"{"type":"string","minLength":1,"description":"Relative to the first root, or absolute inside a root."}"#;
        assert_eq!(text, literal);
        let text = path_property(DIRECTORY).to_string();
        assert_eq!(text, r#"{"type":"string","minLength":1,"description":"Directory (default: the first root)."}"#);
    }
}
