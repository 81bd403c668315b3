//! Finding `old_string` in a file's bytes, the CRLF rule, and building the
//! edited bytes.
//!
//! Matching is on bytes: the strings are UTF-8, the file need not be. Without
//! `replace_all` the string must occur exactly once, counting overlapping
//! occurrences (`aa` occurs twice in `aaa`), so the edit is never a guess; with
//! it, every leftmost non-overlapping occurrence is replaced, as
//! `str::replace` does.
//!
//! The CRLF rule: when the exact string does not occur, the file contains
//! `\r\n`, `old_string` contains `\n`, and neither string contains `\r\n`,
//! every `\n` in both strings becomes `\r\n` and the search is made again.

use cordon_sdk::{Error, ErrorCode};
use memchr::memmem;

/// The most replacements one call makes.
pub const MAX_REPLACEMENTS: usize = 1_000_000;
/// The most bytes the edited file may have.
pub const MAX_FILE_BYTES: usize = 64 << 20;
/// How many line numbers an ambiguity error names.
pub const SHOWN_LINES: usize = 5;

/// What an edit replaces and with what, once the strings are settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The bytes searched for (`old_string`, or its CRLF form).
    pub old: Vec<u8>,
    /// The bytes put in their place (`new_string`, or its CRLF form).
    pub new: Vec<u8>,
    /// Whether the CRLF rule turned `\n` into `\r\n` in both strings.
    pub crlf: bool,
    /// Where each replaced occurrence starts in the original bytes, ascending
    /// and non-overlapping.
    pub starts: Vec<usize>,
}

/// Finds what to replace in `content`. `shown` names the file in errors.
pub fn plan(content: &[u8], old: &str, new: &str, replace_all: bool, shown: &str) -> Result<Plan, Error> {
    if old.is_empty() {
        return Err(Error::new(ErrorCode::InvalidArgument, "`old_string` is empty; give the exact text to replace"));
    }
    if old == new {
        return Err(Error::new(
            ErrorCode::InvalidArgument,
            "`old_string` and `new_string` are the same; there is nothing to change",
        ));
    }
    let exact = find(content, old.as_bytes(), replace_all, shown)?;
    if !exact.is_empty() {
        return Ok(Plan { old: old.as_bytes().to_vec(), new: new.as_bytes().to_vec(), crlf: false, starts: exact });
    }
    let crlf_applies = old.contains('\n')
        && !old.contains("\r\n")
        && !new.contains("\r\n")
        && memmem::find(content, b"\r\n").is_some();
    if crlf_applies {
        let (old, new) = (to_crlf(old), to_crlf(new));
        let starts = find(content, &old, replace_all, shown)?;
        if !starts.is_empty() {
            return Ok(Plan { old, new, crlf: true, starts });
        }
    }
    let tried = if crlf_applies { " (also tried with CRLF line endings)" } else { "" };
    Err(Error::new(
        ErrorCode::InvalidArgument,
        format!(
            "old_string not found in `{shown}`{tried}; read the file again and copy the exact text, \
             whitespace and indentation included"
        ),
    ))
}

/// The edited bytes: `content` with every planned occurrence replaced.
pub fn apply(content: &[u8], plan: &Plan) -> Result<Vec<u8>, Error> {
    let count = plan.starts.len();
    let size = (content.len() - count * plan.old.len()).checked_add(count.saturating_mul(plan.new.len()));
    let size = size.filter(|&s| s <= MAX_FILE_BYTES).ok_or_else(|| {
        Error::new(
            ErrorCode::TooLarge,
            format!("the edited file would be larger than {} MiB, the most edit writes", MAX_FILE_BYTES >> 20),
        )
    })?;
    let mut out = Vec::with_capacity(size);
    let mut from = 0;
    for &start in &plan.starts {
        out.extend_from_slice(&content[from..start]);
        out.extend_from_slice(&plan.new);
        from = start + plan.old.len();
    }
    out.extend_from_slice(&content[from..]);
    Ok(out)
}

