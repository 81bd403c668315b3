//! Pages that fit the client's cut (issue 38): a client known by its `clientInfo.name` gets, when
//! a call does not ask for a size, a page its own handling keeps whole, footer and continuation
//! included; the configuration's `[clients.NAME]` overrides or adds to what is built in.
//!
//! - Cline turns the whole result into one JSON string and cuts it in the middle past 8,000
//!   characters: the serialized result must stay under that, and its footer's cursor continue.
//! - VS Code (Copilot Chat) writes a text part over 8,192 characters to a file its model must
//!   read back: no text part may be longer, whatever the page size.

use serde_json::{Value, json};

use crate::support::{Fixture, Server, page_meta};

/// Cline's cut: the characters of the whole result as one JSON string.
const CLINE_CUT: usize = 8_000;

/// VS Code's longest text part, in characters.
const VS_CODE_PART: usize = 8_192;

/// A server whose client says it is `name` in the legacy handshake.
fn as_client(fx: &Fixture, name: &str, extra: &[&str]) -> Server {
    let mut server = Server::start(&fx.root(), extra);
    let params = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": name, "version": "1.0.0"}
    });
    let init = server.request(0, "initialize", params);
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    server.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    server
}

/// A file of `lines` lines of about 60 characters.
fn long_file(fx: &Fixture, lines: usize) {
    let text: String =
        (1..=lines).map(|i| format!("line {i:05}: the quick brown fox jumps over the lazy dog\n")).collect();
    fx.write("long.txt", text);
}

/// The text blocks of a result.
fn texts(result: &Value) -> Vec<&str> {
    result["content"].as_array().unwrap().iter().filter_map(|b| b["text"].as_str()).collect()
}

/// The cursor a text-form page's footer offers the model.
fn offered_cursor(result: &Value) -> String {
    let footer = *texts(result).last().unwrap();
    let handle = page_meta(result)["handle"].as_str().unwrap_or_else(|| panic!("a handle: {result}"));
    assert!(footer.contains(handle), "the footer offers the handle: {footer}");
    handle.to_string()
}

#[test]
fn a_cline_page_stays_under_its_cut_whole_with_its_footer_and_continues() {
    let fx = Fixture::new();
    long_file(&fx, 2_000);
    std::fs::create_dir(fx.root().join("src")).unwrap();
    for i in 0..200 {
        fx.write(&format!("src/f{i:03}.rs"), format!("fn main() {{ println!(\"needle {i}\"); }}\n"));
    }
    let mut server = as_client(&fx, "Cline", &[]);
    let first = server.call(1, "read", json!({"path": "long.txt"}));
    let whole = first.to_string();
    eprintln!("Cline: a read page is {} characters as one JSON string", whole.len());
    assert!(whole.len() < CLINE_CUT, "the whole result as one JSON string: {} characters", whole.len());
    assert_eq!(page_meta(&first)["max_tokens"], 1_500, "Cline's page: {first}");
    assert!(texts(&first)[0].starts_with("1\tline 00001"), "numbered lines: {first}");
    let cursor = offered_cursor(&first);
    let second = server.call(2, "read", json!({"cursor": cursor}));
    assert_eq!(second["isError"], false, "{second}");
    assert!(second.to_string().len() < CLINE_CUT, "the next page too");
    let next_line = texts(&first)[0].lines().count() + 1;
    assert!(texts(&second)[0].starts_with(&format!("{next_line}\t")), "it goes on where the first stopped");

    let matches = server.call(3, "grep", json!({"pattern": "needle"}));
    let whole = matches.to_string();
    eprintln!("Cline: a grep page is {} characters as one JSON string", whole.len());
    assert!(whole.len() < CLINE_CUT, "a grep page: {} characters: {whole}", whole.len());
    assert!(texts(&matches).last().unwrap().contains("continue with `grep`"), "its footer: {matches}");

    let asked = server.call(4, "read", json!({"path": "long.txt", "max_tokens": 4_000}));
    assert_eq!(page_meta(&asked)["max_tokens"], 4_000, "a call's own size wins");
}

#[test]
fn a_vs_code_page_has_no_text_part_over_its_limit() {
    let fx = Fixture::new();
    long_file(&fx, 3_000);
    let mut server = as_client(&fx, "Visual Studio Code", &[]);
    let page = server.call(1, "read", json!({"path": "long.txt", "max_tokens": 25_000}));
    let parts = texts(&page);
    assert!(parts.len() > 3, "a large page in several parts: {}", parts.len());
    for part in &parts {
        assert!(part.chars().count() <= VS_CODE_PART, "a part of {} characters", part.chars().count());
    }
    let shown: String = parts[..parts.len() - 1].concat();
    assert!(shown.lines().enumerate().all(|(i, l)| l.starts_with(&format!("{}\t", i + 1))), "split at line ends");
}

#[test]
fn the_configuration_sets_a_clients_page_by_its_name() {
    let fx = Fixture::new();
    long_file(&fx, 2_000);
    let config = fx.outside().with_file_name("cordon.toml");
    std::fs::write(&config, "[clients.\"my-agent\"]\nmax-tokens = 700\n\n[clients.cline]\n").unwrap();
    let config = config.to_str().unwrap();
    let mut mine = as_client(&fx, "My-Agent", &["--config", config]);
    let page = mine.call(1, "read", json!({"path": "long.txt"}));
    assert_eq!(page_meta(&page)["max_tokens"], 700, "{page}");
    let mut cline = as_client(&fx, "cline", &["--config", config]);
    let page = cline.call(1, "read", json!({"path": "long.txt"}));
    assert_eq!(page_meta(&page)["max_tokens"], 15_000, "a table without max-tokens: the server's default");
}
