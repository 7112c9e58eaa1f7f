//! A global allocator that counts live heap bytes, and the readers of its counters.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

static LIVE_HEAP_BYTES: AtomicUsize = AtomicUsize::new(0);
static PEAK_HEAP_BYTES: AtomicUsize = AtomicUsize::new(0);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static COUNTING_ALLOCATOR_INSTALLED: AtomicBool = AtomicBool::new(false);

/// A global allocator that counts live heap bytes, wrapping the system allocator.
///
/// Install it in a binary to make [`live_heap_bytes`] report numbers:
///
/// ```
/// #[global_allocator]
/// static ALLOCATOR: reclaim_memory::CountingAllocator = reclaim_memory::CountingAllocator;
/// ```
///
/// It also counts allocations ([`allocation_count`]: `alloc`, `alloc_zeroed` and `realloc`
/// calls), for benches that report allocations per step. The cost is three relaxed atomic
/// operations per allocation and one per deallocation.
pub struct CountingAllocator;

impl CountingAllocator {
    fn record_allocation(size: usize) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        let live = LIVE_HEAP_BYTES.fetch_add(size, Ordering::Relaxed) + size;
        PEAK_HEAP_BYTES.fetch_max(live, Ordering::Relaxed);
        if !COUNTING_ALLOCATOR_INSTALLED.load(Ordering::Relaxed) {
            COUNTING_ALLOCATOR_INSTALLED.store(true, Ordering::Relaxed);
        }
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract is upheld by `System`; the counters are plain atomics.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            Self::record_allocation(layout.size());
        }
        pointer
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `alloc_zeroed`'s contract.
        let pointer = unsafe { System.alloc_zeroed(layout) };
        if !pointer.is_null() {
            Self::record_allocation(layout.size());
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged; `pointer` was allocated by `System` with `layout`.
        unsafe { System.dealloc(pointer, layout) };
        LIVE_HEAP_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `realloc`'s contract.
        let new_pointer = unsafe { System.realloc(pointer, layout, new_size) };
        if !new_pointer.is_null() {
            LIVE_HEAP_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
            Self::record_allocation(new_size);
        }
        new_pointer
    }
}

/// Live heap bytes, or `None` when no [`CountingAllocator`] is installed in this program.
pub fn live_heap_bytes() -> Option<u64> {
    COUNTING_ALLOCATOR_INSTALLED
        .load(Ordering::Relaxed)
        .then(|| LIVE_HEAP_BYTES.load(Ordering::Relaxed) as u64)
}

/// The highest live heap bytes seen so far, or `None` without a [`CountingAllocator`].
pub fn peak_heap_bytes() -> Option<u64> {
    COUNTING_ALLOCATOR_INSTALLED
        .load(Ordering::Relaxed)
        .then(|| PEAK_HEAP_BYTES.load(Ordering::Relaxed) as u64)
}

/// How many allocations (`alloc`, `alloc_zeroed` and `realloc` calls that succeeded) this
/// program has made so far, or `None` without a [`CountingAllocator`]. The difference of two
/// readings is the allocations made in between, by every thread.
pub fn allocation_count() -> Option<u64> {
    COUNTING_ALLOCATOR_INSTALLED
        .load(Ordering::Relaxed)
        .then(|| ALLOCATIONS.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test, so that nothing else in this binary uses the allocator meanwhile: unit tests
    /// run under the system allocator (none is installed here), so the readers first say so
    /// rather than report zeros; once the allocator has served a block, they count.
    #[test]
    fn the_counters_are_absent_until_the_allocator_serves_and_then_count_its_blocks() {
        assert_eq!(live_heap_bytes(), None);
        assert_eq!(peak_heap_bytes(), None);
        assert_eq!(allocation_count(), None);

        let layout = Layout::from_size_align(4096, 64).unwrap();
        // SAFETY: `layout` has a non-zero size; the block is freed below with the same layout.
        let pointer = unsafe { CountingAllocator.alloc_zeroed(layout) };
        assert!(!pointer.is_null());
        assert_eq!(pointer as usize % 64, 0, "the alignment is kept");
        // SAFETY: `pointer` is a live, zeroed block of 4096 bytes.
        let block = unsafe { std::slice::from_raw_parts(pointer, 4096) };
        assert!(block.iter().all(|&byte| byte == 0));
        assert_eq!(live_heap_bytes(), Some(4096));
        assert_eq!(allocation_count(), Some(1));
        // SAFETY: `pointer` was allocated above by this allocator with `layout`.
        let pointer = unsafe { CountingAllocator.realloc(pointer, layout, 8192) };
        assert!(!pointer.is_null());
        assert_eq!(live_heap_bytes(), Some(8192));
        assert_eq!(peak_heap_bytes(), Some(8192));
        let grown = Layout::from_size_align(8192, 64).unwrap();
        // SAFETY: `pointer` is the reallocated block, of the grown layout.
        unsafe { CountingAllocator.dealloc(pointer, grown) };
        assert_eq!(live_heap_bytes(), Some(0));
        assert_eq!(peak_heap_bytes(), Some(8192), "the peak stays");
        assert_eq!(
            allocation_count(),
            Some(2),
            "the realloc counts, the dealloc does not"
        );
    }
}
