//! The lockfile of installed tools, `cordon-tools.lock`: which components are
//! installed, the SHA-256 each must still have, and the directories each is
//! granted. It is JSON, written whole (a temporary file renamed into place), in
//! a stable order, so a team can review changes to it like code.

use serde::{Deserialize, Serialize};

use super::signature::Signed;
use crate::policy::{DirSpec, EnvName, NetGrant};

/// The lockfile's name inside the tools directory.
pub const LOCK_FILE: &str = "cordon-tools.lock";

/// The format this host writes and reads.
const FORMAT: u32 = 1;

/// The whole lockfile.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// The lockfile format, so a newer host can refuse what it cannot read.
    pub format: u32,
    /// The installed tools, in name order.
    pub tools: Vec<Entry>,
}

/// One installed tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The tool's name, as its manifest gives it.
    pub name: String,
    /// The tool's version, as its manifest gives it when it was added.
    pub version: String,
    /// The component's file name in the tools directory.
    pub file: String,
    /// The SHA-256 of the component, hex; any other content is refused.
    pub sha256: String,
    /// The WIT world the component targets (`cordon-tool` or `cordon-file-tool`).
    pub world: String,
    /// The directories the tool may use; nothing else. Each says its mode
    /// (`ro:DIR` or `rw:DIR`, as it is written).
    #[serde(deserialize_with = "crate::policy::deserialize_grants")]
    pub grants: Vec<DirSpec>,
    /// The variables of the server's environment the tool sees (`env:NAME`
    /// grants): names only, never a value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvName>,
    /// Where the tool may send HTTP requests (`net:` grants, without the prefix).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub net: Vec<NetGrant>,
    /// Set when the component imports `wasi:sockets` and was installed with
    /// `--stub-sockets`: it loads, and every socket it tries is refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stub_sockets: bool,
    /// Where it was added from when it came from a registry, with the pinned
    /// manifest (and its cosign signature), checked again at every load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci: Option<super::oci::OciPin>,
    /// The signature it was added with, and the trusted key that verified
    /// it; checked again at every start and reload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<Signed>,
}

impl Entry {
    /// The id of the key its signature (a file's, or a registry's cosign
    /// signature) was verified with when it was added.
    pub fn signer_id(&self) -> Option<&str> {
        let cosign = self.oci.as_ref().and_then(|pin| pin.signature.as_ref()).map(|s| s.key_id.as_str());
        self.signature.as_ref().map(|s| s.key_id.as_str()).or(cosign)
    }
}

/// Why a lockfile's text cannot be used.
#[derive(Debug)]
pub struct LockError(Why);

#[derive(Debug)]
enum Why {
    /// Not JSON, or not the lockfile's shape.
    Json(serde_json::Error),
    /// A format this host does not read.
    Format(u32),
    /// An entry (1-based) whose name is not a tool name.
    Name { index: usize, name: String },
    /// An entry naming another file than its name's.
    File { name: String, file: String },
    /// An entry whose digest is not 64 hex digits.
    Digest(String),
    /// A tool listed twice.
    Twice(String),
}

impl std::fmt::Display for LockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Why::Json(e) => e.fmt(f),
            Why::Format(n) => write!(f, "format {n} is not one this Cordon reads (it reads format {FORMAT})"),
            Why::Name { index, name } => write!(f, "tool {index} has the name `{name}`, which is not a tool name"),
            Why::File { name, file } => {
                write!(f, "tool `{name}` names the file `{file}`; it must be `{}`", file_name(name))
            }
            Why::Digest(name) => write!(f, "tool `{name}` has a sha256 that is not 64 hex digits"),
            Why::Twice(name) => write!(f, "the tool `{name}` is listed twice"),
        }
    }
}

impl std::error::Error for LockError {}

