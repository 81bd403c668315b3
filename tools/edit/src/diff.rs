//! A small unified diff of an edit, for the caller to check what changed.
//!
//! Each hunk has a standard header (`@@ -12,3 +12,4 @@`: first line and line
//! count in the old and the new file), one line of context before and after,
//! `-` lines as they were and `+` lines as they are now. Replacements whose
//! lines touch or lie within two lines of each other share a hunk. The diff
//! covers the first [`SHOWN_REPLACEMENTS`] replacements and stays within
//! [`MAX_DIFF_BYTES`]; what is left out is said in a last `…` line. Line ends
//! are not shown (a CRLF file's lines show without `\r`); a last line without
//! a newline is followed by `\ No newline at end of file`. Bytes that are not
//! UTF-8 are shown as U+FFFD, and a line longer than [`MAX_LINE_BYTES`] is
//! shown as an excerpt around its change.

use memchr::{memchr, memchr_iter, memrchr};

use crate::matching::Plan;

/// How many replacements the diff shows at most.
pub const SHOWN_REPLACEMENTS: usize = 20;
/// The most bytes of a diff.
pub const MAX_DIFF_BYTES: usize = 4096;
/// The most bytes shown of one line.
pub const MAX_LINE_BYTES: usize = 240;
/// How many bytes before its change an excerpt of a long line starts.
const EXCERPT_LEAD: usize = 60;

/// Changed lines: whole lines `lo..hi` of the old file became `lo_new..hi_new`
/// of the new one, by replacements `first..=last`.
#[derive(Debug, Clone, Copy)]
struct Block {
    first: usize,
    last: usize,
    lo: usize,
    hi: usize,
    lo_new: usize,
    hi_new: usize,
}

/// The diff of `old` edited into `new` as `plan` says.
pub fn render(old: &[u8], new: &[u8], plan: &Plan) -> String {
    let edit = Edit { old, new, plan };
    let blocks = edit.blocks();
    let mut out = Out { text: String::new(), full: false };
    let mut line = 1u64;
    let mut counted = 0;
    let mut i = 0;
    while i < blocks.len() && !out.full {
        let mut j = i;
        while j + 1 < blocks.len() && memchr_iter(b'\n', &old[blocks[j].hi..blocks[j + 1].lo]).count() <= 2 {
            j += 1;
        }
        let start = if blocks[i].lo == 0 { 0 } else { line_start(old, blocks[i].lo - 1) };
        line += memchr_iter(b'\n', &old[counted..start]).count() as u64;
        counted = start;
        edit.hunk(&blocks[i..=j], start, line, &mut out);
        i = j + 1;
    }
    let total = plan.starts.len();
    let shown = if out.full { 0 } else { blocks.last().map_or(0, |b| b.last + 1) };
    if out.full {
        out.text.push_str(&format!("… diff cut at {MAX_DIFF_BYTES} bytes; {total} replacements in all\n"));
    } else if shown < total {
        out.text.push_str(&format!("… {} more replacements not shown\n", total - shown));
    }
    out.text
}

/// The diff being written, and whether it reached its limit.
struct Out {
    text: String,
    full: bool,
}

impl Out {
    /// Adds `line` (and a newline) unless the diff would pass its limit.
    fn push(&mut self, line: &str) {
        const RESERVE: usize = 80;
        if self.full || self.text.len() + line.len() + 1 > MAX_DIFF_BYTES - RESERVE {
            self.full = true;
            return;
        }
        self.text.push_str(line);
        self.text.push('\n');
    }
}

/// An edit: the bytes before and after, and what was replaced.
struct Edit<'a> {
    old: &'a [u8],
    new: &'a [u8],
    plan: &'a Plan,
}

