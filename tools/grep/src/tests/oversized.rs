//! What cannot be searched is named, at its place, and the rest searched: a
//! line longer than the search may hold (a small memory makes a 2 MiB line
//! too long, so nothing large is written), and ignore files too large to
//! apply (a sparse one of 3 GiB stores nothing). Positions and shards stay
//! exact around them.

use cordon_sdk::Budget;
use cordon_sdk::items::ItemStream;
use serde_json::{Value, json};

use super::{Tree, chunks};
use crate::{Grep, Tuning};

/// The memory the instance may use in these tests: a search holds 1 MiB.
const MEMORY: u64 = 4 << 20;

fn tuned() -> Tuning {
    Tuning { memory: Some(MEMORY), ..Tuning::default() }
}

/// A tree with a 3 GiB sparse `.ignore`, a line of 2 MiB between two
/// matches, and in `sub/` a `.gitignore` over 1 MiB that would leave out
/// `*.log`.
fn tree() -> Tree {
    let tree = Tree::new();
    std::fs::File::create(tree.root().join(".ignore")).unwrap().set_len(3 << 30).unwrap();
    let mut big = b"needle first\n".to_vec();
    big.extend(std::iter::repeat_n(b'x', 2 << 20));
    big.extend_from_slice(b"\nneedle after\n");
    tree.write("a.txt", "needle a\n").write("big.txt", big).write("z.txt", "needle z\n");
    tree.write("sub/.gitignore", "*.log\n".repeat((1 << 20) / 6 + 1)).write("sub/x.log", "needle log\n");
    tree
}

/// Every chunk of the range `start..end`, one item per chunk, and the info.
fn range(
    tree: &Tree,
    args: &Value,
    (start, end): (Option<&str>, Option<&str>),
) -> (Vec<(String, String, bool)>, Value) {
    let mut grep = Grep::open_tuned(&tree.roots(), &args.to_string(), (start, end), tuned()).unwrap();
    (chunks(&mut grep, 1 << 20), grep.info())
}

fn text(chunks: &[(String, String, bool)]) -> String {
    chunks.iter().map(|(t, _, _)| t.as_str()).collect()
}

/// The items of chunks, as `(path relative to the tree, what)`: a match's
/// text or count, or `not_searched: why` / `not_applied: why`.
fn shown(tree: &Tree, chunks: &[(String, String, bool)]) -> Vec<(String, String)> {
    let items = chunks.iter().filter(|(t, _, _)| !t.is_empty()).map(|(t, _, _)| serde_json::from_str::<Value>(t));
    items
        .map(|item| {
            let item = item.unwrap();
            let path = item["path"].as_str().unwrap().strip_prefix(&format!("{}/", tree.root().display())).unwrap();
            let what = match (item.get("text"), item.get("not_searched"), item.get("not_applied")) {
                (Some(text), _, _) => text.as_str().unwrap().to_string(),
                (_, Some(why), _) => format!("not_searched: {}", why.as_str().unwrap()),
                (_, _, Some(why)) => format!("not_applied: {}", why.as_str().unwrap()),
                _ => item.get("count").map_or("a match".to_string(), |n| format!("count {n}")),
            };
            (path.to_string(), what)
        })
        .collect()
}

#[test]
fn what_cannot_be_searched_is_named_at_its_place_and_the_rest_is_searched() {
    let tree = tree();
    let (all, info) = range(&tree, &json!({"pattern": "needle"}), (None, None));
    let seen = shown(&tree, &all);
    let paths: Vec<&str> = seen.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, [".ignore", "a.txt", "big.txt", "big.txt", "sub/.gitignore", "sub/x.log", "z.txt"], "{seen:?}");
    assert_eq!(seen[2].1, "needle first", "the lines before the long one are searched");
    assert_eq!(
        seen[3].1,
        "not_searched: a line longer than 1 MiB, a quarter of the 4 MiB of memory this search may use; \
         the lines before it were searched"
    );
    assert!(seen[0].1.starts_with("not_applied: an ignore file larger than 1 MiB"), "{seen:?}");
    assert_eq!(seen[5].1, "needle log", "the rules of the ignore file not applied are not applied");
    assert_eq!((&info["matches"], &info["errors"], &info["ignore_files_skipped"]), (&json!(4), &json!(1), &json!(2)));
    // Listing the files with a match stops at a file's first: the long line
    // of big.txt is never reached.
    for (mode, said) in [("count", 3), ("files_with_matches", 2)] {
        let (some, _) = range(&tree, &json!({"pattern": "needle", "output_mode": mode}), (None, None));
        let named: Vec<_> = shown(&tree, &some).into_iter().filter(|(_, what)| what.starts_with("not_")).collect();
        assert_eq!(named.len(), said, "{mode}: {named:?}");
    }
}

