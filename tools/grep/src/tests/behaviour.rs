//! What a search finds: items, order, filters, context, binary files, errors.

use cordon_sdk::ErrorCode;
use cordon_sdk::items::ItemStream;
use serde_json::json;

use super::{Tree, error, items, lines, paths};

fn sample() -> Tree {
    let tree = Tree::new();
    tree.write("a.txt", "one needle\ntwo\nneedle needle three\n")
        .write("a/b.txt", "needle in a dir\n")
        .write("a-b.txt", "needle dash\n")
        .write("B.txt", "needle upper\n")
        .write("none.txt", "nothing here\n");
    tree
}

#[test]
fn content_items_carry_lines_offsets_and_submatches_in_path_order() {
    let tree = sample();
    let found = items(&tree, json!({"pattern": "needle"}));
    // Sorted component by component, as `rg --sort path`: "a" < "a-b.txt"
    // < "a.txt", and upper case first.
    assert_eq!(
        lines(&tree, &found),
        [("B.txt".into(), 1), ("a/b.txt".into(), 1), ("a-b.txt".into(), 1), ("a.txt".into(), 1), ("a.txt".into(), 3)]
    );
    let third = &found[4];
    assert_eq!(third["path"], tree.abs("a.txt"));
    assert_eq!(third["byte_offset"], 15);
    assert_eq!(third["text"], "needle needle three");
    assert_eq!(third["submatches"], json!([{"start": 0, "end": 6}, {"start": 7, "end": 13}]));
    assert!(third.get("before").is_none() && third.get("after").is_none() && third.get("lossy").is_none());
}

#[test]
fn files_and_count_modes_give_one_item_per_matching_file() {
    let tree = sample();
    let files = items(&tree, json!({"pattern": "needle", "output_mode": "files_with_matches"}));
    assert_eq!(paths(&tree, &files), ["B.txt", "a/b.txt", "a-b.txt", "a.txt"]);
    assert_eq!(files[0], json!({"path": tree.abs("B.txt")}));
    let counts = items(&tree, json!({"pattern": "needle", "output_mode": "count"}));
    let got: Vec<u64> = counts.iter().map(|c| c["count"].as_u64().unwrap()).collect();
    assert_eq!(got, [1, 1, 1, 2], "matching lines, not matches");
}

#[test]
fn case_options_follow_ripgrep() {
    let tree = Tree::new();
    tree.write("f.txt", "needle\nNeedle\nNEEDLE\n");
    let n = |args| items(&tree, args).len();
    assert_eq!(n(json!({"pattern": "needle"})), 1);
    assert_eq!(n(json!({"pattern": "needle", "case_insensitive": true})), 3);
    assert_eq!(n(json!({"pattern": "needle", "smart_case": true})), 3);
    assert_eq!(n(json!({"pattern": "Needle", "smart_case": true})), 1);
    assert_eq!(n(json!({"pattern": "Needle", "smart_case": true, "case_insensitive": true})), 3);
    assert_eq!(n(json!({"pattern": "need.e", "fixed_strings": true})), 0);
}

#[test]
fn context_lines_attach_to_their_match_and_are_never_repeated() {
    let tree = Tree::new();
    tree.write("f.txt", "1\n2\nM3\n4\nM5\n6\n7\n8\n9\nM10\n11\n");
    let found = items(&tree, json!({"pattern": "M", "context_before": 2, "context_after": 1}));
    let ctx = |v: &serde_json::Value| -> Vec<u64> {
        v.as_array().unwrap().iter().map(|l| l["line"].as_u64().unwrap()).collect()
    };
    let got: Vec<(u64, Vec<u64>, Vec<u64>)> =
        found.iter().map(|i| (i["line"].as_u64().unwrap(), ctx(&i["before"]), ctx(&i["after"]))).collect();
    assert_eq!(got, [(3, vec![1, 2], vec![4]), (5, vec![], vec![6]), (10, vec![8, 9], vec![11])]);
    assert_eq!(found[0]["before"][0], json!({"line": 1, "text": "1"}));
}

