//! A generated directory tree for the search tools, shaped like a real
//! repository: nested directories, `.gitignore` and `.ignore` files, hidden
//! files and directories, binary files, unicode names and content, CRLF lines,
//! and files without a final newline. Deterministic for a given seed.

use std::path::Path;

use crate::support::Rng;

/// Words the files are made of; some are the patterns tests search for.
const WORDS: [&str; 16] = [
    "alpha",
    "beta",
    "gamma",
    "needle",
    "Needle",
    "NEEDLE",
    "haystack",
    "fn",
    "main",
    "ünïcödé",
    "日本語",
    "🎉",
    "foo_bar",
    "x1234",
    "tab\tbed",
    "quote\"d",
];

/// Fills `root` with the corpus: about `files` files.
pub fn generate(root: &Path, files: usize, seed: u64) {
    let mut rng = Rng(seed | 1);
    let dirs = [
        "",
        "src",
        "src/deep",
        "src/deep/deeper",
        "docs",
        "ünï",
        "target",
        "build",
        ".hidden",
        "node_modules/pkg",
        "logs",
    ];
    for dir in dirs {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n/build\n").unwrap();
    std::fs::write(root.join("src/.gitignore"), "*.tmp\n").unwrap();
    std::fs::write(root.join(".ignore"), "node_modules/\n").unwrap();
    // ripgrep only honours .gitignore inside a git repository.
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let exts = ["rs", "txt", "md", "tmp", "log", "json", "py"];
    for i in 0..files {
        let dir = dirs[rng.range(0, dirs.len() as u64 - 1) as usize];
        let ext = exts[rng.range(0, exts.len() as u64 - 1) as usize];
        let hidden = if rng.range(0, 9) == 0 { "." } else { "" };
        let name =
            if rng.range(0, 7) == 0 { format!("{hidden}fïlé_{i}.{ext}") } else { format!("{hidden}file_{i}.{ext}") };
        let path = root.join(dir).join(name);
        if rng.range(0, 14) == 0 {
            let mut bytes: Vec<u8> = (0..rng.range(10, 3000)).map(|_| rng.next() as u8).collect();
            bytes.extend_from_slice(b"\0needle in binary\n");
            std::fs::write(&path, bytes).unwrap();
            continue;
        }
        let mut text = String::new();
        for line in 0..rng.range(0, 60) {
            for _ in 0..rng.range(0, 12) {
                text.push_str(WORDS[rng.range(0, WORDS.len() as u64 - 1) as usize]);
                text.push(' ');
            }
            text.push_str(if line % 9 == 4 { "\r\n" } else { "\n" });
        }
        if rng.range(0, 4) == 0 {
            text.push_str("needle without final newline");
        }
        std::fs::write(&path, text).unwrap();
    }
}

/// The `rg` binary: `$CORDON_TEST_RG`, or `target/interop/bin/rg`, installed
/// there with `cargo install` on first use (`.ci/run` installs it up front).
pub fn ripgrep() -> std::path::PathBuf {
    if let Some(rg) = std::env::var_os("CORDON_TEST_RG") {
        return rg.into();
    }
    static SETUP: std::sync::Once = std::sync::Once::new();
    let root = crate::support::workspace().join("target/interop");
    let local = root.join("bin/rg");
    SETUP.call_once(|| {
        if local.is_file() {
            return;
        }
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let installed = std::process::Command::new(cargo)
            .args(["install", "--quiet", "--locked", "ripgrep", "--root"])
            .arg(&root)
            .status();
        assert!(
            installed.is_ok_and(|s| s.success()),
            "could not install ripgrep into {} (the grep and glob tests compare with it); run .ci/run",
            root.display()
        );
    });
    local
}
