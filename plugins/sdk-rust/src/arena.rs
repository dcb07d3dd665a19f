// The global allocator on wasm32: a bump arena above the module's initial
// memory. A check allocates for microseconds and the host resets the arena
// after copying the result (`pg_reset`), so freeing individual blocks buys
// nothing; bumping keeps `alloc` a handful of instructions and the module
// small (no dlmalloc). Growth goes through `memory.grow`, so the host's cap
// and its grow hook see a runaway plugin exactly as they see any other.
use core::alloc::{GlobalAlloc, Layout};
use core::arch::wasm32;

const PAGE: usize = 65536;

struct Arena;

// The module is single-threaded (wasm32-unknown-unknown, no threads): plain
// statics are enough.
static mut BASE: usize = 0;
static mut TOP: usize = 0;
static mut END: usize = 0;

unsafe fn init() {
    if BASE == 0 {
        let end = wasm32::memory_size(0) * PAGE;
        BASE = end;
        TOP = end;
        END = end;
    }
}

unsafe fn bump(size: usize, align: usize) -> *mut u8 {
    init();
    let start = match TOP.checked_add(align - 1) {
        Some(v) => v & !(align - 1),
        None => return core::ptr::null_mut(),
    };
    let new_top = match start.checked_add(size) {
        Some(v) => v,
        None => return core::ptr::null_mut(),
    };
    if new_top > END && !grow_to(new_top) {
        return core::ptr::null_mut();
    }
    TOP = new_top;
    start as *mut u8
}

unsafe fn grow_to(new_top: usize) -> bool {
    let pages = (new_top - END + PAGE - 1) / PAGE;
    if wasm32::memory_grow(0, pages) == usize::MAX {
        return false;
    }
    END += pages * PAGE;
    true
}

unsafe impl GlobalAlloc for Arena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump(layout.size(), layout.align())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Only the newest block can be given back; the rest waits for the reset.
        if ptr as usize + layout.size() == TOP {
            TOP = ptr as usize;
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = ptr as usize;
        // The newest block grows in place: a String or Vec being built does not copy.
        if p + layout.size() == TOP {
            let new_top = match p.checked_add(new_size) {
                Some(v) => v,
                None => return core::ptr::null_mut(),
            };
            if new_top <= END || grow_to(new_top) {
                TOP = new_top;
                return ptr;
            }
            return core::ptr::null_mut();
        }
        let fresh = bump(new_size, layout.align());
        if !fresh.is_null() {
            core::ptr::copy_nonoverlapping(ptr, fresh, core::cmp::min(layout.size(), new_size));
        }
        fresh
    }
}

#[global_allocator]
static ARENA: Arena = Arena;

/// Frees everything allocated since the first call (the host calls it via `pg_reset`).
pub fn reset() {
    unsafe {
        init();
        TOP = BASE;
    }
}
