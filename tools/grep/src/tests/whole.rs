//! Files read whole in one host call (up to `source::WHOLE`) or in part (a
//! larger file, or any file where the search may hold little) give the same
//! output: a NUL byte in the first `guard::HEAD` bytes skips the file, one
//! further on ends it before the NUL's line, wherever it lies; and a search
//! reopened at any position goes on exactly.

use cordon_sdk::items::ItemStream;
use serde_json::{Value, json};

use super::{Tree, chunks};
use crate::guard::HEAD;
use crate::source::WHOLE;
use crate::{Grep, Tuning};

/// A file of `size` bytes or a little more: a `needle` line every 997
/// lines, `hay` lines between, and a NUL byte at `nul`, in the middle of a
/// line. Returns its bytes and the needles before the NUL's line.
fn file(size: usize, nul: Option<usize>) -> (Vec<u8>, u64) {
    let mut bytes = Vec::with_capacity(size + 64);
    let mut before = 0;
    let mut k = 0u64;
    while bytes.len() < size {
        let line = if k % 997 == 3 { format!("needle {k}\n") } else { format!("hay {k}\n") };
        if let Some(at) = nul
            && bytes.len() <= at
            && at < bytes.len() + line.len()
        {
            let mut line = line.into_bytes();
            line[at - bytes.len()] = 0;
            bytes.extend_from_slice(&line);
        } else {
            let needle = line.starts_with("needle");
            bytes.extend_from_slice(line.as_bytes());
            if needle && nul.is_none_or(|at| bytes.len() <= at) {
                before += 1;
            }
        }
        k += 1;
    }
    (bytes, before)
}

