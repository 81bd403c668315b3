//! Tools from an OCI registry, against a real one (the CNCF distribution
//! registry, Debian's `docker-registry`, on a loopback port): publish → add by
//! tag → the lockfile pins the manifest → serve → call; a tag moved to other
//! bytes is refused at start and at reload, naming both digests; with
//! `--require-signatures`, an unsigned component, one signed by an untrusted
//! key and one carrying a signature of other bytes are refused, and the kept
//! signature is checked again at every load.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::signed::key_pair;
use crate::support::{Fixture, Reaped, Server, cordon_bin, debian_program, poll, request};

const HOSTILE: &str = env!("CORDON_HOSTILE_COMPONENT");
const TODOS: &str = env!("CORDON_EXAMPLE_RUST_COMPONENT");
/// Arguments the hostile test tool answers without harm.
const BENIGN: &str = r#"{"behaviour": "environment"}"#;
const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// A registry on a loopback port, storing in a directory of its own; ended
/// when dropped.
struct Registry {
    _child: Reaped,
    addr: String,
    _storage: tempfile::TempDir,
}

impl Registry {
    fn start() -> Registry {
        let program = debian_program("docker-registry", "docker-registry", "CORDON_TEST_REGISTRY");
        let storage = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = format!("127.0.0.1:{port}");
        let config = storage.path().join("config.yml");
        let yaml = format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
            storage.path().join("data").display()
        );
        std::fs::write(&config, yaml).unwrap();
        let child = Command::new(program).arg("serve").arg(&config).stdout(Stdio::null()).stderr(Stdio::null()).spawn();
        let child = crate::support::Reaped::new(child.expect("start docker-registry"));
        poll(
            Duration::from_secs(20),
            Duration::from_millis(50),
            || format!("the registry on {addr} never answered"),
            || std::net::TcpStream::connect(&addr).ok().map(|_| ()),
        );
        Registry { _child: child, addr, _storage: storage }
    }

    fn reference(&self, repo_tag: &str) -> String {
        format!("oci://{}/{repo_tag}", self.addr)
    }

    /// A manifest as the registry serves it.
    fn manifest(&self, repo: &str, reference: &str) -> Vec<u8> {
        let path = format!("/v2/{repo}/manifests/{reference}");
        let got = request(&self.addr, "GET", &path, &[("Accept", MANIFEST.to_string())], b"");
        assert_eq!(got.status, 200, "{path}: {}", String::from_utf8_lossy(&got.body));
        got.body
    }

    fn put_manifest(&self, repo: &str, reference: &str, body: &[u8]) {
        let path = format!("/v2/{repo}/manifests/{reference}");
        let put = request(&self.addr, "PUT", &path, &[("Content-Type", MANIFEST.to_string())], body);
        assert_eq!(put.status, 201, "{path}: {}", String::from_utf8_lossy(&put.body));
    }
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// `cordon ARGS` with the tools directory and state directory of `state`.
fn cordon(state: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(cordon_bin());
    command.args(args).arg("--tools-dir").arg(state.join("tools")).arg("--state-dir").arg(state);
    command.arg("--audit-log").arg(state.join("audit.log"));
    command.stdin(Stdio::null()).output().unwrap()
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "{}", text(&out));
    text(&out)
}

/// The manifest digest `tool publish` printed.
fn published_digest(said: &str) -> String {
    said.split("(manifest ").nth(1).expect("a manifest digest").split(',').next().unwrap().to_string()
}

fn lock_entry(state: &Path) -> Value {
    let lock = std::fs::read_to_string(state.join("tools/cordon-tools.lock")).unwrap();
    serde_json::from_str::<Value>(&lock).unwrap()["tools"][0].clone()
}

fn sha256_file(path: &str) -> String {
    crate::tools::sha256_file(Path::new(path))
}

