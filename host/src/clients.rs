//! Agent clients, known by the name they give (`clientInfo.name`), and the
//! page each takes whole: a client that cuts a tool result past a few
//! thousand characters gets pages that fit it unless the call asks for a
//! size (`max_tokens`). What each client does with a result was read from its
//! source (see the README's table); text parts are kept below VS Code's
//! 8,192 characters for every client (`results::text`).

use crate::args::Paging;

/// An agent client, by what its result handling needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Client {
    /// Codex CLI (`codex-mcp-client`): cuts a result in the middle past 12,000
    /// characters for a model it does not know (48,000 for one it does).
    Codex,
    /// Cline: one JSON string of the whole result, cut in the middle past
    /// 8,000 characters.
    Cline,
    /// Any other client (Claude Code, Gemini CLI, VS Code, Goose, SDKs): the
    /// server's default pages.
    #[default]
    Other,
}

impl Client {
    /// The client that gave `name` (as `clientInfo.name`, or "name version").
    pub fn from_name(name: &str) -> Client {
        let name = name.to_ascii_lowercase();
        if name.starts_with("codex") {
            Client::Codex
        } else if name.starts_with("cline") {
            Client::Cline
        } else {
            Client::Other
        }
    }

    /// The page size, in estimated tokens, this client takes whole when a
    /// call does not ask: the payload and the numbers of a file's lines, the
    /// footer and the client's own wrapping below its cut.
    pub fn page_tokens(self) -> Option<u64> {
        match self {
            Client::Codex => Some(2_500),
            Client::Cline => Some(1_500),
            Client::Other => None,
        }
    }

    /// `paging` with this client's page size where the call asked for none.
    pub fn fit(self, mut paging: Paging) -> Paging {
        if paging.max_tokens.is_none() && paging.cursor.is_none() {
            paging.max_tokens = self.page_tokens();
        }
        paging
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_that_cut_results_get_pages_that_fit_them_unless_a_call_asks() {
        assert_eq!(Client::from_name("codex-mcp-client 0.169.0"), Client::Codex);
        assert_eq!(Client::from_name("Cline"), Client::Cline);
        assert_eq!(Client::from_name("claude-code 2.1.328"), Client::Other);
        let fitted = Client::Cline.fit(Paging::default());
        assert_eq!(fitted.max_tokens, Some(1_500));
        let asked = Paging { max_tokens: Some(9_000), ..Paging::default() };
        assert_eq!(Client::Codex.fit(asked.clone()), asked, "the call's own size wins");
        let going_on = Paging { cursor: Some("h1_x.1".into()), ..Paging::default() };
        assert_eq!(Client::Codex.fit(going_on.clone()), going_on, "a continuation keeps the size its footer names");
        assert_eq!(Client::Other.fit(Paging::default()), Paging::default());
    }
}
