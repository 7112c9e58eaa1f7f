//! The guard that turns a mapped file truncated under a run into a typed error instead of a
//! `SIGBUS` death.
//!
//! Reading a page of a memory map that lies past the end of its file (because the file was
//! truncated after it was mapped) raises `SIGBUS`, whose default action kills the process. On
//! Linux this module keeps a process-wide table of the address ranges of the mapped
//! [`IdxArray`](crate::IdxArray)s and installs, once, a `SIGBUS` handler. When the faulting
//! address lies in a registered range, the handler replaces that whole range with anonymous zero
//! pages (later reads see zeros and never fault again), records the fault against the range, and
//! returns: the faulting instruction is retried and reads a zero. The array then reports
//! [`DatasetError::MappedFileChanged`](crate::DatasetError::MappedFileChanged) from
//! `verify_mapping_intact`. A `SIGBUS` for any other address goes to the handler installed
//! before this one (or, if there was none, kills the process as before).
//!
//! Limits:
//!
//! - The table has [`GUARDED_RANGE_SLOTS`] slots. A mapping made while all are taken still works
//!   but is unguarded: a truncation of its file kills the process as before.
//! - Only a read of a page wholly past the new end of the file faults. Bytes after the new end
//!   inside its last page read as zeros without a fault, so a truncation that keeps every mapped
//!   page (or that nothing reads past) goes unnoticed; so does any change of bytes in place.
//! - If the kernel refuses the replacement mapping (say, the process is out of memory-map
//!   entries), the fault is handled as if unguarded: the process dies as before.
//! - On targets other than Linux nothing is installed and nothing is guarded.
//!
//! # Async-signal-safety
//!
//! The handler may interrupt any code on any thread, including an allocator or a lock holder, so
//! it allocates nothing, takes no lock and touches no thread-local state. It reads the table
//! through atomics only; it calls only `mmap`, `signal` and `raise` (system calls behind thin
//! libc wrappers: `signal` and `raise` are on POSIX's list of async-signal-safe functions, and
//! glibc's `mmap` is the system call plus `errno`), and it saves and restores `errno`, which
//! those calls may set, so the interrupted code never sees it change. The previous action it
//! forwards to was stored before the handler could need it, in a `OnceLock` whose `get` is one
//! atomic load.
//!
//! A slot is a small sequence lock: its `state` word holds a generation and a status. Claiming a
//! slot moves it to "writing" (a new generation), writes the range, then publishes "active";
//! freeing it moves it to "free". The handler reads `state`, the range, then `state` again, and
//! uses the range only if both reads are the same "active" word, so it never acts on a range
//! half written by a registration on another thread.
//!
//! A fault inside a registered range comes from code reading the array's bytes, which borrows the
//! array, so that array (and its registration) cannot be dropped while the handler runs: the
//! range the handler replaces is still this array's map. A registration is freed before its map
//! is unmapped (field order in `Storage::Mapped`), so two live slots never hold overlapping
//! ranges.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};

/// How many mappings can be guarded at once; more are mapped unguarded.
pub(crate) const GUARDED_RANGE_SLOTS: usize = 64;

/// The low bits of a slot's `state` word: its status. The rest is the generation.
const STATUS_BITS: u32 = 2;
const STATUS_MASK: usize = (1 << STATUS_BITS) - 1;
const STATUS_FREE: usize = 0;
const STATUS_WRITING: usize = 1;
const STATUS_ACTIVE: usize = 2;

/// One guarded range: where it starts, how long it is (whole pages), and whether a read in it has
/// faulted.
struct GuardedRangeSlot {
    /// Generation (high bits) and status (low [`STATUS_BITS`] bits); see the module's
    /// documentation.
    state: AtomicUsize,
    start: AtomicUsize,
    length: AtomicUsize,
    faulted: AtomicBool,
}

impl GuardedRangeSlot {
    const fn new() -> Self {
        GuardedRangeSlot {
            state: AtomicUsize::new(STATUS_FREE),
            start: AtomicUsize::new(0),
            length: AtomicUsize::new(0),
            faulted: AtomicBool::new(false),
        }
    }

