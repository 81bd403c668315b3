//! Newline-delimited framing, bounded, with no I/O inside.
//!
//! A line longer than the limit is not an error that ends the stream: its bytes
//! are dropped as they arrive (memory stays at the limit however long the line
//! is) and, once its newline comes, a single `Frame::TooLong` reports it so the
//! session can answer and go on. The first `HEAD_BYTES` of the line are kept, so
//! the session can answer with the request's id when it can be read there.

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::Decoder;

/// How much of an over-long line is kept.
pub const HEAD_BYTES: usize = 1024;

/// One decoded unit of input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A line without its `\n` (and without a `\r` before it).
    Line(Bytes),
    /// A line over the limit, dropped; `observed` counts its bytes (at least)
    /// and `head` holds its first bytes (up to `HEAD_BYTES`).
    TooLong { observed: usize, head: Bytes },
}

/// The decoder: splits on `\n`, skips blank lines, bounds every line.
#[derive(Debug)]
pub struct LineCodec {
    max: usize,
    /// How far the buffer has been searched for a newline.
    scanned: usize,
    /// Bytes of an over-long line dropped so far, and its head, while discarding.
    discarding: Option<(usize, Bytes)>,
}

fn head(line: &[u8]) -> Bytes {
    Bytes::copy_from_slice(&line[..line.len().min(HEAD_BYTES)])
}

impl LineCodec {
    pub fn new(max: usize) -> LineCodec {
        LineCodec { max, scanned: 0, discarding: None }
    }

    pub fn max(&self) -> usize {
        self.max
    }
}

impl Decoder for LineCodec {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Self::Error> {
        loop {
            let newline = buf[self.scanned..].iter().position(|&b| b == b'\n').map(|i| self.scanned + i);
            let Some(at) = newline else {
                if let Some((dropped, _)) = &mut self.discarding {
                    *dropped += buf.len();
                    buf.clear();
                    self.scanned = 0;
                } else if buf.len() > self.max + usize::from(buf.last() == Some(&b'\r')) {
                    // A `\r` at the end may be half of the line's `\r\n`: only
                    // the bytes before it count against the limit.
                    self.discarding = Some((buf.len(), head(buf)));
                    buf.clear();
                    self.scanned = 0;
                } else {
                    self.scanned = buf.len();
                }
                return Ok(None);
            };
            self.scanned = 0;
            if let Some((dropped, head)) = self.discarding.take() {
                buf.advance(at + 1);
                return Ok(Some(Frame::TooLong { observed: dropped + at, head }));
            }
            let mut line = buf.split_to(at + 1);
            line.truncate(at);
            if line.last() == Some(&b'\r') {
                line.truncate(at - 1);
            }
            if line.len() > self.max {
                return Ok(Some(Frame::TooLong { observed: line.len(), head: head(&line) }));
            }
            if line.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            return Ok(Some(Frame::Line(line.freeze())));
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Self::Error> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        // The last line may lack its newline.
        self.scanned = 0;
        if let Some((dropped, head)) = self.discarding.take() {
            let observed = dropped + buf.len();
            buf.clear();
            return Ok(Some(Frame::TooLong { observed, head }));
        }
        if buf.len() > self.max {
            let line = buf.split();
            return Ok(Some(Frame::TooLong { observed: line.len(), head: head(&line) }));
        }
        if buf.iter().all(|b| b.is_ascii_whitespace()) {
            buf.clear();
            return Ok(None);
        }
        let line = buf.split().freeze();
        Ok(Some(Frame::Line(line)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(codec: &mut LineCodec, input: &[&[u8]]) -> Vec<Frame> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for piece in input {
            buf.extend_from_slice(piece);
            while let Some(frame) = codec.decode(&mut buf).unwrap() {
                out.push(frame);
            }
            assert!(buf.len() <= codec.max() + piece.len(), "buffer grew past the limit");
        }
        while let Some(frame) = codec.decode_eof(&mut buf).unwrap() {
            out.push(frame);
        }
        out
    }

    fn line(s: &str) -> Frame {
        Frame::Line(Bytes::copy_from_slice(s.as_bytes()))
    }

    fn too_long(observed: usize, head: &[u8]) -> Frame {
        Frame::TooLong { observed, head: Bytes::copy_from_slice(head) }
    }

    #[test]
    fn lines_split_on_newlines_with_crlf_and_blank_lines_handled() {
        let frames = decode_all(&mut LineCodec::new(100), &[b"a\r\n\nb", b"c\n  \nlast"]);
        assert_eq!(frames, vec![line("a"), line("bc"), line("last")]);
    }

    #[test]
    fn an_over_long_line_is_reported_once_and_the_stream_goes_on() {
        let long = vec![b'x'; 50];
        let frames = decode_all(&mut LineCodec::new(10), &[b"ok\n", &long, &long, b"yz\nnext\n"]);
        assert_eq!(frames, vec![line("ok"), too_long(102, &long), line("next")]);
    }

    #[test]
    fn an_over_long_line_arriving_whole_is_reported() {
        let frames = decode_all(&mut LineCodec::new(3), &[b"abcdef\nok\n"]);
        assert_eq!(frames, vec![too_long(6, b"abcdef"), line("ok")]);
    }

    #[test]
    fn an_over_long_line_cut_off_by_eof_is_reported() {
        let frames = decode_all(&mut LineCodec::new(3), &[b"abcdefgh"]);
        assert_eq!(frames, vec![too_long(8, b"abcdefgh")]);
    }

    #[test]
    fn a_line_at_the_limit_ending_in_crlf_is_accepted_however_the_bytes_arrive() {
        let whole = decode_all(&mut LineCodec::new(3), &[b"abc\r\nok\n"]);
        let split = decode_all(&mut LineCodec::new(3), &[b"abc\r", b"\nok\n"]);
        assert_eq!(whole, vec![line("abc"), line("ok")]);
        assert_eq!(split, whole);
        let over = decode_all(&mut LineCodec::new(3), &[b"abc\r", b"d\nok\n"]);
        assert_eq!(over, vec![too_long(5, b"abc\rd"), line("ok")]);
        // At the end of input, without a newline, the `\r` is part of the line.
        assert_eq!(decode_all(&mut LineCodec::new(3), &[b"abc\r"]), vec![too_long(4, b"abc\r")]);
    }

    #[test]
    fn memory_stays_bounded_for_a_huge_line_without_newline() {
        let mut codec = LineCodec::new(1024);
        let mut buf = BytesMut::new();
        let block = vec![b'y'; 64 * 1024];
        for _ in 0..1024 {
            buf.extend_from_slice(&block);
            assert_eq!(codec.decode(&mut buf).unwrap(), None);
            assert!(buf.is_empty());
        }
        buf.extend_from_slice(b"\n{}\n");
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(too_long(64 * 1024 * 1024, &block[..HEAD_BYTES])));
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(line("{}")));
    }
}
