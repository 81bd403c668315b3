//! Who may do what: the `[[access]]` rules. Each rule names principals (a
//! group, a subject, an OAuth client or a static token) and gives them roots
//! (within the server's, each at most as writable as the server's), tools,
//! and deny rules added to the server's. A principal's rights are the union
//! of the rules that match it; one no rule matches gets nothing. With no rule
//! configured every principal gets the server's full rights, and the local
//! user (stdio, `cordon call`) always does. Scopes then bound what any rule
//! gives: a tool that writes needs the write scope, every other tool the read
//! scope.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use super::{DirSpec, GrantError, Judge, Policy, RuleError};
use crate::auth::{Principal, Scopes};

/// Whom a rule is for (`who = { group = "eng" }`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum WhoSpec {
    /// Subjects whose groups claim lists this group.
    Group(String),
    /// The subject with this `sub`.
    Sub(String),
    /// Subjects whose token was issued to this OAuth client.
    Client(String),
    /// The holder of the static token of this name.
    Token(String),
}

impl WhoSpec {
    fn matches(&self, principal: &Principal) -> bool {
        match (self, principal) {
            (WhoSpec::Token(name), Principal::Token { name: held, .. }) => name == held,
            (WhoSpec::Group(group), Principal::Subject(s)) => s.groups.contains(group),
            (WhoSpec::Sub(sub), Principal::Subject(s)) => &s.subject == sub,
            (WhoSpec::Client(client), Principal::Subject(s)) => s.client.as_ref() == Some(client),
            _ => false,
        }
    }
}

impl fmt::Display for WhoSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WhoSpec::Group(g) => write!(f, "group {g}"),
            WhoSpec::Sub(s) => write!(f, "sub {s}"),
            WhoSpec::Client(c) => write!(f, "client {c}"),
            WhoSpec::Token(t) => write!(f, "token {t}"),
        }
    }
}

/// An `[[access]]` rule as the configuration says it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessSpec {
    pub who: WhoSpec,
    /// `"DIR"`, `"DIR:ro"` or `"DIR:rw"`, each within the server's roots
    /// [default: the server's roots].
    pub roots: Option<Vec<DirSpec>>,
    /// The tools the principals may call [default: every tool].
    pub tools: Option<Vec<String>>,
    /// Deny rules added to the server's for these principals.
    #[serde(default)]
    pub deny: Vec<String>,
}

/// Why an access rule cannot be used.
#[derive(Debug)]
pub enum AccessError {
    Root { rule: usize, error: GrantError },
    Deny { rule: usize, error: RuleError },
}

impl fmt::Display for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccessError::Root { rule, error } => write!(f, "access rule {rule}: {error}"),
            AccessError::Deny { rule, error } => write!(f, "access rule {rule}: {error}"),
        }
    }
}

impl std::error::Error for AccessError {}

/// One call's rights, as far as who asks decides them.
#[derive(Debug)]
pub struct Rights {
    /// The roots the principal may use (canonical, with modes); `None`: the
    /// server's roots as they are.
    pub roots: Option<Vec<DirSpec>>,
    /// The tools it may call; `None`: every tool.
    pub tools: Option<BTreeSet<String>>,
    /// What its token allows.
    pub scopes: Scopes,
    /// The deny rules (the server's and its own) and the roots, for its calls.
    pub judge: Arc<Judge>,
    /// What the rules that gave these rights say, for a refusal (`group eng, token ci`);
    /// empty when no rule matched.
    pub by: String,
}

impl Rights {
    /// The server's full rights, as the local user has them.
    pub fn full(policy: &Policy) -> Rights {
        Rights { roots: None, tools: None, scopes: Scopes::ALL, judge: Arc::clone(policy.judge()), by: String::new() }
    }

    /// Whether the rules let the principal call `tool` at all (scopes aside).
    pub fn allows_tool(&self, tool: &str) -> bool {
        self.tools.as_ref().is_none_or(|tools| tools.contains(tool))
    }
}

