//! Environment grants: an installed tool may see named variables of the
//! server's environment (`cordon tool add … --grant env:NAME`), and nothing
//! else of it. The lockfile keeps the names; the values are read from the
//! server's environment when the tool is loaded (at start and at each
//! reload), go into the tool's WASI environment for each call, and are never
//! shown: not in the lockfile, a log line, an audit record, an error or
//! `cordon tool inspect`.

use std::fmt;
use std::sync::Arc;

use super::{DirSpec, NetGrant, SpecError};

/// The name of a variable a tool is granted: a letter or `_`, then letters,
/// digits and `_`, at most 128 bytes (what shells and `env` accept).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct EnvName(String);

/// The longest variable name a grant may give.
const MAX_NAME: usize = 128;

impl EnvName {
    pub fn parse(name: &str) -> Result<EnvName, SpecError> {
        let mut bytes = name.bytes();
        let first = bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
        if !first || name.len() > MAX_NAME || !bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(SpecError::EnvName(name.to_string()));
        }
        Ok(EnvName(name.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for EnvName {
    type Error = SpecError;
    fn try_from(name: String) -> Result<EnvName, SpecError> {
        EnvName::parse(&name)
    }
}

impl From<EnvName> for String {
    fn from(name: EnvName) -> String {
        name.0
    }
}

impl fmt::Display for EnvName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A grant as `cordon tool add --grant` takes it: a directory (`ro:DIR`,
/// `rw:DIR`), a variable of the server's environment (`env:NAME`) or a
/// destination for HTTP requests (`net:https://HOST[:PORT]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolGrant {
    Dir(DirSpec),
    Env(EnvName),
    Net(NetGrant),
}

impl ToolGrant {
    pub fn parse(text: &str) -> Result<ToolGrant, SpecError> {
        if let Some(name) = text.strip_prefix("env:") {
            return EnvName::parse(name).map(ToolGrant::Env);
        }
        if let Some(url) = text.strip_prefix("net:") {
            return NetGrant::parse(url).map(ToolGrant::Net);
        }
        DirSpec::grant(text).map(ToolGrant::Dir)
    }
}

impl fmt::Display for ToolGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolGrant::Dir(dir) => dir.fmt(f),
            ToolGrant::Env(name) => write!(f, "env:{name}"),
            ToolGrant::Net(grant) => grant.fmt(f),
        }
    }
}

/// The granted variables' values, as the server's environment gave them
/// when the tool was loaded (none: nothing to allocate or copy for the tools
/// without any, on every call). Its `Debug` names the variables, never their values.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Environment(Option<Arc<[(String, String)]>>);

impl Environment {
    /// The values of `names` in the server's environment, and the names it
    /// does not set (or sets to something that is not UTF-8): the tool sees
    /// those unset.
    pub fn read(names: &[EnvName]) -> (Environment, Vec<EnvName>) {
        let mut found = Vec::new();
        let mut unset = Vec::new();
        for name in names {
            match std::env::var(name.as_str()) {
                Ok(value) => found.push((name.0.clone(), value)),
                Err(_) => unset.push(name.clone()),
            }
        }
        let env = if found.is_empty() { Environment::default() } else { Environment(Some(found.into())) };
        (env, unset)
    }

    /// Each variable, name and value, for the tool's WASI environment.
    pub fn vars(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().flat_map(|vars| vars.iter()).map(|(name, value)| (name.as_str(), value.as_str()))
    }
}

impl fmt::Debug for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.vars().map(|(name, _)| format!("{name}=(hidden)"))).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_what_shells_accept_and_grants_read_back_as_written() {
        for good in ["API_KEY", "_x", "a1", &"A".repeat(MAX_NAME)] {
            assert_eq!(EnvName::parse(good).unwrap().as_str(), good);
        }
        for bad in ["", "1A", "A-B", "A=B", "A B", "é", &"A".repeat(MAX_NAME + 1)] {
            let refused = EnvName::parse(bad).unwrap_err().to_string();
            assert!(refused.contains("env:NAME"), "{bad}: {refused}");
        }
        assert_eq!(ToolGrant::parse("env:TOKEN").unwrap(), ToolGrant::Env(EnvName::parse("TOKEN").unwrap()));
        assert!(matches!(ToolGrant::parse("ro:/data").unwrap(), ToolGrant::Dir(_)));
        for text in ["env:TOKEN", "ro:/data", "rw:/a:b", "net:https://api.example.com", "net:http://127.0.0.1:8080"] {
            assert_eq!(ToolGrant::parse(text).unwrap().to_string(), text);
        }
        assert!(ToolGrant::parse("env:").is_err() && ToolGrant::parse("net:x").is_err());
        assert!(ToolGrant::parse("net:https://h.example/path").unwrap_err().to_string().contains("net:"));
    }

    #[test]
    fn values_come_from_the_environment_and_never_show_in_debug() {
        let names = [EnvName::parse("PATH").unwrap(), EnvName::parse("CORDON_SURELY_UNSET_1F2E").unwrap()];
        let (env, unset) = Environment::read(&names);
        let path = std::env::var("PATH").unwrap();
        assert_eq!(env.vars().collect::<Vec<_>>(), [("PATH", path.as_str())]);
        assert_eq!(unset, [names[1].clone()]);
        let shown = format!("{env:?}");
        assert!(shown.contains("PATH=(hidden)") && !shown.contains(&path), "{shown}");
    }
}
