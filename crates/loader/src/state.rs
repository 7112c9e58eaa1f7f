//! Where an interrupted run stands, for checkpoints.

/// Where a loader stands: enough to resume an interrupted epoch exactly.
///
/// `position` counts the samples of epoch `epoch` already delivered (a multiple of the batch
/// size, except at the very end). [`Loader::resume`](crate::Loader::resume) with the same loader
/// configuration yields exactly the batches that epoch had left, in the same order.
///
/// ```
/// use reclaim_loader::LoaderState;
///
/// let state = LoaderState { seed: 7, epoch: 2, position: 640 };
/// let json = serde_json::to_string(&state).unwrap();
/// assert_eq!(json, r#"{"seed":7,"epoch":2,"position":640}"#);
/// assert_eq!(serde_json::from_str::<LoaderState>(&json).unwrap(), state);
/// assert_eq!(state.next_epoch(), LoaderState { seed: 7, epoch: 3, position: 0 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct LoaderState {
    /// The run's seed.
    pub seed: u64,
    /// The epoch in progress (0-based).
    pub epoch: u64,
    /// Samples of that epoch already delivered.
    pub position: u64,
}

impl LoaderState {
    /// The start of the epoch after this one.
    pub fn next_epoch(self) -> Self {
        Self {
            seed: self.seed,
            epoch: self.epoch + 1,
            position: 0,
        }
    }
}