/// The tree, and each file's expected count (`None`: binary from its start).
fn tree() -> (Tree, Vec<(&'static str, Option<u64>)>) {
    let tree = Tree::new();
    let files = [
        // Binary from its start.
        ("a_early.bin", 200_000, Some(HEAD - 100)),
        // Whole, a NUL past `HEAD`: cut there.
        ("b_late.bin", 300_000, Some(HEAD + 5_000)),
        // Larger than what is read whole, a NUL in what is: cut there.
        ("c_big_nul_read.bin", WHOLE + 400_000, Some(WHOLE - 50_000)),
        // A NUL in the part read through the guard.
        ("d_big_nul_rest.bin", WHOLE + 400_000, Some(WHOLE + 100_000)),
        ("e_big.txt", WHOLE + 300_000, None),
        ("f_exactly_whole.txt", WHOLE, None),
        ("g_small.txt", 5_000, None),
    ];
    let mut expected = Vec::new();
    for (name, size, nul) in files {
        let (bytes, before) = file(size, nul);
        let size = bytes.len();
        // Cut to the size asked for: `f` is exactly `WHOLE` bytes.
        tree.write(name, &bytes[..size.min(if name.starts_with('f') { WHOLE } else { size })]);
        let binary_from_start = nul.is_some_and(|at| at < HEAD);
        expected.push((name, (!binary_from_start).then_some(before)));
    }
    (tree, expected)
}

fn tuned(memory: Option<u64>, batch: Option<usize>) -> Tuning {
    Tuning { memory, batch, ..Tuning::default() }
}

/// Every chunk of a search, and its info.
fn search(tree: &Tree, args: &Value, tuning: Tuning) -> (Vec<(String, String, bool)>, Value) {
    let mut grep = Grep::open_tuned(&tree.roots(), &args.to_string(), (None, None), tuning).unwrap();
    let all = chunks(&mut grep, 200);
    (all, ItemStream::info(&grep))
}

fn text(chunks: &[(String, String, bool)]) -> String {
    chunks.iter().map(|(t, _, _)| t.as_str()).collect()
}

/// The memory that reads whole files (the default), and one whose search
/// holds 1 MiB, which reads only `HEAD` at first.
const MEMORIES: [Option<u64>; 2] = [None, Some(4 << 20)];

#[test]
fn counts_are_the_needles_before_the_first_nul_line_however_the_file_is_read() {
    let (tree, expected) = tree();
    let args = json!({"pattern": "needle", "output_mode": "count"});
    for memory in MEMORIES {
        let (all, info) = search(&tree, &args, tuned(memory, None));
        let items: Vec<Value> =
            all.iter().filter(|(t, _, _)| !t.is_empty()).map(|(t, _, _)| serde_json::from_str(t).unwrap()).collect();
        let got: Vec<(String, u64)> = items
            .iter()
            .map(|i| {
                let path = i["path"].as_str().unwrap().rsplit('/').next().unwrap().to_string();
                (path, i["count"].as_u64().unwrap())
            })
            .collect();
        let want: Vec<(String, u64)> =
            expected.iter().filter_map(|(name, count)| Some((name.to_string(), (*count)?))).collect();
        assert_eq!(got, want, "memory {memory:?}");
        assert_eq!(info["binary_files"], 4, "memory {memory:?}: {info}");
        assert_eq!(info["files_searched"], 7, "memory {memory:?}: {info}");
        assert_eq!(info["errors"], 0, "memory {memory:?}: {info}");
    }
}

#[test]
fn a_binary_file_is_read_no_further_than_its_first_64_kib() {
    let tree = Tree::new();
    let (bytes, _) = file(WHOLE / 2, Some(1_000));
    tree.write("early.bin", &bytes);
    let args = json!({"pattern": "needle", "output_mode": "count"}).to_string();
    // With the pattern's needles (the host probes the first 64 KiB) and without.
    for no_needles in [false, true] {
        let tuning = Tuning { no_needles, ..Tuning::default() };
        let mut grep = Grep::open_tuned(&tree.roots(), &args, (None, None), tuning).unwrap();
        chunks(&mut grep, 200);
        let scanned = grep.items.source().scanned();
        assert_eq!((scanned.files, scanned.bytes), (1, HEAD as u64), "no_needles {no_needles}");
        assert_eq!(ItemStream::info(&grep)["binary_files"], 1);
    }
}

#[test]
fn content_is_the_same_read_whole_or_in_part_and_resumes_exactly() {
    let (tree, _) = tree();
    let args = json!({"pattern": "needle", "context_before": 1, "context_after": 2});
    let mut outputs = Vec::new();
    for memory in MEMORIES {
        // Small batches stop and restart the search inside each file.
        let tuning = tuned(memory, Some(3));
        let (all, _) = search(&tree, &args, tuning);
        let step = (all.len() / 25).max(1);
        for i in (0..all.len()).step_by(step) {
            let resume = &all[i].1;
            let mut grep = Grep::open_tuned(&tree.roots(), &args.to_string(), (Some(resume), None), tuning).unwrap();
            assert_eq!(text(&chunks(&mut grep, 200)), text(&all[i + 1..]), "memory {memory:?} after chunk {i}");
        }
        outputs.push(text(&all));
    }
    assert!(outputs[0].contains(r#""text":"needle 3""#), "{}", &outputs[0][..200]);
    assert_eq!(outputs[0], outputs[1], "read whole and read in part");
}

#[test]
fn a_multiline_search_also_ends_before_the_line_of_a_nul_past_the_first_64_kib() {
    let tree = Tree::new();
    let (bytes, before) = file(300_000, Some(HEAD + 5_000));
    assert!(before > 0);
    tree.write("late.bin", &bytes);
    for multiline in [false, true] {
        let args = json!({"pattern": "needle \\d+", "multiline": multiline, "output_mode": "count"}).to_string();
        let mut grep = Grep::open(&tree.roots(), &args, None).unwrap();
        let found: Vec<Value> = chunks(&mut grep, 200)
            .iter()
            .filter(|(t, _, _)| !t.is_empty())
            .map(|(t, _, _)| serde_json::from_str(t).unwrap())
            .collect();
        assert_eq!(found.len(), 1, "multiline {multiline}: {found:?}");
        assert_eq!(found[0]["count"], before, "multiline {multiline}");
        assert_eq!(ItemStream::info(&grep)["binary_files"], 1, "multiline {multiline}");
    }
}
