//! [`TimelineSample`]: one point of a run's memory timeline, one line of `memory.jsonl`.

use std::borrow::Cow;

use reclaim_memory::MemorySnapshot;
use serde::{Deserialize, Serialize};

/// One point of the timeline, one line of `memory.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimelineSample {
    /// The memory then (`seconds` counts from the start of the timeline).
    #[serde(flatten)]
    pub memory: MemorySnapshot,
    /// The phase that starts here (`"epoch 1"`, `"dataset dropped"`), or `None` for a periodic
    /// sample.
    pub phase: Option<Cow<'static, str>>,
}