impl Edit<'_> {
    /// Where `pos` of the old file (outside replacements, with `k`
    /// replacements before it) is in the new file.
    fn to_new(&self, pos: usize, k: usize) -> usize {
        pos - k * self.plan.old.len() + k * self.plan.new.len()
    }

    /// The changed-line blocks of the first replacements, in order.
    fn blocks(&self) -> Vec<Block> {
        let (old, new, starts) = (self.old, self.new, &self.plan.starts);
        let block_end = |k: usize| {
            let end = starts[k] + self.plan.old.len();
            if old[end - 1] == b'\n' { end } else { line_end(old, end) }
        };
        let mut blocks = Vec::new();
        let mut k = 0;
        while k < starts.len() && k < SHOWN_REPLACEMENTS {
            let (first, lo) = (k, line_start(old, starts[k]));
            let mut last = k;
            let mut hi = block_end(k);
            loop {
                while last + 1 < starts.len() && line_start(old, starts[last + 1]) <= hi {
                    last += 1;
                    hi = hi.max(block_end(last));
                }
                let (lo_new, hi_new) = (self.to_new(lo, first), self.to_new(hi, last + 1));
                if hi_new == lo_new || hi_new == new.len() || new[hi_new - 1] == b'\n' {
                    blocks.push(Block { first, last, lo, hi, lo_new, hi_new });
                    break;
                }
                // The replacement ended a line that the new text does not end:
                // the next old line is joined to it, so it is part of the block.
                hi = line_end(old, hi);
            }
            k = last + 1;
        }
        blocks
    }

    /// Writes a hunk of `blocks` whose context starts at old position `start`,
    /// old line `line`.
    fn hunk(&self, blocks: &[Block], start: usize, line: u64, out: &mut Out) {
        let (old, new, plan) = (self.old, self.new, self.plan);
        let (first, last) = (blocks[0], blocks[blocks.len() - 1]);
        let end = if last.hi == old.len() { last.hi } else { line_end(old, last.hi) };
        let (start_new, end_new) = (self.to_new(start, first.first), self.to_new(end, last.last + 1));
        let net = |b: &[u8]| memchr_iter(b'\n', b).count() as i64;
        let new_line = line as i64 + first.first as i64 * (net(&plan.new) - net(&plan.old));
        out.push(&format!(
            "@@ -{line},{} +{new_line},{} @@",
            count_lines(&old[start..end]),
            count_lines(&new[start_new..end_new])
        ));
        lines(old, start, first.lo, ' ', &[], out);
        for (n, block) in blocks.iter().enumerate() {
            if n > 0 {
                lines(old, blocks[n - 1].hi, block.lo, ' ', &[], out);
            }
            let starts = &plan.starts[block.first..=block.last];
            let focus_new: Vec<usize> =
                starts.iter().enumerate().map(|(i, &s)| self.to_new(s, block.first + i)).collect();
            lines(old, block.lo, block.hi, '-', starts, out);
            lines(new, block.lo_new, block.hi_new, '+', &focus_new, out);
        }
        lines(old, last.hi, end, ' ', &[], out);
    }
}

/// Writes the lines of `buf[from..to]` (whole lines), each after `mark`; a
/// long line is shown around the first of `focus` (positions in `buf`) on it.
fn lines(buf: &[u8], from: usize, to: usize, mark: char, focus: &[usize], out: &mut Out) {
    let mut at = from;
    // Once the diff is full nothing more is shown: stop, so a block of many
    // replacements costs what is shown, not what was replaced.
    while at < to && !out.full {
        let end = line_end(buf, at).min(to);
        let mut body = &buf[at..end];
        body = body.strip_suffix(b"\n").unwrap_or(body);
        body = body.strip_suffix(b"\r").unwrap_or(body);
        // `focus` is ascending: find its first position on this line by bisection.
        let next = focus.partition_point(|&f| f < at);
        let near = focus.get(next).filter(|&&f| f < end).map_or(0, |&f| f - at);
        out.push(&format!("{mark}{}", excerpt(body, near)));
        if end == buf.len() && buf.last() != Some(&b'\n') {
            out.push("\\ No newline at end of file");
        }
        at = end;
    }
}

