//! The names of the two scopes (`cordon:read`, `cordon:write` unless the
//! configuration renames them, e.g. for an identity provider that spells
//! scopes `api://cordon/files.read`), and reading them from a token.

use serde::Deserialize;
use serde_json::Value;

use super::principal::Scopes;

/// What the read and write scopes are called.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ScopeNames {
    #[serde(default = "read_scope")]
    pub read: String,
    #[serde(default = "write_scope")]
    pub write: String,
}

fn read_scope() -> String {
    "cordon:read".into()
}

fn write_scope() -> String {
    "cordon:write".into()
}

impl Default for ScopeNames {
    fn default() -> ScopeNames {
        ScopeNames { read: read_scope(), write: write_scope() }
    }
}

impl ScopeNames {
    /// The scopes a list names; the first name that is neither is the error.
    pub fn parse<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Result<Scopes, String> {
        let mut scopes = Scopes::default();
        for name in names {
            match name {
                n if n == self.read => scopes.read = true,
                n if n == self.write => scopes.write = true,
                other => return Err(other.to_string()),
            }
        }
        Ok(scopes)
    }

    /// The scopes an access token grants: its `scope` claim (space-separated,
    /// RFC 9068) or `scp` (a list or a string, as some providers write it).
    /// Other scopes are the token's business and are ignored.
    pub fn granted(&self, claims: &serde_json::Map<String, Value>) -> Scopes {
        let mut names: Vec<&str> = Vec::new();
        for claim in ["scope", "scp"] {
            match claims.get(claim) {
                Some(Value::String(text)) => names.extend(text.split(' ')),
                Some(Value::Array(list)) => names.extend(list.iter().filter_map(Value::as_str)),
                _ => {}
            }
        }
        Scopes { read: names.contains(&self.read.as_str()), write: names.contains(&self.write.as_str()) }
    }

    /// Every scope this server knows, for its protected resource metadata.
    pub fn all(&self) -> [&str; 2] {
        [&self.read, &self.write]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scopes_are_read_from_scope_or_scp_and_unknown_ones_ignored() {
        let names = ScopeNames::default();
        let granted = |claims: Value| names.granted(claims.as_object().unwrap());
        assert_eq!(granted(json!({ "scope": "openid cordon:read" })), Scopes { read: true, write: false });
        assert_eq!(granted(json!({ "scp": ["cordon:write", "cordon:read"] })), Scopes::ALL);
        assert_eq!(granted(json!({ "scope": "cordon:readwrite" })), Scopes::default(), "names are whole words");
        assert_eq!(granted(json!({})), Scopes::default());
        let renamed = ScopeNames { read: "files.read".into(), write: "files.write".into() };
        assert!(renamed.granted(json!({ "scp": "files.write" }).as_object().unwrap()).write);
        assert_eq!(names.parse(["cordon:read"]), Ok(Scopes { read: true, write: false }));
        assert_eq!(names.parse(["root"]), Err("root".to_string()));
    }
}