#[test]
fn a_tool_published_and_added_by_tag_is_pinned_and_a_moved_tag_is_refused() {
    let registry = Registry::start();
    let fx = Fixture::new();
    let state = tempfile::tempdir().unwrap();
    let state = state.path();
    let tag = registry.reference("tools/hostile:1.0");

    let published = ok(cordon(state, &["tool", "publish", HOSTILE, &tag]));
    let first = published_digest(&published);
    assert!(published.contains(&format!("pinned: oci://{}/tools/hostile@{first}", registry.addr)), "{published}");
    let added = ok(cordon(state, &["tool", "add", &tag]));
    assert!(added.contains(&format!("from {tag} (manifest {first})")), "{added}");
    let entry = lock_entry(state);
    assert_eq!(entry["oci"]["reference"], tag.as_str());
    assert_eq!(entry["oci"]["manifest_digest"], first.as_str());
    assert_eq!(entry["sha256"], sha256_file(HOSTILE), "the pulled component is the published one");
    let config: Value = serde_json::from_slice(&registry.manifest("tools/hostile", "1.0")).unwrap();
    assert_eq!(config["layers"][0]["mediaType"], "application/wasm");
    assert_eq!(config["config"]["mediaType"], "application/vnd.wasm.config.v0+json");

    let state_dir = state.to_str().unwrap();
    let tools = state.join("tools");
    let audit = state.join("audit.log");
    let flags =
        ["--tools-dir", tools.to_str().unwrap(), "--state-dir", state_dir, "--audit-log", audit.to_str().unwrap()];
    let mut server = Server::initialized(&fx.root(), &flags);
    let reply = server.call(2, "hostile", json!({"behaviour": "environment", "format": "json"}));
    assert_eq!(reply["isError"], false, "{reply}");

    // The tag moves to other bytes while the server runs; a reload (another
    // tool added) refuses the moved one, naming both digests, and keeps the set.
    let moved = published_digest(&ok(cordon(state, &["tool", "publish", TODOS, &tag])));
    assert_ne!(moved, first);
    ok(cordon(state, &["tool", "add", TODOS, "--grant", &format!("ro:{}", fx.root().display())]));
    let rejected = poll(
        Duration::from_secs(20),
        Duration::from_millis(100),
        || "no tools_rejected record".into(),
        || {
            let log = std::fs::read_to_string(&audit).unwrap_or_default();
            log.lines().find(|l| l.contains("\"tools_rejected\"")).map(str::to_string)
        },
    );
    assert!(rejected.contains(&first) && rejected.contains(&moved), "{rejected}");
    let listed = server.request(3, "tools/list", json!({}));
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"hostile") && !names.contains(&"todos"), "the previous set is kept: {names:?}");
    assert!(server.finish());

    // And at start: refused, with both digests.
    let call = cordon(state, &["call", "hostile", "--json", BENIGN, "--root", fx.root().to_str().unwrap()]);
    assert_eq!(call.status.code(), Some(2), "{}", text(&call));
    assert!(
        text(&call).contains(&first) && text(&call).contains(&moved) && text(&call).contains("moved"),
        "{}",
        text(&call)
    );
    // Pinned by digest instead, it loads whatever the tag says.
    let by_digest = format!("oci://{}/tools/hostile@{first}", registry.addr);
    ok(cordon(state, &["tool", "add", &by_digest]));
    ok(cordon(state, &["call", "hostile", "--json", BENIGN, "--root", fx.root().to_str().unwrap()]));
}

#[test]
fn registry_signatures_are_required_checked_and_checked_again_at_every_load() {
    let registry = Registry::start();
    let fx = Fixture::new();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let (trusted, trusted_pub) = key_pair(state, "trusted");
    let (other, _) = key_pair(state, "other");
    let strict = ["--trusted-key", trusted_pub.to_str().unwrap(), "--require-signatures"];
    let add = |reference: &str| cordon(state, &[&["tool", "add", reference][..], &strict[..]].concat());

    let unsigned = registry.reference("tools/hostile:unsigned");
    ok(cordon(state, &["tool", "publish", HOSTILE, &unsigned]));
    let refused = add(&unsigned);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(text(&refused).contains("has no signature"), "{}", text(&refused));

    let by_other = registry.reference("tools/hostile:other-key");
    ok(cordon(state, &["tool", "publish", TODOS, &by_other, "--key", other.to_str().unwrap()]));
    let refused = add(&by_other);
    assert!(text(&refused).contains("does not verify with any trusted key"), "{}", text(&refused));

    // A signature copied from other bytes: the `.sig` of one digest put at another's.
    let good = registry.reference("tools/hostile:good");
    let good_digest =
        published_digest(&ok(cordon(state, &["tool", "publish", HOSTILE, &good, "--key", trusted.to_str().unwrap()])));
    let elsewhere = registry.reference("tools/hostile:elsewhere");
    let elsewhere_digest = published_digest(&ok(cordon(
        state,
        &["tool", "publish", TODOS, &elsewhere, "--key", trusted.to_str().unwrap()],
    )));
    let sig_tag = |digest: &str| format!("{}.sig", digest.replacen(':', "-", 1));
    let copied = registry.manifest("tools/hostile", &sig_tag(&elsewhere_digest));
    let kept = registry.manifest("tools/hostile", &sig_tag(&good_digest));
    registry.put_manifest("tools/hostile", &sig_tag(&good_digest), &copied);
    let refused = add(&good);
    assert!(
        text(&refused).contains("signature is of other bytes") && text(&refused).contains(&elsewhere_digest),
        "{}",
        text(&refused)
    );

    // Its own signature back: added, with the signer named and kept in the lockfile.
    registry.put_manifest("tools/hostile", &sig_tag(&good_digest), &kept);
    let added = ok(add(&good));
    assert!(added.contains("signed by the trusted key"), "{added}");
    let entry = lock_entry(state);
    assert!(entry["oci"]["signature"]["key_id"].is_string(), "{entry}");
    let root = fx.root();
    let call = |extra: &[&str]| {
        let args = [&["call", "hostile", "--json", BENIGN, "--root", root.to_str().unwrap()][..], extra].concat();
        cordon(state, &args)
    };
    ok(call(&strict));

    // Checked at every load, from the lockfile: without the key trusted, or
    // with the kept signature changed, the tool is refused.
    let untrusted = call(&["--require-signatures"]);
    assert_eq!(untrusted.status.code(), Some(2), "{}", text(&untrusted));
    let lock_path = state.join("tools/cordon-tools.lock");
    let lock = std::fs::read_to_string(&lock_path).unwrap();
    let signature = entry["oci"]["signature"]["signature"].as_str().unwrap();
    let forged = signature.replacen(&signature[10..14], "AAAA", 1);
    std::fs::write(&lock_path, lock.replace(signature, &forged)).unwrap();
    let broken = call(&strict);
    assert_eq!(broken.status.code(), Some(2), "{}", text(&broken));
    assert!(text(&broken).contains("hostile"), "{}", text(&broken));
}
