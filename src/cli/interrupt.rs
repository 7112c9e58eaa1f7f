//! Ctrl-C (SIGINT) and SIGTERM: one process-wide flag that long-running subcommands poll, and
//! the error they return when it is set, which `main` turns into exit status 130.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};

/// Set by the first Ctrl-C or SIGTERM once [`install`] has run (read it with
/// `INTERRUPTED.load(Ordering::SeqCst)`). An `Arc` so that libraries taking a cancellation flag
/// (e.g. `FetchOptions::cancellation`) can share it.
pub static INTERRUPTED: LazyLock<Arc<AtomicBool>> =
    LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// The exit status of a run stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it).
pub const EXIT_STATUS: u8 = 130;

/// Installs the handler (once per process; later calls do nothing): the signal only sets
/// [`INTERRUPTED`], and the subcommand stops at its next check.
pub fn install() -> anyhow::Result<()> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let flag = INTERRUPTED.clone();
            ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst))
                .map_err(|error| error.to_string())
        })
        .clone()
        .map_err(|error| anyhow::anyhow!("cannot install the Ctrl-C handler: {error}"))
}

/// A subcommand stopped by Ctrl-C or SIGTERM; `message` says what was kept or removed and how
/// to go on. `main` prints it and exits with [`EXIT_STATUS`].
#[derive(Debug, thiserror::Error)]
#[error("interrupted: {message}")]
pub struct Interrupted {
    /// What was done about the interruption.
    pub message: String,
}
