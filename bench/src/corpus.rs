//! The corpus: a generated source-like tree (deterministic, with ignored and
//! hidden directories), large text files for the read, a small file for
//! start-up and throughput, and the real tree (the cargo registry's unpacked
//! crate sources). Generated parts are cached under the corpus directory and
//! reused when their parameters match.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

/// What the sections run on.
#[derive(Clone, Debug)]
pub struct Corpus {
    /// The generated tree.
    pub tree: PathBuf,
    /// Its files (all of them, ignored and hidden included) and bytes.
    pub tree_files: u64,
    pub tree_bytes: u64,
    /// The directory holding the files to read.
    pub big_root: PathBuf,
    /// The largest, read through Cordon's pages, and its SHA-256 (hex).
    pub big: PathBuf,
    pub big_bytes: u64,
    pub big_sha256: String,
    /// Files the reference server tries, smallest first (the last is `big`).
    pub peer_files: Vec<(u64, PathBuf)>,
    /// A directory with one small file, `small.txt`.
    pub small_root: PathBuf,
}

/// Sizes of the generated parts.
#[derive(Clone, Debug)]
pub struct Sizes {
    /// Files in the generated tree.
    pub files: u64,
    /// The file read to the end, in MiB.
    pub big_mib: u64,
    /// Smaller files the reference server tries first, in MiB.
    pub peer_mib: Vec<u64>,
}

/// Creates (or reuses) the generated parts under `dir`.
pub fn prepare(dir: &Path, sizes: &Sizes) -> Result<Corpus> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = dir.canonicalize()?;
    let tree = dir.join(format!("tree-{}", sizes.files));
    let (tree_files, tree_bytes) = cached(&tree, &format!("v2 files={}", sizes.files), |stamp| {
        let (files, bytes) = generate_tree(&tree, sizes.files)?;
        Ok(format!("{stamp}\n{files} {bytes}"))
    })
    .and_then(|text| parse_pair(&text))?;

    let big_root = dir.join("read");
    std::fs::create_dir_all(&big_root)?;
    let mut peer_files = Vec::new();
    let mut big = None;
    let mut all: Vec<u64> = sizes.peer_mib.iter().copied().filter(|m| *m < sizes.big_mib).collect();
    all.push(sizes.big_mib);
    for mib in all {
        let path = big_root.join(format!("text-{mib}MiB.txt"));
        let info = cached(&path, &format!("v1 text mib={mib}"), |stamp| {
            let sha = write_text(&path, mib << 20)?;
            Ok(format!("{stamp}\n{sha}"))
        })?;
        let sha = info.lines().nth(1).unwrap_or_default().to_string();
        if mib == sizes.big_mib {
            big = Some((path.clone(), sha));
        }
        peer_files.push((mib << 20, path));
    }
    let (big, big_sha256) = big.expect("the big file is in the list");

    let small_root = dir.join("small");
    std::fs::create_dir_all(&small_root)?;
    std::fs::write(small_root.join("small.txt"), SMALL)?;
    Ok(Corpus {
        tree,
        tree_files,
        tree_bytes,
        big_root,
        big_bytes: sizes.big_mib << 20,
        big,
        big_sha256,
        peer_files,
        small_root,
    })
}

/// The small file's text (what every small read returns).
pub const SMALL: &str = "a small file for small reads\nof two lines\n";

/// The cargo registry's unpacked crate sources (`$CARGO_HOME/registry/src`),
/// when present.
pub fn registry_sources() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let src = home.join("registry/src");
    src.is_dir().then(|| src.canonicalize().ok()).flatten()
}

/// Counts the regular files under `dir` and their bytes (symlinks not followed).
pub fn count_files(dir: &Path) -> (u64, u64) {
    let (mut files, mut bytes) = (0, 0);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                files += 1;
                bytes += entry.metadata().map_or(0, |m| m.len());
            }
        }
    }
    (files, bytes)
}

/// Runs `make` unless `path`'s stamp (`path` + `.stamp`) starts with `stamp`;
/// returns the stamp's text.
fn cached(path: &Path, stamp: &str, make: impl FnOnce(&str) -> Result<String>) -> Result<String> {
    let stamp_path = PathBuf::from(format!("{}.stamp", path.display()));
    if let Ok(text) = std::fs::read_to_string(&stamp_path)
        && text.lines().next() == Some(stamp)
        && path.exists()
    {
        return Ok(text);
    }
    let _ = std::fs::remove_file(&stamp_path);
    if path.is_dir() {
        std::fs::remove_dir_all(path)?;
    }
    eprintln!("cordon-bench: generating {}", path.display());
    let text = make(stamp)?;
    std::fs::write(&stamp_path, &text)?;
    Ok(text)
}

fn parse_pair(text: &str) -> Result<(u64, u64)> {
    let line = text.lines().nth(1).context("a stamp with counts")?;
    let mut parts = line.split(' ').map(str::parse::<u64>);
    Ok((parts.next().context("files")??, parts.next().context("bytes")??))
}

/// Writes `size` bytes of numbered lines with some multi-byte UTF-8; returns
/// their SHA-256 (hex).
fn write_text(path: &Path, size: u64) -> Result<String> {
    let tmp = PathBuf::from(format!("{}.tmp", path.display()));
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
    let mut hasher = Sha256::new();
    let (mut written, mut line) = (0u64, 0u64);
    let mut text = String::new();
    while written < size {
        text.clear();
        use std::fmt::Write as _;
        let _ = writeln!(text, "{line:012} the quick brown fox jumps over the lazy dog ünïcödé ✓");
        let take = text.len().min((size - written) as usize);
        // Cut only at a character boundary (the last line may be short).
        let take = (0..=take).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
        let bytes = if take == 0 { b"x".as_slice() } else { &text.as_bytes()[..take] };
        out.write_all(bytes)?;
        hasher.update(bytes);
        written += bytes.len() as u64;
        line += 1;
    }
    out.flush()?;
    drop(out);
    std::fs::rename(&tmp, path)?;
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// A small deterministic PRNG (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &[&str] = &[
    "alpha", "buffer", "config", "decode", "engine", "format", "handle", "index", "journal", "kernel", "layout",
    "matrix", "number", "option", "parser", "queue", "reader", "stream", "token", "update", "value", "writer",
];
const ERRORS: &[&str] = &["ParseError", "IoError", "TimeoutError", "Utf8Error", "ConfigError"];