/// `line` as text, cut to [`MAX_LINE_BYTES`] around byte `near` when longer.
fn excerpt(line: &[u8], near: usize) -> String {
    if line.len() <= MAX_LINE_BYTES {
        return String::from_utf8_lossy(line).into_owned();
    }
    let mut from = near.saturating_sub(EXCERPT_LEAD).min(line.len() - MAX_LINE_BYTES);
    let mut to = from + MAX_LINE_BYTES;
    let continuation = |b: u8| b & 0xC0 == 0x80;
    while from > 0 && continuation(line[from]) {
        from -= 1;
    }
    while to < line.len() && continuation(line[to]) {
        to -= 1;
    }
    let before = if from > 0 { format!("…[{from} bytes]") } else { String::new() };
    let after = if to < line.len() { format!("[{} bytes]…", line.len() - to) } else { String::new() };
    format!("{before}{}{after}", String::from_utf8_lossy(&line[from..to]))
}

/// How many lines `text` has (a last line without a newline counts).
fn count_lines(text: &[u8]) -> usize {
    memchr_iter(b'\n', text).count() + usize::from(text.last().is_some_and(|&b| b != b'\n'))
}

/// The start of the line holding `pos`.
fn line_start(buf: &[u8], pos: usize) -> usize {
    memrchr(b'\n', &buf[..pos]).map_or(0, |i| i + 1)
}

