//! `other_runnable_threads` and `wait_for_settled_process` against threads whose states the test
//! controls. One binary without libtest's harness (`harness = false` in `Cargo.toml`), its
//! scenarios one after the other: libtest would run other tests as threads of this process, and
//! their states are what is read here.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use reclaim_memory::{SETTLING_LIMIT, other_runnable_threads, wait_for_settled_process};

fn main() {
    a_spinning_thread_is_runnable_and_a_blocked_one_is_not();
    the_wait_returns_after_a_busy_thread_has_blocked();
    a_thread_that_never_sleeps_costs_the_limit_not_a_hang();
    println!("settle: 3 scenarios ok");
}

fn a_spinning_thread_is_runnable_and_a_blocked_one_is_not() {
    let stop = AtomicBool::new(false);
    let (sender, receiver) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let spinner = scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        let sleeper = scope.spawn(move || receiver.recv());
        // The spinner never blocks: it is running or waiting for a CPU at every reading.
        assert!(other_runnable_threads().expect("Linux has /proc") >= 1);
        stop.store(true, Ordering::Relaxed);
        spinner.join().unwrap();
        // The sleeper blocks on its channel: runnable only on its way there.
        let counted_asleep = (0..1000).any(|_| {
            std::thread::sleep(Duration::from_millis(1));
            other_runnable_threads() == Some(0)
        });
        sender.send(()).unwrap();
        sleeper.join().unwrap().unwrap();
        assert!(
            counted_asleep,
            "a thread blocked on a channel was never seen asleep"
        );
    });
}

/// A thread still busy when the wait starts has blocked, after its last work, by the time the
/// wait returns before its limit: the wait outlasts a busy stretch far longer than its 250 µs
/// readings (a wait on the live heap alone would return while it is still busy). On a starved
/// machine the worker may not get a CPU within the limit; the wait then returns at its limit,
/// as documented, and that is what is asserted instead: the wait never returns early while a
/// thread is busy, whatever the scheduler does (no timing luck either way).
fn the_wait_returns_after_a_busy_thread_has_blocked() {
    let reached_its_wait = AtomicBool::new(false);
    let (sender, receiver) = mpsc::channel::<()>();
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
        let started = Instant::now();
        wait_for_settled_process();
        let waited = started.elapsed();
        let reached = reached_its_wait.load(Ordering::SeqCst);
        sender.send(()).unwrap();
        worker.join().unwrap().unwrap();
        assert!(
            reached || waited >= SETTLING_LIMIT,
            "the wait returned after {waited:?}, before its limit, while the worker was still busy"
        );
    });
}

/// A thread that never sleeps delays the wait by its limit, not forever.
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
