//! The configuration file, `cordon.toml`: roots, deny rules, limits and where
//! to listen, so a team can review one file instead of a command line.
//!
//! The file is optional (`--config FILE` or `CORDON_CONFIG`). A flag given on
//! the command line (or by its environment variable) wins over the file; the
//! file wins over the built-in defaults. Paths in the file are relative to the
//! file's directory. Secrets are never read from the file: the token and the
//! cursor key come from the environment (`CORDON_TOKEN`, `CORDON_CURSOR_KEY`)
//! or a flag. Anything the file says that Cordon does not understand — an
//! unknown key, a limit that is not a number, a negative size — refuses to
//! start, with the line it is on.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer};

use crate::ambient;
use crate::limits::Settings;
use crate::policy::{DirSpec, Mode};

/// What `cordon.toml` may say. Every key is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FileConfig {
    /// The roots: `"DIR"`, `"DIR:ro"`, or `{ path = "DIR", mode = "ro" }`.
    pub roots: Option<Vec<RootEntry>>,
    /// Deny rules: globs relative to each root that no tool may open or list.
    pub deny: Option<Vec<String>>,
    /// Offer no tool that writes; every root read-only.
    pub read_only: Option<bool>,
    /// Mark no tool to be loaded up front (`--defer-tools`).
    pub defer_tools: Option<bool>,
    /// Offer no resources (`--no-resources`).
    pub no_resources: Option<bool>,
    /// Where compiled tools and the cursor key are kept.
    pub state_dir: Option<PathBuf>,
    /// Compile the tools at every start instead of caching them.
    pub no_cache: Option<bool>,
    /// Extra tool components to load.
    pub components: Option<Vec<PathBuf>>,
    /// Where `cordon tool add` installs tools (default: `<state-dir>/tools`).
    pub tools_dir: Option<PathBuf>,
    /// Log at debug level.
    pub debug: Option<bool>,
    /// The audit trail's file (default: `<state-dir>/audit/audit.log`).
    pub audit_log: Option<PathBuf>,
    /// Keep no audit trail.
    pub no_audit: Option<bool>,
    /// `"closed"` (refuse calls) or `"open"` (go on) when the audit log cannot be written.
    pub audit_on_failure: Option<crate::audit::OnFailure>,
    /// Rotate the audit log at this size.
    pub audit_max_bytes: Option<crate::limits::Bytes>,
    /// Rotated audit files kept.
    pub audit_keep: Option<usize>,
    /// PEM public keys whose signatures on installed tools are trusted.
    pub trusted_keys: Option<Vec<PathBuf>>,
    /// Refuse installed tools without a valid signature from a trusted key.
    pub require_signatures: Option<bool>,
    /// `[limits]`: each key is the flag of the same name (see `limits`).
    /// Sizes in bytes are a number or a string with a unit (`"8 MiB"`).
    #[serde(default)]
    pub limits: Settings,
    #[serde(default)]
    pub serve: FileServe,
    /// `[clients.NAME]`: the page a client whose `clientInfo.name` starts
    /// with NAME gets when a call does not ask (see `clients`).
    #[serde(default)]
    pub clients: std::collections::BTreeMap<String, crate::clients::ClientTable>,
    /// `[auth]`: OAuth access tokens from an issuer (see `auth`).
    pub auth: Option<crate::auth::OauthSettings>,
    /// `[[tokens]]`: named static tokens, by digest, environment variable or
    /// owner-only file (never the token itself).
    #[serde(default)]
    pub tokens: Vec<crate::auth::TokenSpec>,
    /// `[[access]]`: who may use which roots and tools (see `policy::access`).
    #[serde(default)]
    pub access: Vec<crate::policy::AccessSpec>,
    /// Refused: secrets come from the environment.
    #[serde(default, deserialize_with = "secret")]
    pub token: Option<()>,
    /// Refused: secrets come from the environment.
    #[serde(default, deserialize_with = "secret")]
    pub cursor_key: Option<()>,
}

/// `[serve]`: where `cordon serve` listens when no flag says.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileServe {
    pub tcp: Option<SocketAddr>,
    pub http: Option<SocketAddr>,
    /// Where `/metrics`, `/healthz` and `/readyz` are served too (`--metrics`).
    pub metrics: Option<SocketAddr>,
    /// The OpenTelemetry collector traces are sent to (`--otlp-endpoint`).
    #[serde(rename = "otlp-endpoint")]
    pub otlp_endpoint: Option<String>,
}

