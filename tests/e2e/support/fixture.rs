//! The directory fixture: a granted root with a few files, and outside it a
//! canary no test may ever read back.

use std::path::PathBuf;

/// A temporary tree: `root/` (the granted root) with files, and outside it a
/// canary file and a sibling `root_evil/` whose name has the root as a prefix.
pub struct Fixture {
    pub dir: tempfile::TempDir,
}

pub const CANARY: &str = "CANARY-must-never-be-read";

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(dir.path().join("root_evil")).unwrap();
        std::fs::write(dir.path().join("outside.txt"), CANARY).unwrap();
        std::fs::write(dir.path().join("root_evil/secret.txt"), CANARY).unwrap();
        std::fs::write(root.join("hello.txt"), "hello\nworld\n").unwrap();
        std::fs::write(root.join("sub/inner.txt"), "inner\n").unwrap();
        Fixture { dir }
    }

    /// The granted root, canonical (as the server reports paths).
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root").canonicalize().unwrap()
    }

    pub fn outside(&self) -> PathBuf {
        self.dir.path().join("outside.txt").canonicalize().unwrap()
    }

    pub fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root().join(rel);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// Adds `copies` hard links to one text file of about `bytes` bytes in
    /// which no test looks for anything (`corpus-NNNN.txt`): a long search
    /// that costs no disk.
    pub fn long_search_corpus(&self, copies: usize, bytes: usize) {
        let line = "alpha beta gamma delta epsilon zeta theta lambda sigma omega\n";
        let first = self.write("corpus-0000.txt", line.repeat(bytes / line.len()));
        for i in 1..copies {
            std::fs::hard_link(&first, self.root().join(format!("corpus-{i:04}.txt"))).unwrap();
        }
    }
}