    /// Takes the slot if it is free and publishes `start..start + length` in it.
    fn try_claim(&self, start: usize, length: usize) -> bool {
        let current = self.state.load(Ordering::Relaxed);
        if current & STATUS_MASK != STATUS_FREE {
            return false;
        }
        let generation = (current >> STATUS_BITS).wrapping_add(1);
        let writing = (generation << STATUS_BITS) | STATUS_WRITING;
        if self
            .state
            .compare_exchange(current, writing, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        // The "writing" word is visible before any of the stores below (a sequence lock's write
        // side), so a reader that sees the new range also sees that the state changed.
        fence(Ordering::Release);
        self.start.store(start, Ordering::Relaxed);
        self.length.store(length, Ordering::Relaxed);
        self.faulted.store(false, Ordering::Relaxed);
        let active = (generation << STATUS_BITS) | STATUS_ACTIVE;
        self.state.store(active, Ordering::Release);
        true
    }

    /// Frees the slot (keeping its generation, so a reader racing with it sees the word change).
    fn release(&self) {
        let current = self.state.load(Ordering::Relaxed);
        let free = (current & !STATUS_MASK) | STATUS_FREE;
        self.state.store(free, Ordering::Release);
    }

    /// The slot's range, if it is active and was read whole (not while being rewritten).
    /// Async-signal-safe: atomic loads only.
    // Only the Linux handler (and the tests) read the table.
    #[cfg_attr(not(any(target_os = "linux", test)), allow(dead_code))]
    fn active_range(&self) -> Option<(usize, usize)> {
        let before = self.state.load(Ordering::Acquire);
        if before & STATUS_MASK != STATUS_ACTIVE {
            return None;
        }
        let start = self.start.load(Ordering::Relaxed);
        let length = self.length.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        let after = self.state.load(Ordering::Relaxed);
        (before == after).then_some((start, length))
    }
}

/// A fixed table of guarded ranges, shared by every thread and read by the signal handler.
pub(crate) struct GuardedRangeTable {
    slots: [GuardedRangeSlot; GUARDED_RANGE_SLOTS],
}

impl GuardedRangeTable {
    pub(crate) const fn new() -> Self {
        GuardedRangeTable {
            slots: [const { GuardedRangeSlot::new() }; GUARDED_RANGE_SLOTS],
        }
    }

    /// Claims a free slot for `start..start + length`; `None` when every slot is taken.
    fn claim(&self, start: usize, length: usize) -> Option<usize> {
        (0..GUARDED_RANGE_SLOTS).find(|&index| self.slots[index].try_claim(start, length))
    }

    /// The active slot whose range holds `address`, with that range. Async-signal-safe.
    // Only the Linux handler (and the tests) read the table.
    #[cfg_attr(not(any(target_os = "linux", test)), allow(dead_code))]
    fn slot_containing(&self, address: usize) -> Option<(usize, usize, usize)> {
        self.slots.iter().enumerate().find_map(|(index, slot)| {
            let (start, length) = slot.active_range()?;
            (address >= start && address - start < length).then_some((index, start, length))
        })
    }

    /// Records a fault against slot `index`. Async-signal-safe.
    // Only the Linux handler (and the tests) read the table.
    #[cfg_attr(not(any(target_os = "linux", test)), allow(dead_code))]
    fn mark_faulted(&self, index: usize) {
        self.slots[index].faulted.store(true, Ordering::Release);
    }
}

/// The table the signal handler consults.
static GUARDED_RANGES: GuardedRangeTable = GuardedRangeTable::new();

/// One mapping's entry in a [`GuardedRangeTable`], freed on drop; or nothing, for a mapping left
/// unguarded (table full, handler not installed, or not Linux).
pub(crate) struct MappingRegistration {
    slot: Option<(&'static GuardedRangeTable, usize)>,
}

impl MappingRegistration {
    /// Registers the mapped bytes `mapped` (the whole map, from its page-aligned start) with the
    /// process's guard, installing the `SIGBUS` handler the first time.
    pub(crate) fn register(mapped: &[u8]) -> Self {
        if !sigbus_handler::install_once() {
            return MappingRegistration { slot: None };
        }
        Self::register_in(&GUARDED_RANGES, mapped)
    }

    /// Registers `mapped` in `table`, its length rounded up to whole pages (the map covers them,
    /// and a fault anywhere in them belongs to it).
    fn register_in(table: &'static GuardedRangeTable, mapped: &[u8]) -> Self {
        let start = mapped.as_ptr() as usize;
        let length = mapped.len().next_multiple_of(page_size());
        let slot = table.claim(start, length).map(|index| (table, index));
        MappingRegistration { slot }
    }

    /// Whether the mapping is in the table (and a truncation of its file is therefore caught).
    #[cfg(test)]
    pub(crate) fn is_guarded(&self) -> bool {
        self.slot.is_some()
    }