/// A root in the file: a string as on the command line, or a table.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RootEntry {
    Spec(DirSpec),
    Table(RootTable),
}

/// `{ path = "DIR", mode = "ro" | "rw" }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RootTable {
    path: PathBuf,
    #[serde(default = "read_write")]
    mode: ModeName,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum ModeName {
    Ro,
    Rw,
}

fn read_write() -> ModeName {
    ModeName::Rw
}

impl RootEntry {
    /// The root, a relative path taken from `base` (the file's directory).
    pub fn resolve(&self, base: &Path) -> DirSpec {
        let spec = match self {
            RootEntry::Spec(spec) => spec.clone(),
            RootEntry::Table(t) => DirSpec {
                path: t.path.clone(),
                mode: match t.mode {
                    ModeName::Ro => Mode::ReadOnly,
                    ModeName::Rw => Mode::ReadWrite,
                },
            },
        };
        DirSpec { path: base.join(spec.path), mode: spec.mode }
    }
}

/// Refuses a secret in the file, whatever its value.
fn secret<'de, D: Deserializer<'de>>(d: D) -> Result<Option<()>, D::Error> {
    serde::de::IgnoredAny::deserialize(d)?;
    Err(serde::de::Error::custom(
        "secrets are not read from the configuration file: set CORDON_TOKEN or CORDON_CURSOR_KEY in the \
         environment (or pass --token / --cursor-key)",
    ))
}

/// Why the configuration file cannot be used.
#[derive(Debug)]
pub struct ConfigError {
    kind: ErrorKind,
    path: PathBuf,
}

