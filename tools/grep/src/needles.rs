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

use regex_syntax::ParserBuilder;
use regex_syntax::hir::literal::{ExtractKind, Extractor, Seq};

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

/// The needles of the search `args` asks for; none when the pattern has no
/// short set of long enough literals every match starts or ends with.
pub fn required(args: &Args) -> Vec<Vec<u8>> {
    let pattern = match args.fixed_strings {
        true => regex_syntax::escape(&args.pattern),
        false => args.pattern.clone(),
    };
    let parsed = ParserBuilder::new()
        .utf8(false)
        .unicode(true)
        .octal(false)
        .multi_line(true)
        .dot_matches_new_line(false)
        .case_insensitive(args.case_insensitive || args.smart_case)
        .build()
        .parse(&pattern);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn needles(pattern: &str, tweak: impl FnOnce(&mut Args)) -> Vec<String> {
        let mut args = Args { pattern: pattern.into(), ..Args::default() };
        tweak(&mut args);
        required(&args).into_iter().map(|n| String::from_utf8_lossy(&n).into_owned()).collect()
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
        // Smart case is taken as case-insensitive: 2^5 variants are too many.
        assert!(needles("Error", |a| a.smart_case = true).is_empty());
        assert!(needles("error", |a| a.case_insensitive = true).is_empty());
    }
}
