//! Findable when deferred: a client that hides MCP tools behind a keyword search (Codex ranks
//! them with BM25 over each tool's name, title and description; Claude Code's tool search and
//! VS Code's agent mode match words too) must find Cordon's tool first for what a model asks.
//! The tool list is `cordon tools --json`, what `tools/list` answers; the ranking is Okapi
//! BM25 (k1 = 1.2, b = 0.75) over lower-cased words, as such searches score.

use std::collections::HashMap;
use std::process::Command;

use serde_json::Value;

use crate::support::{cordon_bin, shared_state_dir};

/// What a model asks a tool search for, and the tool it must find first.
const QUERIES: [(&str, &str); 6] = [
    ("read a file", "read"),
    ("search file contents", "grep"),
    ("find files by name", "glob"),
    ("edit a file", "edit"),
    ("list a directory", "list"),
    ("write a file", "write"),
];

/// The words of `text`, lower-cased.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Each tool's name with its BM25 score for `query` over `docs`, best first.
fn rank<'a>(docs: &'a [(String, Vec<String>)], query: &str) -> Vec<(&'a str, f64)> {
    let (k1, b) = (1.2, 0.75);
    let average = docs.iter().map(|(_, d)| d.len()).sum::<usize>() as f64 / docs.len() as f64;
    let mut scores: Vec<(&str, f64)> = docs
        .iter()
        .map(|(name, doc)| {
            let counts = doc.iter().fold(HashMap::new(), |mut m, w| {
                *m.entry(w.as_str()).or_insert(0.0) += 1.0;
                m
            });
            let score = words(query)
                .iter()
                .map(|term| {
                    let with = docs.iter().filter(|(_, d)| d.contains(term)).count() as f64;
                    let idf = ((docs.len() as f64 - with + 0.5) / (with + 0.5) + 1.0).ln();
                    let tf = counts.get(term.as_str()).copied().unwrap_or(0.0);
                    idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * doc.len() as f64 / average))
                })
                .sum();
            (name.as_str(), score)
        })
        .collect();
    scores.sort_by(|a, b| b.1.total_cmp(&a.1));
    scores
}

#[test]
fn a_keyword_search_finds_each_everyday_tool_first() {
    let out = Command::new(cordon_bin()).args(["tools", "--json", "--state-dir"]).arg(shared_state_dir()).output();
    let out = out.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let docs: Vec<(String, Vec<String>)> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let name = t["name"].as_str().unwrap_or_default().to_string();
            let text = format!("{name} {} {}", t["title"].as_str().unwrap_or_default(), t["description"]);
            (name, words(&text))
        })
        .collect();
    for (query, want) in QUERIES {
        let ranked = rank(&docs, query);
        assert_eq!(ranked[0].0, want, "{query:?} ranks {ranked:?}");
    }
}