/// One line of source-like text.
fn line(rng: &mut Rng, out: &mut String) {
    use std::fmt::Write as _;
    let w = |rng: &mut Rng| WORDS[rng.below(WORDS.len() as u64) as usize];
    let e = ERRORS[rng.below(ERRORS.len() as u64) as usize];
    let _ = match rng.below(10) {
        0 => writeln!(out, "fn {}_{}(x: u32) -> Result<u32, {e}> {{", w(rng), rng.below(1000)),
        1 => writeln!(out, "    let {} = {}(x) + {};", w(rng), w(rng), rng.below(100)),
        2 => writeln!(out, "    // TODO: handle the {} case before {}", w(rng), w(rng)),
        3 => writeln!(out, "}}"),
        4 => writeln!(out, "pub struct {}{} {{ name: String, size: usize }}", capital(w(rng)), rng.below(100)),
        5 => writeln!(out, "impl std::fmt::Display for {e} {{"),
        6 => writeln!(out, "    return Err({e}::new(\"{} {}\"));", w(rng), w(rng)),
        7 => writeln!(out, "    self.{}.{}({}, {});", w(rng), w(rng), w(rng), rng.below(10)),
        8 => writeln!(out, "{} {} {} {} {}", w(rng), w(rng), w(rng), w(rng), w(rng)),
        _ => writeln!(out),
    };
}

fn capital(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
}

/// Generates `files` files: leaf directories of 50 files three levels deep,
/// mostly `.rs`; an empty `.git/` and a top-level `.gitignore` ignoring
/// `target/` and `*.log`;
/// every 97th leaf has an ignored `target/` and every 89th a hidden `.cache/`
/// (both holding `.rs` files that searches must skip). Returns the files and
/// bytes written (ignored and hidden ones included).
fn generate_tree(root: &Path, files: u64) -> Result<(u64, u64)> {
    let tmp = PathBuf::from(format!("{}.tmp", root.display()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp)?;
    }
    std::fs::create_dir_all(&tmp)?;
    // A repository of its own, so every contender reads its `.gitignore` (and
    // none reads the ignore files of a repository the corpus may sit in).
    std::fs::create_dir_all(tmp.join(".git"))?;
    const GITIGNORE: &str = "target/\n*.log\n";
    std::fs::write(tmp.join(".gitignore"), GITIGNORE)?;
    let (mut written, mut bytes) = (1u64, GITIGNORE.len() as u64);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut text = String::new();
    let mut write = |path: &Path, rng: &mut Rng, lines: u64| -> Result<()> {
        text.clear();
        for _ in 0..lines {
            line(rng, &mut text);
        }
        std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
        written += 1;
        bytes += text.len() as u64;
        Ok(())
    };
    let mut leaf = 0u64;
    let mut i = 0u64;
    while i < files {
        let dir = tmp.join(format!("a{:02}/b{:02}/c{:02}", leaf / 400, (leaf / 20) % 20, leaf % 20));
        std::fs::create_dir_all(&dir)?;
        for _ in 0..50 {
            if i >= files {
                break;
            }
            let ext = match rng.below(20) {
                0..=7 => "rs",
                8..=10 => "txt",
                11..=13 => "md",
                14..=15 => "toml",
                16..=17 => "json",
                _ => "py",
            };
            let lines = 5 + rng.below(56);
            write(&dir.join(format!("f{i:06}.{ext}")), &mut rng, lines)?;
            i += 1;
        }
        if leaf % 97 == 5 {
            std::fs::create_dir_all(dir.join("target"))?;
            for k in 0..5 {
                write(&dir.join(format!("target/out{k}.rs")), &mut rng, 20)?;
            }
            write(&dir.join("build.log"), &mut rng, 20)?;
        }
        if leaf % 89 == 7 {
            std::fs::create_dir_all(dir.join(".cache"))?;
            for k in 0..3 {
                write(&dir.join(format!(".cache/hidden{k}.rs")), &mut rng, 20)?;
            }
        }
        leaf += 1;
    }
    std::fs::rename(&tmp, root)?;
    Ok((written, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_parts_are_deterministic_and_reused() {
        let dir = std::env::temp_dir().join(format!("cordon-bench-corpus-{}", std::process::id()));
        let sizes = Sizes { files: 400, big_mib: 2, peer_mib: vec![1, 8] };
        let first = prepare(&dir, &sizes).unwrap();
        assert_eq!(first.peer_files.len(), 2, "sizes above the big file are dropped");
        assert_eq!(std::fs::metadata(&first.big).unwrap().len(), 2 << 20);
        let (files, bytes) = count_files(&first.tree);
        assert_eq!((files, bytes), (first.tree_files, first.tree_bytes));
        assert!(files > 400, "the ignored and hidden files come on top: {files}");
        let again = prepare(&dir, &sizes).unwrap();
        assert_eq!(again.big_sha256, first.big_sha256);
        let sha: String =
            Sha256::digest(std::fs::read(&first.big).unwrap()).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(sha, first.big_sha256);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
