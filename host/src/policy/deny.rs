//! Deny rules: glob patterns, relative to a root, that no tool may open or list.
//!
//! How a pattern reads, like a line of `.gitignore`:
//! - `*` and `?` stay within one path component, `**` crosses components;
//! - a pattern with no `/` (`*.pem`, `.env`) matches a name at any depth;
//!   one with a `/` (`.git/**`, `secrets/*.key`) is anchored at the root;
//! - a leading `/` only anchors (`/build`);
//! - a path is denied when it, or any directory above it, matches: `.git`
//!   denies everything under `.git`, and so does `.git/**` (which also
//!   denies `.git` itself); `.git/**` is anchored, so only the root's own
//!   `.git` is meant: `**/.git/**` (or plain `.git`) also covers nested clones;
//! - unlike `.gitignore`, there are no exceptions: a rule starting with `!`
//!   is refused (a deny list only takes paths away; re-allowing a path under
//!   a denied directory would let a tool list its way to its neighbours).

use std::fmt;
use std::path::{Component, Path};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// A set of deny rules, compiled.
#[derive(Debug, Clone)]
pub struct DenyRules {
    set: GlobSet,
    /// For each glob in `set`, the index of the rule it came from.
    origin: Vec<usize>,
    rules: Vec<String>,
}

/// A rule that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    kind: ErrorKind,
    rule: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ErrorKind {
    /// The rule is empty, or only `/`.
    Empty,
    /// The rule names a parent directory, which could never match inside a root.
    ParentDir,
    /// The rule starts with `!`: `.gitignore`'s negation, which deny rules do not have.
    Negation,
    /// The glob does not parse; the glob library says why.
    Syntax(String),
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rule = &self.rule;
        match &self.kind {
            ErrorKind::Empty => write!(f, "deny rule `{rule}` is empty"),
            ErrorKind::ParentDir => write!(f, "deny rule `{rule}` contains `..`; rules are relative to each root"),
            ErrorKind::Negation => write!(
                f,
                "deny rule `{rule}` is a negation; deny rules have no exceptions (list only what to deny, or write \
                 `\\!` for a name that starts with `!`)"
            ),
            ErrorKind::Syntax(why) => write!(f, "deny rule `{rule}` is not a valid glob: {why}"),
        }
    }
}

impl std::error::Error for RuleError {}

