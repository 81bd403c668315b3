//! The pieces pulled but not yet delivered, in order, with the bytes they
//! hold kept as they come and go: a parked stream is charged for them on
//! every page, and a first page that read its stream to the end can hold a
//! hundred thousand of them.

use std::collections::VecDeque;

use super::page::Piece;

/// A queue of pieces and the bytes they hold (`Piece::held_bytes`).
#[derive(Default)]
pub(super) struct Pending {
    pieces: VecDeque<Piece>,
    bytes: usize,
}

impl Pending {
    pub fn push_back(&mut self, piece: Piece) {
        self.bytes += piece.held_bytes();
        self.pieces.push_back(piece);
    }

    pub fn push_front(&mut self, piece: Piece) {
        self.bytes += piece.held_bytes();
        self.pieces.push_front(piece);
    }

    pub fn pop_front(&mut self) -> Option<Piece> {
        let piece = self.pieces.pop_front()?;
        self.bytes -= piece.held_bytes();
        Some(piece)
    }

    pub fn clear(&mut self) {
        self.pieces.clear();
        self.bytes = 0;
    }

    pub fn iter(&self) -> impl Iterator<Item = &Piece> {
        self.pieces.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// The bytes the pieces hold.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl IntoIterator for Pending {
    type Item = Piece;
    type IntoIter = std::collections::vec_deque::IntoIter<Piece>;

    fn into_iter(self) -> Self::IntoIter {
        self.pieces.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{Chunk, Payload};

    fn piece(text: &str, resume: &str) -> Piece {
        Piece::Chunk(Chunk { payload: Payload::Text(text.into()), span: None, continued: false, resume: resume.into() })
    }

    #[test]
    fn the_bytes_held_follow_the_pieces_in_and_out() {
        let mut pending = Pending::default();
        pending.push_back(piece("abc", "r1"));
        pending.push_back(piece("de", "r22"));
        pending.push_front(piece("", "r"));
        let sum = |p: &Pending| p.iter().map(Piece::held_bytes).sum::<usize>();
        assert_eq!((pending.bytes(), sum(&pending)), (11, 11));
        assert_eq!(pending.pop_front().map(|p| p.held_bytes()), Some(1));
        assert_eq!((pending.bytes(), sum(&pending)), (10, 10));
        pending.clear();
        assert_eq!((pending.bytes(), pending.pop_front().is_none()), (0, true));
    }
}
