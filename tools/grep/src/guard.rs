//! Binary files: ripgrep's default, made independent of buffer boundaries.
//!
//! ripgrep (`BinaryDetection::quit(b'\0')`) skips a file whose first read
//! (64 KiB) holds a NUL byte, and otherwise stops at the read buffer where a NUL
//! first shows up, which depends on how the file happens to be read. Here the
//! first rule is the same, and the second is made exact so that a search
//! reopened in the middle of a file gives the same output: the lines before
//! the one holding the first NUL byte are searched, and nothing after.

use std::io::{self, Read};

use memchr::{memchr, memrchr};

/// How much of a file's start decides whether it is binary (ripgrep's
/// default buffer size): a NUL byte in it and the file is not searched.
pub const HEAD: usize = 64 * 1024;

/// A reader that serves `head` first, then the rest of the file, and when
/// `check` is on, fails at the first NUL byte: it serves no line terminator
/// past the last one before the NUL, then an error. The searcher searches
/// only complete lines, so it searches exactly the lines before the NUL's
/// line, wherever the reads happened to split the file.
pub struct Guard<'a, R> {
    inner: R,
    head: &'a [u8],
    check: bool,
    /// Whether `head` is looked at too: not when it was known to hold no NUL.
    check_head: bool,
    tripped: bool,
    /// Bytes served so far, the head's included.
    served: u64,
    /// Whether reading the file failed (rather than the search of what was read).
    failed: bool,
}

impl<'a, R: Read> Guard<'a, R> {
    /// A guard over `inner`, whose first bytes were already read into `head`
    /// and looked at: they hold no NUL byte.
    pub fn new(inner: R, head: &'a [u8], check: bool) -> Guard<'a, R> {
        Guard { inner, head, check, check_head: false, tripped: false, served: 0, failed: false }
    }

    /// A guard over `inner` whose first bytes, `head`, may hold a NUL byte
    /// (past the file's first [`HEAD`] bytes): looked at as they are served.
    pub fn with_unchecked_head(inner: R, head: &'a [u8], check: bool) -> Guard<'a, R> {
        Guard { check_head: check, ..Guard::new(inner, head, check) }
    }

    /// Whether the reader stopped at a NUL byte.
    pub fn tripped(&self) -> bool {
        self.tripped
    }

    /// Whether reading the file failed: a search that failed otherwise (not
    /// at a NUL byte) was stopped by the searcher itself, at its heap limit.
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// How many bytes were served, the head's included.
    pub fn served(&self) -> u64 {
        self.served
    }
}

fn binary() -> io::Error {
    io::Error::other("binary data: a NUL byte")
}

impl<R: Read> Read for Guard<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.tripped {
            return Err(binary());
        }
        let (n, check) = if !self.head.is_empty() {
            let n = self.head.len().min(buf.len());
            buf[..n].copy_from_slice(&self.head[..n]);
            self.head = &self.head[n..];
            (n, self.check_head)
        } else {
            (self.inner.read(buf).inspect_err(|_| self.failed = true)?, self.check)
        };
        if check && let Some(nul) = memchr(0, &buf[..n]) {
            self.tripped = true;
            return match memrchr(b'\n', &buf[..nul]) {
                Some(end) => {
                    self.served += end as u64 + 1;
                    Ok(end + 1)
                }
                None => Err(binary()),
            };
        }
        self.served += n as u64;
        Ok(n)
    }
}
