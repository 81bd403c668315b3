//! Agent clients, known by the name they give (`clientInfo.name`), and the
//! page each takes whole: a client that cuts a tool result past a few
//! thousand characters gets pages that fit it unless the call asks for a
//! size (`max_tokens`). What each client does with a result was read from its
//! source (see the README's table); the configuration's `[clients.NAME]`
//! tables override or add to what is built in. Text parts are kept below VS
//! Code's 8,192 characters for every client (`results::text`).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::args::Paging;

/// The clients whose cut is built in: a `clientInfo.name` starting with the
/// name (ignoring case), and the page, in estimated tokens, it takes whole
/// (the payload and the numbers of a file's lines, the footer and the
/// client's own wrapping below its cut).
const BUILT_IN: [(&str, u64); 2] = [
    // Codex CLI (`codex-mcp-client`): cuts a result in the middle past
    // 12,000 characters for a model it does not know (48,000 for one it does).
    ("codex", 2_500),
    // Cline: one JSON string of the whole result, cut in the middle past
    // 8,000 characters.
    ("cline", 1_500),
];

/// An agent client as the server pages for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Client {
    /// The page size, in estimated tokens, when a call does not ask; `None`:
    /// the server's default (Claude Code, Gemini CLI, VS Code, Goose, SDKs).
    pub page_tokens: Option<u64>,
}

impl Client {
    /// `paging` with this client's page size where the call asked for none.
    /// A continuation keeps the size its first page had (its footer says it).
    pub fn fit(self, mut paging: Paging) -> Paging {
        if paging.max_tokens.is_none() && paging.cursor.is_none() {
            paging.max_tokens = self.page_tokens;
        }
        paging
    }
}

/// `[clients.NAME]` in the configuration file: for a client whose
/// `clientInfo.name` starts with NAME (ignoring case), the page size when a
/// call does not ask. Without `max-tokens`, the server's default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ClientTable {
    pub max_tokens: Option<u64>,
}

/// The clients a server knows by name: the built-in ones, then the
/// configuration's, which win; the longest name that matches applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clients {
    /// Lowercase name prefixes and the client each names.
    known: BTreeMap<String, Client>,
}

impl Default for Clients {
    fn default() -> Clients {
        Clients::new(&BTreeMap::new())
    }
}

impl Clients {
    /// The built-in clients with `configured` laid over them.
    pub fn new(configured: &BTreeMap<String, ClientTable>) -> Clients {
        let built_in = BUILT_IN.iter().map(|(name, tokens)| (name.to_string(), Client { page_tokens: Some(*tokens) }));
        let said = configured.iter().map(|(name, t)| (name.to_ascii_lowercase(), Client { page_tokens: t.max_tokens }));
        Clients { known: built_in.chain(said).collect() }
    }

    /// The client that gave `name` (as `clientInfo.name`, or "name version").
    pub fn known(&self, name: &str) -> Client {
        let name = name.to_ascii_lowercase();
        let matching = self.known.iter().filter(|(prefix, _)| name.starts_with(prefix.as_str()));
        matching.max_by_key(|(prefix, _)| prefix.len()).map(|(_, client)| *client).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_that_cut_results_get_pages_that_fit_them_unless_a_call_asks() {
        let clients = Clients::default();
        assert_eq!(clients.known("codex-mcp-client 0.169.0").page_tokens, Some(2_500));
        assert_eq!(clients.known("Cline").page_tokens, Some(1_500));
        assert_eq!(clients.known("claude-code 2.1.328"), Client::default());
        let fitted = clients.known("Cline").fit(Paging::default());
        assert_eq!(fitted.max_tokens, Some(1_500));
        let codex = clients.known("codex");
        let asked = Paging { max_tokens: Some(9_000), ..Paging::default() };
        assert_eq!(codex.fit(asked.clone()), asked, "the call's own size wins");
        let going_on = Paging { cursor: Some("h1_x.1".into()), ..Paging::default() };
        assert_eq!(codex.fit(going_on.clone()), going_on, "a continuation keeps the size its footer names");
        assert_eq!(Client::default().fit(Paging::default()), Paging::default());
    }

    #[test]
    fn the_configuration_overrides_and_adds_clients_and_the_longest_name_wins() {
        let table = |tokens| ClientTable { max_tokens: tokens };
        let configured = BTreeMap::from([
            ("Codex".to_string(), table(Some(6_000))),
            ("cline".to_string(), table(None)),
            ("claude-code".to_string(), table(Some(12_000))),
            ("claude".to_string(), table(Some(3_000))),
        ]);
        let clients = Clients::new(&configured);
        assert_eq!(clients.known("codex-mcp-client").page_tokens, Some(6_000), "overridden");
        assert_eq!(clients.known("Cline").page_tokens, None, "back to the server's default");
        assert_eq!(clients.known("claude-code 2.1").page_tokens, Some(12_000), "the longest name");
        assert_eq!(clients.known("claude-ai").page_tokens, Some(3_000));
        assert_eq!(clients.known("gemini-cli-mcp-client").page_tokens, None);
    }
}
