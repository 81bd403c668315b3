//! Named static tokens, for teams without an identity provider: each
//! `[[tokens]]` entry names a token and gives its SHA-256 (the configuration
//! never holds the secret), or the environment variable or owner-only file
//! that holds it. `--token` (`CORDON_TOKEN`) is one more, named `default`.
//! A presented token is hashed and compared with every digest in constant
//! time.

use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::principal::{Principal, Scopes};
use super::scopes::ScopeNames;

/// The shortest token accepted (as for `--token`).
pub const MIN_LEN: usize = 16;

/// A `[[tokens]]` entry as the configuration file says it.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TokenSpec {
    /// The name the audit trail and `[[access]]` rules know the token by.
    pub name: String,
    /// The token's SHA-256, hex (`printf %s TOKEN | sha256sum`).
    pub sha256: Option<String>,
    /// An environment variable holding the token.
    pub env: Option<String>,
    /// A file (mode 0600 or tighter) holding the token.
    pub file: Option<PathBuf>,
    /// The scopes the token carries [default: read and write].
    pub scopes: Option<Vec<String>>,
}

/// Why a token cannot be used.
#[derive(Debug)]
pub struct TokenError {
    name: String,
    kind: ErrorKind,
}

#[derive(Debug)]
enum ErrorKind {
    /// Not exactly one of `sha256`, `env` and `file`.
    Source,
    /// `sha256` is not 64 hex digits.
    Digest,
    /// The environment variable is not set.
    Unset(String),
    /// The file cannot be read.
    Unreadable(PathBuf, std::io::Error),
    /// The file may be read by others.
    Loose(PathBuf, u32),
    /// Shorter than `MIN_LEN`.
    Short,
    /// Two tokens share a name.
    Duplicate,
    /// A scope that is not one of the configured scope names.
    Scope(String),
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = &self.name;
        match &self.kind {
            ErrorKind::Source => write!(f, "token `{name}` must give exactly one of sha256, env and file"),
            ErrorKind::Digest => write!(f, "token `{name}`: sha256 must be 64 hex digits"),
            ErrorKind::Unset(var) => write!(f, "token `{name}`: the environment variable {var} is not set"),
            ErrorKind::Unreadable(path, e) => write!(f, "token `{name}`: {} cannot be read: {e}", path.display()),
            ErrorKind::Loose(path, mode) => write!(
                f,
                "token `{name}`: {} has mode {mode:04o}; a token file must be readable by its owner only (chmod 600)",
                path.display()
            ),
            ErrorKind::Short => write!(f, "token `{name}` must be at least {MIN_LEN} characters"),
            ErrorKind::Duplicate => write!(f, "two tokens are named `{name}`"),
            ErrorKind::Scope(scope) => write!(f, "token `{name}`: `{scope}` is not a scope this server knows"),
        }
    }
}

impl std::error::Error for TokenError {}

/// One token: its name, its digest and its scopes.
#[derive(Clone)]
struct Known {
    name: String,
    digest: [u8; 32],
    scopes: Scopes,
}

impl fmt::Debug for Known {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Known").field("name", &self.name).field("scopes", &self.scopes).finish_non_exhaustive()
    }
}

/// The static tokens a server accepts.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    known: Vec<Known>,
}

impl Tokens {
    /// The tokens `specs` describe, and `--token`'s (named `default`),
    /// their scopes named as `names` says.
    pub fn new(specs: &[TokenSpec], flag: Option<&str>, names: &ScopeNames) -> Result<Tokens, TokenError> {
        let mut known: Vec<Known> = Vec::new();
        let mut add = |entry: Known| {
            if known.iter().any(|k| k.name == entry.name) {
                return Err(TokenError { name: entry.name, kind: ErrorKind::Duplicate });
            }
            known.push(entry);
            Ok(())
        };
        if let Some(token) = flag {
            let fail = |kind| TokenError { name: "default".into(), kind };
            if token.len() < MIN_LEN {
                return Err(fail(ErrorKind::Short));
            }
            add(Known {
                name: "default".into(),
                digest: Sha256::digest(token.as_bytes()).into(),
                scopes: Scopes::ALL,
            })?;
        }
        for spec in specs {
            let fail = |kind| TokenError { name: spec.name.clone(), kind };
            let digest = match (&spec.sha256, &spec.env, &spec.file) {
                (Some(hex), None, None) => {
                    let bytes = hex::decode(hex.trim()).map_err(|_| fail(ErrorKind::Digest))?;
                    <[u8; 32]>::try_from(bytes).map_err(|_| fail(ErrorKind::Digest))?
                }
                (None, Some(var), None) => {
                    let token = std::env::var(var).map_err(|_| fail(ErrorKind::Unset(var.clone())))?;
                    digest_of(token.trim()).ok_or_else(|| fail(ErrorKind::Short))?
                }
                (None, None, Some(path)) => {
                    let token = read_private(path).map_err(fail)?;
                    digest_of(token.trim()).ok_or_else(|| fail(ErrorKind::Short))?
                }
                _ => return Err(fail(ErrorKind::Source)),
            };
            let scopes = match &spec.scopes {
                None => Scopes::ALL,
                Some(list) => names.parse(list.iter().map(String::as_str)).map_err(|s| fail(ErrorKind::Scope(s)))?,
            };
            add(Known { name: spec.name.clone(), digest, scopes })?;
        }
        Ok(Tokens { known })
    }