/// The starts of what to replace: every non-overlapping occurrence with
/// `all`, else the only occurrence (an error if there are several). Empty when
/// there is none.
fn find(content: &[u8], needle: &[u8], all: bool, shown: &str) -> Result<Vec<usize>, Error> {
    let finder = memmem::Finder::new(needle);
    if all {
        let mut starts = Vec::new();
        for start in finder.find_iter(content) {
            if starts.len() == MAX_REPLACEMENTS {
                return Err(Error::new(
                    ErrorCode::TooLarge,
                    format!(
                        "old_string occurs more than {MAX_REPLACEMENTS} times in `{shown}`; \
                         rewrite the file with the write tool instead"
                    ),
                ));
            }
            starts.push(start);
        }
        return Ok(starts);
    }
    let Some(first) = finder.find(content) else { return Ok(Vec::new()) };
    let mut shown_at = vec![first];
    let mut count = 1usize;
    let mut next = first + 1;
    while let Some(offset) = finder.find(&content[next..]) {
        let at = next + offset;
        count += 1;
        if shown_at.len() < SHOWN_LINES {
            shown_at.push(at);
        }
        next = at + 1;
    }
    if count == 1 {
        return Ok(shown_at);
    }
    let mut lines: Vec<String> = line_numbers(content, &shown_at).iter().map(u64::to_string).collect();
    if count > shown_at.len() {
        lines.push("…".into());
    }
    Err(Error::new(
        ErrorCode::InvalidArgument,
        format!(
            "old_string is ambiguous: found {count} times in `{shown}`, at lines {}; \
             add context to make it unique or pass replace_all",
            lines.join(", ")
        ),
    ))
}

/// The 1-based line of each position (ascending) in `content`.
pub fn line_numbers(content: &[u8], positions: &[usize]) -> Vec<u64> {
    let mut line = 1u64;
    let mut counted = 0;
    positions
        .iter()
        .map(|&pos| {
            line += memchr::memchr_iter(b'\n', &content[counted..pos]).count() as u64;
            counted = pos;
            line
        })
        .collect()
}

/// `text` with every `\n` turned into `\r\n`.
fn to_crlf(text: &str) -> Vec<u8> {
    text.replace('\n', "\r\n").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(content: &str, old: &str, new: &str, all: bool) -> Result<Plan, Error> {
        plan(content.as_bytes(), old, new, all, "f")
    }

    #[test]
    fn overlapping_occurrences_make_a_single_replacement_ambiguous() {
        let err = planned("aaa", "aa", "b", false).unwrap_err();
        assert!(err.message.contains("found 2 times"), "{}", err.message);
        let all = planned("aaa", "aa", "b", true).unwrap();
        assert_eq!(all.starts, [0]);
        assert_eq!(apply(b"aaa", &all).unwrap(), b"ba");
    }

    #[test]
    fn ambiguity_names_the_first_lines_and_elides_the_rest() {
        let content = "x\n".repeat(8);
        let err = planned(&content, "x", "y", false).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument);
        assert!(err.message.contains("found 8 times in `f`, at lines 1, 2, 3, 4, 5, …;"), "{}", err.message);
    }

    #[test]
    fn the_crlf_rule_applies_only_when_the_exact_string_is_absent() {
        let mixed = "a\nb\r\na\r\nb\n";
        let exact = planned(mixed, "a\nb", "c\nd", false).unwrap();
        assert_eq!((exact.crlf, exact.starts.as_slice()), (false, &[0][..]));
        let crlf = planned(mixed, "b\na", "B\nA", false).unwrap();
        assert_eq!((crlf.crlf, crlf.old.as_slice(), crlf.new.as_slice()), (true, &b"b\r\na"[..], &b"B\r\nA"[..]));
        let err = planned(mixed, "q\nr", "s", false).unwrap_err();
        assert!(err.message.contains("also tried with CRLF"), "{}", err.message);
        let lf_only = planned("a\nb\n", "q\nr", "s", false).unwrap_err();
        assert!(!lf_only.message.contains("CRLF"), "{}", lf_only.message);
        assert!(planned(mixed, "b\na", "B\r\nA", false).is_err(), "no rewrite when new_string has CRLF");
    }

    #[test]
    fn same_strings_and_empty_old_strings_are_refused() {
        assert_eq!(planned("abc", "b", "b", false).unwrap_err().code, ErrorCode::InvalidArgument);
        assert_eq!(planned("abc", "", "x", false).unwrap_err().code, ErrorCode::InvalidArgument);
    }

    #[test]
    fn line_numbers_count_newlines_before_each_position() {
        assert_eq!(line_numbers(b"a\nb\n\nc", &[0, 2, 4, 5]), [1, 2, 3, 4]);
    }
}
