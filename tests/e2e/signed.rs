//! Signed tools: a component signed as cosign or openssl sign it installs and
//! runs when its key is trusted; a wrong key, a changed component or a
//! missing signature is refused when signatures are required, at `tool add`
//! and when the server starts, and the refusal names the key or the missing
//! signature.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::support::{Fixture, Server, cordon_bin, shared_state_dir};
use crate::tools::{RUST_EXAMPLE, ok, tool_cmd, tool_names};

/// A P-256 key pair made with openssl: (private key, public key).
pub(crate) fn key_pair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let (key, public) = (dir.join(format!("{name}.key")), dir.join(format!("{name}.pub")));
    openssl(&["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key.to_str().unwrap()]);
    openssl(&["ec", "-in", key.to_str().unwrap(), "-pubout", "-out", public.to_str().unwrap()]);
    (key, public)
}

/// A signature of `file` with `key`, base64 as `cosign sign-blob` prints it.
fn sign(dir: &Path, key: &Path, file: &Path) -> PathBuf {
    let der = openssl(&["dgst", "-sha256", "-sign", key.to_str().unwrap(), file.to_str().unwrap()]).stdout;
    let path = dir.join(format!("{}.sig", file.file_name().unwrap().to_string_lossy()));
    std::fs::write(&path, base64::engine::general_purpose::STANDARD.encode(der)).unwrap();
    path
}

fn openssl(args: &[&str]) -> Output {
    let out = Command::new("openssl").args(args).output().expect("openssl (`.ci/run` installs it)");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// `cordon tool ARGS` refused: its stderr.
fn refused(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(2), "stdout: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The id `cordon tool add` reports for the key that verified a signature.
fn signer_of(added: &str) -> String {
    added.split("signed by the trusted key ").nth(1).expect("a signer").split_whitespace().next().unwrap().to_string()
}

/// `cordon serve` on `root` with the tools in `tools` and `extra` flags,
/// expected to refuse to start: its stderr.
fn serve_refused(root: &Path, tools: &Path, extra: &[&str]) -> String {
    let out = Command::new(cordon_bin())
        .args(["serve", "--root"])
        .arg(root)
        .arg("--tools-dir")
        .arg(tools)
        .arg("--state-dir")
        .arg(shared_state_dir())
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "the server started: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_tool_signed_with_a_trusted_key_installs_and_runs_and_others_are_refused() {
    let fx = Fixture::new();
    let keys = tempfile::tempdir().unwrap();
    let (author, author_pub) = key_pair(keys.path(), "author");
    let (_, other_pub) = key_pair(keys.path(), "other");
    let component = keys.path().join("todos.wasm");
    std::fs::copy(RUST_EXAMPLE, &component).unwrap();
    let signature = sign(keys.path(), &author, &component);
    let tools = fx.dir.path().join("tools");
    let (comp, sig) = (component.to_str().unwrap(), signature.to_str().unwrap());
    let trust = |public: &Path| ["--trusted-key".to_string(), public.to_str().unwrap().to_string()];
    let args = |extra: &[&str], public: &Path| -> Vec<String> {
        let mut all: Vec<String> = ["tool", "add", comp].iter().map(|s| s.to_string()).collect();
        all.extend(extra.iter().map(|s| s.to_string()));
        all.extend(trust(public));
        all.push("--require-signatures".into());
        all
    };
    let run = |args: Vec<String>| tool_cmd(&tools, &args.iter().map(String::as_str).collect::<Vec<_>>());

    // A wrong key: refused, naming the key it tried.
    let wrong = refused(&run(args(&["--signature", sig], &other_pub)));
    assert!(wrong.contains("does not verify with any trusted key (tried "), "{wrong}");
    // No signature while one is required: refused, saying so.
    let missing = refused(&run(args(&[], &author_pub)));
    assert!(missing.contains("has no signature"), "{missing}");
    // A changed component with the original's signature: refused.
    let tampered = keys.path().join("tampered.wasm");
    let mut bytes = std::fs::read(&component).unwrap();
    bytes.push(0);
    std::fs::write(&tampered, &bytes).unwrap();
    let mut changed = args(&["--signature", sig], &author_pub);
    changed[2] = tampered.to_str().unwrap().into();
    assert!(refused(&run(changed)).contains("the component was changed after signing"));
    assert!(!tools.join("cordon-tools.lock").exists(), "nothing refused was installed");

    // The trusted key: installed, with its signer in the lockfile and the listing.
    let added = ok(&run(args(&["--signature", sig], &author_pub)));
    let key_id = signer_of(&added);
    assert_eq!(key_id.len(), 16, "{added}");
    let lock: Value = serde_json::from_str(&std::fs::read_to_string(tools.join("cordon-tools.lock")).unwrap()).unwrap();
    assert_eq!(lock["tools"][0]["signature"]["key_id"], key_id.as_str());
    let listed = ok(&tool_cmd(&tools, &["tool", "list", "--json", "--trusted-key", author_pub.to_str().unwrap()]));
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!((&listed["tools"][0]["signer"], &listed["tools"][0]["status"]), (&json!(key_id), &json!("ok")));

    // It runs on a server that requires signatures and trusts the key.
    let pub_arg = author_pub.to_str().unwrap();
    let mut server = Server::initialized(
        &fx.root(),
        &["--tools-dir", tools.to_str().unwrap(), "--require-signatures", "--trusted-key", pub_arg],
    );
    assert!(tool_names(&mut server, 1).contains(&"todos".to_string()));
    let called = server.call(2, "todos", json!({}));
    assert!(called.get("isError").is_some(), "{called}");
    drop(server);

    // A server that no longer trusts the key refuses to start, naming it.
    let untrusted =
        serve_refused(&fx.root(), &tools, &["--require-signatures", "--trusted-key", other_pub.to_str().unwrap()]);
    assert!(
        untrusted.contains(&format!("signed with the key {key_id}, which the configuration no longer trusts")),
        "{untrusted}"
    );
}

#[test]
fn an_unsigned_installed_tool_stops_a_server_that_requires_signatures() {
    let fx = Fixture::new();
    let keys = tempfile::tempdir().unwrap();
    let (_, public) = key_pair(keys.path(), "author");
    let tools = fx.dir.path().join("tools");
    let added = ok(&tool_cmd(&tools, &["tool", "add", RUST_EXAMPLE]));
    assert!(added.contains("unsigned"), "{added}");
    let listed = ok(&tool_cmd(&tools, &["tool", "list"]));
    assert!(listed.contains("signer: none"), "{listed}");
    let said = serve_refused(&fx.root(), &tools, &["--require-signatures", "--trusted-key", public.to_str().unwrap()]);
    assert!(said.contains("the installed tool `todos` is refused: it has no signature"), "{said}");
}