#[test]
fn multiline_items_are_blocks_of_lines() {
    let tree = Tree::new();
    tree.write("f.txt", "start\nmiddle\nend\nstart\nend\n");
    let found = items(&tree, json!({"pattern": "start\\n\\w+\\nend", "multiline": true}));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["line"], 1);
    assert_eq!(found[0]["end_line"], 3);
    assert_eq!(found[0]["text"], "start\nmiddle\nend");
    assert_eq!(found[0]["submatches"], json!([{"start": 0, "end": 16}]));
    let count = items(&tree, json!({"pattern": "start\\n(\\w+\\n)?end", "multiline": true, "output_mode": "count"}));
    assert_eq!(count[0]["count"], 2);
}

#[test]
fn ignore_files_hidden_files_and_their_flags() {
    let tree = Tree::new();
    tree.write(".gitignore", "*.log\nbuild/\n")
        .write("src/.ignore", "gen.rs\n")
        .write("keep.txt", "x\n")
        .write("app.log", "x\n")
        .write("build/out.txt", "x\n")
        .write("src/gen.rs", "x\n")
        .write("src/main.rs", "x\n")
        .write(".hidden/h.txt", "x\n")
        .write(".dot.txt", "x\n");
    let files = |args| paths(&tree, &items(&tree, args));
    assert_eq!(files(json!({"pattern": "x"})), ["keep.txt", "src/main.rs"]);
    assert_eq!(
        files(json!({"pattern": "x", "hidden": true})),
        [".dot.txt", ".hidden/h.txt", "keep.txt", "src/main.rs"]
    );
    assert_eq!(
        files(json!({"pattern": "x", "no_ignore": true})),
        ["app.log", "build/out.txt", "keep.txt", "src/gen.rs", "src/main.rs"]
    );
    // A subdirectory still honours the ignore files above it.
    tree.write("src/debug.log", "x\n");
    assert_eq!(files(json!({"pattern": "x", "path": "src"})), ["src/main.rs"]);
    // An ignored or hidden directory named explicitly is searched, as rg does.
    assert_eq!(files(json!({"pattern": "x", "path": "build"})), ["build/out.txt"]);
    assert_eq!(files(json!({"pattern": "x", "path": ".hidden"})), [".hidden/h.txt"]);
    // So is an ignored file.
    assert_eq!(files(json!({"pattern": "x", "path": "app.log"})), ["app.log"]);
}

#[test]
fn include_exclude_and_type_filters() {
    let tree = Tree::new();
    tree.write("a.rs", "x\n").write("b.py", "x\n").write("d/c.rs", "x\n").write("d/e.md", "x\n");
    let files = |args| paths(&tree, &items(&tree, args));
    assert_eq!(files(json!({"pattern": "x", "include": ["*.rs"]})), ["a.rs", "d/c.rs"]);
    assert_eq!(files(json!({"pattern": "x", "exclude": ["*.rs"]})), ["b.py", "d/e.md"]);
    assert_eq!(files(json!({"pattern": "x", "exclude": ["d"]})), ["a.rs", "b.py"]);
    assert_eq!(files(json!({"pattern": "x", "include": ["d/*"]})), ["d/c.rs", "d/e.md"]);
    assert_eq!(files(json!({"pattern": "x", "include": ["*.rs"], "exclude": ["d/**"]})), ["a.rs"]);
    assert_eq!(files(json!({"pattern": "x", "type": "rust"})), ["a.rs", "d/c.rs"]);
    assert_eq!(files(json!({"pattern": "x", "type": "py"})), ["b.py"]);
    assert_eq!(files(json!({"pattern": "x", "path": "d", "include": ["*.md"]})), ["d/e.md"]);
    let (code, message) = error(&tree, json!({"pattern": "x", "type": "python3000"}));
    assert_eq!(code, ErrorCode::InvalidArgument);
    assert!(message.contains("rust") && message.contains("py"), "{message}");
    assert_eq!(error(&tree, json!({"pattern": "x", "include": ["a{"]})).0, ErrorCode::InvalidArgument);
}

