//! The `SIGBUS` guard: a mitigation, for a program that asks for it, against one way the mapping
//! contract gets broken by someone else.
//!
//! Every mapped file is opened under memmap2's contract: nobody modifies or truncates it while it
//! is mapped. When another process truncates it anyway, reading a page of the map that now lies
//! past the end of the file raises `SIGBUS`, whose default action kills the process. The guard
//! turns that death into a typed error, when it can:
//!
//! - Each map of an [`IdxArray`](crate::idx::IdxArray) or a CIFAR record file registers its address
//!   range in a process-wide table when it is made (cheap: a few atomic stores) and leaves it
//!   when it is dropped. Registering installs nothing.
//! - The program installs the `SIGBUS` handler itself, once, with [`install_sigbus_guard`] (the
//!   `reclaim` command does, first thing in `main`). A library mapping a file never touches the
//!   process's signal actions.
//! - The handler acts on one kind of `SIGBUS` only: a bad-address fault (`si_code` is
//!   `BUS_ADRERR`) at an address inside a registered range. It then replaces that whole range
//!   with anonymous zero pages (later reads see zeros and never fault again), records the fault
//!   against the range, and returns: the faulting instruction is retried and reads a zero. The
//!   map's owner reports [`crate::DatasetError::MappedFileChanged`] from
//!   `verify_mapping_intact` from then on.
//! - Every other `SIGBUS` (another `si_code`, such as a machine-check memory error
//!   `BUS_MCEERR_AR`/`BUS_MCEERR_AO`, a misaligned access `BUS_ADRALN`, `BUS_OBJERR`, or a
//!   signal sent by `kill`, `raise` or `sigqueue`; or a bad-address fault outside every
//!   registered range) goes to the action that was in place when the guard was installed,
//!   honouring its flags: a `SA_SIGINFO` handler gets the signal number, the `siginfo_t` and the
//!   context; a plain handler gets the signal number; its `sa_mask` is blocked while it runs and
//!   `SA_RESETHAND` resets `SIGBUS` to the default action before it runs (uninstalling the
//!   guard), as the kernel would have done. `SIG_DFL`: the default action is restored and the
//!   signal delivered again (a fault by retrying the instruction, any other `SIGBUS` by
//!   `raise`), so the process dies of it as it would have. `SIG_IGN`: a signal sent by a process
//!   (or another asynchronous one) is ignored; a fault cannot be ignored (the kernel would have
//!   forced the default action), so it gets the default action.
//!
//! It is a mitigation, not a guarantee. It does not catch:
//!
//! - anything while [`install_sigbus_guard`] has not been called, or after another `SIGBUS`
//!   handler has replaced it (installed later by other code, or reset by a forwarded
//!   `SA_RESETHAND` handler): a truncation then kills the process as before. In a Rust program
//!   the action the guard replaces is usually the standard library's own handler, which resets
//!   the action to the default when it is given a `SIGBUS` it does not recognize as a stack
//!   overflow: a forwarded `SIGBUS` (one sent with `kill -BUS`, say) therefore leaves the
//!   process alive but unguarded. [`is_sigbus_guard_installed`] asks the kernel which action is
//!   in place;
//! - a mapping made while all [`GUARDED_RANGE_SLOTS`] slots of the table are taken: it works but
//!   is unguarded;
//! - a truncation that nothing reads past, or that removes no whole page: bytes after the new
//!   end inside its last page read as zeros without a fault; nor any change of bytes in place
//!   (nothing faults);
//! - a fault the kernel refuses to let it repair (say, the process is out of memory-map entries
//!   for the zero pages): it is forwarded as if unguarded, and the process dies as before;
//! - anything on targets other than Linux: nothing is installed, nothing is guarded.
//!
//! And what it catches is not always a truncation: on Linux, a read error of the file's storage
//! during a page fault (a failing disk, a network file system gone away) also arrives as a
//! `BUS_ADRERR` fault in the range, indistinguishable from a truncation. It gets the same
//! treatment: the map reads zeros from then on, and the fault is reported as
//! `MappedFileChanged`. The zeros are never silent (the fault is recorded before the read
//! resumes), but only a caller that checks `verify_mapping_intact` (reclaim-loader does, once
//! per batch) learns of them, and what it read in between was zeros, to be discarded.
//!
//! # Safety
//!
//! What the handler relies on, which the rest of the crate upholds:
//!
//! - A registered range is a live read-only map, registered after it is mapped and removed from
//!   the table before it is unmapped (field order in `FileBytes`'s `Storage::Mapped`), so two live slots
//!   never hold overlapping ranges. A bad-address fault inside a registered range comes from code
//!   reading the map's bytes, which borrows its owner, so the map (and its registration) cannot
//!   be dropped while the handler runs: the range it replaces with zero pages is still that map,
//!   and memmap2's later `munmap` of the range unmaps the zero pages.
//! - The action the handler forwards to (`PreviousAction`) is written only by
//!   `install_sigbus_guard`, under its lock, and only while the handler has never been installed,
//!   so it never changes while the handler can read it.
//!
//! # Async-signal-safety
//!
//! The handler may interrupt any code on any thread, including an allocator or a lock holder, so
//! it allocates nothing, takes no lock and touches no thread-local state but `errno`. It reads the
//! table through atomics, and the previous action once an atomic flag says it is whole (it never
//! changes after that); it calls only `mmap`, `sigaction`, `pthread_sigmask` and `raise` (system calls behind
//! thin libc wrappers: `sigaction`, `pthread_sigmask` and `raise` are on POSIX's list of
//! async-signal-safe functions, and glibc's `mmap` is the system call plus `errno`), and it saves
//! and restores `errno`, which those calls may set, so the interrupted code never sees it change.
//!
//! A slot is a small sequence lock: its `state` word holds a generation and a status. Claiming a
//! slot moves it to "writing" (a new generation), writes the range, then publishes "active";
//! freeing it moves it to "free". The handler reads `state`, the range, then `state` again, and
//! uses the range only if both reads are the same "active" word, so it never acts on a range
//! half written by a registration on another thread.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};

