//! The ignore files a walk reads, and what they decide: each directory's
//! rules over its parent's, with the `ignore` crate's matchers and precedence.
//!
//! An ignore file is read in one host call ([`scan::read_head`]), at most
//! [`MAX_IGNORE_FILE_BYTES`] of it: a larger one (a hostile 80 MB
//! `.gitignore`, a sparse file of gigabytes) is not applied rather than held
//! in memory, and neither is one that cannot be read. Either is reported
//! ([`Unapplied`]) for the tool to say so in its result; the walk goes on
//! without its rules.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::Filters;
use crate::ErrorCode;
use crate::scan::{self, DirEntry, Kind};

/// The largest ignore file a walk applies: 1 MiB, the most one host call
/// reads of a file's start (`scan.read-head`). Real ignore files are a few
/// kilobytes; a larger one is reported and not applied.
pub const MAX_IGNORE_FILE_BYTES: u32 = 1 << 20;

/// An ignore file a walk did not apply, and where in path order it says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unapplied {
    /// The ignore file.
    pub file: PathBuf,
    /// The entry it is reported at, just before that entry: the ignore file
    /// itself (git's exclude file: the `.git` directory holding it), or for
    /// the ignore files of the directories above the walk's start, the start.
    pub at: PathBuf,
    /// Why it was not applied.
    pub why: Why,
}

/// Why an ignore file was not applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// It holds more than [`MAX_IGNORE_FILE_BYTES`].
    TooLarge,
    /// It could not be read: the reason.
    Unreadable(String),
}

impl Unapplied {
    /// Why, as a phrase for a model: "an ignore file larger than 1 MiB, …".
    pub fn reason(&self) -> String {
        match &self.why {
            Why::TooLarge => format!(
                "an ignore file larger than {} MiB, the most a walk reads of one; what it would exclude is not excluded",
                MAX_IGNORE_FILE_BYTES >> 20
            ),
            Why::Unreadable(message) => {
                format!("an ignore file that could not be read ({message}); what it would exclude is not excluded")
            }
        }
    }
}

/// The ignore rules one directory adds, and those of the directories above.
/// Its matchers are given paths relative to `dir` (see `below`).
pub(super) struct Rules {
    /// The directory whose ignore files these are.
    dir: PathBuf,
    custom: Option<Gitignore>,
    ignore: Option<Gitignore>,
    git: Option<Gitignore>,
    exclude: Option<Gitignore>,
    /// The directory holds `.git`: a repository's top.
    has_git: bool,
    /// This directory or one above holds `.git`.
    in_git: bool,
    parent: Option<Rc<Rules>>,
}

impl Rules {
    /// The verdict of the ignore files on `path`, as the `ignore` crate gives it.
    /// `text` is `path` as text, when it is (checked once by the caller).
    pub(super) fn matched(
        self: &Rc<Rules>,
        path: &Path,
        text: Option<&str>,
        is_dir: bool,
        require_git: bool,
    ) -> Match<()> {
        let any_git = !require_git || self.in_git;
        let (mut custom, mut ignore, mut git, mut exclude) = (Match::None, Match::None, Match::None, Match::None);
        let mut saw_git = false;
        let mut level = Some(self);
        while let Some(rules) = level {
            // An entry lies below the directories of all its rules.
            let Some(below) = below(text, path, &rules.dir) else { break };
            let verdict =
                |m: &Option<Gitignore>| m.as_ref().map_or(Match::None, |m| m.matched(below, is_dir).map(|_| ()));
            if custom.is_none() {
                custom = verdict(&rules.custom);
            }
            if ignore.is_none() {
                ignore = verdict(&rules.ignore);
            }
            if any_git && !saw_git {
                if git.is_none() {
                    git = verdict(&rules.git);
                }
                if exclude.is_none() {
                    exclude = verdict(&rules.exclude);
                }
            }
            saw_git = saw_git || rules.has_git;
            level = rules.parent.as_ref();
        }
        custom.or(ignore).or(git).or(exclude)
    }
}

/// Whether the filters keep the entry `path` named `name`, as the `ignore`
/// crate's `Ignore::matched` decides.
pub(super) fn keeps(f: &Filters, rules: Option<&Rc<Rules>>, path: &Path, name: &str, kind: Kind) -> bool {
    let is_dir = kind == Kind::Dir;
    let text = path.to_str();
    if !f.overrides.is_empty() {
        let below = below(text, path, f.overrides.path()).unwrap_or(path);
        match f.overrides.matched(below, is_dir) {
            Match::Ignore(_) => return false,
            Match::Whitelist(_) => return true,
            Match::None => {}
        }
    }
    let mut whitelisted = false;
    if let Some(rules) = rules {
        match rules.matched(path, text, is_dir, f.require_git) {
            Match::Ignore(_) => return false,
            Match::Whitelist(_) => whitelisted = true,
            Match::None => {}
        }
    }
    if !f.types.is_empty() {
        match f.types.matched(path, is_dir) {
            Match::Ignore(_) => return false,
            Match::Whitelist(_) => whitelisted = true,
            Match::None => {}
        }
    }
    whitelisted || f.hidden || !name.starts_with('.')
}

