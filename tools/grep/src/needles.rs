//! A search's needles: byte strings at least one of which every match
//! holds, so that a file holding none of them cannot match. The host looks
//! for them natively as it reads a file whole (`scan.read-head-seeking`),
//! and a file without them is never copied into the tool or searched.
//!
//! They are the pattern's prefix or suffix literals (`regex-syntax`'s
//! extractor): every match starts (or ends) with one of them. The pattern is
//! parsed as the matcher parses it (`grep-regex`), but case-insensitively
//! whenever smart case is on, which can only add case variants: the needles
//! then hold for every match the matcher can find, or there are none.

use std::sync::OnceLock;

use regex_syntax::ParserBuilder;
use regex_syntax::hir::literal::{ExtractKind, Extractor, Seq};
use regex_syntax::hir::{Class, Hir, HirKind};

use crate::args::Args;

/// The most needles a search gives the host (`scan::MAX_NEEDLES`): a
/// pattern with more alternatives is searched in every file.
const MOST: usize = cordon_sdk::scan::MAX_NEEDLES;

/// The shortest needle worth looking for: a single byte is in nearly every
/// file.
const SHORTEST: usize = 2;

/// The longest needle: longer literals are cut to this (`scan::MAX_NEEDLE`
/// bytes is the most the host takes).
const LONGEST: usize = 64;
const _: () = assert!(LONGEST <= cordon_sdk::scan::MAX_NEEDLE);

/// A search's needles, and how the host is to look for them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needles {
    /// The byte strings; none when the search has no needles.
    pub bytes: Vec<Vec<u8>>,
    /// Whether they are to be found in any ASCII case.
    pub ascii_case_insensitive: bool,
}

/// The needles of the search `args` asks for; none when the pattern has no
/// short set of long enough literals every match starts or ends with. A
/// case-insensitive pattern whose case variants are too many is taken as
/// written and its literals looked for in any ASCII case, when none of their
/// letters has a case variant outside ASCII (`k` has the Kelvin sign, `s`
/// the long s, a non-ASCII letter its own).
pub fn required(args: &Args) -> Needles {
    let pattern = match args.fixed_strings {
        true => regex_syntax::escape(&args.pattern),
        false => args.pattern.clone(),
    };
    let folding = args.case_insensitive || args.smart_case;
    let exact = literals(&pattern, folding);
    if !exact.is_empty() || !folding {
        return Needles { bytes: exact, ascii_case_insensitive: false };
    }
    let written = literals(&pattern, false);
    match written.iter().flatten().all(|&b| folds_within_ascii(b)) {
        true => Needles { bytes: written, ascii_case_insensitive: true },
        false => Needles::default(),
    }
}

/// The prefix or suffix literals of `pattern` parsed as grep-regex parses it
/// (`folding`: case-insensitively), every match starting or ending with one.
fn literals(pattern: &str, folding: bool) -> Vec<Vec<u8>> {
    let parsed = ParserBuilder::new()
        .utf8(false)
        .unicode(true)
        .octal(false)
        .multi_line(true)
        .dot_matches_new_line(false)
        .case_insensitive(folding)
        .build()
        .parse(pattern);
    let Ok(hir) = parsed else { return Vec::new() };
    let usable = |seq: Seq| {
        let literals = seq.literals()?;
        let shortest = seq.min_literal_len()?;
        (!literals.is_empty() && literals.len() <= MOST && shortest >= SHORTEST).then(|| {
            let needles: Vec<Vec<u8>> = literals.iter().map(|l| l.as_bytes().to_vec()).collect();
            (shortest, needles)
        })
    };
    // Literals longer than `LONGEST` are cut (inexact, still a match's start
    // or end), within what the host takes.
    let extract = |kind| Extractor::new().kind(kind).limit_literal_len(LONGEST).extract(&hir);
    let prefixes = usable(extract(ExtractKind::Prefix));
    let suffixes = usable(extract(ExtractKind::Suffix));
    // The longer shortest needle, then the fewer needles; prefixes on a tie.
    let better = |(len, needles): &(usize, Vec<Vec<u8>>)| (*len, std::cmp::Reverse(needles.len()));
    match (prefixes, suffixes) {
        (Some(p), Some(s)) if better(&s) > better(&p) => s.1,
        (Some(p), _) => p.1,
        (None, s) => s.map(|s| s.1).unwrap_or_default(),
    }
}