#[test]
fn a_file_searched_by_name_that_cannot_be_searched_says_so() {
    let tree = tree();
    tree.write("one.txt", vec![b'y'; 2 << 20]);
    let (all, info) = range(&tree, &json!({"pattern": "needle", "path": "one.txt"}), (None, None));
    let seen = shown(&tree, &all);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].1.starts_with("not_searched: a line longer than 1 MiB"), "{seen:?}");
    assert_eq!((&info["errors"], &info["files_searched"]), (&json!(1), &json!(1)));
    // With the whole memory, the same line is searched.
    let mut grep = Grep::open(
        &tree.roots(),
        &json!({"pattern": "y{3}", "path": "one.txt", "output_mode": "count"}).to_string(),
        None,
    )
    .unwrap();
    let counted = text(&chunks(&mut grep, 1 << 20));
    assert!(counted.contains("\"count\":1"), "{counted}");
}

#[test]
fn reopening_after_any_item_or_splitting_anywhere_stays_exact() {
    let tree = tree();
    for args in [json!({"pattern": "needle"}), json!({"pattern": "needle", "path": "sub"})] {
        let (all, _) = range(&tree, &args, (None, None));
        assert!(all.iter().any(|(t, _, _)| t.contains("not_applied")), "{args}: {all:?}");
        for (i, (_, resume, _)) in all.iter().enumerate() {
            let (rest, _) = range(&tree, &args, (Some(resume), None));
            assert_eq!(text(&rest), text(&all[i + 1..]), "{args} after chunk {i} ({resume})");
        }
        for count in [2, 3, 5] {
            for start in std::iter::once(None).chain(all.iter().map(|(_, r, _)| Some(r.as_str()))) {
                let cuts = Grep::split(&tree.roots(), &args.to_string(), start, count).unwrap();
                let starts = std::iter::once(start.map(str::to_string)).chain(cuts.iter().cloned().map(Some));
                let ends = cuts.iter().cloned().map(Some).chain(std::iter::once(None));
                let sharded: String =
                    starts.zip(ends).map(|(s, e)| text(&range(&tree, &args, (s.as_deref(), e.as_deref())).0)).collect();
                let from = start.map_or(0, |s| all.iter().position(|(_, r, _)| r == s).unwrap() + 1);
                assert_eq!(sharded, text(&all[from..]), "{args}: {count} shards from {start:?}");
            }
        }
    }
}

#[test]
fn an_ignore_file_above_the_searched_directory_is_named_first_once() {
    let tree = tree();
    let args = json!({"pattern": "needle", "path": "sub"});
    let (all, info) = range(&tree, &args, (None, None));
    let seen = shown(&tree, &all);
    let paths: Vec<&str> = seen.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, [".ignore", "sub/.gitignore", "sub/x.log"], "{seen:?}");
    assert_eq!(info["ignore_files_skipped"], 2);
    // One item at a time: a page after the first goes on after it.
    let mut grep = Grep::open_tuned(&tree.roots(), &args.to_string(), (None, None), tuned()).unwrap();
    let first = cordon_sdk::Stream::next(&mut grep, Budget { bytes: 1 << 20, items: 1 }).unwrap().unwrap();
    let (rest, _) = range(&tree, &args, (Some(&first.resume), None));
    assert_eq!(shown(&tree, &rest).len(), 2, "{rest:?}");
}

#[test]
fn a_matching_line_longer_than_an_eighth_of_the_search_is_cut_in_its_item() {
    let tree = Tree::new();
    let mut long = b"needle ".to_vec();
    long.extend(std::iter::repeat_n(b'"', 300_000));
    tree.write("long.js", [long.as_slice(), b"\n"].concat());
    let (all, _) = range(&tree, &json!({"pattern": "needle"}), (None, None));
    let item: Value = serde_json::from_str(&all[0].0).unwrap();
    assert_eq!(item["text"].as_str().unwrap().len(), (1 << 20) / 8, "{}", &all[0].0[..200]);
    assert_eq!(item["truncated"]["read"], json!({"start_byte": (1 << 20) / 8, "end_byte": long.len()}));
    let (asked, _) = range(&tree, &json!({"pattern": "needle", "max_line_length": 10}), (None, None));
    let item: Value = serde_json::from_str(&asked[0].0).unwrap();
    assert_eq!(item["text"], "needle \"\"\"", "a smaller max_line_length wins");
}