/// `path` (whose text is `text`) relative to `dir`, if it lies below it. The
/// `ignore` crate's matchers strip their root from an absolute path
/// themselves, by components where paths are not Unix's (WASI): that was half
/// of glob's time in the guest. Given the relative path made here by text,
/// their strip gives up at the first component.
pub(super) fn below<'a>(text: Option<&'a str>, path: &'a Path, dir: &Path) -> Option<&'a Path> {
    let rest = match (text, dir.to_str()) {
        (Some(text), Some(dir)) => {
            Path::new(crate::paths::strip_text_prefix(text, dir.trim_end_matches('/'))?.strip_prefix('/')?)
        }
        // Not text (only off WASI): by components.
        _ => path.strip_prefix(dir).ok()?,
    };
    (!rest.as_os_str().is_empty()).then_some(rest)
}

/// The rules `dir` adds below `parent`, from the ignore files its `entries`
/// show (`parent` itself when it adds none), and the ignore files among them
/// that were not applied.
pub(super) fn read_rules(
    filters: &Filters,
    dir: &Path,
    entries: &[DirEntry],
    parent: Option<Rc<Rules>>,
) -> (Option<Rc<Rules>>, Vec<Unapplied>) {
    let mut unapplied = Vec::new();
    if !filters.ignore_files {
        return (parent, unapplied);
    }
    let has = |name: &str| entries.binary_search_by(|e| e.name.as_str().cmp(name)).ok().map(|i| entries[i].kind);
    let is_file = |name: &str| has(name) == Some(Kind::File);
    let has_git = has(".git").is_some();
    let custom: Vec<&str> = filters.custom_ignore.iter().map(String::as_str).filter(|n| is_file(n)).collect();
    let (ignore, git) = (is_file(".ignore"), is_file(".gitignore"));
    let exclude = has(".git") == Some(Kind::Dir);
    if custom.is_empty() && !ignore && !git && !has_git {
        return (parent, unapplied);
    }
    let mut build = |names: &[&str]| {
        let mut builder = GitignoreBuilder::new(dir);
        for name in names {
            let file = dir.join(name);
            // Git's exclude file is reported at the `.git` directory holding it.
            let at = dir.join(name.split('/').next().unwrap_or(name));
            match read_bounded(&file, at == file) {
                Ok(Some(bytes)) => add_lines(&mut builder, &file, &bytes),
                Ok(None) => {}
                Err(why) => unapplied.push(Unapplied { file, at, why }),
            }
        }
        builder.build().ok().filter(|m| !m.is_empty())
    };
    let in_git = has_git || parent.as_ref().is_some_and(|p| p.in_git);
    let rules = Rules {
        dir: dir.to_path_buf(),
        custom: (!custom.is_empty()).then(|| build(&custom)).flatten(),
        ignore: ignore.then(|| build(&[".ignore"])).flatten(),
        git: git.then(|| build(&[".gitignore"])).flatten(),
        exclude: exclude.then(|| build(&[".git/info/exclude"])).flatten(),
        has_git,
        in_git,
        parent,
    };
    unapplied.sort_by(|a, b| a.at.cmp(&b.at));
    (Some(Rc::new(rules)), unapplied)
}

/// The bytes of the ignore file `file`, read whole if it holds at most
/// [`MAX_IGNORE_FILE_BYTES`]; `None` when it does not exist (git's exclude
/// file often does not), or when it is denied and `listed` is false (the
/// exclude file, inside `.git`, which the server may deny: its listing
/// showed no ignore file there).
fn read_bounded(file: &Path, listed: bool) -> Result<Option<Vec<u8>>, Why> {
    match scan::read_head(file, true, MAX_IGNORE_FILE_BYTES) {
        Ok((bytes, true)) => Ok(Some(bytes)),
        Ok((_, false)) => Err(Why::TooLarge),
        Err(e) if e.code == ErrorCode::NotFound => Ok(None),
        Err(e) if e.code == ErrorCode::PermissionDenied && !listed => Ok(None),
        Err(e) => Err(Why::Unreadable(e.message)),
    }
}

/// Adds the lines of an ignore file to `builder` as the `ignore` crate's
/// `GitignoreBuilder::add` reads a file (which reads it unbounded): line by
/// line, a UTF-8 BOM dropped from the first, stopping at a line that is not
/// UTF-8; a line that is not a valid glob is left out.
fn add_lines(builder: &mut GitignoreBuilder, file: &Path, bytes: &[u8]) {
    for (i, line) in bytes.lines().enumerate() {
        let Ok(line) = line else { break };
        let line = if i == 0 { line.trim_start_matches('\u{feff}') } else { &line };
        let _ = builder.add_line(Some(file.to_path_buf()), line);
    }
}
