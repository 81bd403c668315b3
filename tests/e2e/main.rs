//! Cordon's end-to-end suite: the real binary, driven as clients drive it.

mod support;

mod audit;
mod bench;
mod cache;
mod canary;
mod capacity;
mod claude;
mod cli;
mod clients;
mod compact;
mod conformance;
mod corpus;
mod durability;
mod edit;
mod escapes;
mod faults;
mod forgery;
mod glob;
mod grep;
mod handles;
mod hostile;
mod house;
mod http;
mod interop;
mod listing;
mod mutate;
mod paging;
mod policy;
mod protocol;
mod sandbox;
mod signed;
mod stdio;
mod tools;
mod transports;
mod write;