impl Lock {
    /// Reads a lockfile's text; the error says what is wrong and where.
    pub fn parse(text: &str) -> Result<Lock, LockError> {
        let lock: Lock = serde_json::from_str(text).map_err(|e| LockError(Why::Json(e)))?;
        if lock.format != FORMAT {
            return Err(LockError(Why::Format(lock.format)));
        }
        for (i, entry) in lock.tools.iter().enumerate() {
            let name = || entry.name.clone();
            if !valid_name(&entry.name) {
                return Err(LockError(Why::Name { index: i + 1, name: name() }));
            }
            if entry.file != file_name(&entry.name) {
                return Err(LockError(Why::File { name: name(), file: entry.file.clone() }));
            }
            if entry.sha256.len() != 64 || !entry.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(LockError(Why::Digest(name())));
            }
            if lock.tools[..i].iter().any(|e| e.name == entry.name) {
                return Err(LockError(Why::Twice(name())));
            }
        }
        Ok(lock)
    }

    /// The lockfile's text: pretty JSON, tools in name order, ending in a newline.
    pub fn render(&self) -> String {
        let mut lock = self.clone();
        lock.format = FORMAT;
        lock.tools.sort_by(|a, b| a.name.cmp(&b.name));
        let mut text = serde_json::to_string_pretty(&lock).expect("a lock serializes");
        text.push('\n');
        text
    }

    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.tools.iter().find(|e| e.name == name)
    }
}

pub use crate::tool::valid_name;

/// The component's file name for a tool.
pub fn file_name(name: &str) -> String {
    format!("{name}.wasm")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str) -> Entry {
        Entry {
            name: name.into(),
            version: "0.1.0".into(),
            file: file_name(name),
            sha256: "ab".repeat(32),
            world: "cordon-tool".into(),
            grants: vec![DirSpec::grant("ro:/data").unwrap()],
            env: Vec::new(),
            net: Vec::new(),
            stub_sockets: false,
            oci: None,
            signature: None,
        }
    }

    #[test]
    fn a_lock_renders_in_name_order_and_reads_back() {
        let lock = Lock { format: 1, tools: vec![entry("zeta"), entry("alpha")] };
        let text = lock.render();
        assert!(text.find("alpha").unwrap() < text.find("zeta").unwrap(), "{text}");
        assert!(text.contains("\"ro:/data\""), "grants are written as on the command line: {text}");
        let back = Lock::parse(&text).unwrap();
        assert_eq!(back.tools.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["alpha", "zeta"]);
        let read_only = DirSpec { mode: crate::policy::Mode::ReadOnly, path: "/data".into() };
        assert_eq!(back.get("zeta").unwrap().grants[0], read_only);
    }

    #[test]
    fn grants_are_ro_or_rw_and_name_a_directory() {
        assert_eq!(DirSpec::grant("rw:/a:b").unwrap().path, std::path::PathBuf::from("/a:b"));
        for bad in ["/data", "rx:/data", "ro:", "ro"] {
            let err = DirSpec::grant(bad).unwrap_err().to_string();
            assert!(err.contains("ro:DIR"), "{bad}: {err}");
        }
        let unsaid = r#"{"format":1,"tools":[{"name":"a","version":"1","file":"a.wasm","sha256":"00","world":"w","grants":["/data"]}]}"#;
        assert!(
            Lock::parse(unsaid).unwrap_err().to_string().contains("ro:DIR"),
            "a grant in the lockfile says its mode"
        );
    }

    #[test]
    fn a_lock_with_bad_names_files_digests_or_format_is_refused() {
        let with = |f: &dyn Fn(&mut Lock)| {
            let mut lock = Lock { format: 1, tools: vec![entry("a")] };
            f(&mut lock);
            serde_json::to_string(&lock).unwrap()
        };
        type Change = dyn Fn(&mut Lock);
        let cases: [(&Change, &str); 5] = [
            (&|l| l.format = 2, "format 2"),
            (&|l| l.tools[0].name = "../x".into(), "not a tool name"),
            (&|l| l.tools[0].file = "../../etc/passwd".into(), "must be `a.wasm`"),
            (&|l| l.tools[0].sha256 = "xyz".into(), "64 hex digits"),
            (&|l| l.tools.push(entry("a")), "listed twice"),
        ];
        for (change, expected) in cases {
            let err = Lock::parse(&with(change)).unwrap_err().to_string();
            assert!(err.contains(expected), "{expected}: {err}");
        }
        assert!(Lock::parse("{\"format\":1,\"tools\":[],\"extra\":1}").unwrap_err().to_string().contains("extra"));
        assert!(
            valid_name("csv_rows") && valid_name("a-1") && !valid_name("-a") && !valid_name("A") && !valid_name("")
        );
    }
}