use crate::error::Result;

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
/// out of the table (table full, or not Linux).
pub(crate) struct MappingRegistration {
    slot: Option<(&'static GuardedRangeTable, usize)>,
}

impl MappingRegistration {
    /// Registers the mapped bytes `mapped` (the whole map, from its page-aligned start) in the
    /// process's table. Installs nothing: the range is guarded while the program has the guard
    /// installed ([`install_sigbus_guard`]), whether it installed it before or after this call.
    pub(crate) fn register(mapped: &[u8]) -> Self {
        if !cfg!(target_os = "linux") {
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

    /// Whether the mapping is in the table. It is guarded (a truncation of its file caught) only
    /// while [`is_sigbus_guard_installed`] also holds.
    #[cfg(test)]
    pub(crate) fn is_registered(&self) -> bool {
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

/// What [`install_sigbus_guard`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SigbusGuardInstallation {
    /// This call installed the guard's `SIGBUS` handler; the action it replaced gets every
    /// `SIGBUS` the guard does not handle.
    Installed,
    /// The guard's handler was already the process's `SIGBUS` action; nothing was changed.
    AlreadyInstalled,
    /// This target has no guard (every target but Linux): nothing was installed, and a
    /// truncated mapped file raises `SIGBUS` as it would without Reclaim.
    Unsupported,
}

/// Installs the process-wide `SIGBUS` guard for memory-mapped dataset files: a mitigation for
/// when the mapping contract (nobody truncates a file while it is mapped, see
/// [`IdxArray::open_mapped`](crate::idx::IdxArray::open_mapped)) is broken by someone else, not a
/// guarantee.
///
/// Once it is installed, a read past the end of a mapped file that was truncated under its map
/// (a `SIGBUS` with `si_code` `BUS_ADRERR` at an address inside a map this crate made) no longer
/// kills the process: that map reads as zeros from then on, and its owner's
/// `verify_mapping_intact` ([`IdxArray`](crate::idx::IdxArray::verify_mapping_intact),
/// [`ImageDataset`](crate::ImageDataset::verify_mapping_intact),
/// [`CifarDataset`](crate::CifarDataset::verify_mapping_intact)) returns
/// [`DatasetError::MappedFileChanged`](crate::DatasetError::MappedFileChanged). Maps made before
/// the call are guarded too. Every other `SIGBUS` (another `si_code`, such as a hardware memory
/// error, or a signal sent by a process; or a fault outside every map) is passed to the action
/// that was in place when the guard was installed, honouring its flags (`SA_SIGINFO` or a plain
/// handler, its `sa_mask`, `SA_RESETHAND`; `SIG_DFL` is restored and the signal delivered again;
/// `SIG_IGN` ignores what can be ignored, while a fault gets the default action, as the kernel
/// would give it).
///
/// Not caught, even when installed: a truncation nothing reads past or that removes no whole
/// page, a change of bytes in place, a map made while the guard's table of 64 ranges is full.
/// On Linux a read error of the file's storage during a page fault arrives as the same
/// `BUS_ADRERR` fault and is reported as `MappedFileChanged` too. The guard's module
/// documentation (in the source, `mapping_guard.rs`) has the details.
///
/// Only a program should call this (a library has no business changing a process's signal
/// actions), once, early in `main`: after any `SIGBUS` handler it wants the guard to forward to
/// is installed, and before other threads start (a `SIGBUS` action that another thread sets
/// during this call is replaced without being recorded for forwarding). The `reclaim` command
/// does.
///
/// Idempotent while the guard is the process's `SIGBUS` action:
/// [`SigbusGuardInstallation::AlreadyInstalled`]. A `SIGBUS` handler installed later by other
/// code replaces the guard silently (the kernel keeps one action per signal), and so does
/// forwarding a `SIGBUS` to a previous handler that has `SA_RESETHAND` (the action is reset to
/// the default, as the kernel would have done); from then on a truncation kills the process as
/// it would without the guard (unless the new handler deals with it),
/// [`is_sigbus_guard_installed`] returns `false`, and this function does not install the guard
/// over it again but returns
/// [`DatasetError::SigbusGuardReplaced`](crate::DatasetError::SigbusGuardReplaced): that handler
/// may forward to the guard, and the guard forwarding back to it would loop. Restoring the
/// guard's action (the one that replaced it, saved by whoever replaced it) makes it installed
/// again.
///
/// On targets other than Linux it does nothing and returns
/// [`SigbusGuardInstallation::Unsupported`].
///
/// # Errors
///
/// [`DatasetError::SigbusGuardInstallFailed`](crate::DatasetError::SigbusGuardInstallFailed) if
/// `sigaction` fails (nothing was changed; the call may be retried);
/// [`DatasetError::SigbusGuardReplaced`](crate::DatasetError::SigbusGuardReplaced) as above.
pub fn install_sigbus_guard() -> Result<SigbusGuardInstallation> {
    sigbus_handler::install()
}

/// Whether the guard installed by [`install_sigbus_guard`] is the process's `SIGBUS` action right
/// now (asked of the kernel with `sigaction`, so a handler installed since by other code shows
/// as `false`). Always `false` on targets other than Linux.
pub fn is_sigbus_guard_installed() -> bool {
    sigbus_handler::is_installed()
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
    //! The `SIGBUS` handler itself (Linux). See the parent module for what it relies on
    //! (`# Safety`) and why each step is async-signal-safe.

    use std::cell::UnsafeCell;
    use std::ffi::{c_int, c_void};
    use std::mem::MaybeUninit;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Mutex, MutexGuard, PoisonError};

    use super::{GUARDED_RANGES, SigbusGuardInstallation};
    use crate::error::{DatasetError, Result};

    /// Held by [`install`] throughout: one installation at a time.
    static INSTALLATION: Mutex<()> = Mutex::new(());
    /// Whether [`install`] has ever installed the handler (set under [`INSTALLATION`]).
    static EVER_INSTALLED: AtomicBool = AtomicBool::new(false);
    /// The `SIGBUS` action in place when the handler was installed, to forward to.
    static PREVIOUS_ACTION: PreviousAction = PreviousAction::new();

    /// The action the handler forwards to. Written only by [`PreviousAction::set`], which holds
    /// [`INSTALLATION`] and writes only while the handler has never been installed (so while no
    /// handler of ours can run, nor any read overlap the write); read only by the handler, after
    /// `ready` (release on write, acquire on read) says the value is whole.
    struct PreviousAction {
        action: UnsafeCell<MaybeUninit<libc::sigaction>>,
        ready: AtomicBool,
    }

    // SAFETY: every access goes through `set` and `get`, whose write and reads never overlap
    // (see the type's documentation); `libc::sigaction` is plain data.
    unsafe impl Sync for PreviousAction {}

    impl PreviousAction {
        const fn new() -> Self {
            PreviousAction {
                action: UnsafeCell::new(MaybeUninit::uninit()),
                ready: AtomicBool::new(false),
            }
        }

        /// Records `action`, unless the handler has already been installed (then it may be
        /// reading, and nothing is written): whether it was recorded. `_installation` is the
        /// proof that [`INSTALLATION`] is held.
        fn set(&self, _installation: &MutexGuard<'_, ()>, action: libc::sigaction) -> bool {
            if EVER_INSTALLED.load(Ordering::Acquire) {
                return false;
            }
            // SAFETY: the lock is held (the only writer) and the handler, the only reader, has
            // never been installed, so nothing reads or writes the cell meanwhile.
            unsafe { (*self.action.get()).write(action) };
            self.ready.store(true, Ordering::Release);
            true
        }

        /// The recorded action, once there is one. Async-signal-safe: one atomic load.
        fn get(&self) -> Option<&libc::sigaction> {
            if !self.ready.load(Ordering::Acquire) {
                return None;
            }
            // SAFETY: `ready` is set only after a whole value was written, and the value no
            // longer changes once the handler (the caller) can run.
            Some(unsafe { (*self.action.get()).assume_init_ref() })
        }
    }

    /// See [`crate::install_sigbus_guard`].
    pub(super) fn install() -> Result<SigbusGuardInstallation> {
        let installation = INSTALLATION.lock().unwrap_or_else(PoisonError::into_inner);
        let current =
            current_action().map_err(|source| DatasetError::SigbusGuardInstallFailed { source })?;
        if is_ours(&current) {
            return Ok(SigbusGuardInstallation::AlreadyInstalled);
        }
        // Recorded before the handler is installed, so it never runs without it. Refused once
        // the handler has been installed: another handler has replaced it since.
        if !PREVIOUS_ACTION.set(&installation, current) {
            return Err(DatasetError::SigbusGuardReplaced);
        }
        let action = our_action(current.sa_flags & libc::SA_RESTART);
        // SAFETY: `action` is a valid `sigaction` owned by this frame, whose handler is an
        // `extern "C" fn` with the three-argument signature SA_SIGINFO requires; the old action
        // is not asked for (it is `current`, read above under the lock).
        let result = unsafe { libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) };
        if result != 0 {
            return Err(DatasetError::SigbusGuardInstallFailed {
                source: std::io::Error::last_os_error(),
            });
        }
        EVER_INSTALLED.store(true, Ordering::Release);
        Ok(SigbusGuardInstallation::Installed)
    }

    /// See [`crate::is_sigbus_guard_installed`].
    pub(super) fn is_installed() -> bool {
        current_action().is_ok_and(|action| is_ours(&action))
    }

    /// The process's `SIGBUS` action now.
    fn current_action() -> std::io::Result<libc::sigaction> {
        // SAFETY: all zeros is a valid `sigaction`, overwritten below.
        let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: no new action is given; `current` is a valid out pointer owned by this frame.
        let result = unsafe { libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut current) };
        if result == 0 {
            Ok(current)
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// Whether `action` is this module's handler.
    fn is_ours(action: &libc::sigaction) -> bool {
        let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) = on_sigbus;
        action.sa_flags & libc::SA_SIGINFO != 0
            && action.sa_sigaction == handler as libc::sighandler_t
    }

    /// [`on_sigbus`] as a `sigaction`, with `kept_flags` of the action it replaces
    /// (`SA_RESTART`: whether system calls interrupted by a forwarded signal are restarted).
    fn our_action(kept_flags: c_int) -> libc::sigaction {
        // SAFETY: an all-zero `sigaction` is a valid value (no handler, empty mask, no flags);
        // every field that matters is set below.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) = on_sigbus;
        action.sa_sigaction = handler as libc::sighandler_t;
        // SA_ONSTACK: run on the thread's alternate stack if it has one, as Rust's own
        // stack-overflow handler (which we may forward to) expects.
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | kept_flags;
        // SAFETY: `action.sa_mask` is a valid `sigset_t` owned by this frame.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        action
    }

    /// The handler. A bad-address fault inside a registered range: replaces the range with zero
    /// pages and returns (the read is retried and sees zeros). Any other `SIGBUS`: forwarded.
    extern "C" fn on_sigbus(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
        let saved_errno = errno();
        // SAFETY: with SA_SIGINFO the kernel passes a valid `siginfo_t`.
        let code = unsafe { (*info).si_code };
        let handled = code == libc::BUS_ADRERR && {
            // SAFETY: as above; for a SIGBUS with `si_code` BUS_ADRERR the fault fields are the
            // ones filled, and `si_addr` is the faulting address.
            let address = unsafe { (*info).si_addr() } as usize;
            GUARDED_RANGES
                .slot_containing(address)
                .is_some_and(|(index, start, length)| {
                    let replaced = replace_with_zero_pages(start, length);
                    if replaced {
                        GUARDED_RANGES.mark_faulted(index);
                    }
                    replaced
                })
        };
        if !handled {
            forward_to_previous_action(signal, info, context, code);
        }
        set_errno(saved_errno);
    }

    /// Maps anonymous zero pages over `start..start + length` (whole pages of a live map).
    /// Whether it worked.
    fn replace_with_zero_pages(start: usize, length: usize) -> bool {
        // SAFETY: the range is a registered map that is still mapped (see the parent module's
        // `# Safety`: the faulting reader borrows its owner). MAP_FIXED replaces exactly those
        // pages with private, read-only zero pages; memmap2's later `munmap` of the range
        // unmaps them.
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

    /// Whether a `SIGBUS` of this `si_code` is a synchronous fault: the kernel raised it for the
    /// instruction that was running, which runs again (and faults again) when the handler
    /// returns. Anything else (sent by a process, or the asynchronous `BUS_MCEERR_AO`) is
    /// delivered once.
    fn is_synchronous_fault(code: c_int) -> bool {
        matches!(
            code,
            libc::BUS_ADRALN | libc::BUS_ADRERR | libc::BUS_OBJERR | libc::BUS_MCEERR_AR
        )
    }

    /// Gives a `SIGBUS` that is not the guard's to the action in place before it, honouring its
    /// flags (see the parent module).
    fn forward_to_previous_action(
        signal: c_int,
        info: *mut libc::siginfo_t,
        context: *mut c_void,
        code: c_int,
    ) {
        let synchronous_fault = is_synchronous_fault(code);
        // `None` cannot happen (the action is recorded before the handler is installed); the
        // default action is the safe answer if it did.
        let Some(previous) = PREVIOUS_ACTION.get() else {
            take_default_action(signal, synchronous_fault);
            return;
        };
        match previous.sa_sigaction {
            libc::SIG_DFL => take_default_action(signal, synchronous_fault),
            libc::SIG_IGN if !synchronous_fault => {}
            // The kernel does not let a synchronous fault be ignored: it forces the default
            // action (and the instruction would fault forever if it were ignored).
            libc::SIG_IGN => take_default_action(signal, true),
            handler => call_previous_handler(previous, handler, signal, info, context),
        }
    }

    /// Calls the previous action's handler as the kernel would have: `SA_RESETHAND` first resets
    /// the action to the default, and its `sa_mask` is blocked while it runs. (`SA_NODEFER` is
    /// not replayed: `SIGBUS` stays blocked while it runs.)
    fn call_previous_handler(
        previous: &libc::sigaction,
        handler: libc::sighandler_t,
        signal: c_int,
        info: *mut libc::siginfo_t,
        context: *mut c_void,
    ) {
        if previous.sa_flags & libc::SA_RESETHAND != 0 {
            set_default_action(signal);
        }
        // SAFETY: all zeros is a valid `sigset_t`, overwritten by `pthread_sigmask` below.
        let mut interrupted_mask: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: async-signal-safe; both pointers are to valid `sigset_t`s (the previous
        // action's mask, as `sigaction` returned it, and one owned by this frame).
        let blocked = unsafe {
            libc::pthread_sigmask(libc::SIG_BLOCK, &previous.sa_mask, &mut interrupted_mask)
        } == 0;
        if previous.sa_flags & libc::SA_SIGINFO != 0 {
            // SAFETY: with SA_SIGINFO the previous action's handler has this signature; it was
            // installed for SIGBUS and is called with the kernel's own arguments.
            let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                unsafe { std::mem::transmute(handler) };
            handler(signal, info, context);
        } else {
            // SAFETY: without SA_SIGINFO the previous action's handler takes the signal number
            // only.
            let handler: extern "C" fn(c_int) = unsafe { std::mem::transmute(handler) };
            handler(signal);
        }
        if blocked {
            // SAFETY: async-signal-safe; `interrupted_mask` is the mask `pthread_sigmask`
            // returned above.
            unsafe {
                libc::pthread_sigmask(libc::SIG_SETMASK, &interrupted_mask, std::ptr::null_mut())
            };
        }
    }

    /// Restores the default action and delivers the signal again under it: a synchronous fault
    /// by returning (the instruction runs again and faults), anything else by `raise` (the
    /// signal, blocked while the handler runs, is delivered as soon as it returns). Either way
    /// the process dies of `SIGBUS` as it would have without the guard.
    fn take_default_action(signal: c_int, synchronous_fault: bool) {
        set_default_action(signal);
        if !synchronous_fault {
            // SAFETY: raise is async-signal-safe; `signal` is the handler's valid signal number.
            unsafe { libc::raise(signal) };
        }
    }

    /// Sets `signal`'s action to the default.
    fn set_default_action(signal: c_int) {
        // SAFETY: an all-zero `sigaction` is SIG_DFL with no flags (and an empty mask on Linux).
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = libc::SIG_DFL;
        // SAFETY: async-signal-safe; `action.sa_mask` is a valid `sigset_t` owned by this frame.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        // SAFETY: async-signal-safe; `action` is a valid `sigaction` and the old one is not
        // asked for; this handler was installed for `signal`, so it is a valid signal number.
        unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) };
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
    //! No guard outside Linux: a truncated mapped file raises `SIGBUS` as it would without it.

    use super::SigbusGuardInstallation;
    use crate::error::Result;

    /// Nothing to install.
    pub(super) fn install() -> Result<SigbusGuardInstallation> {
        Ok(SigbusGuardInstallation::Unsupported)
    }

    /// Never installed.
    pub(super) fn is_installed() -> bool {
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
        assert!(registrations.iter().all(MappingRegistration::is_registered));
        let overflow = MappingRegistration::register_in(table, &backing);
        assert!(
            !overflow.is_registered(),
            "a full table registers nothing more"
        );
        assert!(!overflow.has_faulted());
        registrations.pop();
        let again = MappingRegistration::register_in(table, &backing);
        assert!(
            again.is_registered(),
            "a dropped registration frees its slot"
        );
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
