//! The guest-side SDK for Cordon tools.
//!
//! Implement [`Tool`] (a manifest and `open`) and [`Stream`] (`next` within a
//! budget, with exact resume positions), then call [`export_tool!`]. The crate
//! provides the WIT bindings, the conversion of errors and chunks, resolving a
//! client's path inside the granted roots ([`paths`]) and the schema of a path
//! argument ([`schema`]), and [`items::Items`], which pages a sequence of JSON
//! items (splitting large ones) for item tools (whose calls implement
//! [`items::ItemStream`]), a file read by offset and fingerprinted from its
//! own descriptor ([`file`]), [`progress`] reports for long calls, the
//! server's deny rules ([`policy`]), and what the host's wasi:http errors mean
//! ([`http`]) for tools with network grants.
//!
//! The contract's types ([`Manifest`], [`Chunk`], [`Error`], …) are
//! `cordon-contract`'s, the same the host uses. The logic of a tool stays
//! plain Rust, testable natively; only `export_tool!` is specific to `wasm32`.

pub mod atomic;
pub mod file;
pub mod grant;
pub mod host;
pub mod http;
pub mod items;
pub mod outcome;
pub mod paths;
pub mod policy;
#[cfg(target_arch = "wasm32")]
mod preopens;
pub mod progress;
pub mod scan;
pub mod schema;
pub mod tool;
pub mod utf8;
pub mod walk;

#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod component;

/// A failed call: a code and a sentence (the contract's `ToolError`; messages
/// longer than [`MAX_MESSAGE_BYTES`] are cut on the way to the host).
pub use cordon_contract::ToolError as Error;
pub use cordon_contract::{
    Access, Budget, Chunk, ErrorCode, Fingerprint, MAX_MESSAGE_BYTES, Manifest, Payload, Span, Summary,
};
pub use tool::{Context, Stream, Tool, open_range_stream, open_stream, parse_args};

/// Exports a tool as the component's `tool` and `shards` interfaces. Expands
/// to nothing (but the `Tool` impl of the second form) on targets other than
/// `wasm32`.
///
/// - `export_tool!(MyTool)`: `MyTool` implements [`Tool`] by hand.
/// - `export_tool!(MyTool { manifest: EXPR, open: F })`: also implements
///   [`Tool`] for the unit struct `MyTool`, whose `manifest()` is `EXPR` and
///   whose `open` boxes the stream `F(&roots, args, resume)` returns (see
///   [`open_stream`]); `F` is a function or closure taking the granted roots
///   (`&[String]`), the arguments (`&str`) and the resume position
///   (`Option<&str>`), returning `Result<S, Error>` for a [`Stream`] `S`.
/// - `export_tool!(MyTool { manifest: EXPR, open: F, split: P, open_range: R })`:
///   as above, and the call runs as parallel, ordered shards: `P(&roots, args,
///   start, count)` returns the boundaries ([`Tool::split`]) and `R(&roots,
///   args, start, end)` the stream of one range ([`Tool::open_range`]).
#[macro_export]
macro_rules! export_tool {
    ($tool:ident { manifest: $manifest:expr, open: $open:expr $(, split: $split:expr, open_range: $range:expr)? $(,)? }) => {
        impl $crate::Tool for $tool {
            fn manifest() -> $crate::Manifest {
                $manifest
            }

            fn open(
                ctx: &$crate::Context,
                args: &str,
                resume: ::std::option::Option<&str>,
            ) -> ::std::result::Result<::std::boxed::Box<dyn $crate::Stream>, $crate::Error> {
                $crate::open_stream(ctx, args, resume, $open)
            }

            $(
            fn split(
                ctx: &$crate::Context,
                args: &str,
                start: ::std::option::Option<&str>,
                count: u32,
            ) -> ::std::result::Result<::std::vec::Vec<::std::string::String>, $crate::Error> {
                ($split)(&ctx.roots, args, start, count)
            }

            fn open_range(
                ctx: &$crate::Context,
                args: &str,
                start: ::std::option::Option<&str>,
                end: ::std::option::Option<&str>,
            ) -> ::std::result::Result<::std::boxed::Box<dyn $crate::Stream>, $crate::Error> {
                $crate::open_range_stream(ctx, args, (start, end), $range)
            }
            )?
        }

        $crate::export_tool!($tool);
    };
    ($tool:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct CordonComponent;

            impl $crate::component::exports::cordon::tool::tool::Guest for CordonComponent {
                type ChunkStream = $crate::component::StreamAdapter;

                fn describe() -> $crate::component::exports::cordon::tool::tool::Manifest {
                    $crate::component::describe::<$tool>()
                }

                fn open(
                    args: ::std::string::String,
                    resume: ::std::option::Option<::std::string::String>,
                ) -> ::std::result::Result<
                    $crate::component::exports::cordon::tool::tool::ChunkStream,
                    $crate::component::exports::cordon::tool::tool::Error,
                > {
                    $crate::component::open::<$tool>(args, resume)
                }
            }

            impl $crate::component::exports::cordon::tool::shards::Guest for CordonComponent {
                fn split(
                    args: ::std::string::String,
                    start: ::std::option::Option<::std::string::String>,
                    count: u32,
                ) -> ::std::result::Result<
                    ::std::vec::Vec<::std::string::String>,
                    $crate::component::exports::cordon::tool::tool::Error,
                > {
                    $crate::component::split::<$tool>(args, start, count)
                }

                fn open_range(
                    args: ::std::string::String,
                    start: ::std::option::Option<::std::string::String>,
                    end: ::std::option::Option<::std::string::String>,
                ) -> ::std::result::Result<
                    $crate::component::exports::cordon::tool::tool::ChunkStream,
                    $crate::component::exports::cordon::tool::tool::Error,
                > {
                    $crate::component::open_range::<$tool>(args, start, end)
                }
            }

    $crate::component::export!(CordonComponent with_types_in $crate::component);
        };
    };
}
