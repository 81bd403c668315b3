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
/// default buffer size): it is read in one host call (`scan::read_head`),
/// and whatever follows through a `Guard`.
pub const HEAD: usize = 64 * 1024;

/// How much to ask for where the end of the file is expected.
const PROBE: usize = 4096;

/// A reader that serves `head` first, then the rest of the file, and when
/// `check` is on, fails at the first NUL byte: it serves no line terminator
/// past the last one before the NUL, then an error. The searcher searches
/// only complete lines, so it searches exactly the lines before the NUL's
/// line, wherever the reads happened to split the file.
pub struct Guard<'a, R> {
    inner: R,
    head: &'a [u8],
    check: bool,
    tripped: bool,
    /// The head was shorter than asked, so the next read most likely finds
    /// the end of the file: ask for little (the host allocates and zeroes a
    /// buffer of the size asked for every read).
    probe: bool,
    /// Bytes served so far, the head's included.
    served: u64,
    /// Whether reading the file failed (rather than the search of what was read).
    failed: bool,
}

impl<'a, R: Read> Guard<'a, R> {
    /// A guard over `inner`, whose first bytes were already read into `head`.
    pub fn new(inner: R, head: &'a [u8], check: bool) -> Guard<'a, R> {
        let probe = !head.is_empty() && head.len() < HEAD;
        Guard { inner, head, check, tripped: false, probe, served: 0, failed: false }
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
        if !self.head.is_empty() {
            let n = self.head.len().min(buf.len());
            buf[..n].copy_from_slice(&self.head[..n]);
            self.head = &self.head[n..];
            self.served += n as u64;
            return Ok(n);
        }
        let want = if std::mem::take(&mut self.probe) { buf.len().min(PROBE) } else { buf.len() };
        let n = self.inner.read(&mut buf[..want]).inspect_err(|_| self.failed = true)?;
        if self.check
            && let Some(nul) = memchr(0, &buf[..n])
        {
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
