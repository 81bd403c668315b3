//! Shards: the ranges between `split`'s boundaries, searched one by one and
//! concatenated, give exactly the unsharded output, at any count and from any
//! start; a range reopened at one of its own positions goes on exactly; the
//! shards' counts add up to the whole search's.

use cordon_sdk::items::ItemStream;
use serde_json::{Value, json};

use super::{Tree, chunks};
use crate::Grep;

/// Directories of a few files each, some ignored, some hidden, nested.
fn tree() -> Tree {
    let tree = Tree::new();
    tree.write(".gitignore", "ignored/\n*.log\n");
    for d in 0..6 {
        for s in 0..4 {
            for f in 0..3 {
                let text = format!("needle {d} {s} {f}\nhay\nneedle again\n");
                tree.write(&format!("d{d}/s{s}/f{f}.txt"), &text);
            }
        }
        tree.write(&format!("d{d}/top.rs"), "fn needle() {}\n");
    }
    tree.write("ignored/x.txt", "needle\n");
    tree.write("d1/s1/skip.log", "needle\n");
    tree.write(".hidden/h.txt", "needle\n");
    tree.write("z.txt", "needle last\n");
    tree
}

fn roots(tree: &Tree) -> Vec<String> {
    tree.roots()
}

/// The text and positions of the range `start..end`.
fn range(tree: &Tree, args: &Value, start: Option<&str>, end: Option<&str>) -> (Vec<(String, String, bool)>, Value) {
    let mut grep = Grep::open_range(&roots(tree), &args.to_string(), start, end).unwrap();
    let out = chunks(&mut grep, 40);
    (out, ItemStream::info(&grep))
}

fn text(chunks: &[(String, String, bool)]) -> String {
    chunks.iter().map(|(t, _, _)| t.as_str()).collect()
}

/// The output from `start` to the end, shard by shard, with the counts summed.
fn sharded(tree: &Tree, args: &Value, start: Option<&str>, count: u32) -> (String, u64, u64) {
    let cuts = Grep::split(&roots(tree), &args.to_string(), start, count).unwrap();
    assert!(cuts.len() < count.max(1) as usize, "{count} shards: {cuts:?}");
    let mut starts = vec![start.map(str::to_string)];
    starts.extend(cuts.iter().cloned().map(Some));
    let mut ends: Vec<Option<String>> = cuts.iter().cloned().map(Some).collect();
    ends.push(None);
    let (mut out, mut searched, mut matches) = (String::new(), 0, 0);
    for (s, e) in starts.iter().zip(&ends) {
        let (chunks, info) = range(tree, args, s.as_deref(), e.as_deref());
        out.push_str(&text(&chunks));
        searched += info["files_searched"].as_u64().unwrap();
        matches += info["matches"].as_u64().unwrap();
    }
    (out, searched, matches)
}

#[test]
fn shards_concatenate_to_the_unsharded_output_at_any_count() {
    let tree = tree();
    for args in [json!({"pattern": "needle"}), json!({"pattern": "needle", "output_mode": "count"})] {
        let (whole, info) = range(&tree, &args, None, None);
        let whole_text = text(&whole);
        assert!(!whole_text.is_empty());
        for count in [1, 2, 4, 7, 64] {
            let (out, searched, matches) = sharded(&tree, &args, None, count);
            assert_eq!(out, whole_text, "{count} shards of {args}");
            assert_eq!(searched, info["files_searched"].as_u64().unwrap(), "{count} shards");
            assert_eq!(matches, info["matches"].as_u64().unwrap(), "{count} shards");
        }
        let cuts = Grep::split(&roots(&tree), &args.to_string(), None, 4).unwrap();
        assert_eq!(cuts.len(), 3, "a tree of 26 units splits four ways: {cuts:?}");
    }
}

#[test]
fn a_split_from_any_position_covers_exactly_the_rest() {
    let tree = tree();
    let args = json!({"pattern": "needle"});
    let (whole, _) = range(&tree, &args, None, None);
    for (i, (_, resume, _)) in whole.iter().enumerate() {
        let rest = text(&whole[i + 1..]);
        for count in [2, 3, 5] {
            let (out, _, _) = sharded(&tree, &args, Some(resume), count);
            assert_eq!(out, rest, "{count} shards after chunk {i} ({resume})");
        }
    }
}

#[test]
fn a_range_reopened_at_its_own_positions_goes_on_exactly() {
    let tree = tree();
    let args = json!({"pattern": "needle", "context_after": 1});
    let cuts = Grep::split(&roots(&tree), &args.to_string(), None, 3).unwrap();
    let end = cuts.first().map(String::as_str);
    let (chunks, _) = range(&tree, &args, None, end);
    assert!(chunks.len() > 3);
    for (i, (_, resume, _)) in chunks.iter().enumerate() {
        let (rest, _) = range(&tree, &args, Some(resume), end);
        assert_eq!(text(&rest), text(&chunks[i + 1..]), "reopened after chunk {i}");
    }
}

#[test]
fn a_single_file_or_one_shard_is_not_split() {
    let tree = tree();
    let args = json!({"pattern": "needle", "path": "z.txt"});
    assert!(Grep::split(&roots(&tree), &args.to_string(), None, 4).unwrap().is_empty());
    let args = json!({"pattern": "needle"});
    assert!(Grep::split(&roots(&tree), &args.to_string(), None, 1).unwrap().is_empty());
}

#[test]
fn a_named_symlink_to_a_file_is_searched_through_it_but_not_when_walked() {
    let tree = tree();
    std::os::unix::fs::symlink("z.txt", tree.root().join("link.txt")).unwrap();
    let (named, info) = range(&tree, &json!({"pattern": "needle", "path": "link.txt"}), None, None);
    assert_eq!(text(&named).matches("needle last").count(), 1, "ripgrep reads a named link");
    assert_eq!(info["errors"], 0);
    let (walked, _) = range(&tree, &json!({"pattern": "needle last"}), None, None);
    assert_eq!(text(&walked).matches("needle last").count(), 1, "a walk does not follow links: z.txt once");
}