/// A rule, resolved against the server's roots.
#[derive(Debug)]
struct Rule {
    who: WhoSpec,
    roots: Option<Vec<DirSpec>>,
    tools: Option<Vec<String>>,
    deny: Vec<String>,
}

/// What a principal's rights depend on: whether it has the server's full
/// rights, the rules that match it, and its scopes.
type Matched = (bool, Vec<usize>, Scopes);

/// The access rules, and the rights they give, kept per set of rules that
/// match (principals matching the same rules share one `Rights`).
#[derive(Debug, Default)]
pub struct AccessRules {
    rules: Vec<Rule>,
    given: Mutex<HashMap<Matched, Arc<Rights>>>,
}

impl AccessRules {
    /// The rules `specs` say (their roots relative to the working directory,
    /// or made absolute where the configuration file was read), checked
    /// against `policy`'s roots, their deny rules compiled.
    pub fn new(specs: &[AccessSpec], policy: &Policy) -> Result<AccessRules, AccessError> {
        let mut rules = Vec::new();
        for (i, spec) in specs.iter().enumerate() {
            let rule = i + 1;
            let roots = match &spec.roots {
                None => None,
                Some(roots) => Some(
                    roots
                        .iter()
                        .map(|r| policy.resolve_grant(r).map_err(|error| AccessError::Root { rule, error }))
                        .collect::<Result<Vec<_>, _>>()?,
                ),
            };
            policy.judge().with_more(&spec.deny).map_err(|error| AccessError::Deny { rule, error })?;
            rules.push(Rule { who: spec.who.clone(), roots, tools: spec.tools.clone(), deny: spec.deny.clone() });
        }
        Ok(AccessRules { rules, given: Mutex::new(HashMap::new()) })
    }

    /// Whether any rule is configured.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rights of `principal`.
    pub fn rights(&self, principal: &Principal, policy: &Policy) -> Arc<Rights> {
        let scopes = principal.scopes();
        let full = matches!(principal, Principal::Local) || self.rules.is_empty();
        let matched: Vec<usize> = match full {
            true => Vec::new(),
            false => (0..self.rules.len()).filter(|&i| self.rules[i].who.matches(principal)).collect(),
        };
        let key = (full, matched.clone(), scopes);
        if let Some(rights) = self.given.lock().expect("rights lock").get(&key) {
            return Arc::clone(rights);
        }
        let rights = Arc::new(match full {
            true => Rights { scopes, ..Rights::full(policy) },
            false => self.union(&matched, scopes, policy),
        });
        self.given.lock().expect("rights lock").insert(key, Arc::clone(&rights));
        rights
    }