    /// Whether a read in the mapping faulted (its bytes have since been zeros). One atomic load.
    pub(crate) fn has_faulted(&self) -> bool {
        self.slot
            .is_some_and(|(table, index)| table.slots[index].faulted.load(Ordering::Acquire))
    }
}

impl Drop for MappingRegistration {
    fn drop(&mut self) {
        if let Some((table, index)) = self.slot {
            table.slots[index].release();
        }
    }
}

/// The size of a memory page (4096 where it cannot be asked).
fn page_size() -> usize {
    #[cfg(unix)]
    {
        // SAFETY: sysconf only reads a system constant.
        let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if let Ok(size) = usize::try_from(size)
            && size.is_power_of_two()
        {
            return size;
        }
    }
    4096
}

#[cfg(target_os = "linux")]
mod sigbus_handler {
    //! The `SIGBUS` handler itself (Linux). See the parent module for why each step is
    //! async-signal-safe.

    use std::ffi::{c_int, c_void};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Once, OnceLock};

    use super::GUARDED_RANGES;

    static INSTALL: Once = Once::new();
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    /// The `SIGBUS` action installed before ours, to forward foreign faults to.
    static PREVIOUS_ACTION: OnceLock<libc::sigaction> = OnceLock::new();

    /// Installs the handler the first time it is called; whether it is installed.
    pub(super) fn install_once() -> bool {
        INSTALL.call_once(|| {
            if let Some(previous) = install() {
                // A SIGBUS outside every range between `install` and this line finds no previous
                // action and gets the default one (this thread is not reading any mapping).
                let _ = PREVIOUS_ACTION.set(previous);
                INSTALLED.store(true, Ordering::Release);
            }
        });
        INSTALLED.load(Ordering::Acquire)
    }

    /// Installs [`on_sigbus`] and returns the action it replaced; `None` if `sigaction` failed.
    fn install() -> Option<libc::sigaction> {
        // SAFETY: an all-zero `sigaction` is a valid value (no handler, empty mask, no flags);
        // every field that matters is set below.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) = on_sigbus;
        action.sa_sigaction = handler as libc::sighandler_t;
        // SA_ONSTACK: run on the thread's alternate stack if it has one, as Rust's own
        // stack-overflow handler (which we may forward to) expects.
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        // SAFETY: as above, all zeros is a valid `sigaction` to be overwritten.
        let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: `action.sa_mask` is a valid `sigset_t` owned by this frame.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        // SAFETY: both pointers are to valid `sigaction` values owned by this frame; the handler
        // is an `extern "C" fn` with the three-argument signature SA_SIGINFO requires.
        let result = unsafe { libc::sigaction(libc::SIGBUS, &action, &mut previous) };
        (result == 0).then_some(previous)
    }

    /// The handler. Replaces a registered range that faulted with zero pages and returns (the
    /// read is retried and sees zeros); forwards any other `SIGBUS`.
    extern "C" fn on_sigbus(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
        let saved_errno = errno();
        // SAFETY: with SA_SIGINFO the kernel passes a valid `siginfo_t`; for SIGBUS its address
        // field is the faulting address (null for a SIGBUS sent by a process).
        let address = unsafe { (*info).si_addr() } as usize;
        let handled =
            GUARDED_RANGES
                .slot_containing(address)
                .is_some_and(|(index, start, length)| {
                    let replaced = replace_with_zero_pages(start, length);
                    if replaced {
                        GUARDED_RANGES.mark_faulted(index);
                    }
                    replaced
                });
        if !handled {
            forward_to_previous_action(signal, info, context);
        }
        set_errno(saved_errno);
    }

