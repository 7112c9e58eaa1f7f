//! Letting the process settle before a measurement, so that what a reading counts is what the
//! measured code holds, not what another thread is about to allocate or free.

use std::time::{Duration, Instant};

use crate::{live_heap_bytes, other_runnable_threads};

/// The pause between two readings of [`wait_for_settled_process`].
const READING_INTERVAL: Duration = Duration::from_micros(250);

/// The longest [`wait_for_settled_process`] waits: a thread that never sleeps (a spinning
/// pool, another test of the same binary) costs a measurement this much, never a hang.
pub const SETTLING_LIMIT: Duration = Duration::from_millis(50);

/// Waits until the process is settled: the live heap did not change between two readings
/// 250 µs apart, and no other thread of the process is running, waiting for a CPU or waiting
/// for the disk (on Linux, [`other_runnable_threads`]). Gives up after [`SETTLING_LIMIT`].
///
/// Both halves matter to an exact comparison of live heap bytes. A backend's pool thread may
/// still be dropping the state of a task whose result the caller already has. A scoped thread
/// (a loader's worker) counts as finished once its function has returned, before its
/// thread-local destructors run: the 48-byte context a standard channel gives a thread the
/// first time it blocks is freed there, after the scope has ended. And a thread that has just
/// finished a task may not yet have blocked for the next one. On a program's first run, with
/// its code not yet read from disk, such a thread can stall in a page fault for longer than any
/// fixed pause, so the wait reads the threads' states rather than trusting time alone.
pub fn wait_for_settled_process() {
    let started = Instant::now();
    let mut last_heap = live_heap_bytes();
    loop {
        std::thread::sleep(READING_INTERVAL);
        let heap = live_heap_bytes();
        let others_asleep = other_runnable_threads().is_none_or(|runnable| runnable == 0);
        if (heap == last_heap && others_asleep) || started.elapsed() >= SETTLING_LIMIT {
            return;
        }
        last_heap = heap;
    }
}

// Tested in `tests/settle.rs`, a binary without libtest's harness: the tests read the states of
// every thread of the process, which libtest's parallel tests would change under them.
