//! The edit tool end to end: exact bytes kept around an edit (CRLF, no final
//! newline), ambiguity refused with line numbers, the roots and read-only roots
//! enforced, and the diff in the result.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::{CANARY, Fixture, Server, read_all, text};

fn item(result: &Value) -> Value {
    assert_eq!(result["isError"], false, "{result}");
    serde_json::from_str(text(result).lines().next().unwrap()).unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn error_code(result: &Value) -> &str {
    assert_eq!(result["isError"], true, "{result}");
    result["_meta"]["cordon/error"]["code"].as_str().unwrap_or_else(|| panic!("no error code: {result}"))
}

#[test]
fn a_crlf_file_changes_only_the_intended_bytes() {
    let fx = Fixture::new();
    let before = b"[core]\r\n\tname = old\r\n\tkeep = \xe2\x9c\x93\r\n[other]\r\n\tname = old\r\n";
    let path = fx.write("config.ini", before);
    let mut server = Server::initialized(&fx.root(), &[]);
    let result = server.call(
        1,
        "edit",
        json!({"format": "json", "path": "config.ini", "old_string": "[core]\n\tname = old\n", "new_string": "[core]\n\tname = new\n\tadded = 1\n"}),
    );
    let done = item(&result);
    let want = b"[core]\r\n\tname = new\r\n\tadded = 1\r\n\tkeep = \xe2\x9c\x93\r\n[other]\r\n\tname = old\r\n";
    assert_eq!(std::fs::read(&path).unwrap(), want, "only the edited lines changed, all CRLF");
    assert_eq!(done["replacements"], 1);
    assert_eq!(done["crlf"], true);
    assert_eq!(done["size"], want.len());
    assert_eq!(done["sha256"], hex(&Sha256::digest(want)));
    assert_eq!(done["path"], path.display().to_string());
    assert_eq!(result["structuredContent"]["next_cursor"], Value::Null, "one page: {result}");
}

#[test]
fn a_file_without_a_final_newline_keeps_none() {
    let fx = Fixture::new();
    let path = fx.write("note.txt", "alpha\nbeta\ngamma");
    let mut server = Server::initialized(&fx.root(), &[]);
    let done = item(&server.call(
        1,
        "edit",
        json!({"format": "json", "path": "note.txt", "old_string": "gamma", "new_string": "delta"}),
    ));
    assert_eq!(std::fs::read(&path).unwrap(), b"alpha\nbeta\ndelta");
    assert_eq!(
        done["diff"],
        "@@ -2,2 +2,2 @@\n beta\n-gamma\n\\ No newline at end of file\n+delta\n\\ No newline at end of file\n"
    );
}

#[test]
fn an_ambiguous_string_is_refused_with_its_lines_and_the_file_untouched() {
    let fx = Fixture::new();
    let before = "let a = 1;\nlet b = 2;\nlet a = 1;\n\nlet a = 1;\n";
    let path = fx.write("dup.rs", before);
    let mut server = Server::initialized(&fx.root(), &[]);
    let result = server.call(
        1,
        "edit",
        json!({"format": "json", "path": "dup.rs", "old_string": "let a = 1;", "new_string": "x"}),
    );
    assert_eq!(error_code(&result), "invalid_argument");
    let message = text(&result);
    assert!(message.contains("found 3 times") && message.contains("at lines 1, 3, 5;"), "{message}");
    assert!(message.contains("replace_all"), "{message}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);

    let absent =
        server.call(2, "edit", json!({"format": "json", "path": "dup.rs", "old_string": "let c", "new_string": "x"}));
    assert_eq!(error_code(&absent), "invalid_argument");
    assert!(text(&absent).contains("old_string not found"), "{absent}");
    let missing =
        server.call(3, "edit", json!({"format": "json", "path": "nope.rs", "old_string": "a", "new_string": "b"}));
    assert_eq!(error_code(&missing), "not_found");

    let all = item(&server.call(
        4,
        "edit",
        json!({"format": "json", "path": "dup.rs", "old_string": "let a = 1;", "new_string": "let a = 0;", "replace_all": true}),
    ));
    assert_eq!(all["replacements"], 3);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before.replace("let a = 1;", "let a = 0;"));
}

#[test]
fn paths_outside_the_roots_are_denied() {
    let fx = Fixture::new();
    let mut server = Server::initialized(&fx.root(), &[]);
    for (id, path) in [(1, "../outside.txt".to_string()), (2, fx.outside().display().to_string())] {
        let result = server.call(
            id,
            "edit",
            json!({"format": "json", "path": path, "old_string": "CANARY", "new_string": "pwned"}),
        );
        assert_eq!(error_code(&result), "permission_denied");
    }
    std::os::unix::fs::symlink(fx.outside(), fx.root().join("link-out")).unwrap();
    let through = server.call(
        3,
        "edit",
        json!({"format": "json", "path": "link-out", "old_string": "CANARY", "new_string": "pwned"}),
    );
    assert_eq!(through["isError"], true, "{through}");
    assert_eq!(std::fs::read_to_string(fx.outside()).unwrap(), CANARY);
}

#[test]
fn a_read_only_root_is_denied() {
    let fx = Fixture::new();
    let ro = fx.dir.path().join("ro");
    std::fs::create_dir_all(&ro).unwrap();
    let file = ro.canonicalize().unwrap().join("f.txt");
    std::fs::write(&file, "read only\n").unwrap();
    let mut server = Server::initialized(&fx.root(), &["--root", &format!("{}:ro", ro.display())]);
    let result =
        server.call(1, "edit", json!({"format": "json", "path": file, "old_string": "only", "new_string": "write"}));
    assert_eq!(error_code(&result), "permission_denied");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "read only\n");
    let names: Vec<_> = std::fs::read_dir(&ro).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["f.txt"], "no temporary file left behind");
}

