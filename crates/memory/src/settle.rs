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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A thread still busy when the wait starts has blocked, after its last work, by the time
    /// the wait returns: the wait outlasts a busy stretch far longer than its 250 µs readings.
    #[test]
    fn the_wait_returns_after_a_busy_thread_has_blocked() {
        let reached_its_wait = AtomicBool::new(false);
        let (sender, receiver) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|scope| {
            let reached_its_wait = &reached_its_wait;
            let worker = scope.spawn(move || {
                let busy_until = Instant::now() + Duration::from_millis(2);
                while Instant::now() < busy_until {
                    std::hint::spin_loop();
                }
                reached_its_wait.store(true, Ordering::SeqCst);
                receiver.recv()
            });
            wait_for_settled_process();
            let reached = reached_its_wait.load(Ordering::SeqCst);
            sender.send(()).unwrap();
            worker.join().unwrap().unwrap();
            assert!(reached, "the wait returned while the worker was still busy");
        });
    }

    /// A thread that never sleeps delays the wait by its limit, not forever.
    #[test]
    fn a_thread_that_never_sleeps_costs_the_limit_not_a_hang() {
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            });
            let started = Instant::now();
            wait_for_settled_process();
            let waited = started.elapsed();
            stop.store(true, Ordering::Relaxed);
            assert!(waited >= SETTLING_LIMIT, "returned after {waited:?}");
        });
    }
}