impl DenyRules {
    /// Compiles `rules`; the first one that cannot be used is the error.
    pub fn new<S: AsRef<str>>(rules: &[S]) -> Result<DenyRules, RuleError> {
        let mut builder = GlobSetBuilder::new();
        let mut origin = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            let rule = rule.as_ref();
            let fail = |kind| RuleError { kind, rule: rule.to_string() };
            if rule.starts_with('!') {
                return Err(fail(ErrorKind::Negation));
            }
            let anchored = rule.trim_start_matches('/');
            let body = anchored.trim_end_matches('/');
            if body.is_empty() {
                return Err(fail(ErrorKind::Empty));
            }
            if body.split('/').any(|part| part == "..") {
                return Err(fail(ErrorKind::ParentDir));
            }
            // No `/` (after the trailing one of a directory): a name at any depth.
            let pattern = if anchored == rule && !body.contains('/') { format!("**/{body}") } else { body.to_string() };
            let mut patterns = vec![pattern.clone()];
            if let Some(dir) = pattern.strip_suffix("/**") {
                patterns.push(dir.to_string());
            }
            for pattern in patterns {
                let glob = GlobBuilder::new(&pattern)
                    .literal_separator(true)
                    .backslash_escape(true)
                    .build()
                    .map_err(|e| fail(ErrorKind::Syntax(e.kind().to_string())))?;
                builder.add(glob);
                origin.push(index);
            }
        }
        let set = builder.build().map_err(|e| RuleError {
            kind: ErrorKind::Syntax(e.to_string()),
            rule: rules.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(", "),
        })?;
        Ok(DenyRules { set, origin, rules: rules.iter().map(|r| r.as_ref().to_string()).collect() })
    }

    /// No rules: nothing is denied.
    pub fn none() -> DenyRules {
        DenyRules::new::<&str>(&[]).expect("no rules always compile")
    }

    /// The rules as written.
    pub fn rules(&self) -> &[String] {
        &self.rules
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rule that denies `relative` (a path relative to its root), matching
    /// it and every directory above it; `None` when it is allowed. `.` and empty
    /// paths (the root itself) are never denied; `..` is applied as it comes
    /// (the directory before it was checked too, which can only deny more).
    pub fn denied(&self, relative: &Path) -> Option<&str> {
        if self.is_empty() {
            return None;
        }
        let mut prefix = std::path::PathBuf::new();
        for component in relative.components() {
            match component {
                Component::Normal(name) => prefix.push(name),
                Component::CurDir | Component::RootDir | Component::Prefix(_) => continue,
                Component::ParentDir => {
                    prefix.pop();
                    continue;
                }
            }
            if let Some(&glob) = self.set.matches(&prefix).first() {
                return Some(&self.rules[self.origin[glob]]);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(list: &[&str]) -> DenyRules {
        DenyRules::new(list).unwrap()
    }

    #[test]
    fn a_name_without_a_slash_matches_at_any_depth() {
        let r = rules(&[".env", "*.pem"]);
        assert_eq!(r.denied(Path::new(".env")), Some(".env"));
        assert_eq!(r.denied(Path::new("app/config/.env")), Some(".env"));
        assert_eq!(r.denied(Path::new("keys/server.pem")), Some("*.pem"));
        assert_eq!(r.denied(Path::new("app/.envrc")), None);
        assert_eq!(r.denied(Path::new("pem")), None);
    }

    #[test]
    fn a_pattern_with_a_slash_is_anchored_at_the_root() {
        let r = rules(&["secrets/*.key", "/build"]);
        assert_eq!(r.denied(Path::new("secrets/a.key")), Some("secrets/*.key"));
        assert_eq!(r.denied(Path::new("app/secrets/a.key")), None);
        assert_eq!(r.denied(Path::new("secrets/sub/a.key")), None, "`*` stays within a component");
        assert_eq!(r.denied(Path::new("build/out.o")), Some("/build"));
        assert_eq!(r.denied(Path::new("src/build")), None);
    }

    #[test]
    fn a_denied_directory_denies_everything_under_it() {
        let r = rules(&[".git/**", "node_modules/"]);
        assert_eq!(r.denied(Path::new(".git")), Some(".git/**"));
        assert_eq!(r.denied(Path::new(".git/objects/ab/cdef")), Some(".git/**"));
        assert_eq!(r.denied(Path::new("./.git/config")), Some(".git/**"));
        assert_eq!(r.denied(Path::new("web/node_modules/x/index.js")), Some("node_modules/"));
        assert_eq!(r.denied(Path::new(".github/workflows/ci.yml")), None);
    }

    #[test]
    fn the_root_itself_and_empty_rules_deny_nothing() {
        assert_eq!(rules(&["**"]).denied(Path::new(".")), None);
        assert_eq!(DenyRules::none().denied(Path::new(".env")), None);
        assert!(DenyRules::none().is_empty());
    }

    #[test]
    fn unusable_rules_are_refused_with_a_sentence() {
        let err = DenyRules::new(&["a[b"]).unwrap_err();
        assert!(err.to_string().starts_with("deny rule `a[b` is not a valid glob"), "{err}");
        assert_eq!(DenyRules::new(&["/"]).unwrap_err().to_string(), "deny rule `/` is empty");
        assert!(DenyRules::new(&["../x"]).unwrap_err().to_string().contains("contains `..`"));
        let err = DenyRules::new(&["secrets/**", "!secrets/README.md"]).unwrap_err();
        assert!(err.to_string().starts_with("deny rule `!secrets/README.md` is a negation"), "{err}");
        assert_eq!(rules(&["\\!important"]).denied(Path::new("a/!important")), Some("\\!important"));
    }

    #[test]
    fn an_anchored_directory_rule_covers_only_the_roots_own_and_a_double_star_every_one() {
        let r = rules(&[".git/**"]);
        assert_eq!(r.denied(Path::new("vendor/lib/.git/config")), None, "anchored at the root");
        let r = rules(&["**/.git/**"]);
        assert_eq!(r.denied(Path::new(".git/config")), Some("**/.git/**"));
        assert_eq!(r.denied(Path::new("vendor/lib/.git/config")), Some("**/.git/**"));
        assert_eq!(r.denied(Path::new("vendor/lib/.git")), Some("**/.git/**"));
    }
}