    /// Maps anonymous zero pages over `start..start + length` (whole pages of a live map).
    /// Whether it worked.
    fn replace_with_zero_pages(start: usize, length: usize) -> bool {
        // SAFETY: the range is a registered map that is still mapped (see the parent module: the
        // faulting reader borrows its array). MAP_FIXED replaces exactly those pages with
        // private, read-only zero pages; memmap2's later `munmap` of the range unmaps them.
        let result = unsafe {
            libc::mmap(
                start as *mut c_void,
                length,
                libc::PROT_READ,
                libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        result != libc::MAP_FAILED
    }

    /// Gives a `SIGBUS` that is not ours to the action installed before ours: calls its handler,
    /// or, for the default action, restores it so the signal kills the process as it would have.
    fn forward_to_previous_action(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
        let Some(previous) = PREVIOUS_ACTION.get() else {
            restore_default_action(signal, info);
            return;
        };
        // SAFETY: `info` is the kernel's valid `siginfo_t` (see `on_sigbus`).
        let sent_by_a_process = unsafe { (*info).si_code } <= 0;
        match previous.sa_sigaction {
            libc::SIG_IGN if sent_by_a_process => {}
            // A fault cannot be ignored: the kernel would kill the process anyway.
            libc::SIG_DFL | libc::SIG_IGN => restore_default_action(signal, info),
            handler if previous.sa_flags & libc::SA_SIGINFO != 0 => {
                // SAFETY: with SA_SIGINFO the previous action's handler has this signature; it
                // was installed for SIGBUS and is called with the kernel's own arguments.
                let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                    unsafe { std::mem::transmute(handler) };
                handler(signal, info, context);
            }
            handler => {
                // SAFETY: without SA_SIGINFO the previous action's handler takes the signal
                // number only.
                let handler: extern "C" fn(c_int) = unsafe { std::mem::transmute(handler) };
                handler(signal);
            }
        }
    }

    /// Restores the default action for `signal`: a fault then repeats when the handler returns
    /// and kills the process; a signal sent by a process is raised again, delivered (and fatal)
    /// as soon as the handler returns.
    fn restore_default_action(signal: c_int, info: *mut libc::siginfo_t) {
        // SAFETY: `signal` is async-signal-safe; this handler was installed for `signal`, so it
        // is a valid signal number, and SIG_DFL a valid disposition for it.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
        // SAFETY: `info` is the kernel's valid `siginfo_t` (see `on_sigbus`).
        if unsafe { (*info).si_code } <= 0 {
            // SAFETY: raise is async-signal-safe; the signal stays pending until we return.
            unsafe { libc::raise(signal) };
        }
    }

    fn errno() -> c_int {
        // SAFETY: `__errno_location` returns this thread's errno, valid for the thread's life.
        unsafe { *libc::__errno_location() }
    }

    fn set_errno(value: c_int) {
        // SAFETY: as in `errno`.
        unsafe { *libc::__errno_location() = value };
    }
}

#[cfg(not(target_os = "linux"))]
mod sigbus_handler {
    //! No guard outside Linux: a truncated mapped file raises `SIGBUS` as before.

    /// Nothing is installed; every mapping is unguarded.
    pub(super) fn install_once() -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaked_table() -> &'static GuardedRangeTable {
        Box::leak(Box::new(GuardedRangeTable::new()))
    }

    #[test]
    fn a_full_table_leaves_further_mappings_unguarded_until_a_slot_is_freed() {
        let table = leaked_table();
        let page = page_size();
        let backing = vec![0u8; page];
        let mut registrations: Vec<MappingRegistration> = (0..GUARDED_RANGE_SLOTS)
            .map(|_| MappingRegistration::register_in(table, &backing))
            .collect();
        assert!(registrations.iter().all(MappingRegistration::is_guarded));
        let overflow = MappingRegistration::register_in(table, &backing);
        assert!(!overflow.is_guarded(), "a full table guards nothing more");
        assert!(!overflow.has_faulted());
        registrations.pop();
        let again = MappingRegistration::register_in(table, &backing);
        assert!(again.is_guarded(), "a dropped registration frees its slot");
    }

    #[test]
    fn a_fault_is_recorded_against_the_range_holding_the_address() {
        let table = leaked_table();
        let page = page_size();
        let start_of = |index: usize| 0x1000_0000 + index * 16 * page;
        for index in 0..3 {
            assert_eq!(table.claim(start_of(index), 3 * page), Some(index));
        }
        assert_eq!(table.slot_containing(start_of(0) - 1), None);
        assert_eq!(
            table.slot_containing(start_of(1) + 3 * page - 1),
            Some((1, start_of(1), 3 * page))
        );
        assert_eq!(table.slot_containing(start_of(1) + 3 * page), None);
        table.mark_faulted(1);
        let faulted: Vec<bool> = (0..3)
            .map(|index| table.slots[index].faulted.load(Ordering::Relaxed))
            .collect();
        assert_eq!(faulted, [false, true, false]);
        table.slots[1].release();
        assert_eq!(
            table.slot_containing(start_of(1)),
            None,
            "freed slots match nothing"
        );
        assert_eq!(table.claim(start_of(5), page), Some(1));
        assert!(
            !table.slots[1].faulted.load(Ordering::Relaxed),
            "a reclaimed slot starts unfaulted"
        );
    }

    #[test]
    fn registered_lengths_are_whole_pages() {
        let table = leaked_table();
        let backing = vec![0u8; 10];
        let registration = MappingRegistration::register_in(table, &backing);
        let (_, index) = registration.slot.unwrap();
        assert_eq!(table.slots[index].active_range().unwrap().1, page_size());
    }
}
