//! Resources per principal: alice (read-write `src/`) and the CI bot (read-only
//! `docs/`, `docs/private/**` denied) each list, read and subscribe to only
//! what their own rights cover, in both eras.

use serde_json::{Value, json};

use super::{AUDIENCE, Client, addr_of, serve};
use crate::support::Fixture;
use crate::support::issuer::Issuer;

fn uri(path: &std::path::Path) -> String {
    url::Url::from_file_path(path).unwrap().to_string()
}

fn listed(client: &mut Client) -> Vec<String> {
    let listed = client.rpc("resources/list", json!({}));
    let resources = listed["result"]["resources"].as_array().unwrap_or_else(|| panic!("{listed}"));
    resources.iter().map(|r| r["uri"].as_str().unwrap().to_string()).collect()
}

fn refused_code(answer: &Value) -> &str {
    answer["error"]["data"]["code"].as_str().unwrap_or_else(|| panic!("not refused: {answer}"))
}

#[test]
fn each_principal_lists_reads_and_watches_only_its_own_resources() {
    let issuer = Issuer::start();
    let fx = Fixture::new();
    let config = super::principals::team(&fx);
    let server = serve(&fx.root(), &issuer, &["--config", config.to_str().unwrap()]);
    let addr = addr_of(&server);
    let (src, docs) = (fx.root().join("src"), fx.root().join("docs"));
    let (alice_token, bot_token) = (issuer.token("alice", AUDIENCE, None), issuer.token("ci-bot", AUDIENCE, None));
    for modern in [false, true] {
        let mut alice = Client::new(&addr, Some(&alice_token), modern);
        let mut bot = Client::new(&addr, Some(&bot_token), modern);
        if !modern {
            alice.initialize();
            bot.initialize();
        }
        let alices = listed(&mut alice);
        assert!(alices.iter().all(|u| u.starts_with(&uri(&src))) && alices.contains(&uri(&src.join("main.rs"))));
        let bots = listed(&mut bot);
        assert_eq!(bots, vec![uri(&docs.join("guide.md"))], "the bot's docs, without private/ or the link out");
        let read = bot.rpc("resources/read", json!({ "uri": uri(&docs.join("guide.md")) }));
        assert_eq!(read["result"]["contents"][0]["text"], "# Guide\nread me\n", "{read}");
        for (path, code) in [
            (src.join("main.rs"), "permission_denied"),
            (docs.join("private/notes.md"), "permission_denied"),
            (docs.join("link/main.rs"), "permission_denied"),
        ] {
            let answer = bot.rpc("resources/read", json!({ "uri": uri(&path) }));
            assert_eq!(refused_code(&answer), code, "{}: {answer}", path.display());
            assert!(!answer.to_string().contains("SRC_SECRET") && !answer.to_string().contains("PRIVATE_NOTE"));
        }
        let theirs = alice.rpc("resources/read", json!({ "uri": uri(&docs.join("guide.md")) }));
        assert_eq!(refused_code(&theirs), "permission_denied", "alice has no docs: {theirs}");
        if !modern {
            let watched = bot.rpc("resources/subscribe", json!({ "uri": uri(&docs.join("private/notes.md")) }));
            assert_eq!(refused_code(&watched), "permission_denied", "{watched}");
            let watched = bot.rpc("resources/subscribe", json!({ "uri": uri(&src.join("main.rs")) }));
            assert_eq!(refused_code(&watched), "permission_denied", "{watched}");
            let ok = bot.rpc("resources/subscribe", json!({ "uri": uri(&docs.join("guide.md")) }));
            assert_eq!(ok["result"], json!({}), "{ok}");
        }
    }
}
