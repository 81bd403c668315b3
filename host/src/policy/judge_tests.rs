//! Paths judged where they really are: the adversarial probe's findings (a deny
//! rule bypassed by renaming an ancestor, a read-only root nested in a
//! read-write one written through a link, a nested root moved away through a
//! link) and their variants.
#![cfg(test)]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use super::*;

/// A tree under a fresh temporary directory: `dirs` made, `files` written.
fn tree(dirs: &[&str], files: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for d in dirs {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    for f in files {
        std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
        std::fs::write(root.join(f), "secret").unwrap();
    }
    (dir, root)
}

fn policy(roots: &[(PathBuf, Mode)], rules: &[&str]) -> Policy {
    let specs: Vec<DirSpec> = roots.iter().map(|(path, mode)| DirSpec { path: path.clone(), mode: *mode }).collect();
    let rules: Vec<String> = rules.iter().map(|r| r.to_string()).collect();
    Policy::new(&specs, &rules, false).unwrap()
}

/// Judges a move of `from` to `to` (relative to `root`) for a write tool.
fn judge_move(policy: &Policy, root: &Path, from: &str, to: &str) -> Result<(), Refusal> {
    let grants = policy.grants(Access::Write, None);
    policy.judge().judge(&grants, &root.join(from), Intent::MoveTo(&root.join(to)))
}

fn judge_change(policy: &Policy, root: &Path, path: &str) -> Result<(), Refusal> {
    let grants = policy.grants(Access::Write, None);
    policy.judge().judge(&grants, &root.join(path), Intent::Change)
}

#[test]
fn renaming_an_ancestor_of_a_denied_path_is_refused() {
    let (_dir, root) = tree(&["docs"], &["config/master.key", "config/app.yml", "docs/a.md"]);
    let p = policy(&[(root.clone(), Mode::ReadWrite)], &["config/master.key"]);
    let err = judge_move(&p, &root, "config", "cfg").unwrap_err();
    assert!(matches!(&err, Refusal::Uncovers { rule, .. } if rule == "config/master.key"), "{err}");
    assert!(err.to_string().contains("config/master.key"), "{err}");
    assert!(judge_move(&p, &root, "docs", "documents").is_ok(), "a move no rule cares about goes on");
    assert!(matches!(judge_move(&p, &root, "config/master.key", "k").unwrap_err(), Refusal::Denied { .. }));
    assert!(matches!(judge_move(&p, &root, "docs/a.md", "config/master.key").unwrap_err(), Refusal::Denied { .. }));
}

#[test]
fn a_grandparent_renamed_a_double_star_inside_and_a_whole_folder_are_refused_too() {
    let (_dir, root) = tree(&[], &["app/config/master.key", "conf/x/y/secret.yaml", "sec/one", "sec/two"]);
    let rules = ["app/config/master.key", "conf/**/secret.yaml", "sec/*"];
    let p = policy(&[(root.clone(), Mode::ReadWrite)], &rules);
    assert!(matches!(judge_move(&p, &root, "app", "z").unwrap_err(), Refusal::Uncovers { .. }));
    assert!(matches!(judge_move(&p, &root, "conf", "c2").unwrap_err(), Refusal::Uncovers { .. }));
    assert!(judge_move(&p, &root, "conf/x", "conf/w").is_ok(), "still under `conf/**`: the rule still matches");
    assert!(matches!(judge_move(&p, &root, "sec", "sec2").unwrap_err(), Refusal::Uncovers { .. }));
}

#[test]
fn a_folder_moved_into_a_place_a_rule_would_deny_is_refused() {
    let (_dir, root) = tree(&["conf/secrets"], &["tmp/a.yaml", "tmp/readme.txt"]);
    let p = policy(&[(root.clone(), Mode::ReadWrite)], &["conf/secrets/**"]);
    let err = judge_move(&p, &root, "tmp", "conf/secrets/tmp").unwrap_err();
    assert!(matches!(err, Refusal::Denied { .. }), "{err}");
    let (_dir2, root2) = tree(&["conf"], &["tmp/a.yaml"]);
    let p = policy(&[(root2.clone(), Mode::ReadWrite)], &["conf/secrets/*.yaml"]);
    let err = judge_move(&p, &root2, "tmp", "conf/secrets").unwrap_err();
    assert!(matches!(&err, Refusal::Covers { entry, .. } if entry.ends_with("conf/secrets/a.yaml")), "{err}");
}

#[test]
fn a_link_into_a_read_only_root_nested_in_a_read_write_one_is_not_written_through() {
    let (_dir, root) = tree(&["src", "vendor/deep"], &["vendor/v.txt", "a.txt"]);
    symlink("vendor", root.join("lv")).unwrap();
    symlink(".", root.join("self")).unwrap();
    symlink("l2", root.join("l1")).unwrap();
    symlink("vendor/deep", root.join("l2")).unwrap();
    symlink("../vendor", root.join("src/up")).unwrap();
    symlink("vendor/v.txt", root.join("file_link")).unwrap();
    let p = policy(&[(root.clone(), Mode::ReadWrite), (root.join("vendor"), Mode::ReadOnly)], &[]);
    for path in
        ["vendor/v.txt", "lv/v.txt", "lv/new.txt", "self/vendor/n.txt", "l1/x", "src/up/v.txt", "file_link", "lv"]
    {
        let err = judge_change(&p, &root, path).unwrap_err();
        assert!(matches!(err, Refusal::ReadOnly { .. }), "{path}: {err}");
    }
    let err = judge_change(&p, &root, "lv/v.txt").unwrap_err().to_string();
    assert!(err.contains("leads to") && err.contains("read-only root"), "{err}");
    for path in ["a.txt", "src/new.rs", "self/a.txt", "new/dir/file"] {
        assert!(judge_change(&p, &root, path).is_ok(), "{path}");
    }
    assert!(matches!(judge_move(&p, &root, "lv/v.txt", "moved.txt").unwrap_err(), Refusal::ReadOnly { .. }));
    assert!(matches!(judge_move(&p, &root, "a.txt", "lv/a.txt").unwrap_err(), Refusal::ReadOnly { .. }));
    assert!(judge_move(&p, &root, "lv", "link_renamed").is_ok(), "a link moves as itself");
}

#[test]
fn a_nested_root_or_a_folder_holding_one_is_not_moved_however_spelled() {
    let (_dir, root) = tree(&["p/q", "other"], &["p/q/f"]);
    symlink("p", root.join("lp")).unwrap();
    symlink(".", root.join("self")).unwrap();
    symlink("../p", root.join("other/up")).unwrap();
    let p = policy(&[(root.clone(), Mode::ReadWrite), (root.join("p/q"), Mode::ReadOnly)], &[]);
    for from in ["p/q", "lp/q", "p", "self/p", "other/up/q"] {
        let err = judge_move(&p, &root, from, "moved").unwrap_err();
        assert!(matches!(err, Refusal::Root { .. } | Refusal::ReadOnly { .. }), "{from}: {err}");
    }
    let err = judge_move(&p, &root, "self/p", "moved").unwrap_err().to_string();
    assert!(err.contains("holds the root"), "{err}");
    assert!(judge_move(&p, &root, "lp", "lp2").is_ok(), "the link itself is not the root");
    let err = judge_move(&p, &root, "other", "p").unwrap_err().to_string();
    assert!(err.contains("holds the root"), "replacing a folder that holds a root: {err}");
}

#[test]
fn a_move_under_a_large_tree_is_bounded_and_without_rules_nothing_is_walked() {
    let (_dir, root) = tree(&["big/a/b", "big/c"], &["big/a/b/1", "big/a/b/2", "big/c/3"]);
    let p = policy(&[(root.clone(), Mode::ReadWrite)], &["*.pem"]);
    assert!(judge_move(&p, &root, "big", "big2").is_ok());
    let judge = p.judge();
    let (from, to) = (root.join("big"), root.join("big2"));
    let (from, to) = (judge.locate(&from, false).unwrap(), judge.locate(&to, false).unwrap());
    assert!(judge.refuse_uncovering_within(&from, &to, 6).is_ok(), "six entries: all checked");
    let err = judge.refuse_uncovering_within(&from, &to, 5).unwrap_err();
    assert!(matches!(err, Refusal::TooMany { max: 5, .. }), "{err}");
    let none = policy(&[(root.clone(), Mode::ReadWrite)], &[]);
    assert!(judge_move(&none, &root, "big", "big3").is_ok());
    assert!(judge_move(&none, &root, "missing", "elsewhere").is_ok(), "the move itself says it is missing");
}
