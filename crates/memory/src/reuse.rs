//! Keeping what a hot loop frees for its next iteration, then handing it all back.
//!
//! A training step on a CPU backend allocates and frees buffers of several MiB (a batch's
//! activations, their gradients, the columns of a convolution). glibc's allocator maps each
//! buffer above its threshold (128 KiB at first, raised to the size of each larger mapped buffer
//! freed, never past 32 MiB) with `mmap` and unmaps it on `free`, and gives the top of its heap
//! back to the kernel once more than its trim threshold lies free there (128 KiB at first, twice
//! the mapping threshold once that has been raised). Either way the next step's buffer of the
//! same size can come back as fresh pages: a page fault for each 4 KiB on first write, and, for
//! an unmapped buffer, a flush of its translations on every core (an inter-processor interrupt,
//! slow in a virtual machine). How often that happens depends on which buffers the process
//! happened to free first, so the same step's time varies from run to run.
//!
//! [`FreedMemoryReuse`] fixes the allocator's policy for a scope: buffers up to 32 MiB come
//! from the heap, and what is freed stays there for reuse. When the last guard is dropped, the
//! heap's free top is trimmed again past 128 KiB and everything the heap holds free is handed
//! back to the kernel at once (`malloc_trim`), so a release measured after the scope sees the
//! memory go. Buffers up to 32 MiB keep coming from the heap after the scope: glibc cannot be
//! put back to its adaptive threshold once a program has set one, and this is where that
//! threshold would have ended after the first large buffer freed.

use std::sync::Mutex;

/// The largest buffer taken from the heap rather than mapped on its own while a
/// [`FreedMemoryReuse`] is held: glibc's own ceiling for its adaptive threshold on 64-bit
/// targets (`DEFAULT_MMAP_THRESHOLD_MAX`), past which `mallopt` refuses the value.
pub const REUSED_BUFFER_LIMIT_BYTES: usize = 32 << 20;

/// How many guards are alive; the policy is set by the first and restored by the last.
static HOLDERS: Mutex<usize> = Mutex::new(0);

/// While alive, memory that the process frees stays with the allocator for reuse instead of
/// going back to the kernel; when the last one is dropped, it all goes back.
///
/// Hold one around a loop that allocates and frees the same large buffers each iteration (a
/// training loop on a CPU backend). Guards may overlap, from any threads: the policy holds from
/// the first guard's creation to the last one's drop. On targets other than Linux with glibc it
/// does nothing.
///
/// The policy is process-wide, like the allocator: while a guard is alive, frees anywhere in
/// the process are kept. Live heap bytes ([`live_heap_bytes`](crate::live_heap_bytes)) do not
/// change; the resident set stays near its peak until the last guard is dropped. After that,
/// the heap's free top goes back to the kernel past 128 KiB, as at the program's start, while
/// buffers up to [`REUSED_BUFFER_LIMIT_BYTES`] still come from the heap (the module's
/// documentation says why); memory freed in the middle of the heap after the drop stays with
/// the allocator until a later trim, as it would without any guard.
///
/// ```
/// use reclaim_memory::FreedMemoryReuse;
///
/// {
///     let _reuse = FreedMemoryReuse::begin();
///     assert!(FreedMemoryReuse::is_active());
///     for _ in 0..3 {
///         // The second and third buffers reuse the first one's pages.
///         let buffer = vec![1u8; 8 << 20];
///         assert_eq!(buffer[4096], 1);
///     }
/// }
/// // Dropped: the heap's free top is trimmed again, and what it kept free has gone back to the
/// // kernel.
/// assert!(!FreedMemoryReuse::is_active());
/// ```
#[derive(Debug)]
#[must_use = "the policy ends when the guard is dropped"]
pub struct FreedMemoryReuse {
    _private: (),
}

impl FreedMemoryReuse {
    /// Starts keeping freed memory for reuse, unless another guard already has.
    pub fn begin() -> Self {
        let mut holders = HOLDERS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if *holders == 0 {
            platform::keep_freed_memory();
        }
        *holders += 1;
        Self { _private: () }
    }

    /// Whether any guard is alive in this process.
    pub fn is_active() -> bool {
        *HOLDERS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            > 0
    }
}

impl Drop for FreedMemoryReuse {
    fn drop(&mut self) {
        let mut holders = HOLDERS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *holders -= 1;
        if *holders == 0 {
            platform::return_freed_memory();
        }
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod platform {
    use super::REUSED_BUFFER_LIMIT_BYTES;

    /// glibc's initial trim threshold (`DEFAULT_TRIM_THRESHOLD`).
    const GLIBC_DEFAULT_TRIM_THRESHOLD_BYTES: libc::c_int = 128 * 1024;

    /// The largest value `M_TRIM_THRESHOLD` takes: the heap's free top is then never trimmed.
    const NEVER_TRIM: libc::c_int = libc::c_int::MAX;

    pub(super) fn keep_freed_memory() {
        // SAFETY: `mallopt` has no memory-safety preconditions. It takes the main arena's lock
        // and writes word-sized parameters that other threads' `malloc` and `free` read without
        // a lock (glibc's manual marks it MT-Unsafe for that reason, `const:mallopt`); glibc's
        // own `free` writes the same two parameters the same way when it raises its adaptive
        // threshold, so a concurrent reader sees the old or the new value, either a valid
        // policy. A value it refuses leaves the parameter as it was (it returns 0), which only
        // means less reuse.
        unsafe {
            libc::mallopt(
                libc::M_MMAP_THRESHOLD,
                REUSED_BUFFER_LIMIT_BYTES as libc::c_int,
            );
            libc::mallopt(libc::M_TRIM_THRESHOLD, NEVER_TRIM);
        }
    }

    pub(super) fn return_freed_memory() {
        // SAFETY: as above for `mallopt`; `malloc_trim` has no preconditions and takes each
        // arena's lock while it gives that arena's free pages back.
        unsafe {
            libc::mallopt(libc::M_TRIM_THRESHOLD, GLIBC_DEFAULT_TRIM_THRESHOLD_BYTES);
            libc::malloc_trim(0);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod platform {
    pub(super) fn keep_freed_memory() {}
    pub(super) fn return_freed_memory() {}
}

// Tested in `tests/reuse.rs`, a binary without libtest's harness: the policy, the page faults
// and the resident set are the whole process's, which libtest's parallel tests would share.
