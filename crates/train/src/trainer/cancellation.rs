//! [`CancellationFlag`]: how a caller (a signal handler, another thread) asks a running
//! [`train`](crate::train) to stop at its next step, with a checkpoint.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Asks a running [`train`](crate::train) to stop: set it (from a signal handler, another
/// thread) and the run finishes its current step, writes a checkpoint, flushes its files and
/// returns [`TrainError::Interrupted`](crate::TrainError::Interrupted). Clones share the flag.
#[derive(Clone, Debug, Default)]
pub struct CancellationFlag(Arc<AtomicBool>);

impl CancellationFlag {
    /// A flag that is not set.
    pub fn new() -> Self {
        CancellationFlag::default()
    }

    /// Uses `flag` (one a signal handler already sets, say).
    pub fn from_shared(flag: Arc<AtomicBool>) -> Self {
        CancellationFlag(flag)
    }

    /// Asks the run to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the run was asked to stop.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Two flags are equal when they are the same flag.
impl PartialEq for CancellationFlag {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
