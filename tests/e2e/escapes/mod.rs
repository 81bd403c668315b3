//! Path escapes, tried with every tool that takes a path: `..`, absolute paths,
//! the `root_evil` sibling, symlinks out (also swapped in while a read pages or
//! a write commits), hard links, FIFOs, sockets and devices, very long paths,
//! NUL bytes and Unicode look-alikes. Each case is named in its assertions. No
//! answer ever holds the canary, and after every test the tree outside the root
//! is exactly as it was: same entries, same bytes, same mtimes.
//!
//! One module a kind of escape: [`climbing`] (`..`, absolute paths, the
//! sibling, patterns), [`links`] (symlinks and hard links), [`swaps`] (symlinks
//! swapped in during reads and writes), [`special`] (FIFOs, sockets, devices),
//! [`long`] (very long and deep paths) and [`names`] (NUL bytes, Unicode
//! look-alikes). Here: the helpers they share.
//!
//! Every test runs twice: over stdio with the fixture's root the server's
//! only root, and again as a principal confined by an access rule
//! (`as_a_principal`): the server's root is then the root's parent, where the
//! canary and the `root_evil` sibling are, and the principal's one rule gives
//! it the root alone, so each escape tries the rule's boundary.

use std::cell::RefCell;
use std::path::Path;

use serde_json::{Value, json};

use crate::support::issuer::Issuer;
use crate::support::{CANARY, Server};
use crate::teams::AUDIENCE;

mod climbing;
mod links;
mod long;
mod names;
mod special;
mod swaps;

/// What a test running as a principal holds: the issuer of its token, and
/// the configuration (kept apart from the fixture, whose outside must not change).
struct Confined {
    issuer: Issuer,
    config: tempfile::TempDir,
}

thread_local! {
    /// Set while a test runs as a principal (each test runs on a thread of its own).
    static CONFINED: RefCell<Option<Confined>> = const { RefCell::new(None) };
}

/// Runs `test` as a principal confined to the fixture's root by its access
/// rule (alice, over TCP, with an access token from a real issuer), the
/// server's root being the root's parent.
fn as_a_principal(test: fn()) {
    let confined = Confined { issuer: Issuer::start(), config: tempfile::tempdir().unwrap() };
    CONFINED.with(|c| *c.borrow_mut() = Some(confined));
    test();
    CONFINED.with(|c| c.borrow_mut().take());
}

/// The server an escape test talks to, initialized: over stdio with `root`
/// its only root, or, as a principal, confined to `root` by an access rule.
fn serve(root: &Path, extra: &[&str]) -> Server {
    let confined = CONFINED.with(|c| {
        let c = c.borrow();
        let c = c.as_ref()?;
        Some((c.issuer.url.clone(), c.issuer.token("alice", AUDIENCE, None), c.config.path().join("cordon.toml")))
    });
    let Some((issuer, token, config)) = confined else { return Server::initialized(root, extra) };
    let rule = format!("[[access]]\nwho = {{ client = \"alice\" }}\nroots = [\"{}:rw\"]\n", root.display());
    std::fs::write(&config, rule).unwrap();
    let config = config.to_str().unwrap().to_string();
    let mut flags = vec!["--auth-issuer", issuer.as_str(), "--auth-audience", AUDIENCE, "--config", config.as_str()];
    flags.extend_from_slice(extra);
    let parent = root.parent().expect("the root has a parent");
    let mut server = Server::start_tcp(parent, &flags, Some(format!("{token}\n").as_bytes()));
    server.handshake();
    server
}

/// `#[test]` twice: as written, and as a principal confined by its rule.
macro_rules! both {
    ($($name:ident => $confined:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            super::$name();
        }

        #[test]
        fn $confined() {
            super::super::as_a_principal(super::$name);
        }
    )*};
}
use both;

/// Calls a tool and checks that the answer is a tool result that never holds
/// the canary.
fn attempt(server: &mut Server, id: &mut i64, what: &str, tool: &str, args: &Value) -> Value {
    *id += 1;
    let reply = server.request(*id, "tools/call", json!({"name": tool, "arguments": args}));
    assert!(!reply.to_string().contains(CANARY), "{what} with {tool} {args}: the canary leaked: {reply}");
    assert!(reply.get("error").is_none(), "{what} with {tool} {args}: a protocol error: {reply}");
    reply["result"].clone()
}

fn code(result: &Value) -> &str {
    result["_meta"]["cordon/error"]["code"].as_str().unwrap_or("(no error)")
}

/// Asserts a refusal whose code is one of `codes`.
fn refused(result: &Value, codes: &[&str], what: &str, tool: &str, args: &Value) {
    assert_eq!(result["isError"], true, "{what} with {tool} {args} was not refused: {result}");
    assert!(codes.contains(&code(result)), "{what} with {tool} {args}: expected one of {codes:?}: {result}");
}

/// Every tool, with `p` as its path: the reading tools, then the writing ones.
fn every_tool(p: &Value) -> Vec<(&'static str, Value)> {
    vec![
        ("read", json!({"format": "json", "path": p})),
        ("stat", json!({"format": "json", "path": p, "count_lines": true})),
        ("list", json!({"path": p, "depth": 3})),
        ("glob", json!({"pattern": "**", "path": p, "hidden": true, "no_ignore": true})),
        ("grep", json!({"pattern": "CANAR[Y]", "path": p, "hidden": true, "no_ignore": true, "binary": true})),
        ("write", json!({"format": "json", "path": p, "content": "pwned"})),
        (
            "edit",
            json!({"format": "json", "path": p, "old_string": "must-never", "new_string": "pwned", "replace_all": true}),
        ),
        ("move", json!({"format": "json", "from": p, "to": "stolen.txt"})),
        ("move", json!({"format": "json", "from": "hello.txt", "to": p, "overwrite": true})),
        ("mkdir", json!({"format": "json", "path": p})),
    ]
}

fn s(path: &Path) -> String {
    path.display().to_string()
}

/// `args` asking for JSON items, so each line names its absolute path.
fn json_items(mut args: Value) -> Value {
    args["format"] = "json".into();
    args
}
