//! The data of each figure: a run folder's files read ([`RunRecords`]), then prepared into
//! plain values (steps and percentages, seconds and mebibytes) with no drawing in sight; the
//! modules of `draw/` only lay these values out.

mod bars;
mod curves;
mod records;
mod release;
mod timeline;

pub use bars::{Bar, BarChart};
pub(crate) use curves::{EpochBoundary, LOSS_SMOOTHING, TrainingCurves};
pub use records::RunRecords;
pub(crate) use release::{ReleaseBars, ReleaseStepBars};
pub(crate) use timeline::{MemorySeries, MemoryTimelineData, PhaseMark};

const BYTES_PER_MEBIBYTE: f64 = 1024.0 * 1024.0;

/// Bytes in mebibytes, the unit of the memory figures' axes.
pub(crate) fn mebibytes(bytes: u64) -> f64 {
    bytes as f64 / BYTES_PER_MEBIBYTE
}
