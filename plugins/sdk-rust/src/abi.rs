//! The ABI v2 boundary: what `export_plugin!` expands to, and the host's imports.
use alloc::string::String;
use core::alloc::Layout;

use crate::input::Input;
use crate::verdict::Verdict;

#[cfg(target_arch = "wasm32")]
#[link(wasm_import_module = "probegate_v2")]
extern "C" {
    #[link_name = "log"]
    fn host_log(ptr: *const u8, len: usize);
    #[link_name = "abort"]
    fn host_abort(ptr: *const u8, len: usize);
}

/// A trace line: shown by `probegate plugin test`, logged by the gateway at
/// debug level (8 per call, 256 characters each; never affects the verdict).
pub fn log(message: &str) {
    #[cfg(target_arch = "wasm32")]
    unsafe {
        host_log(message.as_ptr(), message.len())
    }
    #[cfg(not(target_arch = "wasm32"))]
    let _ = message;
}

/// Stops the call with `message`: the gateway reports `PluginTrap` "abort: MESSAGE".
pub fn abort(message: &str) -> ! {
    #[cfg(target_arch = "wasm32")]
    unsafe {
        host_abort(message.as_ptr(), message.len());
        core::arch::wasm32::unreachable()
    }
    #[cfg(not(target_arch = "wasm32"))]
    panic!("abort: {}", message)
}

/// Hands a string to the host as `ptr | len << 32`. Its memory stays valid
/// until `pg_reset`, which the host calls once it has copied the bytes.
pub fn emit(s: String) -> u64 {
    let s = core::mem::ManuallyDrop::new(s);
    (s.as_ptr() as usize as u64) | ((s.len() as u64) << 32)
}

/// `pg_alloc`: a buffer for the host to write the input into.
pub fn alloc_input(len: usize) -> *mut u8 {
    match Layout::from_size_align(if len == 0 { 1 } else { len }, 1) {
        Ok(layout) => unsafe { alloc::alloc::alloc(layout) },
        Err(_) => core::ptr::null_mut(),
    }
}

/// `pg_reset`: frees everything the call allocated.
pub fn reset() {
    #[cfg(target_arch = "wasm32")]
    crate::arena::reset();
}

/// `pg_check`: decodes the input, runs `check`, serialises the verdict.
pub fn run_check(ptr: *const u8, len: usize, check: fn(&Input) -> Verdict) -> u64 {
    let bytes = unsafe { core::slice::from_raw_parts(ptr, len) };
    let verdict = match core::str::from_utf8(bytes) {
        Err(_) => Verdict::fail("BadInput", "input is not UTF-8"),
        Ok(text) => match Input::parse(text) {
            Ok(input) => check(&input),
            Err(e) => Verdict::fail("BadInput", e),
        },
    };
    emit(verdict.to_json())
}
