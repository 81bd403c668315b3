//! The tree the agent steps run on: a deterministic, Python-like package
//! (modules of classes and methods, docstrings, imports), one module of
//! exactly 300 lines to read and edit, and a ~300 KB table module (above the
//! built-in Read's 256 KB limit and its 2,000 lines) to page through.
//!
//! The patterns the steps search for are planted at known rates: `def __init__`
//! once a module, `raise ValueError` about three times a module, `^import json`
//! in about half the modules, `TODO` in about one module of two.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

/// The module read whole, by a range, and edited (relative to the root).
pub const WHOLE: &str = "pkg/core/models.py";
/// Its length in lines.
pub const WHOLE_LINES: usize = 300;
/// The one line the edit step changes (it occurs once in `WHOLE`), and its replacement.
pub const EDIT_OLD: &str = "DEFAULT_TIMEOUT = 30";
pub const EDIT_NEW: &str = "DEFAULT_TIMEOUT = 45";
/// The large module (relative to the root), and its size at least.
pub const LARGE: &str = "pkg/data/tables.py";
pub const LARGE_BYTES: usize = 300 * 1024;
/// Lines of `LARGE` before its first row; row `k` (`row_00000k`) is on line `LARGE_HEADER + k + 1`.
pub const LARGE_HEADER: u64 = 6;

const PACKAGES: [&str; 8] = ["core", "io", "net", "util", "cli", "data", "web", "tests"];
const NOUNS: [&str; 16] = [
    "buffer", "config", "record", "stream", "handler", "session", "request", "token", "schema", "column", "cache",
    "parser", "reader", "writer", "entry", "queue",
];
const VERBS: [&str; 10] = ["load", "parse", "build", "read", "write", "update", "resolve", "encode", "decode", "check"];
const WORDS: [&str; 12] = [
    "current", "default", "pending", "cached", "encoded", "raw", "parsed", "next", "last", "shared", "local", "remote",
];

/// A small deterministic PRNG (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

fn capital(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
}

/// One method of a class, 5 to 9 lines; two in five raise `ValueError`, one in ten has a TODO.
fn method(rng: &mut Rng, out: &mut String) {
    let (verb, noun, word) = (rng.pick(&VERBS), rng.pick(&NOUNS), rng.pick(&WORDS));
    let arg = rng.pick(&NOUNS);
    let _ = writeln!(out, "    def {verb}_{noun}(self, {arg}: str, limit: int = {}) -> Optional[str]:", rng.below(100));
    let _ = writeln!(out, "        \"\"\"Return the {word} {noun} for `{arg}`, or None.\"\"\"");
    match rng.below(10) {
        0..=3 => {
            let _ = writeln!(out, "        if not {arg}:");
            let _ = writeln!(out, "            raise ValueError(\"{noun} {verb} needs a {arg}\")");
        }
        4 => {
            let _ = writeln!(out, "        # TODO: {verb} the {word} {noun} lazily");
        }
        _ => {}
    }
    let _ = writeln!(out, "        value = self._{noun}s.get({arg}, {})", rng.below(10));
    if rng.below(2) == 0 {
        let _ = writeln!(out, "        if len(value) > limit:");
        let _ = writeln!(out, "            value = value[:limit]");
    }
    let _ = writeln!(out, "        return value\n");
}

/// One class: a docstring, `__init__`, and `methods` methods.
fn class(rng: &mut Rng, out: &mut String, methods: usize) {
    let (noun, word) = (rng.pick(&NOUNS), rng.pick(&WORDS));
    let _ = writeln!(out, "\nclass {}{}:", capital(word), capital(noun));
    let _ = writeln!(out, "    \"\"\"Keeps the {word} {noun}s of a session, by name.\"\"\"\n");
    let _ = writeln!(out, "    def __init__(self, name: str, size: int = 0) -> None:");
    let _ = writeln!(out, "        self.name = name");
    let _ = writeln!(out, "        self.size = size");
    let _ = writeln!(out, "        self._{noun}s: dict[str, str] = {{}}\n");
    for _ in 0..methods {
        method(rng, out);
    }
}

/// A module-level helper, 7 lines, with no planted pattern.
fn helper(rng: &mut Rng, out: &mut String, i: usize) {
    let (verb, noun) = (rng.pick(&VERBS), rng.pick(&NOUNS));
    let _ = writeln!(out, "\ndef {verb}_{noun}s_{i}(items: list[str], strict: bool = False) -> list[str]:");
    let _ = writeln!(out, "    \"\"\"{} each {noun} of `items`, in order.\"\"\"", capital(verb));
    let _ = writeln!(out, "    out = []");
    let _ = writeln!(out, "    for item in items:");
    let _ = writeln!(out, "        out.append(item.strip() if strict else item)");
    let _ = writeln!(out, "    return out");
}