    /// Whether any token is configured.
    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    /// The principal whose token `given` is, if any. Every digest is
    /// compared, in constant time, whichever matches.
    pub fn principal(&self, given: &str) -> Option<Principal> {
        let digest: [u8; 32] = Sha256::digest(given.as_bytes()).into();
        let mut found = None;
        for known in &self.known {
            if constant_time_eq(&digest, &known.digest) {
                found = Some(known);
            }
        }
        found.map(|k| Principal::Token { name: k.name.clone(), scopes: k.scopes })
    }
}

/// The SHA-256 of a token long enough to be one.
fn digest_of(token: &str) -> Option<[u8; 32]> {
    (token.len() >= MIN_LEN).then(|| Sha256::digest(token.as_bytes()).into())
}

/// A token file's text, refused when others may read it.
fn read_private(path: &Path) -> Result<String, ErrorKind> {
    let file = crate::ambient::open_file(path).map_err(|e| ErrorKind::Unreadable(path.to_path_buf(), e))?;
    let mode = file.metadata().map_err(|e| ErrorKind::Unreadable(path.to_path_buf(), e))?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(ErrorKind::Loose(path.to_path_buf(), mode));
    }
    let bytes = crate::ambient::read_file(path).map_err(|e| ErrorKind::Unreadable(path.to_path_buf(), e))?;
    String::from_utf8(bytes)
        .map_err(|_| ErrorKind::Unreadable(path.to_path_buf(), std::io::ErrorKind::InvalidData.into()))
}

/// Compares two byte strings in time that depends only on their lengths.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> TokenSpec {
        TokenSpec { name: name.into(), sha256: None, env: None, file: None, scopes: None }
    }

    #[test]
    fn a_token_is_known_by_its_digest_and_named() {
        let digest = hex::encode(Sha256::digest(b"ci-token-0123456789"));
        let ci = TokenSpec { sha256: Some(digest), scopes: Some(vec!["cordon:read".into()]), ..spec("ci") };
        let tokens = Tokens::new(&[ci], Some("flag-token-0123456789"), &ScopeNames::default()).unwrap();
        let read_only = Scopes { read: true, write: false };
        assert_eq!(
            tokens.principal("ci-token-0123456789"),
            Some(Principal::Token { name: "ci".into(), scopes: read_only })
        );
        assert_eq!(
            tokens.principal("flag-token-0123456789"),
            Some(Principal::Token { name: "default".into(), scopes: Scopes::ALL })
        );
        assert_eq!(tokens.principal("ci-token-012345678"), None);
        assert_eq!(tokens.principal(""), None);
    }

    #[test]
    fn bad_token_entries_are_refused_with_their_reason() {
        let names = ScopeNames::default();
        let refused = |specs: &[TokenSpec]| Tokens::new(specs, None, &names).unwrap_err().to_string();
        assert!(refused(&[spec("a")]).contains("exactly one of"));
        assert!(refused(&[TokenSpec { sha256: Some("abc".into()), ..spec("a") }]).contains("64 hex"));
        let digest = Some(hex::encode([0u8; 32]));
        let twice =
            [TokenSpec { sha256: digest.clone(), ..spec("a") }, TokenSpec { sha256: digest.clone(), ..spec("a") }];
        assert!(refused(&twice).contains("two tokens are named `a`"));
        let scope = TokenSpec { sha256: digest, scopes: Some(vec!["admin".into()]), ..spec("a") };
        assert!(refused(&[scope]).contains("`admin` is not a scope"));
        let unset = TokenSpec { env: Some("CORDON_TEST_SURELY_UNSET".into()), ..spec("a") };
        assert!(refused(&[unset]).contains("is not set"));
        assert!(Tokens::new(&[], Some("short"), &names).unwrap_err().to_string().contains("at least 16"));
    }

    #[test]
    fn a_token_file_must_be_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "file-token-0123456789\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let names = ScopeNames::default();
        let entry = TokenSpec { file: Some(path.clone()), ..spec("f") };
        let err = Tokens::new(std::slice::from_ref(&entry), None, &names).unwrap_err().to_string();
        assert!(err.contains("mode 0644") && err.contains("chmod 600"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let tokens = Tokens::new(&[entry], None, &names).unwrap();
        assert!(tokens.principal("file-token-0123456789").is_some(), "the newline is not part of the token");
    }
}