    /// The union of the rules `matched`.
    fn union(&self, matched: &[usize], scopes: Scopes, policy: &Policy) -> Rights {
        let mut roots: Option<Vec<DirSpec>> = Some(Vec::new());
        let mut tools: Option<BTreeSet<String>> = Some(BTreeSet::new());
        let mut deny = Vec::new();
        let mut by = Vec::new();
        for &i in matched {
            let rule = &self.rules[i];
            by.push(rule.who.to_string());
            match (&mut roots, &rule.roots) {
                (Some(_), None) => roots = None,
                (Some(all), Some(these)) => all.extend(these.iter().cloned()),
                (None, _) => {}
            }
            match (&mut tools, &rule.tools) {
                (Some(_), None) => tools = None,
                (Some(all), Some(these)) => all.extend(these.iter().cloned()),
                (None, _) => {}
            }
            deny.extend(rule.deny.iter().cloned());
        }
        let judge = policy.judge().with_more(&deny).expect("every rule's deny rules were compiled at start");
        Rights { roots, tools, scopes, judge: Arc::new(judge), by: by.join(", ") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Subject;
    use crate::policy::Mode;

    /// The rules with their roots taken from `base`.
    fn absolute(mut specs: Vec<AccessSpec>, base: &std::path::Path) -> Vec<AccessSpec> {
        for root in specs.iter_mut().flat_map(|s| s.roots.iter_mut().flatten()) {
            root.path = base.join(&root.path);
        }
        specs
    }

    fn subject(sub: &str, groups: &[&str], scopes: Scopes) -> Principal {
        Principal::Subject(Subject {
            issuer: "https://id.example".into(),
            subject: sub.into(),
            client: Some(format!("{sub}-app")),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            scopes,
        })
    }

    #[test]
    fn rights_are_the_union_of_the_matching_rules_and_nothing_without_one() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        for sub in ["src", "docs"] {
            std::fs::create_dir_all(base.join(sub)).unwrap();
        }
        let policy = Policy::new(&[DirSpec { path: base.clone(), mode: Mode::ReadWrite }], &[], false).unwrap();
        let config = r#"
            [[access]]
            who = { group = "eng" }
            roots = ["src:rw"]
            tools = ["read", "edit"]
            deny = ["*.key"]
            [[access]]
            who = { client = "ci-bot-app" }
            roots = ["docs:ro"]
            tools = ["read", "grep"]
        "#;
        #[derive(Deserialize)]
        struct File {
            access: Vec<AccessSpec>,
        }
        let file: File = toml::from_str(config).unwrap();
        let rules = AccessRules::new(&absolute(file.access, &base), &policy).unwrap();
        let alice = rules.rights(&subject("alice", &["eng"], Scopes::ALL), &policy);
        assert_eq!(alice.roots.as_deref(), Some(&[DirSpec { path: base.join("src"), mode: Mode::ReadWrite }][..]));
        assert!(alice.allows_tool("edit") && !alice.allows_tool("grep"));
        assert_eq!(alice.judge.check(&base.join("src/a.key"), false), Some("*.key"));
        let bot = rules.rights(&subject("ci-bot", &["eng"], Scopes::ALL), &policy);
        assert_eq!(bot.roots.as_ref().map(Vec::len), Some(2), "both rules: {bot:?}");
        assert!(bot.allows_tool("grep") && bot.allows_tool("edit"));
        assert_eq!(bot.by, "group eng, client ci-bot-app");
        let stranger = rules.rights(&subject("eve", &[], Scopes::ALL), &policy);
        assert_eq!((stranger.roots.as_deref(), stranger.tools.as_ref().map(BTreeSet::len)), (Some(&[][..]), Some(0)));
        assert!(!stranger.allows_tool("read"));
        let local = rules.rights(&Principal::Local, &policy);
        assert!(local.roots.is_none() && local.tools.is_none());
        let again = rules.rights(&subject("alice", &["eng"], Scopes::ALL), &policy);
        assert!(Arc::ptr_eq(&alice, &again), "rights are made once per set of matching rules");
    }

    #[test]
    fn a_rule_root_outside_the_server_roots_or_a_bad_deny_rule_refuses_to_start() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(base.join("root")).unwrap();
        let policy = Policy::new(&[DirSpec { path: base.join("root"), mode: Mode::ReadOnly }], &[], false).unwrap();
        let spec = |roots: Vec<DirSpec>, deny: Vec<String>| AccessSpec {
            who: WhoSpec::Token("ci".into()),
            roots: Some(roots),
            tools: None,
            deny,
        };
        let outside = spec(vec![DirSpec { path: "/usr".into(), mode: Mode::ReadOnly }], vec![]);
        let err = AccessRules::new(&[outside], &policy).unwrap_err().to_string();
        assert!(err.starts_with("access rule 1:") && err.contains("outside every configured root"), "{err}");
        let bad = spec(vec![], vec!["a[".into()]);
        assert!(AccessRules::new(&[bad], &policy).unwrap_err().to_string().contains("deny rule `a[`"));
    }
}
