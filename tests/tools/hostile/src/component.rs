//! The WIT exports, misbehaving as the arguments ask.

use std::cell::{Cell, RefCell};
use std::hint::black_box;

use serde_json::json;
use wasip2::clocks::monotonic_clock;

use crate::{
    Args, BENIGN_ITEMS, Behaviour, GROW_RETRIES, HANDLE_ATTEMPTS, HOST_SLEEP_NS, HUGE_ALLOCATION, HUGE_CHUNK_BYTES,
    HUGE_TEXT_BYTES, Place, REPORT_AFTER_NS,
};

wit_bindgen::generate!({
    path: "../../../wit",
    world: "cordon-tool",
});

use cordon::tool::types as t;
use exports::cordon::tool::tool::{self as wit, Guest, GuestChunkStream};

struct Component;

impl Guest for Component {
    type ChunkStream = Stream;

    fn describe() -> wit::Manifest {
        wit::Manifest {
            name: crate::NAME.into(),
            version: crate::VERSION.into(),
            title: crate::TITLE.into(),
            description: crate::DESCRIPTION.into(),
            input_schema: crate::input_schema().to_string(),
            output_schema: crate::output_schema().to_string(),
            access: t::Access::None,
            read_only: true,
            destructive: false,
            idempotent: true,
        }
    }

    fn open(args: String, _resume: Option<String>) -> Result<wit::ChunkStream, wit::Error> {
        let args = Args::parse(&args).map_err(|message| wit::Error { code: t::ErrorCode::InvalidArgument, message })?;
        if args.behaviour == Behaviour::HugeError {
            return Err(wit::Error { code: t::ErrorCode::Internal, message: "e".repeat(HUGE_TEXT_BYTES) });
        }
        if args.place == Place::Open {
            misbehave(args.behaviour);
        }
        let net = match args.behaviour.is_network() && args.place == Place::Open {
            true => Some(crate::net::run(&args).map_err(to_wit)?),
            false => None,
        };
        let found = (args.behaviour == Behaviour::Remember).then(remember);
        Ok(wit::ChunkStream::new(Stream { args, sent: Cell::new(0), found, net: RefCell::new(net) }))
    }
}

struct Stream {
    args: Args,
    sent: Cell<u64>,
    /// What `remember` found of an earlier call: its mark, and whether a
    /// freshly grown page held its bytes.
    found: Option<(u64, bool)>,
    /// What a network behaviour's requests gave, for `info`, once they ran.
    net: RefCell<Option<serde_json::Value>>,
}

/// A network behaviour's failure as the call's error.
fn to_wit(failure: crate::codes::Failure) -> wit::Error {
    let code = match failure.code {
        crate::codes::Code::PermissionDenied => t::ErrorCode::PermissionDenied,
        crate::codes::Code::TooLarge => t::ErrorCode::TooLarge,
        crate::codes::Code::Io => t::ErrorCode::Io,
    };
    wit::Error { code, message: failure.message }
}

/// The mark `remember` leaves in a static.
static MARK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Looks for an earlier call's marks and leaves its own: the static's value,
/// and whether a page grown now holds anything but zeros (then fills it).
fn remember() -> (u64, bool) {
    use core::arch::wasm32::memory_grow;
    let prior = MARK.swap(0xC0FF_EE00_D15E_A5E5, std::sync::atomic::Ordering::Relaxed);
    let page = memory_grow(0, 1);
    if page == usize::MAX {
        return (prior, false);
    }
    let base = page * 65536;
    let mut dirty = false;
    for at in base..base + 65536 {
        // SAFETY: the page was just grown and belongs to no Rust value.
        unsafe {
            dirty |= core::ptr::read_volatile(at as *const u8) != 0;
            core::ptr::write_volatile(at as *mut u8, 0xAB);
        }
    }
    (prior, dirty)
}

impl GuestChunkStream for Stream {
    fn next(&self, limit: wit::Budget) -> Result<Option<wit::Chunk>, wit::Error> {
        let n = self.sent.get();
        self.sent.set(n + 1);
        if self.args.place == Place::Next && n == 0 {
            misbehave(self.args.behaviour);
        }
        if self.args.behaviour.is_network() && self.net.borrow().is_none() {
            let found = crate::net::run(&self.args).map_err(to_wit)?;
            *self.net.borrow_mut() = Some(found);
        }
        let (payload, continued) = match self.args.behaviour {
            Behaviour::BigChunk => (t::Payload::Text("x".repeat(limit.bytes as usize + 1)), false),
            Behaviour::HugeChunk => (t::Payload::Text("x".repeat(HUGE_CHUNK_BYTES)), false),
            Behaviour::SmallChunks => (t::Payload::Text("x".into()), true),
            Behaviour::EmptyChunks => (t::Payload::Text(String::new()), true),
            Behaviour::Checkpoints => (t::Payload::Text(String::new()), false),
            Behaviour::SameCheckpoint => {
                let payload = t::Payload::Text(String::new());
                return Ok(Some(wit::Chunk { payload, span: None, continued: false, resume: "0".into() }));
            }
            Behaviour::Stall if n >= 1 => {
                misbehave(Behaviour::Loop);
                return Ok(None);
            }
            _ if n >= u64::from(BENIGN_ITEMS) => return Ok(None),
            _ => (t::Payload::Item(json!({ "item": n }).to_string()), false),
        };
        Ok(Some(wit::Chunk { payload, span: None, continued, resume: (n + 1).to_string() }))
    }

