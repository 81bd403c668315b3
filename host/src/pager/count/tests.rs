//! The count's unit tests: totals, runs of paths, path order, most first.

use std::path::Path;

use super::*;

#[test]
fn a_count_says_its_totals_and_whether_they_are_exact() {
    let paths = vec![("b".to_string(), 3), ("a".to_string(), 1)];
    let whole = Whole { items: 4, bytes: 400, exact: true, paths };
    assert_eq!(whole.sentence(), "of 4 items in 2 files (~100 tokens in all)");
    let shown = whole.to_json();
    assert_eq!(shown["top_paths"][0], json!({"path": "b", "items": 3}));
    assert_eq!((shown["estimated_tokens"].as_u64(), shown["exact"].as_bool()), (Some(100), Some(true)));
    assert_eq!(shown["top_dirs"][0], json!({"dir": ".", "items": 4}));
    let partial = Whole { exact: false, paths: Vec::new(), ..whole };
    assert_eq!(partial.sentence(), "of at least 4 items (~100 tokens counted so far)");
    assert!(partial.to_json().get("top_paths").is_none());
}

#[test]
fn the_top_come_first_in_order_and_nothing_is_lost() {
    let counts: Vec<(String, u64)> = (0..40).map(|i| (format!("p{i:02}"), (i * 7) % 11)).collect();
    let mut sorted = counts.clone();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let first = most_first(counts);
    assert_eq!(first[..TOP], sorted[..TOP]);
    let mut all = first.clone();
    all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    assert_eq!(all, sorted);
    assert_eq!(most_first(vec![("b".into(), 1), ("a".into(), 1)]), [("a".to_string(), 1), ("b".to_string(), 1)]);
    assert_eq!(
        (extension("/r/a.tar.gz"), extension("/r/Makefile"), extension(".bashrc")),
        (".gz", "Makefile", ".bashrc")
    );
    assert_eq!((parent("/a"), parent("a"), parent("/r/s/a.rs")), ("/", ".", "/r/s"));
}

#[test]
fn one_item_per_path_names_no_top_paths_and_no_small_directory() {
    let paths: Vec<(String, u64)> = (0..10).map(|i| (format!("d{i}/Cargo.toml"), 1)).collect();
    let shown = Whole { items: 10, bytes: 230, exact: true, paths }.to_json();
    assert!(shown.get("top_paths").is_none(), "{shown}");
    let said = shown["suggestions"].as_array().unwrap();
    assert!(said.iter().all(|s| !s.as_str().unwrap().contains("narrow with `path`")), "{shown}");
}

#[test]
fn suggestions_come_from_where_the_result_lies() {
    let paths = vec![
        ("/r/src/a.rs".to_string(), 6),
        ("/r/src/b.rs".to_string(), 2),
        ("/r/docs/x.md".to_string(), 1),
        ("/r/Makefile".to_string(), 1),
    ];
    let whole = Whole { items: 10, bytes: 1000, exact: true, paths };
    let shown = whole.to_json();
    assert_eq!(shown["top_dirs"][0], json!({"dir": "/r/src", "items": 8}));
    assert_eq!(shown["top_types"][0], json!({"type": ".rs", "items": 8}));
    let said: Vec<&str> = shown["suggestions"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert_eq!(said[0], "8 of 10 items (80%) are in /r/src: narrow with `path` \"/r/src\".");
    assert!(said[1].starts_with("By file type: .rs 8, .md 1, Makefile 1;"), "{}", said[1]);
    assert_eq!((parent("/a"), parent("a"), extension("/r/.hidden")), ("/", ".", ".hidden"));
}

#[test]
fn paths_counted_in_runs_in_order_or_out_of_it_alike() {
    let runs = ["/r/a/x.rs", "/r/a/x.rs", "/r/a/x.rs", "/r/a/y.rs", "/r/b/z.md", "/r/c.rs"];
    let shuffled = ["/r/a/x.rs", "/r/b/z.md", "/r/a/x.rs", "/r/c.rs", "/r/a/y.rs", "/r/a/x.rs"];
    let mut wholes = Vec::new();
    for (items, ordered) in [(runs, true), (shuffled, false)] {
        let mut tally = Tally::default();
        items.iter().for_each(|path| tally.item(10, Some(path)));
        tally.item(5, None);
        assert_eq!(tally.ordered, ordered);
        let whole = tally.whole(true);
        assert_eq!((whole.items, whole.bytes, whole.paths.len()), (7, 65, 4));
        assert_eq!(whole.paths[0], ("/r/a/x.rs".to_string(), 3));
        let shown = whole.to_json();
        assert_eq!(shown["top_dirs"][0], json!({"dir": "/r/a", "items": 4}));
        assert_eq!(shown["top_types"], json!([{"type": ".rs", "items": 5}, {"type": ".md", "items": 1}]));
        wholes.push(shown);
    }
    assert_eq!(wholes[0], wholes[1]);
}

#[test]
fn path_order_is_by_components_and_escaped_paths_are_read() {
    // A walk gives `pager/count.rs` before `pager.rs` (`/` sorts as a
    // separator, not as the byte before `.`): in order.
    let mut tally = Tally::default();
    for item in [r#"{"path":"/r/pager/count.rs"}"#, r#"{"path":"/r/pager.rs"}"#, r#"{"path":"/r/q\"x.rs"}"#] {
        tally.chunk(&Chunk { payload: Payload::Item(item.into()), span: None, continued: false, resume: "r".into() });
    }
    assert!(tally.ordered);
    let paths: Vec<&str> = tally.paths.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["/r/pager/count.rs", "/r/pager.rs", "/r/q\"x.rs"]);
    tally.item(1, Some("/r/pager.rs"));
    assert!(!tally.ordered, "a path seen again after another");
}

#[test]
fn path_order_by_bytes_is_the_order_of_components() {
    let paths = [
        "",
        "/",
        "/a",
        "/a.rs",
        "/a/b",
        "/a/b.rs",
        "/a/b/c",
        "/a-b",
        "/a0",
        "/ab",
        "/ab/c",
        "/b",
        "/a/bc",
        "/a/b c",
        "/ä",
        "/a/ä.rs",
        "/z/\u{7f}",
        "/a b/c",
    ];
    for a in paths {
        for b in paths {
            let by_components = Path::new(a) < Path::new(b);
            assert_eq!(before_in_path_order(a, b), by_components, "{a:?} before {b:?}");
        }
    }
    // Distinct paths the byte order cannot tell apart are never taken as
    // in order: they are merged, as paths out of order are.
    assert!(!before_in_path_order("/a\0b", "/a/b") && !before_in_path_order("/a/b", "/a\0b"));
}