/// Just after the newline ending the line holding `pos` (the end of `buf` if
/// none).
fn line_end(buf: &[u8], pos: usize) -> usize {
    memchr(b'\n', &buf[pos..]).map_or(buf.len(), |i| pos + i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matching::{apply, plan};

    fn diff(old: &str, from: &str, to: &str, all: bool) -> String {
        let plan = plan(old.as_bytes(), from, to, all, "f").unwrap();
        let new = apply(old.as_bytes(), &plan).unwrap();
        render(old.as_bytes(), &new, &plan)
    }

    #[test]
    fn a_single_line_change_has_a_line_of_context_each_side() {
        let d = diff("one\ntwo\nthree\nfour\n", "three", "3", false);
        assert_eq!(d, "@@ -2,3 +2,3 @@\n two\n-three\n+3\n four\n");
    }

    #[test]
    fn deleting_and_joining_lines_show_whole_lines() {
        assert_eq!(diff("a\nb\nc\n", "b\n", "", false), "@@ -1,3 +1,2 @@\n a\n-b\n c\n");
        assert_eq!(diff("a\nb\nc\nd\n", "b\n", "B ", false), "@@ -1,4 +1,3 @@\n a\n-b\n-c\n+B c\n d\n");
    }

    #[test]
    fn nearby_replacements_share_a_hunk_and_far_ones_do_not() {
        let text = "x\n1\n2\nx\n3\n4\n5\n6\nx\n";
        let d = diff(text, "x", "y", true);
        assert_eq!(d, "@@ -1,5 +1,5 @@\n-x\n+y\n 1\n 2\n-x\n+y\n 3\n@@ -8,2 +8,2 @@\n 6\n-x\n+y\n");
    }

    #[test]
    fn new_line_numbers_follow_earlier_line_count_changes() {
        let text = "k\na\nb\nc\nd\nk\n";
        let d = diff(text, "k\n", "k\nk2\n", true);
        assert!(d.contains("@@ -5,2 +6,3 @@\n d\n-k\n+k\n+k2\n"), "{d}");
    }

    #[test]
    fn a_last_line_without_newline_is_marked() {
        assert_eq!(
            diff("a\nb", "b", "c", false),
            "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn many_replacements_are_cut_at_twenty_and_the_size_limit() {
        let text: String = (0..100).map(|i| format!("item {i}\n\n\n\n")).collect();
        let d = diff(&text, "item", "entry", true);
        assert_eq!(d.matches("\n-item").count(), 20, "{d}");
        assert!(d.ends_with("… 80 more replacements not shown\n"), "{d}");
        let long = format!("{}\n\n\n\n", "w".repeat(230)).repeat(40);
        let d = diff(&long, "w\n", "v\n", true);
        assert!(d.len() <= MAX_DIFF_BYTES && d.ends_with("40 replacements in all\n"), "{d}");
    }

    #[test]
    fn long_lines_are_shown_around_the_change() {
        let line = format!("{}NEEDLE{}\n", "a".repeat(1000), "b".repeat(1000));
        let d = diff(&line, "NEEDLE", "PIN", false);
        assert!(d.contains("-…[940 bytes]aaaa"), "{d}");
        assert!(d.contains("NEEDLEbbb") && d.contains("PINbbb"), "{d}");
        assert!(d.lines().all(|l| l.len() < MAX_LINE_BYTES + 40), "{d}");
    }

    /// The lines of `buf` as the diff shows them (without line ends).
    fn shown_lines(buf: &[u8]) -> Vec<String> {
        let mut lines: Vec<&[u8]> = buf.split(|&b| b == b'\n').collect();
        if buf.last() == Some(&b'\n') || buf.is_empty() {
            lines.pop();
        }
        lines.iter().map(|l| String::from_utf8_lossy(l.strip_suffix(b"\r").unwrap_or(l)).into_owned()).collect()
    }

    /// Applies `diff` to the lines of `old`, checking every header and context line.
    fn patch(old: &[String], diff: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut at = 0;
        for line in diff.split_terminator('\n') {
            if let Some(header) = line.strip_prefix("@@ -") {
                let nums: Vec<usize> = header
                    .trim_end_matches(" @@")
                    .split([' ', ',', '+'])
                    .filter(|s| !s.is_empty())
                    .map(|s| s.parse().unwrap())
                    .collect();
                assert!(nums[0] > at, "hunks in order: {diff}");
                out.extend_from_slice(&old[at..nums[0] - 1]);
                at = nums[0] - 1;
                if nums[3] > 0 {
                    assert_eq!(nums[2], out.len() + 1, "new start line: {diff}");
                }
                continue;
            }
            let (mark, text) = line.split_at(1);
            match mark {
                " " | "-" => {
                    assert_eq!(old[at], text, "{diff}");
                    at += 1;
                    if mark == " " {
                        out.push(text.to_string());
                    }
                }
                "+" => out.push(text.to_string()),
                _ => assert_eq!(line, "\\ No newline at end of file"),
            }
        }
        out.extend_from_slice(&old[at..]);
        out
    }

    #[test]
    fn random_edits_give_diffs_that_patch_the_old_lines_into_the_new() {
        fn next(x: &mut u64, n: usize) -> usize {
            *x ^= *x << 13;
            *x ^= *x >> 7;
            *x ^= *x << 17;
            (*x % n as u64) as usize
        }
        fn text(x: &mut u64, max: usize, min: usize) -> String {
            const ALPHABET: [&str; 5] = ["a", "b", "\n", "\r\n", "\n"];
            let len = min + next(x, max);
            (0..len).map(|_| ALPHABET[next(x, ALPHABET.len())]).collect()
        }
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut checked = 0;
        for _ in 0..4000 {
            let (text, from, to) = (text(&mut x, 40, 0), text(&mut x, 3, 1), text(&mut x, 4, 0));
            let all = next(&mut x, 2) == 0;
            let Ok(plan) = plan(text.as_bytes(), &from, &to, all, "f") else { continue };
            let new = apply(text.as_bytes(), &plan).unwrap();
            let d = render(text.as_bytes(), &new, &plan);
            if d.contains("…") {
                continue;
            }
            let patched = patch(&shown_lines(text.as_bytes()), &d);
            assert_eq!(patched, shown_lines(&new), "{text:?} {from:?} -> {to:?}:\n{d}");
            checked += 1;
        }
        assert!(checked > 1000, "{checked}");
    }

    #[test]
    fn non_utf8_lines_are_shown_lossily() {
        let old = b"\xff\xfe\nkey=1\n";
        let plan = plan(old, "1", "2", false, "f").unwrap();
        let new = apply(old, &plan).unwrap();
        assert_eq!(render(old, &new, &plan), "@@ -1,2 +1,2 @@\n \u{fffd}\u{fffd}\n-key=1\n+key=2\n");
    }
}
