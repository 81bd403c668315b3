//! Change notifications on the wire, from a raw JSON-RPC client: over TCP,
//! a burst across thousands of files under a subscribed directory (bounded
//! notifications and memory, resync notices, nothing denied named), the
//! listen stream's acknowledgment and tags, what `--no-resources` leaves out,
//! and resources narrowed by the client's roots.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Fixture, Server};

fn uri(path: &std::path::Path) -> String {
    url::Url::from_file_path(path).unwrap().to_string()
}

/// Every message the server sends until it is quiet for `quiet`.
fn drain(server: &Server, quiet: Duration) -> Vec<Value> {
    let mut seen = Vec::new();
    while let Some(message) = server.recv_within(quiet) {
        seen.push(message);
    }
    seen
}

fn updated_uris(messages: &[Value]) -> Vec<(String, bool)> {
    let updated = messages.iter().filter(|m| m["method"] == "notifications/resources/updated");
    updated
        .map(|m| (m["params"]["uri"].as_str().unwrap().to_string(), m["params"]["_meta"]["cordon/resync"] == true))
        .collect()
}

#[test]
fn a_tcp_session_is_told_when_a_subscribed_file_changes_and_unsubscribing_stops_it() {
    let fx = Fixture::new();
    let mut server = Server::initialized_tcp(&fx.root(), &[]);
    let hello = uri(&fx.root().join("hello.txt"));
    let reply = server.request(2, "resources/subscribe", json!({ "uri": hello }));
    assert_eq!(reply["result"], json!({}), "{reply}");
    fx.write("hello.txt", "changed\n");
    let note = server.recv_within(Duration::from_secs(10)).expect("a notification");
    assert_eq!(note, json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": hello}}));
    let reply = server.request(3, "resources/unsubscribe", json!({ "uri": hello }));
    assert_eq!(reply["result"], json!({}));
    fx.write("hello.txt", "again\n");
    assert_eq!(drain(&server, Duration::from_millis(700)), Vec::<Value>::new(), "nothing after unsubscribing");
    let outside = server.request(4, "resources/subscribe", json!({ "uri": uri(&fx.outside()) }));
    assert_eq!(outside["error"]["data"]["code"], "permission_denied", "{outside}");
    let other = server.request(5, "resources/subscribe", json!({ "uri": "test://watched-resource" }));
    assert_eq!(other["error"]["code"], -32602, "{other}");
    assert!(other["error"]["message"].as_str().unwrap().starts_with("Resource not found"));
}

#[test]
fn a_burst_over_thousands_of_files_is_bounded_resynced_and_never_names_a_denied_one() {
    let fx = Fixture::new();
    let burst = fx.root().join("burst");
    std::fs::create_dir(&burst).unwrap();
    let mut server = Server::initialized(&fx.root(), &["--deny", "*.pem"]);
    let reply = server.request(2, "resources/subscribe", json!({ "uri": uri(&fx.root()) }));
    assert_eq!(reply["result"], json!({}), "{reply}");
    let before = server.peak_rss_kib();
    for i in 0..10_000 {
        let name = if i % 10 == 0 { format!("k{i}.pem") } else { format!("f{i}.txt") };
        std::fs::write(burst.join(name), i.to_string()).unwrap();
    }
    let seen = drain(&server, Duration::from_secs(2));
    let after = server.peak_rss_kib();
    let updated = updated_uris(&seen);
    assert!(!updated.is_empty() && updated.len() <= 4_000, "{} notifications for 10,000 changes", updated.len());
    assert!(updated.iter().all(|(u, _)| !u.ends_with(".pem")), "no denied file is named");
    assert!(
        updated.contains(&(uri(&fx.root()), true)),
        "more changed than a listener holds: the subscription itself comes as a resync notice"
    );
    let burst_uri = uri(&burst);
    let named = updated.iter().filter(|(_, resync)| !resync).map(|(u, _)| u);
    assert!(named.clone().all(|u| *u == burst_uri || u.starts_with(&format!("{burst_uri}/f"))), "{updated:?}");
    assert!(after.saturating_sub(before) < 48 * 1024, "peak RSS grew by {} KiB", after.saturating_sub(before));
    let listed = server.request(3, "resources/list", json!({}));
    assert!(
        listed["result"]["resources"].as_array().unwrap().iter().all(|r| !r["uri"].as_str().unwrap().ends_with(".pem"))
    );
}

#[test]
fn a_listen_stream_is_acknowledged_first_tags_its_notices_and_ends_when_cancelled() {
    let fx = Fixture::new();
    let mut server = Server::modern_stdio(&fx.root(), &["--deny", "*.pem"]);
    fx.write("key.pem", "secret");
    let filter = json!({
        "toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true,
        "resourceSubscriptions": [uri(&fx.root().join("hello.txt")), uri(&fx.root().join("key.pem")), "test://x"],
    });
    server.send_json(&json!({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen", "params": {"notifications": filter}}));
    let ack = server.recv();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    let honored = json!({
        "toolsListChanged": true, "resourcesListChanged": true,
        "resourceSubscriptions": [uri(&fx.root().join("hello.txt"))],
    });
    assert_eq!(ack["params"]["notifications"], honored, "no prompts to change, the denied and foreign URIs left out");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "sub-1");
    fx.write("hello.txt", "changed\n");
    fx.write("new.txt", "appeared\n");
    fx.write("key.pem", "changed secret");
    let seen = drain(&server, Duration::from_secs(2));
    let methods: BTreeSet<&str> = seen.iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(methods, BTreeSet::from(["notifications/resources/list_changed", "notifications/resources/updated"]));
    assert!(seen.iter().all(|m| m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub-1"), "{seen:?}");
    assert_eq!(updated_uris(&seen), vec![(uri(&fx.root().join("hello.txt")), false)]);
    server.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "sub-1"}}));
    std::thread::sleep(Duration::from_millis(400));
    fx.write("hello.txt", "after the end\n");
    assert_eq!(drain(&server, Duration::from_millis(700)), Vec::<Value>::new(), "a cancelled stream is silent");
    let listed = server.request(2, "tools/list", json!({}));
    assert!(listed["result"]["tools"].is_array(), "the connection goes on: {listed}");
}

#[test]
fn no_resources_leaves_the_capability_the_list_and_subscriptions_out() {
    let fx = Fixture::new();
    let mut server = Server::start(&fx.root(), &["--no-resources"]);
    let init = server.request(1, "initialize", crate::support::initialize_params("2025-11-25"));
    assert!(init["result"]["capabilities"].get("resources").is_none(), "{init}");
    server.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(server.request(2, "resources/list", json!({}))["result"], json!({"resources": []}));
    let read = server.request(3, "resources/read", json!({"uri": uri(&fx.root().join("hello.txt"))}));
    assert_eq!(read["error"]["code"], -32602, "{read}");
    let sub = server.request(4, "resources/subscribe", json!({"uri": uri(&fx.root().join("hello.txt"))}));
    assert_eq!(sub["error"]["code"], -32601, "{sub}");
}

#[test]
fn the_clients_roots_narrow_the_resources_listed_read_and_watched() {
    let fx = Fixture::new();
    let (root, sub) = (fx.root(), fx.root().join("sub"));
    let mut server = crate::policy::with_client_roots(&root, &[&sub]);
    let listed = server.request(1, "resources/list", json!({}));
    let uris: Vec<&str> =
        listed["result"]["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
    assert_eq!(uris, vec![uri(&sub.join("inner.txt"))], "{listed}");
    let read = server.request(2, "resources/read", json!({ "uri": uri(&root.join("hello.txt")) }));
    assert_eq!(read["error"]["data"]["code"], "permission_denied", "{read}");
    let watched = server.request(3, "resources/subscribe", json!({ "uri": uri(&root.join("hello.txt")) }));
    assert_eq!(watched["error"]["data"]["code"], "permission_denied", "{watched}");
    let whole = server.request(4, "resources/subscribe", json!({ "uri": uri(&root) }));
    assert_eq!(whole["error"]["data"]["code"], "permission_denied", "the root holds more than the client's roots");
    let inside = server.request(5, "resources/subscribe", json!({ "uri": uri(&sub) }));
    assert_eq!(inside["result"], json!({}), "{inside}");
    fx.write("hello.txt", "outside the client's roots\n");
    fx.write("sub/inner.txt", "inside\n");
    let seen = drain(&server, Duration::from_secs(2));
    assert_eq!(updated_uris(&seen), vec![(uri(&sub.join("inner.txt")), false)], "only what the client's roots hold");
}

#[test]
fn a_listen_stream_ends_with_its_result_when_the_clients_input_ends_and_the_server_exits() {
    let fx = Fixture::new();
    let mut server = Server::modern_stdio(&fx.root(), &[]);
    let filter = json!({ "toolsListChanged": true, "resourceSubscriptions": [uri(&fx.root().join("hello.txt"))] });
    server.send_json(
        &json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": {"notifications": filter}}),
    );
    assert_eq!(server.recv()["method"], "notifications/subscriptions/acknowledged");
    server.close_input();
    let ended = server.recv_within(Duration::from_secs(10)).expect("the listen stream's result");
    assert_eq!(ended["id"], 7, "{ended}");
    assert_eq!(ended["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7, "{ended}");
    assert!(server.finish(), "the server exits once its input ended");
}