#[test]
fn the_result_carries_a_diff_with_context_and_line_numbers() {
    let fx = Fixture::new();
    let before: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    let path = fx.write("lines.txt", &before);
    let mut server = Server::initialized(&fx.root(), &[]);
    let done = item(&server.call(
        1,
        "edit",
        json!({"format": "json", "path": "lines.txt", "old_string": "line 12\n", "new_string": "line twelve\nline 12.5\n"}),
    ));
    assert_eq!(done["diff"], "@@ -11,3 +11,4 @@\n line 11\n-line 12\n+line twelve\n+line 12.5\n line 13\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before.replace("line 12\n", "line twelve\nline 12.5\n"));

    let many = item(&server.call(
        2,
        "edit",
        json!({"format": "json", "path": "lines.txt", "old_string": "line", "new_string": "row", "replace_all": true}),
    ));
    assert_eq!(many["replacements"], 31);
    let diff = many["diff"].as_str().unwrap();
    assert!(diff.starts_with("@@ -1,31 +1,31 @@\n-line 1\n") && diff.ends_with("+row 30\n"), "{diff}");

    fx.write("sparse.txt", "hit\n\n\n\n".repeat(30));
    let sparse = item(&server.call(
        3,
        "edit",
        json!({"format": "json", "path": "sparse.txt", "old_string": "hit", "new_string": "miss", "replace_all": true}),
    ));
    assert_eq!(sparse["replacements"], 30);
    let diff = sparse["diff"].as_str().unwrap();
    assert_eq!(diff.matches("\n+miss\n").count(), 20, "{diff}");
    assert!(diff.contains("@@ -76,3 +76,3 @@\n \n-hit\n+miss\n \n"), "{diff}");
    assert!(diff.len() <= 4096 && diff.ends_with("… 10 more replacements not shown\n"), "{diff}");
}

#[test]
fn a_result_paged_with_cursors_is_whole_and_the_edit_is_made_once() {
    let fx = Fixture::new();
    let before: String = (1..=12).map(|i| format!("entry {i} = value\n\n\n")).collect();
    let path = fx.write("paged.txt", &before);
    let mut server = Server::initialized(&fx.root(), &[]);
    let args = json!({"path": "paged.txt", "old_string": "value", "new_string": "value!", "replace_all": true});
    let (payload, pages) = read_all(&mut server, "edit", args, 50);
    assert!(pages.len() > 1, "the item spans pages: {}", pages.len());
    let done: Value = serde_json::from_slice(payload.trim_ascii_end()).unwrap();
    assert_eq!(done["replacements"], 12);
    let after = before.replace("value", "value!");
    assert_eq!(done["sha256"], hex(&Sha256::digest(after.as_bytes())));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), after, "following the cursors never edits again");
}
