//! The ABI v2 boundary: what `export_plugin!` expands to, and the host's imports.
use alloc::string::String;
use core::alloc::Layout;
use core::fmt::Write;

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

/// What `export_plugin!`'s panic hook calls: aborts the call with the panic's
/// message and place, so the host reports `PluginTrap` "abort: panic: …".
/// The text is built in a fixed buffer: a panic may come from the allocator.
pub fn panicked(message: &str, at: Option<(&str, u32, u32)>) -> ! {
    let mut buf = Fixed { bytes: [0; 512], len: 0 };
    let _ = match at {
        Some((file, line, col)) => write!(buf, "panic: {} at {}:{}:{}", message, file, line, col),
        None => write!(buf, "panic: {}", message),
    };
    abort(buf.as_str())
}

/// A `core::fmt::Write` into 512 bytes that drops what does not fit (at a character boundary).
struct Fixed {
    bytes: [u8; 512],
    len: usize,
}

impl Fixed {
    fn as_str(&self) -> &str {
        core::str::from_utf8(&self.bytes[..self.len]).unwrap_or("panic")
    }
}

impl core::fmt::Write for Fixed {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let room = self.bytes.len() - self.len;
        let mut n = s.len().min(room);
        while n > 0 && !s.is_char_boundary(n) {
            n -= 1;
        }
        self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
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
