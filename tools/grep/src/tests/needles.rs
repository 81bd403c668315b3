//! Files the host rules out by the search's needles (read whole, none of
//! them in it) give the same output, positions, counts and progress as when
//! every file is read into the search: binary files among them are counted
//! binary, one with a NUL byte past the first 64 KiB is searched up to it,
//! and a file larger than a whole read is searched as before.

use cordon_sdk::items::ItemStream;
use serde_json::{Value, json};

use super::{Tree, chunks};
use crate::guard::HEAD;
use crate::source::WHOLE;
use crate::{Grep, Tuning};

/// Lines of `word`, `size` bytes or a little more, with a NUL byte at `nul`.
fn lines(word: &str, size: usize, nul: Option<usize>) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(size + 64);
    let mut k = 0;
    while bytes.len() < size {
        bytes.extend_from_slice(format!("{word} {k}\n").as_bytes());
        k += 1;
    }
    if let Some(at) = nul {
        bytes[at] = 0;
    }
    bytes
}

/// A tree where most files lack `needle`, some binary, some large; the
/// files that hold it are among them in path order.
fn tree() -> Tree {
    let tree = Tree::new();
    tree.write("a/hay.txt", lines("hay", 3_000, None));
    tree.write("a/needle.txt", b"hay\nneedle one\nhay\nhay\nneedle two\n");
    tree.write("a/zero.txt", b"");
    tree.write("b/binary_early_hay.bin", lines("hay", 20_000, Some(100)));
    tree.write("b/binary_early_needle.bin", [lines("hay", 20_000, Some(100)), b"needle\n".to_vec()].concat());
    tree.write("b/late_nul_hay.bin", lines("hay", 200_000, Some(HEAD + 7_000)));
    tree.write("b/nul_at_64_kib_hay.bin", lines("hay", 100_000, Some(HEAD)));
    tree.write(
        "b/late_nul_needle.bin",
        [b"needle first\n".to_vec(), lines("hay", 200_000, Some(HEAD + 7_000))].concat(),
    );
    tree.write("c/big_hay.txt", lines("hay", WHOLE + 10_000, None));
    tree.write("c/big_needle_at_end.txt", [lines("hay", WHOLE + 10_000, None), b"needle end\n".to_vec()].concat());
    tree.write("c/mid_hay.txt", lines("hay", 300_000, None));
    tree.write("c/mid_needle.txt", [lines("hay", 300_000, None), b"a needle\n".to_vec()].concat());
    tree.write("d/almost.txt", b"needl\needle\nNEEDLE\n");
    tree
}

/// What a search gave, and what it read.
struct Searched {
    chunks: Vec<(String, String, bool)>,
    info: Value,
    /// Files finished and bytes searched, as progress reports them.
    scanned: (u64, u64),
    ruled_out: u64,
}

fn search(tree: &Tree, args: &Value, tuning: Tuning) -> Searched {
    let mut grep = Grep::open_tuned(&tree.roots(), &args.to_string(), (None, None), tuning).unwrap();
    let chunks = chunks(&mut grep, 120);
    let (scanned, ruled_out) = (grep.items.source().scanned(), grep.items.source().ruled_out());
    Searched { chunks, info: ItemStream::info(&grep), scanned: (scanned.files, scanned.bytes), ruled_out }
}

#[test]
fn files_ruled_out_by_the_needles_change_nothing_but_what_is_read_into_the_search() {
    let tree = tree();
    let modes = [
        json!({"pattern": "needle", "output_mode": "count"}),
        json!({"pattern": "needle", "output_mode": "files_with_matches"}),
        json!({"pattern": "needle \\w+", "context_before": 1, "context_after": 1}),
        json!({"pattern": "needle", "binary": true, "output_mode": "count"}),
        json!({"pattern": "need|needle", "multiline": true}),
        json!({"pattern": "NEE", "case_insensitive": true, "output_mode": "count"}),
        json!({"pattern": "nee", "smart_case": true, "output_mode": "count"}),
        json!({"pattern": "NEEDLE", "case_insensitive": true, "output_mode": "count"}),
        json!({"pattern": "Needle \\w", "smart_case": true}),
        json!({"pattern": "[a-z]+ needle", "output_mode": "count"}),
        json!({"pattern": "needle (", "fixed_strings": true, "output_mode": "count"}),
    ];
    for args in &modes {
        for memory in [None, Some(4 << 20)] {
            for batch in [None, Some(1)] {
                let tuning = Tuning { memory, batch, no_needles: false };
                let with = search(&tree, args, tuning);
                let every = search(&tree, args, Tuning { no_needles: true, ..tuning });
                let what = format!("{args} memory {memory:?} batch {batch:?}");
                // Checkpoints (empty chunks) come with the time spent, and so do
                // the positions inside a split item, which name the step before
                // it; the text and the position after each item come with the files.
                let text = |s: &Searched| s.chunks.iter().map(|c| c.0.as_str()).collect::<String>();
                let ends = |s: &Searched| {
                    let ended = s.chunks.iter().filter(|c| !c.0.is_empty() && !c.2);
                    ended.map(|c| c.1.clone()).collect::<Vec<_>>()
                };
                assert_eq!(text(&with), text(&every), "{what}: the output");
                assert_eq!(ends(&with), ends(&every), "{what}: the position after each item");
                assert_eq!(with.info, every.info, "{what}");
                assert_eq!(with.scanned, every.scanned, "{what}: progress");
                assert_eq!(every.ruled_out, 0, "{what}");
                // At least `hay`, `zero` and `binary_early_hay` hold no needle.
                assert!(with.ruled_out >= 3, "{what}: {} ruled out", with.ruled_out);
            }
        }
    }
    let Searched { chunks: found, info, ruled_out, .. } = search(&tree, &modes[0], Tuning::default());
    // `hay`, `zero`, `binary_early_hay` (counted binary all the same) and
    // `almost`, and of the larger ones read whole `mid_hay` (`late_nul_hay`
    // and `nul_at_64_kib_hay` are read into the search: their NUL byte lies
    // past the first 64 KiB).
    assert_eq!(ruled_out, 5);
    let counts: Vec<Value> =
        found.iter().filter(|c| !c.0.is_empty()).map(|c| serde_json::from_str(&c.0).unwrap()).collect();
    let names: Vec<&str> = counts.iter().map(|c| c["path"].as_str().unwrap().rsplit_once('/').unwrap().1).collect();
    assert_eq!(
        names,
        ["needle.txt", "late_nul_needle.bin", "big_needle_at_end.txt", "mid_needle.txt"],
        "the binary file's needle is not searched, nor the hay"
    );
    assert_eq!((info["binary_files"].as_u64(), info["files_searched"].as_u64()), (Some(5), Some(13)), "{info}");
}