/// A module of about `lines` lines (exactly `lines` when `exact`), named `name`: one class of
/// 4 to 10 methods, then helpers.
fn module(rng: &mut Rng, name: &str, lines: usize, exact: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\"\"\"{}: the {} {}s and their helpers.\"\"\"\n", name, rng.pick(&WORDS), rng.pick(&NOUNS));
    out.push_str("from __future__ import annotations\n\n");
    if rng.below(2) == 0 {
        out.push_str("import json\n");
    }
    out.push_str("import os\nimport re\nfrom typing import Optional\n\n");
    let _ = writeln!(out, "{EDIT_OLD}\nMAX_{} = {}\n", rng.pick(&NOUNS).to_uppercase(), 64 << rng.below(6));
    let methods = 4 + rng.below(7);
    class(rng, &mut out, methods);
    let mut i = 0;
    while out.lines().count() < lines {
        helper(rng, &mut out, i);
        i += 1;
    }
    if exact {
        let kept: Vec<&str> = out.lines().take(lines).collect();
        out = kept.join("\n") + "\n";
    }
    out
}

/// The large table module: rows of about 80 bytes until `LARGE_BYTES`.
fn large(rng: &mut Rng) -> String {
    let mut out = String::from(
        "\"\"\"Generated lookup tables: one row per record.\"\"\"\n\nfrom __future__ import annotations\n\n",
    );
    out.push_str("# (key, kind, owner, size, weight, note)\n");
    out.push_str("ROWS = [\n");
    let mut k = 0;
    while out.len() < LARGE_BYTES {
        let _ = writeln!(
            out,
            "    (\"row_{k:06}\", \"{}\", \"{}\", {}, 0.{:02}, \"{} the {} {}\"),",
            rng.pick(&NOUNS),
            rng.pick(&WORDS),
            rng.below(100_000),
            rng.below(100),
            rng.pick(&VERBS),
            rng.pick(&WORDS),
            rng.pick(&NOUNS)
        );
        k += 1;
    }
    out.push_str("]\n");
    out
}

/// Writes the tree under `root` (which must not exist): `modules` modules spread over the
/// packages, each with an `__init__.py`, plus `WHOLE`, `LARGE`, a README and a setup.cfg.
/// Returns the files written.
pub fn generate(root: &Path, modules: usize) -> Result<usize> {
    let mut rng = Rng(0x5eed_c0de_2026_1125);
    let mut files = 0;
    let mut write = |rel: &str, text: &str| -> Result<()> {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("a file in a directory"))?;
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        files += 1;
        Ok(())
    };
    write("README.md", "# pkg\n\nA generated package for Cordon's agent benchmark.\n")?;
    write("setup.cfg", "[metadata]\nname = pkg\nversion = 0.1.0\n\n[options]\npackages = find:\n")?;
    write("pkg/__init__.py", "\"\"\"The package.\"\"\"\n\n__version__ = \"0.1.0\"\n")?;
    for package in PACKAGES {
        write(&format!("pkg/{package}/__init__.py"), &format!("\"\"\"pkg.{package}.\"\"\"\n"))?;
    }
    write(WHOLE, &module(&mut rng, "models", WHOLE_LINES, true))?;
    write(LARGE, &large(&mut rng))?;
    // The other modules: 80 to 200 lines each, unique names per package.
    for i in 0..modules.saturating_sub(1) {
        let package = PACKAGES[i % PACKAGES.len()];
        let name = format!("{}_{}", rng.pick(&NOUNS), i);
        let name = if package == "tests" { format!("test_{name}") } else { name };
        let lines = 80 + rng.below(121);
        write(&format!("pkg/{package}/{name}.py"), &module(&mut rng, &name, lines, false))?;
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_has_what_the_steps_need() {
        let dir = std::env::temp_dir().join(format!("cordon-bench-agent-tree-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        generate(&dir, 20).unwrap();
        let whole = std::fs::read_to_string(dir.join(WHOLE)).unwrap();
        assert_eq!(whole.lines().count(), WHOLE_LINES);
        assert_eq!(whole.matches(EDIT_OLD).count(), 1);
        let large = std::fs::read_to_string(dir.join(LARGE)).unwrap();
        assert!(large.len() >= LARGE_BYTES && large.lines().count() > 2_000);
        let row = |k: u64| large.lines().nth((LARGE_HEADER + k) as usize).unwrap().to_string();
        assert!(row(0).contains("\"row_000000\"") && row(123).contains("\"row_000123\""));
        let again = std::env::temp_dir().join(format!("cordon-bench-agent-tree-{}-b", std::process::id()));
        let _ = std::fs::remove_dir_all(&again);
        generate(&again, 20).unwrap();
        assert_eq!(std::fs::read_to_string(again.join(LARGE)).unwrap(), large, "deterministic");
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(&again).unwrap();
    }
}
