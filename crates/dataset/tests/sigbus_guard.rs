//! The `SIGBUS` guard as a program sees it: installed only when asked, handling only bad-address
//! faults inside mapped files, forwarding every other `SIGBUS` to the action it replaced.
//!
//! Signal actions are process-wide, and the guard is installed at most once per process, so each
//! scenario runs in a child process of its own (this binary again, told which scenario by
//! [`SCENARIO_VARIABLE`]) that first sets the `SIGBUS` action it needs; the parent checks how
//! each child ended and what it printed. No harness (`harness = false` in Cargo.toml): `main`
//! runs the scenarios in turn and panics at the first failure.
//!
//! Signals other than real truncation faults are produced two ways: `raise` (`si_code`
//! `SI_TKILL`), and `rt_tgsigqueueinfo` to the calling thread, which lets a process send itself a
//! `SIGBUS` with any `si_code` and `si_addr` (the kernel allows a non-negative `si_code` only to
//! oneself), so that a `BUS_OBJERR` or a machine-check code at an address inside a guarded map
//! can be tested without the hardware fault.

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    // No guard outside Linux: `install_sigbus_guard` does nothing.
    assert_eq!(
        reclaim_dataset::install_sigbus_guard().unwrap(),
        reclaim_dataset::SigbusGuardInstallation::Unsupported
    );
    assert!(!reclaim_dataset::is_sigbus_guard_installed());
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::{c_int, c_void};
    use std::os::unix::process::ExitStatusExt;
    use std::path::Path;
    use std::process::{Command, ExitStatus};
    use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

    use reclaim_dataset::{
        DatasetError, SigbusGuardInstallation,
        idx::{IdxArray, write_idx},
        install_sigbus_guard, is_sigbus_guard_installed,
    };

    /// Names the scenario a child process runs.
    const SCENARIO_VARIABLE: &str = "RECLAIM_SIGBUS_GUARD_SCENARIO";
    const FILL_BYTE: u8 = 7;
    /// The length of a rank-1 IDX header.
    const RANK_ONE_HEADER_LENGTH: u64 = 8;

    /// How a child is expected to end.
    #[derive(Debug, PartialEq, Eq)]
    enum Ending {
        /// `exit(0)` after every check passed.
        Success,
        /// Killed by `SIGBUS`.
        KilledBySigbus,
    }

    /// Every scenario: its name, how its process ends, and a line it prints just before the
    /// step that ends it (so a death from an earlier step does not pass).
    const SCENARIOS: &[(&str, Ending, &str)] = &[
        (
            "mapping_alone_installs_nothing",
            Ending::KilledBySigbus,
            "reading past the end without the guard",
        ),
        (
            "siginfo_handler_gets_every_other_sigbus",
            Ending::Success,
            "done",
        ),
        (
            "plain_handler_gets_its_signal_with_its_mask",
            Ending::Success,
            "done",
        ),
        (
            "ignored_sigbus_stays_ignored_but_a_fault_is_not",
            Ending::KilledBySigbus,
            "the raised SIGBUS was ignored; now a fault outside every map",
        ),
        (
            "default_action_kills_a_raised_sigbus",
            Ending::KilledBySigbus,
            "raising SIGBUS",
        ),
        (
            "reset_hand_handler_resets_the_action",
            Ending::Success,
            "done",
        ),
        (
            "a_later_handler_replaces_the_guard",
            Ending::Success,
            "done",
        ),
    ];

    pub(crate) fn main() {
        if let Ok(scenario) = std::env::var(SCENARIO_VARIABLE) {
            run_scenario(&scenario);
            return;
        }
        let this_binary = std::env::current_exe().unwrap();
        for (scenario, expected_ending, last_line) in SCENARIOS {
            let output = Command::new(&this_binary)
                .env(SCENARIO_VARIABLE, scenario)
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout);
            let stderr = String::from_utf8_lossy(&output.stderr);
            let ending = ending_of(output.status);
            assert_eq!(
                ending.as_ref(),
                Some(expected_ending),
                "scenario {scenario}: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
                output.status
            );
            assert!(
                stdout.lines().last() == Some(*last_line),
                "scenario {scenario} did not reach {last_line:?}\nstdout:\n{stdout}\nstderr:\n{stderr}"
            );
            println!("sigbus_guard: {scenario} ... ok");
        }
    }

    fn ending_of(status: ExitStatus) -> Option<Ending> {
        match (status.code(), status.signal()) {
            (Some(0), _) => Some(Ending::Success),
            (_, Some(libc::SIGBUS)) => Some(Ending::KilledBySigbus),
            _ => None,
        }
    }

    fn run_scenario(scenario: &str) {
        no_core_dumps();
        // A watchdog: a fault retried forever (the bug an ignored fault would cause) ends the
        // child with SIGALRM, which the parent reports as an unexpected ending.
        // SAFETY: alarm only arms this process's timer.
        unsafe { libc::alarm(60) };
        match scenario {
            "mapping_alone_installs_nothing" => mapping_alone_installs_nothing(),
            "siginfo_handler_gets_every_other_sigbus" => siginfo_handler_gets_every_other_sigbus(),
            "plain_handler_gets_its_signal_with_its_mask" => {
                plain_handler_gets_its_signal_with_its_mask()
            }
            "ignored_sigbus_stays_ignored_but_a_fault_is_not" => {
                ignored_sigbus_stays_ignored_but_a_fault_is_not()
            }
            "default_action_kills_a_raised_sigbus" => default_action_kills_a_raised_sigbus(),
            "reset_hand_handler_resets_the_action" => reset_hand_handler_resets_the_action(),
            "a_later_handler_replaces_the_guard" => a_later_handler_replaces_the_guard(),
            other => panic!("unknown scenario {other}"),
        }
    }

    // --- Scenarios (each in its own process) ---

    /// Mapping and reading a file installs nothing: the action is unchanged, and a read past the
    /// end of the truncated file kills the process as it would without Reclaim.
    fn mapping_alone_installs_nothing() {
        set_action(libc::SIG_DFL, 0);
        assert!(!is_sigbus_guard_installed());
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("data");
        write_multi_page_file(&path, 3);
        let array = map(&path);
        assert_eq!(
            sum_of_every_byte(array.data_bytes()),
            array.data_bytes().len() as u64 * u64::from(FILL_BYTE)
        );
        assert!(!is_sigbus_guard_installed(), "mapping installed the guard");
        assert_eq!(current_action().sa_sigaction, libc::SIG_DFL);
        truncate(&path, RANK_ONE_HEADER_LENGTH);
        say("reading past the end without the guard");
        let sum = sum_of_every_byte(array.data_bytes());
        say(&format!("survived the read (sum {sum})"));
    }

    /// With an `SA_SIGINFO` handler in place before the guard: every `SIGBUS` but a bad-address
    /// fault inside a mapped file reaches it, with its own `siginfo_t`; those faults do not,
    /// and are reported as `MappedFileChanged`.
    fn siginfo_handler_gets_every_other_sigbus() {
        set_action(
            recording_siginfo_handler as *const () as libc::sighandler_t,
            libc::SA_SIGINFO,
        );
        assert!(!is_sigbus_guard_installed());
        assert_eq!(
            install_sigbus_guard().unwrap(),
            SigbusGuardInstallation::Installed
        );
        assert!(is_sigbus_guard_installed());
        assert_eq!(
            install_sigbus_guard().unwrap(),
            SigbusGuardInstallation::AlreadyInstalled,
            "installing is idempotent"
        );

        // Sent by the process itself.
        // SAFETY: raise sends SIGBUS to this thread; the handlers above are in place.
        assert_eq!(unsafe { libc::raise(libc::SIGBUS) }, 0);
        assert_eq!(
            CALLS.load(Ordering::SeqCst),
            1,
            "a raised SIGBUS is forwarded"
        );
        assert_eq!(LAST_SIGNAL.load(Ordering::SeqCst), libc::SIGBUS);
        assert_eq!(LAST_CODE.load(Ordering::SeqCst), libc::SI_TKILL);

        let folder = tempfile::tempdir().unwrap();
        let guarded_path = folder.path().join("guarded");
        write_multi_page_file(&guarded_path, 2);
        let guarded = map(&guarded_path);
        let inside = guarded.data_bytes()[page_size()..].as_ptr() as *mut c_void;

        // Other codes at an address inside the guarded map: not the guard's.
        for code in [
            libc::BUS_OBJERR,
            libc::BUS_ADRALN,
            libc::BUS_MCEERR_AR,
            libc::BUS_MCEERR_AO,
        ] {
            let calls = CALLS.load(Ordering::SeqCst);
            send_sigbus_to_this_thread(code, inside);
            assert_eq!(
                CALLS.load(Ordering::SeqCst),
                calls + 1,
                "si_code {code} is forwarded"
            );
            assert_eq!(LAST_CODE.load(Ordering::SeqCst), code);
            assert_eq!(LAST_ADDRESS.load(Ordering::SeqCst), inside as usize);
        }
        guarded.verify_mapping_intact().unwrap();
        assert_eq!(
            sum_of_every_byte(guarded.data_bytes()),
            guarded.data_bytes().len() as u64 * u64::from(FILL_BYTE),
            "the map was left alone"
        );

        // A bad-address fault outside every map: not the guard's either.
        let outside = std::ptr::null_mut::<c_void>().wrapping_add(page_size());
        let calls = CALLS.load(Ordering::SeqCst);
        send_sigbus_to_this_thread(libc::BUS_ADRERR, outside);
        assert_eq!(CALLS.load(Ordering::SeqCst), calls + 1);
        assert_eq!(LAST_ADDRESS.load(Ordering::SeqCst), outside as usize);
        guarded.verify_mapping_intact().unwrap();

        // A bad-address fault inside the map: the guard's, never forwarded.
        let calls = CALLS.load(Ordering::SeqCst);
        send_sigbus_to_this_thread(libc::BUS_ADRERR, inside);
        assert_eq!(CALLS.load(Ordering::SeqCst), calls, "the guard handled it");
        expect_mapped_file_changed(&guarded, &guarded_path);
        assert_eq!(sum_of_every_byte(guarded.data_bytes()), 0);

        // And the real thing: a file truncated under its map.
        let truncated_path = folder.path().join("truncated");
        write_multi_page_file(&truncated_path, 3);
        let truncated = map(&truncated_path);
        truncated.verify_mapping_intact().unwrap();
        truncate(&truncated_path, RANK_ONE_HEADER_LENGTH);
        assert_eq!(sum_of_every_byte(truncated.data_bytes()), 0);
        assert_eq!(CALLS.load(Ordering::SeqCst), calls, "never forwarded");
        expect_mapped_file_changed(&truncated, &truncated_path);
        assert!(is_sigbus_guard_installed());
        say("done");
    }

    /// A plain handler (no `SA_SIGINFO`) gets the signal number, with its `sa_mask` blocked
    /// while it runs, and only then.
    fn plain_handler_gets_its_signal_with_its_mask() {
        set_action_with_mask(
            recording_plain_handler as *const () as libc::sighandler_t,
            0,
            &[libc::SIGUSR1],
        );
        assert_eq!(
            install_sigbus_guard().unwrap(),
            SigbusGuardInstallation::Installed
        );
        assert!(!is_blocked(libc::SIGUSR1));
        // SAFETY: raise sends SIGBUS to this thread; the handlers above are in place.
        assert_eq!(unsafe { libc::raise(libc::SIGBUS) }, 0);
        assert_eq!(CALLS.load(Ordering::SeqCst), 1, "the plain handler ran");
        assert_eq!(LAST_SIGNAL.load(Ordering::SeqCst), libc::SIGBUS);
        assert!(
            USR1_BLOCKED_IN_HANDLER.load(Ordering::SeqCst),
            "its sa_mask was blocked while it ran"
        );
        assert!(!is_blocked(libc::SIGUSR1), "and unblocked after");
        assert!(is_sigbus_guard_installed());
        say("done");
    }

    /// `SIG_IGN` before the guard: a raised `SIGBUS` is ignored (and the guard stays); a fault
    /// outside every map cannot be ignored, and kills the process (rather than being retried
    /// forever).
    fn ignored_sigbus_stays_ignored_but_a_fault_is_not() {
        set_action(libc::SIG_IGN, 0);
        assert_eq!(
            install_sigbus_guard().unwrap(),
            SigbusGuardInstallation::Installed
        );
        // SAFETY: raise sends SIGBUS to this thread; the guard is in place.
        assert_eq!(unsafe { libc::raise(libc::SIGBUS) }, 0);
        assert!(is_sigbus_guard_installed());

        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("foreign");
        write_multi_page_file(&path, 3);
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: deliberately broken: the file is truncated while mapped, and reading the map
        // is expected to kill this process. The map is not registered with the guard.
        let foreign = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        truncate(&path, 0);
        say("the raised SIGBUS was ignored; now a fault outside every map");
        let sum = sum_of_every_byte(&foreign);
        say(&format!("survived the fault (sum {sum})"));
    }

    /// `SIG_DFL` before the guard: a raised `SIGBUS` is delivered under the default action and
    /// kills the process.
    fn default_action_kills_a_raised_sigbus() {
        set_action(libc::SIG_DFL, 0);
        assert_eq!(
            install_sigbus_guard().unwrap(),
            SigbusGuardInstallation::Installed
        );
        say("raising SIGBUS");
        // SAFETY: raise sends SIGBUS to this thread; the guard is in place.
        unsafe { libc::raise(libc::SIGBUS) };
        say("survived the raised SIGBUS");
    }

    /// An `SA_RESETHAND` handler before the guard: the action is reset to the default before it
    /// runs, as the kernel would have done, which uninstalls the guard.
    fn reset_hand_handler_resets_the_action() {
        set_action(
            recording_siginfo_handler as *const () as libc::sighandler_t,
            libc::SA_SIGINFO | libc::SA_RESETHAND,
        );
        assert_eq!(
            install_sigbus_guard().unwrap(),
            SigbusGuardInstallation::Installed
        );
        // SAFETY: raise sends SIGBUS to this thread; the handlers above are in place.
        assert_eq!(unsafe { libc::raise(libc::SIGBUS) }, 0);
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
        assert_eq!(
            RESET_BEFORE_HANDLER.load(Ordering::SeqCst),
            1,
            "SIGBUS's action was the default while the handler ran"
        );
        assert_eq!(current_action().sa_sigaction, libc::SIG_DFL);
        assert!(!is_sigbus_guard_installed());
        say("done");
    }

    /// A handler installed after the guard replaces it: the guard says so, is not installed
    /// over it, and is installed again once its action is restored.
    fn a_later_handler_replaces_the_guard() {
        set_action(libc::SIG_DFL, 0);
        assert_eq!(
            install_sigbus_guard().unwrap(),
            SigbusGuardInstallation::Installed
        );
        let guard_action = set_action(
            recording_siginfo_handler as *const () as libc::sighandler_t,
            libc::SA_SIGINFO,
        );
        assert!(!is_sigbus_guard_installed(), "replaced");
        match install_sigbus_guard() {
            Err(DatasetError::SigbusGuardReplaced) => {}
            other => panic!("expected SigbusGuardReplaced, got {other:?}"),
        }
        assert_eq!(
            current_action().sa_sigaction,
            recording_siginfo_handler as *const () as libc::sighandler_t,
            "the later handler stays"
        );
        // SAFETY: raise sends SIGBUS to this thread; the recording handler is in place.
        assert_eq!(unsafe { libc::raise(libc::SIGBUS) }, 0);
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);

        restore_action(&guard_action);
        assert!(is_sigbus_guard_installed(), "restored");
        assert_eq!(
            install_sigbus_guard().unwrap(),
            SigbusGuardInstallation::AlreadyInstalled
        );
        say("done");
    }

    // --- Test handlers: atomics only (async-signal-safe) ---

    static CALLS: AtomicUsize = AtomicUsize::new(0);
    static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);
    static LAST_CODE: AtomicI32 = AtomicI32::new(0);
    static LAST_ADDRESS: AtomicUsize = AtomicUsize::new(0);
    static USR1_BLOCKED_IN_HANDLER: AtomicBool = AtomicBool::new(false);
    /// How many calls found SIGBUS's action already reset to the default.
    static RESET_BEFORE_HANDLER: AtomicUsize = AtomicUsize::new(0);

    extern "C" fn recording_siginfo_handler(
        signal: c_int,
        info: *mut libc::siginfo_t,
        _context: *mut c_void,
    ) {
        // SAFETY: the guard forwards the kernel's valid `siginfo_t`.
        let code = unsafe { (*info).si_code };
        if code > 0 {
            // SAFETY: as above; a SIGBUS with a positive code carries the fault fields.
            let address = unsafe { (*info).si_addr() } as usize;
            LAST_ADDRESS.store(address, Ordering::SeqCst);
        }
        LAST_SIGNAL.store(signal, Ordering::SeqCst);
        LAST_CODE.store(code, Ordering::SeqCst);
        if current_action().sa_sigaction == libc::SIG_DFL {
            RESET_BEFORE_HANDLER.fetch_add(1, Ordering::SeqCst);
        }
        CALLS.fetch_add(1, Ordering::SeqCst);
    }

    extern "C" fn recording_plain_handler(signal: c_int) {
        LAST_SIGNAL.store(signal, Ordering::SeqCst);
        USR1_BLOCKED_IN_HANDLER.store(is_blocked(libc::SIGUSR1), Ordering::SeqCst);
        CALLS.fetch_add(1, Ordering::SeqCst);
    }

    // --- Signal helpers ---

    /// Sets SIGBUS's action (handler or SIG_DFL/SIG_IGN, flags, empty mask); returns the old one.
    fn set_action(handler: libc::sighandler_t, flags: c_int) -> libc::sigaction {
        set_action_with_mask(handler, flags, &[])
    }

    fn set_action_with_mask(
        handler: libc::sighandler_t,
        flags: c_int,
        masked: &[c_int],
    ) -> libc::sigaction {
        // SAFETY: all zeros is a valid `sigaction`; the fields that matter are set below.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = handler;
        action.sa_flags = flags;
        // SAFETY: `action.sa_mask` is a valid `sigset_t` owned by this frame.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        for &signal in masked {
            // SAFETY: as above; `signal` is a valid signal number.
            unsafe { libc::sigaddset(&mut action.sa_mask, signal) };
        }
        restore_action(&action)
    }

    /// Makes `action` SIGBUS's action; returns the one it replaced.
    fn restore_action(action: &libc::sigaction) -> libc::sigaction {
        // SAFETY: all zeros is a valid `sigaction`, overwritten by `sigaction`.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: both pointers are valid; each handler given has the signature its flags say.
        let result = unsafe { libc::sigaction(libc::SIGBUS, action, &mut old) };
        assert_eq!(result, 0);
        old
    }

    /// SIGBUS's action now. Async-signal-safe.
    fn current_action() -> libc::sigaction {
        // SAFETY: all zeros is a valid `sigaction`, overwritten by `sigaction`.
        let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: no new action; `current` is a valid out pointer.
        unsafe { libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut current) };
        current
    }

    /// Whether `signal` is blocked on this thread. Async-signal-safe.
    fn is_blocked(signal: c_int) -> bool {
        // SAFETY: all zeros is a valid `sigset_t`, overwritten by `pthread_sigmask`.
        let mut mask: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: no change asked; `mask` is a valid out pointer.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask) };
        // SAFETY: `mask` is a valid `sigset_t`.
        unsafe { libc::sigismember(&mask, signal) == 1 }
    }

    /// Sends this thread a SIGBUS whose `siginfo_t` says `code` at `address`, as a fault would,
    /// and returns once it has been handled (it is delivered on the way out of the system call).
    fn send_sigbus_to_this_thread(code: c_int, address: *mut c_void) {
        /// The start of Linux's `siginfo_t` for a fault: three ints, then the address.
        #[repr(C)]
        struct FaultInfoStart {
            signal: c_int,
            error: c_int,
            code: c_int,
            address: *mut c_void,
        }
        // SAFETY: all zeros is a valid `siginfo_t`.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        info.si_signo = libc::SIGBUS;
        info.si_code = code;
        let offset = std::mem::offset_of!(FaultInfoStart, address);
        assert!(offset + size_of::<*mut c_void>() <= size_of::<libc::siginfo_t>());
        // SAFETY: the write stays inside `info` (checked above); unaligned-safe.
        unsafe {
            std::ptr::write_unaligned(
                (&raw mut info)
                    .cast::<u8>()
                    .add(offset)
                    .cast::<*mut c_void>(),
                address,
            )
        };
        // SAFETY: `info` is a valid `siginfo_t` whose fault fields were just written.
        assert_eq!(
            unsafe { info.si_addr() },
            address,
            "the address is where siginfo_t keeps it"
        );
        // SAFETY: rt_tgsigqueueinfo to this thread of this process, with a valid `siginfo_t`.
        let result = unsafe {
            libc::syscall(
                libc::SYS_rt_tgsigqueueinfo,
                libc::getpid(),
                libc::gettid(),
                libc::SIGBUS,
                &raw const info,
            )
        };
        assert_eq!(
            result,
            0,
            "rt_tgsigqueueinfo: {}",
            std::io::Error::last_os_error()
        );
    }

    fn no_core_dumps() {
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `none` is a valid rlimit; only this child process is limited.
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &none) };
    }

    // --- Files ---

    fn page_size() -> usize {
        // SAFETY: sysconf only reads a system constant.
        usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap()
    }

    /// A rank-1 `u8` IDX file whose data spans `pages` pages, every byte `FILL_BYTE`.
    fn write_multi_page_file(path: &Path, pages: usize) {
        let data = vec![FILL_BYTE; pages * page_size()];
        write_idx(path, &[data.len()], &data).unwrap();
    }

    fn map(path: &Path) -> IdxArray {
        // SAFETY: deliberately broken in some scenarios (the file is truncated while mapped),
        // which is what the guard under test is about.
        unsafe { IdxArray::open_mapped(path) }.unwrap()
    }

    fn truncate(path: &Path, length: u64) {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .unwrap()
            .set_len(length)
            .unwrap();
    }

    /// The sum of every byte, each read for real (volatile).
    fn sum_of_every_byte(bytes: &[u8]) -> u64 {
        bytes
            .iter()
            // SAFETY: `byte` is a reference to an initialized byte of a live slice.
            .map(|byte| u64::from(unsafe { std::ptr::read_volatile(byte) }))
            .sum()
    }

    fn expect_mapped_file_changed(array: &IdxArray, path: &Path) {
        match array.verify_mapping_intact() {
            Err(DatasetError::MappedFileChanged { path: reported }) => assert_eq!(reported, path),
            other => panic!("expected MappedFileChanged, got {other:?}"),
        }
    }

    /// Prints a line and flushes it, so the parent sees it even if the next step kills us.
    fn say(line: &str) {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{line}").unwrap();
        stdout.flush().unwrap();
    }
}
