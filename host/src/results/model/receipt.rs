//! One-item answers in one line a model reads (and, for an edit, the diff
//! once): the compact form of the receipts `edit`, `write`, `move` and
//! `mkdir` answer with, and of what `stat` says, by their shape, so a third
//! party's tool whose answer has the same fields reads the same. Hashes,
//! exact times and absolute paths stay in the JSON form.
//!
//! - **an edit** (`path`, `replacements`, `diff`): `Edited src/a.rs: 1 replacement`, then the diff.
//! - **a write** (`path`, `bytes_written`, `mode`, `created`): `Wrote 12 bytes to a.txt (new file)`.
//! - **a move** (`from`, `to`, `overwrote`): `Moved a.txt to b.txt`.
//! - **a directory made** (`path`, `created_count`, `existed`): `Created dir` or `dir already exists`.
//! - **a description** (`path`, `type`, `size`, `mtime_ns`, `is_symlink`, optional `lines`):
//!   `src/a.rs: file, 120 bytes, 7 lines, modified 2026-11-25T12:14:30Z`.

use serde_json::Value;

use crate::pager::printer::Fields;

/// `item` as one line (and an edit's diff) when it is a receipt, with its
/// paths shown by `shown`; `None` for any other item.
pub fn render(item: &Value, shown: impl Fn(&str) -> String) -> Option<String> {
    let item = Fields::of(item)?;
    let (text, number, flag) = (|key| item.text(key), |key| item.number(key), |key| item.flag(key));
    let plural = |n: u64, one: &str, many: &str| if n == 1 { one.to_string() } else { many.to_string() };
    if let (Some(path), Some(n), Some(diff)) = (text("path"), number("replacements"), text("diff")) {
        let newline = if diff.is_empty() || diff.ends_with('\n') { "" } else { "\n" };
        let what = plural(n, "replacement", "replacements");
        return Some(format!("Edited {}: {n} {what}\n{diff}{newline}", shown(path)));
    }
    if let (Some(path), Some(bytes), Some(mode)) = (text("path"), number("bytes_written"), text("mode")) {
        let verb = if mode == "append" { "Appended" } else { "Wrote" };
        let new = if flag("created") == Some(true) { " (new file)" } else { "" };
        let unit = plural(bytes, "byte", "bytes");
        return Some(format!("{verb} {bytes} {unit} to {}{new}\n", shown(path)));
    }
    if let (Some(from), Some(to), Some(overwrote)) = (text("from"), text("to"), flag("overwrote")) {
        let replaced = if overwrote { " (replacing what was there)" } else { "" };
        return Some(format!("Moved {} to {}{replaced}\n", shown(from), shown(to)));
    }
    if let (Some(path), Some(count), Some(existed)) = (text("path"), number("created_count"), flag("existed")) {
        return Some(match (existed, count) {
            (true, _) => format!("{} already exists\n", shown(path)),
            (false, 1) => format!("Created {}\n", shown(path)),
            (false, n) => format!("Created {} ({n} directories)\n", shown(path)),
        });
    }
    if let (Some(path), Some(kind), Some(size), Some(mtime), Some(link)) =
        (text("path"), text("type"), number("size"), number("mtime_ns"), flag("is_symlink"))
    {
        let mut out = format!("{}: {kind}, {size} {}", shown(path), plural(size, "byte", "bytes"));
        if let Some(lines) = number("lines") {
            out.push_str(&format!(", {lines} {}", plural(lines, "line", "lines")));
        }
        let when = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(mtime);
        out.push_str(&format!(", modified {}", humantime::format_rfc3339_seconds(when)));
        if link {
            out.push_str(", through a symlink");
        }
        out.push('\n');
        return Some(out);
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn shown(item: Value) -> Option<String> {
        render(&item, |p: &str| p.strip_prefix("/r/").unwrap_or(p).to_string())
    }

    #[test]
    fn each_change_is_said_in_one_line() {
        let edit =
            json!({"path": "/r/a.py", "replacements": 1, "diff": "@@ -1 +1 @@\n-x\n+y\n", "sha256": "f", "size": 2});
        assert_eq!(shown(edit).unwrap(), "Edited a.py: 1 replacement\n@@ -1 +1 @@\n-x\n+y\n");
        let write = json!({"path": "/r/n.txt", "bytes_written": 4, "mode": "overwrite", "created": true, "size": 4});
        assert_eq!(shown(write).unwrap(), "Wrote 4 bytes to n.txt (new file)\n");
        let append = json!({"path": "/r/n.txt", "bytes_written": 1, "mode": "append", "created": false});
        assert_eq!(shown(append).unwrap(), "Appended 1 byte to n.txt\n");
        let moved = json!({"from": "/r/a", "to": "/r/b", "type": "file", "overwrote": true});
        assert_eq!(shown(moved).unwrap(), "Moved a to b (replacing what was there)\n");
        let made = json!({"path": "/r/d/e", "created": ["/r/d", "/r/d/e"], "created_count": 2, "existed": false});
        assert_eq!(shown(made).unwrap(), "Created d/e (2 directories)\n");
        let there = json!({"path": "/r/d", "created": [], "created_count": 0, "existed": true});
        assert_eq!(shown(there).unwrap(), "d already exists\n");
        let stat = json!({"path": "/r/a.rs", "type": "file", "size": 120, "mtime_ns": 1_795_608_870_482_363_311u64,
                          "permissions": {"readonly": null}, "is_symlink": true, "lines": 7});
        assert_eq!(
            shown(stat).unwrap(),
            "a.rs: file, 120 bytes, 7 lines, modified 2026-11-25T12:14:30Z, through a symlink\n"
        );
    }

    #[test]
    fn other_items_are_not_receipts() {
        let entry = json!({"path": "/r/a", "type": "file", "size": 1, "mtime_ns": 1});
        assert_eq!(shown(entry), None, "an entry (glob's details), not a description");
        assert_eq!(shown(json!({"path": "/r/a", "line": 1, "text": "x"})), None);
        assert_eq!(shown(json!([1])), None);
    }
}