#[derive(Debug)]
enum ErrorKind {
    /// The file could not be read.
    Read(std::io::Error),
    /// The file is not valid TOML, or says something Cordon does not accept.
    Parse(toml::de::Error),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.kind {
            ErrorKind::Read(e) => write!(f, "the configuration file `{path}` cannot be read: {e}"),
            ErrorKind::Parse(e) => write!(f, "the configuration file `{path}` is invalid: {e}"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// A configuration file, read and checked, and the directory its relative
/// paths are taken from.
#[derive(Debug, Default)]
pub struct Loaded {
    pub file: FileConfig,
    pub base: PathBuf,
}

impl Loaded {
    /// Reads and checks the file at `path`.
    pub fn read(path: &Path) -> Result<Loaded, ConfigError> {
        let fail = |kind| ConfigError { kind, path: path.to_path_buf() };
        let bytes = ambient::read_file(path).map_err(|e| fail(ErrorKind::Read(e)))?;
        let text = String::from_utf8_lossy(&bytes);
        let file = parse(&text).map_err(|e| fail(ErrorKind::Parse(e)))?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(Loaded { file, base })
    }

    /// A path from the file, taken relative to the file's directory.
    pub fn path(&self, path: &Path) -> PathBuf {
        self.base.join(path)
    }
}

/// Parses the text of a configuration file.
pub fn parse(text: &str) -> Result<FileConfig, toml::de::Error> {
    toml::from_str(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::{Bytes, parse_bytes};

    #[test]
    fn the_documented_example_parses() {
        let text = include_str!("../../cordon.example.toml");
        let file = parse(text).unwrap_or_else(|e| panic!("cordon.example.toml: {e}"));
        assert!(file.roots.is_some_and(|r| r.len() == 2));
        assert!(file.deny.is_some_and(|d| d.iter().any(|r| r == "**/.git/**")));
        assert_eq!(file.limits.max_line_bytes, Bytes(8 << 20));
        assert_eq!((file.limits.max_parked_streams, file.limits.max_calls_in_flight), (64, 16));
    }

    #[test]
    fn the_documented_teams_example_parses() {
        let text = include_str!("../../cordon.example.toml");
        let start = text.find("# [auth]").expect("the teams example");
        // The commented-out settings (not the prose between them), uncommented.
        let uncommented: Vec<&str> = (text[start..].lines())
            .filter_map(|l| l.strip_prefix("# "))
            .filter(|l| l.starts_with('[') || l.contains(" = "))
            .collect();
        let uncommented = uncommented.join("\n");
        let file = parse(&uncommented).unwrap_or_else(|e| panic!("the teams example: {e}\n{uncommented}"));
        let auth = file.auth.expect("[auth]");
        assert_eq!((auth.groups_claim.as_str(), auth.scopes.write.as_str()), ("groups", "cordon:write"));
        assert_eq!(file.tokens.len(), 2);
        assert_eq!(file.access[0].who, crate::policy::access::WhoSpec::Group("eng".into()));
        assert_eq!(file.access[0].roots.as_ref().map(Vec::len), Some(2));
        assert!(parse("[[access]]\nwho = { team = \"x\" }\n").is_err(), "an unknown kind of principal");
        assert!(parse("[[tokens]]\nname = \"a\"\ntoken = \"secret\"\n").is_err(), "never the token itself");
    }

    #[test]
    fn client_tables_set_a_page_size_by_name_and_nothing_else() {
        let file = parse("[clients.codex]\nmax-tokens = 6000\n[clients.\"my-agent\"]\n").unwrap();
        assert_eq!(file.clients["codex"].max_tokens, Some(6000));
        assert_eq!(file.clients["my-agent"].max_tokens, None);
        assert!(parse("[clients.codex]\nmax_tokens = 1\n").is_err(), "keys are kebab-case, as everywhere");
    }

    #[test]
    fn parked_streams_keep_their_former_names_as_aliases() {
        let file = parse("[limits]\nmax-sessions = 3\nsession-ttl-secs = 9").unwrap();
        assert_eq!((file.limits.max_parked_streams, file.limits.parked_ttl_secs), (3, 9));
    }

    #[test]
    fn roots_are_strings_or_tables_relative_to_the_file() {
        let file = parse(r#"roots = ["a", "/b:ro", { path = "c", mode = "ro" }, { path = "/d" }]"#).unwrap();
        let roots: Vec<DirSpec> = file.roots.unwrap().iter().map(|r| r.resolve(Path::new("/etc/cordon"))).collect();
        let expected = [
            ("/etc/cordon/a", Mode::ReadWrite),
            ("/b", Mode::ReadOnly),
            ("/etc/cordon/c", Mode::ReadOnly),
            ("/d", Mode::ReadWrite),
        ];
        for (root, (path, mode)) in roots.iter().zip(expected) {
            assert_eq!((root.path.as_path(), root.mode), (Path::new(path), mode));
        }
    }

    #[test]
    fn sizes_take_units_and_bad_ones_say_why() {
        assert_eq!(parse_bytes("1048576"), Ok(1 << 20));
        assert_eq!(parse_bytes("8 MiB"), Ok(8 << 20));
        assert_eq!(parse_bytes("512k"), Ok(512 << 10));
        assert_eq!(parse_bytes("4GB"), Ok(4 << 30));
        assert!(parse_bytes("lots").unwrap_err().to_string().contains("whole number"));
        assert!(parse_bytes("3 parsecs").unwrap_err().to_string().contains("unknown unit"));
        assert!(parse_bytes("99999999999 TiB").unwrap_err().to_string().contains("too large"));
        let err = parse("[limits]\nmax-line-bytes = -1").unwrap_err().to_string();
        assert!(err.contains("expected a size in bytes") && err.contains("line 2"), "{err}");
    }

    #[test]
    fn unknown_keys_wrong_types_and_secrets_are_refused() {
        let err = parse("rots = [\"a\"]").unwrap_err().to_string();
        assert!(err.contains("unknown field `rots`"), "{err}");
        let err = parse("[limits]\ntimeout-secs = \"soon\"").unwrap_err().to_string();
        assert!(err.contains("timeout-secs") || err.contains("invalid type"), "{err}");
        let err = parse("token = \"0123456789abcdef0\"").unwrap_err().to_string();
        assert!(err.contains("CORDON_TOKEN"), "{err}");
        let err = parse("cursor-key = \"00\"").unwrap_err().to_string();
        assert!(err.contains("CORDON_CURSOR_KEY"), "{err}");
        let err = parse("roots = [{ path = \"a\", mode = \"rx\" }]").unwrap_err().to_string();
        assert!(err.contains("roots"), "{err}");
    }
}
