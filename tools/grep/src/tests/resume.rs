//! Resume positions: a search reopened after any chunk goes on with exactly
//! the bytes that would have followed, and stopping a search run inside a
//! file (small batches) never shows in the output.

use cordon_sdk::ErrorCode;
use cordon_sdk::items::ItemStream;
use serde_json::{Value, json};

use super::{Tree, chunks};
use crate::position::{Counts, Position, Where};
use crate::{Grep, Tuning};

/// A tree of a few files with many matches, CRLF lines, a file without a final
/// newline and one with a late NUL byte.
fn tree() -> Tree {
    let tree = Tree::new();
    let mut seed = 0x9e37_79b9_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let words = ["needle", "hay", "stack", "x12", "日本語", "Needle", "\t"];
    for (i, name) in ["a.txt", "b/c.txt", "b/d.rs", "b-e.txt", "z.md"].iter().enumerate() {
        let mut text = String::new();
        for line in 0..40 + i * 13 {
            for _ in 0..next() % 6 {
                text.push_str(words[(next() % words.len() as u64) as usize]);
                text.push(' ');
            }
            text.push_str(if line % 5 == 2 { "\r\n" } else { "\n" });
        }
        if i == 2 {
            text.push_str("needle at the end");
        }
        tree.write(name, text);
    }
    let mut late = "needle hay\n".repeat(7000).into_bytes();
    late.extend_from_slice(b"needle\0\nneedle\n");
    tree.write("late.bin", late);
    tree
}

fn whole(tree: &Tree, args: &Value, batch: Option<usize>) -> Vec<(String, String, bool)> {
    let mut grep =
        Grep::open_tuned(&tree.roots(), &args.to_string(), (None, None), Tuning { batch, ..Tuning::default() })
            .unwrap();
    chunks(&mut grep, 80)
}

fn text(chunks: &[(String, String, bool)]) -> String {
    chunks.iter().map(|(t, _, _)| t.as_str()).collect()
}

#[test]
fn small_batches_give_the_same_output() {
    let tree = tree();
    for args in [
        json!({"pattern": "needle"}),
        json!({"pattern": "needle", "context_before": 2, "context_after": 3}),
        json!({"pattern": "needle", "context_after": 1, "case_insensitive": true}),
        json!({"pattern": "hay\\s+\\S+\\s+needle", "multiline": true, "context_before": 1}),
    ] {
        let reference = text(&whole(&tree, &args, None));
        assert!(reference.len() > 1000, "{args}");
        for batch in [1, 2, 5] {
            assert_eq!(text(&whole(&tree, &args, Some(batch))), reference, "{args} batch {batch}");
        }
    }
}

#[test]
fn reopening_after_any_chunk_continues_exactly() {
    let tree = tree();
    for (args, batch) in [
        (json!({"pattern": "needle", "context_before": 1, "context_after": 2}), Some(3)),
        (json!({"pattern": "x[0-9]+|日本"}), None),
        (json!({"pattern": "needle", "output_mode": "count"}), None),
        (json!({"pattern": "hay", "output_mode": "files_with_matches"}), None),
    ] {
        let all = whole(&tree, &args, batch);
        let step = (all.len() / 60).max(1);
        for i in (0..all.len()).step_by(step) {
            let resume = &all[i].1;
            let mut grep = Grep::open_tuned(
                &tree.roots(),
                &args.to_string(),
                (Some(resume), None),
                Tuning { batch, ..Tuning::default() },
            )
            .unwrap();
            let rest = chunks(&mut grep, 80);
            assert_eq!(text(&rest), text(&all[i + 1..]), "{args} after chunk {i} ({resume})");
        }
    }
}

#[test]
fn counts_carry_over_a_reopened_search() {
    let tree = tree();
    let args = json!({"pattern": "needle"}).to_string();
    let mut grep = Grep::open(&tree.roots(), &args, None).unwrap();
    let all = chunks(&mut grep, u32::MAX);
    let total = grep.info();
    let mut reopened = Grep::open(&tree.roots(), &args, Some(&all[all.len() / 2].1)).unwrap();
    chunks(&mut reopened, u32::MAX);
    assert_eq!(reopened.info(), total);
}