#[test]
fn binary_files_are_skipped_or_cut_at_their_first_nul_line() {
    let tree = Tree::new();
    tree.write("early.bin", b"needle\n\0needle\n");
    let mut late = "needle\n".repeat(10_000).into_bytes(); // 70,000 bytes: past the first 64 KiB
    late.extend_from_slice(b"needle before nul \0 needle\nneedle after\n");
    tree.write("late.bin", &late);
    let found = items(&tree, json!({"pattern": "needle", "output_mode": "count"}));
    assert_eq!(paths(&tree, &found), ["late.bin"]);
    assert_eq!(found[0]["count"], 10_000);
    let mut grep = crate::Grep::open(&tree.roots(), &json!({"pattern": "needle"}).to_string(), None).unwrap();
    super::chunks(&mut grep, u32::MAX);
    assert_eq!(grep.info()["binary_files"], 2);
    let all = items(&tree, json!({"pattern": "needle", "binary": true, "output_mode": "count"}));
    let got: Vec<u64> = all.iter().map(|c| c["count"].as_u64().unwrap()).collect();
    assert_eq!(got, [2, 10_002]);
}

#[test]
fn long_lines_are_cut_with_the_range_to_read_the_rest() {
    let tree = Tree::new();
    let line = format!("needle{}{}", "é".repeat(10), "z".repeat(100));
    tree.write("f.txt", format!("first\n{line}\n"));
    let found = items(&tree, json!({"pattern": "needle|z+", "max_line_length": 9, "context_before": 1}));
    let item = &found[0];
    assert_eq!(item["text"], "needleé", "cut before 9 bytes, on a character boundary");
    assert_eq!(item["submatches"], json!([{"start": 0, "end": 6}]));
    let t = &item["truncated"];
    assert_eq!((t["shown_bytes"].as_u64(), t["line_bytes"].as_u64()), (Some(8), Some(126)));
    assert_eq!(t["read"], json!({"start_byte": 6 + 8, "end_byte": 6 + 126}));
    assert_eq!((t["submatches_beyond"].as_u64(), &t["next_submatch"]), (Some(1), &json!({"start": 26, "end": 126})));
    assert_eq!(item["before"], json!([{"line": 1, "text": "first"}]));
}

#[test]
fn invalid_utf8_is_shown_lossily_and_said_so() {
    let tree = Tree::new();
    tree.write("f.txt", b"caf\xe9 needle\r\nok needle\n");
    let found = items(&tree, json!({"pattern": "needle"}));
    assert_eq!(found[0]["text"], "caf\u{fffd} needle\r", "only the \\n terminator is stripped, as rg's");
    assert_eq!(found[0]["lossy"], true);
    assert_eq!(found[0]["submatches"], json!([{"start": 5, "end": 11}]), "offsets are the file's bytes");
    assert!(found[1].get("lossy").is_none());
    assert_eq!(found[1]["byte_offset"], 13);
}

#[test]
fn bad_arguments_and_paths_are_refused() {
    let tree = sample();
    let (code, message) = error(&tree, json!({"pattern": "a("}));
    assert_eq!(code, ErrorCode::InvalidArgument);
    assert!(message.contains("regex"), "{message}");
    assert_eq!(error(&tree, json!({"pattern": "x", "path": "../elsewhere"})).0, ErrorCode::PermissionDenied);
    assert_eq!(error(&tree, json!({"pattern": "x", "path": "/etc"})).0, ErrorCode::PermissionDenied);
    assert_eq!(error(&tree, json!({"pattern": "x", "path": "missing"})).0, ErrorCode::NotFound);
    assert_eq!(error(&tree, json!({"pattern": "x", "bogus": 1})).0, ErrorCode::InvalidArgument);
    assert_eq!(error(&tree, json!({"pattern": "x", "max_line_length": 0})).0, ErrorCode::InvalidArgument);
    assert_eq!(error(&tree, json!({"pattern": "x", "output_mode": "lines"})).0, ErrorCode::InvalidArgument);
}

#[test]
fn info_and_summary_count_what_was_searched() {
    let tree = sample();
    let mut grep = crate::Grep::open(&tree.roots(), &json!({"pattern": "needle"}).to_string(), None).unwrap();
    assert_eq!(grep.info()["files_searched"], 0);
    assert!(!grep.summary().exact);
    super::chunks(&mut grep, u32::MAX);
    let info = grep.info();
    assert_eq!(info["root"], tree.root().display().to_string());
    assert_eq!((info["files_searched"].as_u64(), info["files_matched"].as_u64()), (Some(5), Some(4)));
    assert_eq!(info["matches"], 5);
    let summary = grep.summary();
    assert!(summary.exact);
    assert_eq!(summary.totals["matches"], 5);
    assert!(summary.suggestions.iter().any(|s| s.contains("files_with_matches")));
}
