//! A directory with a mode, as people write it: a root (`DIR`, `DIR:ro`,
//! `DIR:rw`) or a grant to an installed tool (`ro:DIR`, `rw:DIR`). One type
//! and one parser read both spellings anywhere; only a root may leave its mode
//! out (it is then read-write), a grant must say it.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use super::Mode;

/// A directory and whether it may be changed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(try_from = "String", into = "String")]
pub struct DirSpec {
    pub path: PathBuf,
    pub mode: Mode,
}

/// Why a text is not a directory with a mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpecError {
    /// It names no directory (`ro:`, `:rw`, an empty text).
    NoDirectory(String),
    /// A grant that does not say `ro` or `rw`.
    NoMode(String),
    /// An `env:` grant whose name is not a variable's.
    EnvName(String),
    /// A `net:` grant that is not `SCHEME://HOST[:PORT]`.
    NetGrant(String),
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecError::NoDirectory(s) => {
                write!(
                    f,
                    "`{s}` names no directory: write DIR, DIR:ro or DIR:rw for a root, ro:DIR or rw:DIR for a grant"
                )
            }
            SpecError::NoMode(s) => write!(
                f,
                "`{s}` is not a grant: write ro:DIR (read-only), rw:DIR (read-write), env:NAME (a variable of the server's environment) or net:https://HOST[:PORT] (HTTP requests to it)"
            ),
            SpecError::EnvName(s) => write!(
                f,
                "`{s}` cannot name an environment variable: write env:NAME, NAME a letter or `_` then letters, digits and `_`"
            ),
            SpecError::NetGrant(s) => write!(
                f,
                "`net:{s}` is not a network grant: write net:https://HOST or net:https://HOST:PORT (http or https; HOST a name, `*.` and a domain for its subdomains, or an address; no path, user or query)"
            ),
        }
    }
}

impl std::error::Error for SpecError {}

impl DirSpec {
    /// Reads `ro:DIR`, `rw:DIR`, `DIR:ro` or `DIR:rw`; a bare `DIR` gets
    /// `default`, or is refused when there is none.
    pub fn parse(s: &str, default: Option<Mode>) -> Result<DirSpec, SpecError> {
        let mode_of = |m: &str| match m {
            "ro" => Some(Mode::ReadOnly),
            "rw" => Some(Mode::ReadWrite),
            _ => None,
        };
        let prefixed = s.split_once(':').and_then(|(m, path)| Some((path, mode_of(m)?)));
        let suffixed = || s.rsplit_once(':').and_then(|(path, m)| Some((path, mode_of(m)?)));
        let (path, mode) = match prefixed.or_else(suffixed) {
            Some(found) => found,
            None => (s, default.ok_or_else(|| SpecError::NoMode(s.to_string()))?),
        };
        if path.is_empty() {
            return Err(SpecError::NoDirectory(s.to_string()));
        }
        Ok(DirSpec { path: PathBuf::from(path), mode })
    }

    /// A root: a bare `DIR` is read-write.
    pub fn root(s: &str) -> Result<DirSpec, SpecError> {
        DirSpec::parse(s, Some(Mode::ReadWrite))
    }

    /// A grant to a tool: the mode must be said.
    pub fn grant(s: &str) -> Result<DirSpec, SpecError> {
        DirSpec::parse(s, None)
    }
}

/// Parses a root (see `DirSpec::root`).
impl FromStr for DirSpec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DirSpec::root(s)
    }
}

impl TryFrom<String> for DirSpec {
    type Error = SpecError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<DirSpec> for String {
    fn from(spec: DirSpec) -> String {
        spec.to_string()
    }
}

/// The grant spelling, `ro:DIR` or `rw:DIR`, which reads back as it was.
impl fmt::Display for DirSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.mode.as_str(), self.path.display())
    }
}

/// Grants in a lockfile: each must say its mode.
pub fn deserialize_grants<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<DirSpec>, D::Error> {
    let texts: Vec<String> = serde::Deserialize::deserialize(d)?;
    texts.iter().map(|t| DirSpec::grant(t).map_err(serde::de::Error::custom)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_and_grants_are_read_in_either_spelling() {
        let spec = |path: &str, mode| DirSpec { path: path.into(), mode };
        for (text, want) in [
            ("/data", spec("/data", Mode::ReadWrite)),
            ("/data:ro", spec("/data", Mode::ReadOnly)),
            ("/data:rw", spec("/data", Mode::ReadWrite)),
            ("ro:/data", spec("/data", Mode::ReadOnly)),
            ("rw:/a:b", spec("/a:b", Mode::ReadWrite)),
            ("/a:b", spec("/a:b", Mode::ReadWrite)),
        ] {
            assert_eq!(DirSpec::root(text), Ok(want.clone()), "{text}");
            assert_eq!(want.to_string().parse::<DirSpec>(), Ok(want), "it reads back: {text}");
        }
        assert_eq!(DirSpec::grant("/data:ro"), Ok(spec("/data", Mode::ReadOnly)));
    }

    #[test]
    fn a_grant_says_its_mode_and_everything_names_a_directory() {
        for bad in ["/data", "rx:/data", "ro"] {
            assert_eq!(DirSpec::grant(bad), Err(SpecError::NoMode(bad.into())), "{bad}");
        }
        for bad in ["ro:", ":rw", ""] {
            assert_eq!(DirSpec::root(bad).unwrap_err(), SpecError::NoDirectory(bad.into()), "{bad}");
        }
        assert_eq!(DirSpec::root(""), Err(SpecError::NoDirectory(String::new())));
    }
}
