//! `FreedMemoryReuse` against the kernel's own counts: the page faults a buffer costs and the
//! resident set. One binary without libtest's harness (`harness = false` in `Cargo.toml`), its
//! scenarios on the main thread alone: libtest would run other tests as threads of this process,
//! allocating and faulting beside the measured code.

use reclaim_memory::{FreedMemoryReuse, minor_page_faults, resident_bytes};

/// A buffer as large as a batch's activations in the CNN's first block (64 × 32 × 32 × 32 f32).
const BUFFER_BYTES: usize = 8 << 20;
const BUFFER_PAGES: u64 = (BUFFER_BYTES / 4096) as u64;

fn main() {
    the_guard_is_active_from_the_first_begin_to_the_last_drop();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `prctl(PR_SET_THP_DISABLE)` changes only this process's use of transparent
        // huge pages, so that a buffer costs one fault per 4 KiB page wherever THP is `always`.
        let refused = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) } != 0;
        assert!(!refused, "prctl(PR_SET_THP_DISABLE) failed");
        a_freed_buffer_is_reused_without_faults_and_handed_back_after();
        println!("reuse: 2 scenarios ok");
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    println!(
        "reuse: 1 scenario ok; the allocator's policy is glibc's on Linux only, not measured here"
    );
}

fn the_guard_is_active_from_the_first_begin_to_the_last_drop() {
    assert!(!FreedMemoryReuse::is_active());
    let first = FreedMemoryReuse::begin();
    let second = FreedMemoryReuse::begin();
    drop(first);
    assert!(FreedMemoryReuse::is_active());
    drop(second);
    assert!(!FreedMemoryReuse::is_active());
}

fn a_freed_buffer_is_reused_without_faults_and_handed_back_after() {
    let (resident_before, _) = resident_bytes().expect("Linux has /proc/self/status");
    let reuse = FreedMemoryReuse::begin();
    let first_faults = faults_of_one_buffer();
    let reused_faults = faults_of_one_buffer();
    assert!(
        first_faults >= BUFFER_PAGES / 2,
        "a fresh {BUFFER_BYTES}-byte buffer took {first_faults} page faults, expected about {BUFFER_PAGES}"
    );
    assert!(
        reused_faults < BUFFER_PAGES / 16,
        "the second {BUFFER_BYTES}-byte buffer took {reused_faults} page faults: its pages were not reused"
    );
    let (resident_holding, _) = resident_bytes().unwrap();
    assert!(
        resident_holding >= resident_before + BUFFER_BYTES as u64 * 3 / 4,
        "freed pages left the process while reuse was on: {resident_before} -> {resident_holding} bytes"
    );
    drop(reuse);
    let (resident_after, _) = resident_bytes().unwrap();
    assert!(
        resident_after <= resident_before + BUFFER_BYTES as u64 / 4,
        "the kept pages stayed after the guard was dropped: {resident_before} -> {resident_after} bytes"
    );
    // The policy is lifted: a buffer freed now goes back to the kernel, and the next one is
    // fresh pages again.
    let faults_after = faults_of_one_buffer();
    assert!(
        faults_after >= BUFFER_PAGES / 2,
        "after the guard, a {BUFFER_BYTES}-byte buffer took {faults_after} page faults: freed pages were still kept"
    );
}

/// Minor page faults taken while one buffer is allocated, written through and freed.
fn faults_of_one_buffer() -> u64 {
    let before = minor_faults();
    let buffer = std::hint::black_box(vec![1u8; BUFFER_BYTES]);
    assert_eq!(buffer[BUFFER_BYTES - 1], 1);
    drop(buffer);
    minor_faults() - before
}

fn minor_faults() -> u64 {
    minor_page_faults().expect("Linux has /proc/self/stat")
}
