//! `reclaim-memory`: what a process holds, measured, at the bottom of Reclaim's crates.
//!
//! - [`CountingAllocator`]: a global allocator that counts live heap bytes; read them with
//!   [`live_heap_bytes`] and [`peak_heap_bytes`].
//! - [`wait_for_settled_process`]: before an exact reading, let the other threads finish
//!   allocating or dropping and go to sleep ([`other_runnable_threads`] reads their states).
//! - [`resident_bytes`]: the resident set and its peak, from `/proc/self/status`;
//!   [`minor_page_faults`], from `/proc/self/stat`.
//! - [`mapped_bytes_of`], [`mapped_bytes_under`]: the bytes of files mapped into the address
//!   space, from `/proc/self/maps`.
//! - [`FreedMemoryReuse`]: for a scope, keep what the process frees in the allocator for
//!   reuse (a training loop's buffers of several MiB, each step), then hand it all back.
//! - [`MemorySnapshot`]: all of the above at one moment, with the device's memory pool
//!   (`burn::tensor::Device::memory_pool_usage`; its `take` needs the default `device`
//!   feature, without which the crate does not depend on Burn).
//!
//! It depends on no other Reclaim crate (and on Burn with no backend), so the loader's tests,
//! the trainer, the benches and the `reclaim` command all measure the same way.
//!
//! ```
//! #[global_allocator]
//! static ALLOCATOR: reclaim_memory::CountingAllocator = reclaim_memory::CountingAllocator;
//!
//! fn main() {
//!     let before = reclaim_memory::live_heap_bytes().expect("the allocator is installed");
//!     let buffer = vec![0u8; 1 << 20];
//!     let holding = reclaim_memory::live_heap_bytes().unwrap();
//!     assert!(holding >= before + (1 << 20));
//!     drop(buffer);
//!     assert!(reclaim_memory::live_heap_bytes().unwrap() < holding);
//!
//!     # #[cfg(feature = "device")]
//!     # {
//!     let snapshot = reclaim_memory::MemorySnapshot::take(None, &[]);
//!     assert!(snapshot.live_heap_bytes.is_some());
//!     assert_eq!(snapshot.mapped_dataset_bytes, 0);
//!     if cfg!(target_os = "linux") {
//!         assert!(snapshot.resident_bytes.unwrap() > 0);
//!     }
//!     # }
//! }
//! ```

mod allocator;
mod process;
mod reuse;
mod settle;
mod snapshot;

pub use allocator::{CountingAllocator, allocation_count, live_heap_bytes, peak_heap_bytes};
pub use process::{
    mapped_bytes_of, mapped_bytes_under, minor_page_faults, other_runnable_threads, resident_bytes,
};
pub use reuse::{FreedMemoryReuse, REUSED_BUFFER_LIMIT_BYTES};
pub use settle::{SETTLING_LIMIT, wait_for_settled_process};
pub use snapshot::MemorySnapshot;

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
