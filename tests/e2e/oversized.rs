//! A tree holding what cannot be searched (issue 37, finding 6): a one-line file longer than a
//! search may hold, and ignore files too large to apply. The search and the walk go on past
//! them, and what the model reads (the compact text, in `content` and in `structuredContent`)
//! names each with why; the JSON form carries the same items. Under a small `--memory-mib` a
//! 12 MB line is already too long (a search holds a quarter of its instance's memory), so the
//! test writes megabytes, not hundreds; a sparse file stands for a huge ignore file.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::{Fixture, Server, payload, read_all};

/// The memory a call may use here: a search holds 8 MiB (4 MiB in each of two shards).
const MEMORY_MIB: &str = "32";

/// What the model reads for the long line with the call's memory in one instance.
const LONG_LINE: &str = "big.log: not searched: a line longer than 8 MiB, a quarter of the 32 MiB of memory this \
                         search may use; the lines before it were searched\n";

/// The fixture: matches in `a.txt`, `sub/x.log` and `z.txt`; a line of 12 MB in `big.log`; a
/// sparse `.gitignore` of 3 GiB at the top; and a `sub/.ignore` just over 1 MiB whose rules
/// (`*.log`) would hide `sub/x.log`.
fn fixture() -> Fixture {
    let fx = Fixture::new();
    let root = fx.root();
    fx.write("a.txt", "needle in a\n");
    fx.write("big.log", vec![b'x'; 12_000_000]);
    fx.write("z.txt", "needle in z\n");
    std::fs::File::create(root.join(".gitignore")).unwrap().set_len(3 << 30).unwrap();
    fx.write("sub/.ignore", "*.log\n".repeat((1 << 20) / 6 + 1));
    fx.write("sub/x.log", "needle in a log\n");
    fx
}

fn server(root: &Path, shards: &str) -> Server {
    Server::initialized(root, &["--memory-mib", MEMORY_MIB, "--shards", shards])
}

/// What the model reads of a result: the text of `content`, with no structured content
/// beside it (which Claude Code would forward instead).
fn model_text(result: &Value) -> String {
    assert_eq!(result["isError"], false, "{result}");
    assert!(result.get("structuredContent").is_none(), "{result}");
    String::from_utf8(payload(result)).unwrap()
}

#[test]
fn grep_names_what_it_could_not_search_and_finds_the_rest_in_one_shard_or_several() {
    let fx = fixture();
    for shards in ["1", "2"] {
        let mut server = server(&fx.root(), shards);
        let result = server.call(1, "grep", json!({"pattern": "needle"}));
        let text = model_text(&result);
        let ignored = "an ignore file larger than 1 MiB, the most a walk reads of one; what it would exclude is \
                       not excluded";
        let long = match shards {
            "1" => LONG_LINE.to_string(),
            _ => LONG_LINE.replace("8 MiB", "4 MiB").replace("32 MiB", "16 MiB"),
        };
        let want = format!(
            ".gitignore: not applied: {ignored}\n\na.txt:1:needle in a\n\n{long}\n\
             sub/.ignore: not applied: {ignored}\n\nsub/x.log:1:needle in a log\nz.txt:1:needle in z\n"
        );
        assert_eq!(text, want, "{shards} shards");
        let counted = server.call(2, "grep", json!({"pattern": "needle", "format": "json"}));
        let info = &counted["structuredContent"];
        assert_eq!(
            (&info["errors"], &info["ignore_files_skipped"], &info["matches"]),
            (&json!(1), &json!(2), &json!(3))
        );
        // Programs read the same facts as items, paged exactly at any size.
        let (whole, _) = read_all(&mut server, "grep", json!({"pattern": "needle"}), 25_000);
        let (paged, pages) = read_all(&mut server, "grep", json!({"pattern": "needle"}), 40);
        assert!(pages.len() > 3, "{} pages", pages.len());
        assert_eq!(String::from_utf8(paged).unwrap(), String::from_utf8(whole.clone()).unwrap(), "{shards} shards");
        let items: Vec<Value> =
            String::from_utf8(whole).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let big = items.iter().find(|i| i.get("not_searched").is_some()).expect("an item names big.log");
        assert_eq!(big["path"], fx.root().join("big.log").display().to_string());
    }
}

#[test]
fn grep_on_the_one_file_it_cannot_search_says_so_not_an_empty_text() {
    let fx = fixture();
    let mut server = server(&fx.root(), "1");
    for pattern in ["needle", "x{3}"] {
        let result = server.call(1, "grep", json!({"pattern": pattern, "path": "big.log", "max_line_length": 100}));
        assert_eq!(model_text(&result), LONG_LINE, "{pattern}");
        let args = json!({"pattern": pattern, "path": "big.log", "max_line_length": 100, "format": "json"});
        assert_eq!(server.call(2, "grep", args)["structuredContent"]["errors"], 1);
    }
}

#[test]
fn glob_over_a_tree_with_ignore_files_too_large_to_apply_lists_it_and_says_so() {
    let fx = fixture();
    let mut server = server(&fx.root(), "2");
    // A negated glob only: the ignore files decide the rest.
    let result = server.call(1, "glob", json!({"pattern": "!*.txt"}));
    let text = model_text(&result);
    let said = "not applied: an ignore file larger than 1 MiB";
    assert!(text.starts_with(&format!(".gitignore: {said}")), "{text}");
    assert!(text.contains(&format!("sub/.ignore: {said}")) && text.contains("big.log\n"), "{text}");
    assert!(text.ends_with("sub/x.log\n"), "the rules of sub/.ignore are not applied: {text}");
    let counted = server.call(2, "glob", json!({"pattern": "!*.txt", "format": "json"}));
    assert_eq!(counted["structuredContent"]["ignore_files_skipped"], 2);
}
