//! The guest-side SDK for Cordon tools.
//!
//! Implement [`Tool`] (a manifest and `open`) and [`Stream`] (`next` within a
//! budget, with exact resume positions), then call [`export_tool!`]. The crate
//! provides the WIT bindings, the conversion of errors and chunks, resolving a
//! client's path inside the granted roots ([`paths`]), and [`items::Items`],
//! which pages a sequence of JSON items (splitting large ones) for item tools,
//! [`progress`] reports for long calls, and the server's deny rules ([`policy`]).
//!
//! The logic of a tool stays plain Rust, testable natively; only
//! `export_tool!` is specific to `wasm32`.

pub mod atomic;
pub mod error;
pub mod grant;
pub mod host;
pub mod items;
pub mod outcome;
pub mod paths;
pub mod policy;
pub mod progress;
pub mod tool;
pub mod types;

#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod component;

pub use error::{Error, ErrorCode};
pub use tool::{Context, Stream, Tool};
pub use types::{Access, Budget, Chunk, Fingerprint, Manifest, Payload, Span, Summary};

/// Exports `$tool` (a type implementing [`Tool`]) as the component's `tool`
/// interface. Expands to nothing on targets other than `wasm32`.
#[macro_export]
macro_rules! export_tool {
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

    $crate::component::export!(CordonComponent with_types_in $crate::component);
        };
    };
}
