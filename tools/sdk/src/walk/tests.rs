//! The walk against the `ignore` crate's own walker, and its bounds.

use super::*;
use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;

/// A tree with every kind of ignore file, nested repositories, hidden
/// entries and negations, removed when dropped.
struct Fixture(PathBuf);

impl Fixture {
    fn new(name: &str) -> Fixture {
        let dir = std::env::temp_dir().join(format!("cordon-sdk-walk-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let files = [
            (".gitignore", "*.log\n/build\n!keep.log\ndeep/**/gen\n"),
            (".ignore", "secret*\n"),
            (".rgignore", "!secret-ok\n"),
            ("a.rs", ""),
            ("a.log", ""),
            ("keep.log", ""),
            ("build/out.o", ""),
            ("src/build/x.rs", ""),
            ("src/.hidden.rs", ""),
            ("src/main.rs", ""),
            ("src/secret.rs", ""),
            ("src/secret-ok", ""),
            ("deep/a/gen/g.rs", ""),
            ("deep/a/b.py", ""),
            (".config/c.toml", ""),
            ("sub/.git/info/exclude", "excluded.rs\n"),
            ("sub/.git/HEAD", ""),
            ("sub/.gitignore", "!a.log\nlocal/\n"),
            ("sub/a.log", ""),
            ("sub/excluded.rs", ""),
            ("sub/local/l.rs", ""),
            ("sub/ok.rs", ""),
            ("z/.gitignore", "*\n!*.md\n"),
            ("z/readme.md", ""),
            ("z/code.rs", ""),
        ];
        for (rel, text) in files {
            let path = dir.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Fixture(dir.canonicalize().unwrap())
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What the `ignore` crate's own walker keeps with the same filters.
fn reference(top: &Path, start: &Path, f: &Filters) -> Vec<PathBuf> {
    let mut b = WalkBuilder::new(start);
    b.hidden(!f.hidden)
        .parents(true)
        .ignore(f.ignore_files)
        .git_ignore(f.ignore_files)
        .git_exclude(f.ignore_files)
        .git_global(false)
        .require_git(f.require_git)
        .overrides(f.overrides.clone())
        .types(f.types.clone())
        .sort_by_file_name(|a, b| a.cmp(b));
    for name in &f.custom_ignore {
        b.add_custom_ignore_filename(name);
    }
    let _ = top;
    b.build().filter_map(Result::ok).filter(|e| e.depth() > 0).map(|e| e.into_path()).collect()
}

fn ours(top: &Path, start: &Path, f: &Filters) -> Vec<PathBuf> {
    let mut walk = Walk::new(top, start, f.clone());
    std::iter::from_fn(|| walk.next_entry()).map(|r| r.unwrap().path).collect()
}

#[test]
fn keeps_what_the_ignore_crate_keeps_in_the_same_order() {
    let fx = Fixture::new("same");
    let root = &fx.0;
    let mut types = TypesBuilder::new();
    types.add_defaults();
    types.select("rust");
    let rust = types.build().unwrap();
    let mut overrides = OverrideBuilder::new(root);
    overrides.add("*.rs").unwrap();
    overrides.add("!src/secret.rs").unwrap();
    let globs = overrides.build().unwrap();
    let base = Filters {
        hidden: false,
        ignore_files: true,
        custom_ignore: vec![".rgignore".into()],
        require_git: false,
        overrides: Override::empty(),
        types: Types::empty(),
    };
    let variants = [
        base.clone(),
        Filters { require_git: true, ..base.clone() },
        Filters { hidden: true, ..base.clone() },
        Filters { ignore_files: false, ..base.clone() },
        Filters { types: rust, ..base.clone() },
        Filters { overrides: globs, ..base.clone() },
    ];
    for (i, f) in variants.iter().enumerate() {
        assert_eq!(ours(root, root, f), reference(root, root, f), "variant {i}");
        let sub = root.join("sub");
        assert_eq!(ours(root, &sub, f), reference(root, &sub, f), "variant {i}, from sub/");
    }
}

#[test]
fn a_path_below_a_directory_is_made_relative_to_it_by_text_or_by_components() {
    let below =
        |path: &str, dir: &str| rules::below(Some(path), Path::new(path), Path::new(dir)).map(Path::to_path_buf);
    assert_eq!(below("/r/dir/a/b.rs", "/r/dir"), Some(PathBuf::from("a/b.rs")));
    assert_eq!(below("/r/dir/a/b.rs", "/r/dir/"), Some(PathBuf::from("a/b.rs")), "a directory with a trailing slash");
    assert_eq!(below("/r/a", "/"), Some(PathBuf::from("r/a")), "the filesystem's root");
    assert_eq!(below("/r/dirx/a", "/r/dir"), None, "a sibling whose name starts like the directory");
    assert_eq!(below("/r/dir", "/r/dir"), None, "the directory itself");
    assert_eq!(below("/elsewhere/a", "/r/dir"), None);
    let by_components = rules::below(None, Path::new("/r/dir/a/b"), Path::new("/r/dir"));
    assert_eq!(by_components, Some(Path::new("a/b")), "a path that is not text");
}

#[test]
fn positions_skip_what_sorts_before_and_end_before_the_boundary() {
    let fx = Fixture::new("bounds");
    let root = &fx.0;
    let all = ours(root, root, &Filters::none());
    let (from, end) = (root.join("deep/a"), root.join("src/main.rs"));
    let mut walk = Walk::new(root, root, Filters::none()).from(Some(from.clone())).until(Some(end.clone()));
    let got: Vec<_> = std::iter::from_fn(|| walk.next_entry()).map(|r| r.unwrap().path).collect();
    let want: Vec<_> = all.iter().filter(|p| **p >= from && **p < end || from.starts_with(p)).cloned().collect();
    assert_eq!(got, want);
}

#[test]
fn runs_shrink_from_the_first_to_the_last() {
    assert_eq!(super::shrinking_cuts(36, 8), [8, 15, 21, 26, 30, 33, 35]);
    assert_eq!(super::shrinking_cuts(3, 2), [2]);
    assert!(super::shrinking_cuts(10, 1).is_empty());
    assert!(super::shrinking_cuts(0, 4).iter().all(|&c| c == 0), "nothing to cut: every cut is dropped");
    let many = super::shrinking_cuts(4 << 20, 128);
    assert!(many.windows(2).all(|w| w[0] <= w[1]) && many.iter().all(|&c| c < 4 << 20), "no overflow: {many:?}");
    assert_eq!(many[0], (128u64 * (4 << 20) / (128 * 129 / 2)) as usize);
}

#[test]
fn boundaries_cut_after_the_start_in_path_order() {
    let fx = Fixture::new("cuts");
    let root = &fx.0;
    let cuts = boundaries(root, None, 4, false);
    assert_eq!(cuts.len(), 3, "{cuts:?}");
    assert!(cuts.windows(2).all(|w| w[0] < w[1]), "{cuts:?}");
    let from = root.join("deep/a/gen/g.rs");
    let after = boundaries(root, Some(&from), 3, false);
    assert!(!after.is_empty() && after.iter().all(|p| *p > from), "{after:?}");
    assert!(boundaries(root, None, 1, false).is_empty());
}

/// Every visit of a walk but the `Passed` ones.
fn visits(walk: &mut Walk) -> Vec<Visit> {
    std::iter::from_fn(|| walk.next_visit()).map(Result::unwrap).filter(|v| !matches!(v, Visit::Passed(_))).collect()
}

/// What a walk visits, as short strings: `path` for an entry, `!file@at`
/// for an ignore file not applied, paths relative to `root`.
fn shown(root: &Path, visits: &[Visit]) -> Vec<String> {
    let rel = |p: &Path| p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
    visits
        .iter()
        .map(|v| match v {
            Visit::Entry(found) => rel(&found.path),
            Visit::Unapplied(u) => format!("!{}@{}", rel(&u.file), rel(&u.at)),
            Visit::Unreadable(path, _) => format!("?{}", rel(path)),
            Visit::Passed(_) => unreachable!(),
        })
        .collect()
}

/// A tree whose ignore files are too large to apply: a sparse `.ignore` of
/// 3 GiB at the top (nothing is stored) and a `.gitignore` just over the
/// bound in `sub/`; each would exclude `*.log`.
fn oversized(name: &str) -> Fixture {
    let dir = std::env::temp_dir().join(format!("cordon-sdk-walk-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("sub/inner")).unwrap();
    let fx = Fixture(dir.canonicalize().unwrap());
    let root = &fx.0;
    std::fs::File::create(root.join(".ignore")).unwrap().set_len(3 << 30).unwrap();
    let mut text = b"*.log\n".repeat(MAX_IGNORE_FILE_BYTES as usize / 6 + 1);
    text.truncate(MAX_IGNORE_FILE_BYTES as usize + 1);
    std::fs::write(root.join("sub/.gitignore"), text).unwrap();
    for rel in ["sub/a.log", "sub/inner/b.log", "sub/inner/c.rs"] {
        std::fs::write(root.join(rel), "x\n").unwrap();
    }
    fx
}

#[test]
fn ignore_files_over_the_bound_are_said_at_their_place_and_not_applied() {
    let fx = oversized("oversized");
    let root = &fx.0;
    let filters = Filters { custom_ignore: vec![".rgignore".into()], require_git: false, ..Filters::none() };
    let filters = Filters { hidden: false, ignore_files: true, ..filters };
    let seen = shown(root, &visits(&mut Walk::new(root, &root.join("sub"), filters.clone())));
    assert_eq!(
        seen,
        [
            "!.ignore@sub",
            "!sub/.gitignore@sub/.gitignore",
            "sub/a.log",
            "sub/inner",
            "sub/inner/b.log",
            "sub/inner/c.rs"
        ],
        "the top's .ignore is said first, at the start; sub/.gitignore at its place; neither applied"
    );
    let whole = visits(&mut Walk::new(root, root, filters.clone()));
    let said: Vec<_> = whole.iter().filter_map(|v| if let Visit::Unapplied(u) = v { Some(u) } else { None }).collect();
    assert_eq!(said.len(), 2, "{whole:?}");
    assert_eq!((said[0].at.clone(), said[0].why.clone()), (root.join(".ignore"), Why::TooLarge));
    assert!(said[0].reason().contains("larger than 1 MiB"), "{}", said[0].reason());
    // A walk from the entry it is at says it again (a tool resuming after it
    // passes over it); one from past it, or a range ending before it, does not.
    let at = root.join("sub/.gitignore");
    let again = shown(root, &visits(&mut Walk::new(root, root, filters.clone()).from(Some(at.clone()))));
    assert_eq!(again[..2], ["sub", "!sub/.gitignore@sub/.gitignore"], "the directory holding it, then it");
    let past = shown(root, &visits(&mut Walk::new(root, root, filters.clone()).from(Some(root.join("sub/a.log")))));
    assert!(past.iter().all(|v| !v.starts_with('!')), "{past:?}");
    let before = shown(root, &visits(&mut Walk::new(root, root, filters.clone()).until(Some(at))));
    assert!(!before.iter().any(|v| v.contains("sub/.gitignore")), "{before:?}");
    // A named file is searched whatever the ignore files above it say.
    let file = shown(root, &visits(&mut Walk::new(root, &root.join("sub/a.log"), filters.clone())));
    assert_eq!(file, ["sub/a.log"]);
    // Without ignore files nothing is read, so nothing is said.
    let off = Filters { ignore_files: false, ..filters };
    assert!(shown(root, &visits(&mut Walk::new(root, root, off))).iter().all(|v| !v.starts_with('!')));
}
