//! What a model reads, all of it made here: items rendered compactly (the
//! pager's printer), tools' receipts in one line, a page's payload as text
//! blocks, files shown as images or notebooks, the footer saying how to
//! continue, the instructions naming the roots, and what a tool refused a
//! path is granted. Programs read the JSON
//! form instead (see `results::json`).

pub mod compact;
mod denial;
pub mod footer;
pub mod instructions;
pub mod media;
mod receipt;
pub mod text;

pub use denial::explain_denial;