/// Whether the byte `b` is ASCII and every character a case-insensitive
/// match may put in its place is too, by the regex's own case folding.
fn folds_within_ascii(b: u8) -> bool {
    static WITHIN: OnceLock<[bool; 128]> = OnceLock::new();
    let within = WITHIN.get_or_init(|| {
        std::array::from_fn(|b| {
            let folded = regex_syntax::ParserBuilder::new()
                .case_insensitive(true)
                .build()
                .parse(&regex_syntax::escape(&char::from(b as u8).to_string()));
            let ascii = |hir: &Hir| match hir.kind() {
                HirKind::Literal(literal) => literal.0.is_ascii(),
                HirKind::Class(Class::Unicode(class)) => class.ranges().iter().all(|r| r.end().is_ascii()),
                HirKind::Class(Class::Bytes(class)) => class.ranges().iter().all(|r| r.end().is_ascii()),
                _ => false,
            };
            folded.as_ref().is_ok_and(ascii)
        })
    });
    within.get(usize::from(b)).copied().unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needles(pattern: &str, tweak: impl FnOnce(&mut Args)) -> Vec<String> {
        let mut args = Args { pattern: pattern.into(), ..Args::default() };
        tweak(&mut args);
        let found = required(&args);
        assert!(!found.ascii_case_insensitive, "{pattern:?} taken as written");
        found.bytes.into_iter().map(|n| String::from_utf8_lossy(&n).into_owned()).collect()
    }

    #[test]
    fn literals_every_match_starts_or_ends_with() {
        assert_eq!(needles("zqxjvkw_absent", |_| {}), ["zqxjvkw_absent"]);
        assert_eq!(needles("fn ", |_| {}), ["fn "]);
        assert_eq!(needles("[A-Z][a-z]+Error", |_| {}), ["Error"], "a suffix when the prefixes are a class");
        assert_eq!(needles("foo|barbaz", |_| {}), ["foo", "barbaz"]);
        assert_eq!(needles(r"\bstruct\s+\w+", |_| {}), ["struct"]);
        assert_eq!(needles("a.c", |a| a.fixed_strings = true), ["a.c"], "taken literally");
        assert_eq!(needles("(?i)ab", |_| {}), ["AB", "Ab", "aB", "ab"], "case variants, few enough");
        assert_eq!(needles("ab", |a| a.smart_case = true), ["AB", "Ab", "aB", "ab"]);
        assert_eq!(needles("(foo)?bar", |_| {}), ["foobar", "bar"], "an optional start: both");
        assert_eq!(needles(r"(?-u:\xFF)ab", |_| {}), ["\u{FFFD}ab"], "bytes: shown lossily below");
        let long = "x".repeat(300);
        assert_eq!(needles(&long, |_| {}), ["x".repeat(LONGEST)], "cut to what the host takes");
        assert!(needles(&format!("(?i){}", "ab|".repeat(20)), |_| {}).is_empty(), "more than 16");
    }

    #[test]
    fn none_where_a_match_need_hold_no_long_literal() {
        for pattern in [".*", "x", "[a-z]+", r"\w+\d", "foo|.", "a|b|c", "", "(unclosed"] {
            assert!(needles(pattern, |_| {}).is_empty(), "{pattern:?}");
        }
    }

    #[test]
    fn a_long_case_insensitive_literal_is_looked_for_in_any_ascii_case_if_it_folds_only_there() {
        let folded = |pattern: &str, tweak: fn(&mut Args)| {
            let mut args = Args { pattern: pattern.into(), ..Args::default() };
            tweak(&mut args);
            let found = required(&args);
            let bytes: Vec<String> = found.bytes.iter().map(|n| String::from_utf8_lossy(n).into_owned()).collect();
            (bytes, found.ascii_case_insensitive)
        };
        let ci: fn(&mut Args) = |a| a.case_insensitive = true;
        // Smart case is taken as case-insensitive: 2^5 variants are too many.
        assert_eq!(folded("Error", |a| a.smart_case = true), (vec!["Error".to_string()], true));
        assert_eq!(folded("error", ci), (vec!["error".to_string()], true));
        assert_eq!(folded("[A-Z]\\w+Handler", ci), (vec!["Handler".to_string()], true));
        // `k` matches the Kelvin sign, `s` the long s, `é` others: none then.
        for pattern in ["kernel", "session", "café_au_lait", "(?u)ma\\x{e9}tre"] {
            assert_eq!(folded(pattern, ci), (vec![], false), "{pattern}");
        }
    }

    #[test]
    fn only_k_and_s_of_the_ascii_letters_fold_outside_ascii() {
        let outside: Vec<char> = (0..128u8).filter(|&b| !folds_within_ascii(b)).map(char::from).collect();
        assert_eq!(outside, ['K', 'S', 'k', 's']);
        assert!(!folds_within_ascii(0xC3), "a byte past ASCII");
    }
}
