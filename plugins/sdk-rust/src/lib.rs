//! Write probegate check plugins in Rust (ABI v2, `plugins/ABI.md`).
//!
//! `#![no_std]` with `alloc`: nothing here needs an operating system, and the
//! crate has no dependencies. A plugin is a `cdylib` with two functions and
//! one macro:
//!
//! ```ignore
//! use probegate_sdk::{open_source, Input, Manifest, Verdict};
//! fn manifest() -> Manifest {
//!     Manifest::new("my-check", "0.1.0", "what it proves").source("proc.modules")
//! }
//! fn check(input: &Input) -> Verdict {
//!     let o = match open_source(input, "proc.modules") { Ok(o) => o, Err(v) => return v };
//!     Verdict::pass("Ok", o.text)
//! }
//! probegate_sdk::export_plugin!(manifest, check);
//! ```
//!
//! Memory: on wasm32 the crate installs a bump arena as the global allocator;
//! the host resets it after copying each result (`pg_reset`), so every call
//! starts from an empty heap and nothing may be kept across calls.
#![no_std]

extern crate alloc;

pub mod abi;
#[cfg(target_arch = "wasm32")]
mod arena;
pub mod input;
pub mod json;
pub mod manifest;
pub mod text;
pub mod verdict;

pub use abi::{abort, log};
pub use input::{Input, Source};
pub use json::Value;
pub use manifest::Manifest;
pub use verdict::{open_source, parse_error, source_failed, Opened, Status, Verdict};

/// The ABI this crate speaks (its major version says the same).
pub const ABI_VERSION: u32 = 2;

/// Exports the ABI v2 entry points (`pg_manifest`, `pg_check`, `pg_alloc`,
/// `pg_reset`) from the plugin crate, around `manifest() -> Manifest` and
/// `check(&Input) -> Verdict`.
#[macro_export]
macro_rules! export_plugin {
    ($manifest:path, $check:path) => {
        #[no_mangle]
        pub extern "C" fn pg_manifest() -> u64 {
            $crate::abi::emit($manifest().to_json())
        }
        #[no_mangle]
        pub extern "C" fn pg_check(ptr: *const u8, len: usize) -> u64 {
            $crate::abi::run_check(ptr, len, $check)
        }
        #[no_mangle]
        pub extern "C" fn pg_alloc(len: usize) -> *mut u8 {
            $crate::abi::alloc_input(len)
        }
        #[no_mangle]
        pub extern "C" fn pg_reset() {
            $crate::abi::reset()
        }
    };
}

// Storage and volume health checks (appended: plain plugins' modules are unchanged).
pub mod health;

/// `export_plugin!` for a health check: `check(&Input, health::Round) -> health::Health`.
#[macro_export]
macro_rules! export_health_plugin {
    ($manifest:path, $check:path) => {
        #[no_mangle]
        pub extern "C" fn pg_manifest() -> u64 {
            $crate::abi::emit($manifest().to_json())
        }
        #[no_mangle]
        pub extern "C" fn pg_check(ptr: *const u8, len: usize) -> u64 {
            $crate::health::run_check(ptr, len, $check)
        }
        #[no_mangle]
        pub extern "C" fn pg_alloc(len: usize) -> *mut u8 {
            $crate::abi::alloc_input(len)
        }
        #[no_mangle]
        pub extern "C" fn pg_reset() {
            $crate::abi::reset()
        }
    };
}
