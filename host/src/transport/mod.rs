//! Transports: thin adapters that move frames between a byte stream and a
//! `Session`. None of them handles requests itself.

pub mod http;
pub mod lines;
pub mod stdio;
pub mod tcp;