    fn info(&self) -> String {
        if self.args.place == Place::Info {
            misbehave(self.args.behaviour);
        }
        let mut info = json!({ "behaviour": format!("{:?}", self.args.behaviour) });
        if let Some(serde_json::Value::Object(found)) = &*self.net.borrow() {
            for (key, value) in found {
                info[key] = value.clone();
            }
        }
        if let Some((prior, dirty)) = self.found {
            info["prior_mark"] = prior.into();
            info["dirty_page"] = dirty.into();
        }
        if self.args.behaviour == Behaviour::HugeInfo {
            info["padding"] = "i".repeat(HUGE_TEXT_BYTES).into();
        }
        if self.args.behaviour == Behaviour::Environment {
            let vars = std::env::vars().map(|(name, value)| (name, serde_json::Value::String(value)));
            info["environment"] = vars.collect::<serde_json::Map<String, serde_json::Value>>().into();
        }
        info.to_string()
    }

    fn summary(&self) -> wit::Summary {
        wit::Summary { totals: json!({ "sent": self.sent.get() }).to_string(), exact: false, suggestions: Vec::new() }
    }

    fn fingerprint(&self) -> Result<Option<wit::Fingerprint>, wit::Error> {
        Ok(None)
    }
}

/// Does the misbehaviour that is not about output; output behaviours do
/// nothing here.
fn misbehave(behaviour: Behaviour) {
    match behaviour {
        Behaviour::Loop => {
            let mut spins = 0u64;
            loop {
                spins = black_box(spins.wrapping_add(1));
            }
        }
        Behaviour::Memory => {
            use core::arch::wasm32::{memory_grow, memory_size};
            let first = memory_size(0);
            while memory_grow(0, 1) != usize::MAX {}
            // Touch every host page of what it got, so the host really holds it.
            for at in (first * 65536..memory_size(0) * 65536).step_by(4096) {
                // SAFETY: the memory was just grown and belongs to no Rust value.
                unsafe { core::ptr::write_volatile(at as *mut u8, 1) };
            }
            for _ in 0..GROW_RETRIES {
                black_box(memory_grow(0, 1));
            }
            black_box(vec![1u8; 64 << 20]);
        }
        Behaviour::MemoryHuge => {
            black_box(Vec::<u8>::with_capacity(HUGE_ALLOCATION));
        }
        Behaviour::Handles => {
            for _ in 0..HANDLE_ATTEMPTS {
                std::mem::forget(monotonic_clock::subscribe_duration(0));
            }
        }
        Behaviour::GuestHandles => {
            for _ in 0..HANDLE_ATTEMPTS {
                let args = Args::of(Behaviour::Benign);
                let stream = Stream { args, sent: Cell::new(0), found: None, net: RefCell::new(None) };
                std::mem::forget(wit::ChunkStream::new(stream));
            }
        }
        Behaviour::Trap => core::arch::wasm32::unreachable(),
        Behaviour::Panic => panic!("the hostile tool was asked to panic"),
        Behaviour::SleepInHost => {
            // Past the host's first progress interval, say it is about to block.
            monotonic_clock::subscribe_duration(REPORT_AFTER_NS).block();
            cordon::tool::progress::report(1, None, Some("blocking in a host call"));
            monotonic_clock::subscribe_duration(HOST_SLEEP_NS).block();
        }
        Behaviour::Benign
        | Behaviour::BigChunk
        | Behaviour::HugeChunk
        | Behaviour::HugeInfo
        | Behaviour::HugeError
        | Behaviour::SmallChunks
        | Behaviour::EmptyChunks
        | Behaviour::Checkpoints
        | Behaviour::SameCheckpoint
        | Behaviour::Stall
        | Behaviour::Remember
        | Behaviour::Environment
        | Behaviour::Fetch
        | Behaviour::FetchLoop
        | Behaviour::Upload
        | Behaviour::Download => {}
    }
}

export!(Component);