#[test]
fn a_changed_file_is_stale_and_a_deleted_one_is_passed_over() {
    let tree = tree();
    let args = json!({"pattern": "needle"}).to_string();
    let mut grep = Grep::open(&tree.roots(), &args, None).unwrap();
    let all = chunks(&mut grep, u32::MAX);
    let in_a = all.iter().position(|(t, _, _)| t.contains("a.txt")).unwrap();
    let resume = all[in_a].1.clone();
    tree.write("a.txt", "x".repeat(100_000));
    let err = Grep::open(&tree.roots(), &args, Some(&resume)).err().map(|e| e.code);
    let err = err.or_else(|| {
        let mut grep = Grep::open(&tree.roots(), &args, Some(&resume)).unwrap();
        cordon_sdk::Stream::next(&mut grep, cordon_sdk::Budget { bytes: 1000, items: 1 }).err().map(|e| e.code)
    });
    assert_eq!(err, Some(ErrorCode::Stale));
    std::fs::remove_file(tree.root().join("a.txt")).unwrap();
    let mut grep = Grep::open(&tree.roots(), &args, Some(&resume)).unwrap();
    let rest = chunks(&mut grep, 80);
    let expected: String =
        all.iter().skip(in_a + 1).filter(|(t, _, _)| !t.contains("a.txt")).map(|c| c.0.clone()).collect();
    assert_eq!(text(&rest), expected);
}

#[test]
fn positions_outside_the_path_or_malformed_are_refused() {
    let tree = tree();
    let args = json!({"pattern": "needle", "path": "b"}).to_string();
    let outside = format!("b0,0,0,0,0\tE\t{}", tree.abs("a.txt"));
    assert_eq!(Grep::open(&tree.roots(), &args, Some(&outside)).err().unwrap().code, ErrorCode::InvalidArgument);
    assert_eq!(Grep::open(&tree.roots(), &args, Some("bnonsense")).err().unwrap().code, ErrorCode::InvalidArgument);
}

#[test]
fn a_search_that_finds_little_checkpoints_and_resumes_exactly_from_each_checkpoint() {
    let tree = Tree::new();
    for i in 0..2500 {
        let (ext, text) = if i % 1000 == 7 { ("rs", "hay\nneedle here\n") } else { ("txt", "hay stack\n") };
        tree.write(&format!("d{}/f{i:04}.{ext}", i / 100), text);
    }
    let data = |chunks: &[(String, String, bool)]| -> Vec<String> {
        chunks.iter().filter(|(t, _, _)| !t.is_empty()).map(|(t, _, _)| t.clone()).collect()
    };
    // Files searched without a match, then files the walk leaves out.
    for (args, searched) in
        [(json!({"pattern": "needle"}), 2500), (json!({"pattern": "needle", "include": ["*.rs"]}), 3)]
    {
        let mut grep = Grep::open(&tree.roots(), &args.to_string(), None).unwrap();
        let all = chunks(&mut grep, 1000);
        assert_eq!(data(&all).len(), 3, "{all:?}");
        let checkpoints: Vec<usize> = (0..all.len()).filter(|&i| all[i].0.is_empty()).collect();
        assert!(checkpoints.len() >= 2, "{args}: 2500 files with 3 matches make checkpoints: {all:?}");
        for &i in &checkpoints {
            assert!(all[i].1.contains("\tE\t"), "a checkpoint falls at a file's end: {}", all[i].1);
            let mut rest = Grep::open(&tree.roots(), &args.to_string(), Some(&all[i].1)).unwrap();
            let rest = chunks(&mut rest, 1000);
            assert_eq!(data(&rest), data(&all[i + 1..]), "{args} resumed at {}", all[i].1);
            let mut resumed = Grep::open(&tree.roots(), &args.to_string(), Some(&all[i].1)).unwrap();
            chunks(&mut resumed, 1000);
            assert_eq!(ItemStream::info(&resumed)["files_searched"], searched, "counts go on from the checkpoint");
        }
        // Reopened at the last match (as a shard is at its boundary), the work
        // after it checkpoints too.
        let last = all.iter().rposition(|(t, _, _)| !t.is_empty()).unwrap();
        let mut rest = Grep::open(&tree.roots(), &args.to_string(), Some(&all[last].1)).unwrap();
        let rest = chunks(&mut rest, 1000);
        assert!(!rest.is_empty() && rest.iter().all(|(t, _, _)| t.is_empty()), "{args}: after a resume: {rest:?}");
    }
}

