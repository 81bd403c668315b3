//! The bounded line codec (`host/src/framing.rs`), fed arbitrary bytes in
//! arbitrary chunks. It never panics, never yields a line over the limit, keeps
//! its buffer within the limit, reports an over-long line and goes on; and the
//! frames do not depend on how the bytes were split: they are the frames of a
//! simple model that splits the whole input at once.

#![no_main]

use arbitrary::Arbitrary;
use bytes::BytesMut;
use cordon_fuzz::framing::{Frame, HEAD_BYTES, LineCodec};
use libfuzzer_sys::fuzz_target;
use tokio_util::codec::Decoder;

#[derive(Arbitrary, Debug)]
struct Input {
    /// The line limit, small so that long lines are common.
    max: u8,
    /// Chunk lengths, used in turn (one chunk when empty).
    cuts: Vec<u8>,
    data: Vec<u8>,
}

/// What the codec should yield: the line (as delivered), or an over-long line
/// as its raw bytes (up to the newline, `\r` included).
#[derive(Debug, PartialEq)]
enum Expected {
    Line(Vec<u8>),
    TooLong(Vec<u8>),
}

/// The frames of `data` read whole: lines split on `\n`, one `\r` before it
/// dropped, blank lines skipped; a last line without `\n` kept as is.
fn model(data: &[u8], max: usize) -> Vec<Expected> {
    let mut out = Vec::new();
    let mut pieces: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    let last = pieces.pop().unwrap_or_default();
    let mut push = |raw: &[u8], line: &[u8]| {
        if line.len() > max {
            out.push(Expected::TooLong(raw.to_vec()));
        } else if !line.iter().all(u8::is_ascii_whitespace) {
            out.push(Expected::Line(line.to_vec()));
        }
    };
    for raw in pieces {
        push(raw, raw.strip_suffix(b"\r").unwrap_or(raw));
    }
    push(last, last);
    out
}

fn check(frame: Frame, expected: Option<&Expected>, max: usize) {
    match (frame, expected) {
        (Frame::Line(line), Some(Expected::Line(want))) => {
            assert!(line.len() <= max && !line.contains(&b'\n'), "a line over the limit or with a newline");
            assert_eq!(&line[..], &want[..], "the line differs from the model's");
        }
        (Frame::TooLong { observed, head }, Some(Expected::TooLong(raw))) => {
            assert!(observed > max, "an over-long line of {observed} bytes (limit {max})");
            assert!(observed + 1 >= raw.len() && observed <= raw.len(), "observed {observed} for {} bytes", raw.len());
            assert!(head.len() <= HEAD_BYTES && raw.starts_with(&head), "the head is not the line's start");
            // The head is what was buffered when the limit was crossed.
            assert!(head.len() >= (max + 1).min(HEAD_BYTES), "the head is short");
        }
        (frame, want) => panic!("frame {frame:?}, the model expects {want:?}"),
    }
}

fuzz_target!(|input: Input| {
    let max = 1 + usize::from(input.max % 64);
    let expected = model(&input.data, max);
    let mut codec = LineCodec::new(max);
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    let mut rest = &input.data[..];
    let mut cuts = input.cuts.iter().cycle();
    while !rest.is_empty() {
        let n = if input.cuts.is_empty() { rest.len() } else { 1 + usize::from(*cuts.next().unwrap()) };
        let (chunk, tail) = rest.split_at(n.min(rest.len()));
        rest = tail;
        buf.extend_from_slice(chunk);
        while let Some(frame) = codec.decode(&mut buf).expect("decoding never fails") {
            frames.push(frame);
        }
        assert!(buf.len() <= max + 1, "the buffer holds {} bytes past a limit of {max}", buf.len());
    }
    while let Some(frame) = codec.decode_eof(&mut buf).expect("decoding never fails") {
        frames.push(frame);
    }
    assert_eq!(frames.len(), expected.len(), "frames {frames:?}, the model expects {expected:?}");
    for (frame, want) in frames.into_iter().zip(&expected) {
        check(frame, Some(want), max);
    }
});