#[test]
fn a_shard_from_a_boundary_the_filters_leave_out_checkpoints_before_any_file_is_kept() {
    let tree = Tree::new();
    for i in 0..1500 {
        tree.write(&format!("d{}/f{i:04}.txt", i / 100), "hay stack\n");
    }
    tree.write("a/x.rs", "needle\n");
    let args = json!({"pattern": "needle", "include": ["*.rs"]}).to_string();
    // A directory and a file left out as the boundaries `split` might give.
    for at in ["d1", "d1/f0150.txt"] {
        let start = format!("b{}", crate::position::encode(&Counts::default(), Where::Start, &tree.abs(at)));
        let mut shard = Grep::open_range(&tree.roots(), &args, Some(&start), None).unwrap();
        let chunks = chunks(&mut shard, 1000);
        assert!(!chunks.is_empty() && chunks.iter().all(|(t, _, _)| t.is_empty()), "from {at}: {chunks:?}");
    }
}

#[test]
fn a_count_names_each_file_once_at_its_end_and_checkpoints_between() {
    let tree = Tree::new();
    for i in 0..600 {
        tree.write(&format!("d{}/f{i:04}.txt", i / 100), "hay\n");
    }
    let odd = "q\"u\\o\tx.rs";
    tree.write(odd, "needle\nneedle\n");
    tree.write("z/last.rs", "needle\n");
    let args = json!({"pattern": "needle", "output_mode": "count"}).to_string();
    let mut grep = Grep::open(&tree.roots(), &args, None).unwrap();
    let all = chunks(&mut grep, 1000);
    let items: Vec<Value> =
        all.iter().filter(|(t, _, _)| !t.is_empty()).map(|(t, _, _)| serde_json::from_str(t).unwrap()).collect();
    let expected = [json!({"path": tree.abs(odd), "count": 2}), json!({"path": tree.abs("z/last.rs"), "count": 1})];
    assert_eq!(items, expected, "a name that JSON escapes is written as before");
    let checkpoints = all.iter().filter(|(t, _, _)| t.is_empty()).count();
    assert!(checkpoints >= 1, "600 files without a match make a checkpoint: {all:?}");
    for (i, (item, resume, _)) in all.iter().enumerate() {
        let position = Position::decode(resume.strip_prefix('b').unwrap()).unwrap();
        assert_eq!(position.at, Where::End, "a count never stops inside a file: {resume}");
        assert!(tree.root().join(&position.path).is_file(), "{resume} names a file searched");
        if item.is_empty() {
            let mut rest = Grep::open(&tree.roots(), &args, Some(resume)).unwrap();
            assert_eq!(text(&chunks(&mut rest, 1000)), text(&all[i + 1..]), "{resume}");
        }
    }
}

#[test]
fn a_binary_tail_that_stops_a_full_batch_ends_its_file_once() {
    let tree = Tree::new();
    // Past the head read in one call, so the NUL is found while searching.
    let mut late = "hay\n".repeat(20_000).into_bytes();
    late.extend_from_slice(b"needle\nhay\n\0\nneedle\n");
    tree.write("late.bin", late);
    tree.write("later.txt", "needle\n");
    let args = json!({"pattern": "needle", "context_after": 3});
    let mut grep = Grep::open_tuned(
        &tree.roots(),
        &args.to_string(),
        (None, None),
        Tuning { batch: Some(1), ..Tuning::default() },
    )
    .unwrap();
    let all = chunks(&mut grep, 1000);
    let items: Vec<Value> =
        all.iter().filter(|(t, _, _)| !t.is_empty()).map(|(t, _, _)| serde_json::from_str(t).unwrap()).collect();
    assert_eq!(items.len(), 2, "the match before the NUL, and the next file's: {items:?}");
    assert_eq!(ItemStream::info(&grep)["binary_files"], 1, "the binary file is counted once");
}
