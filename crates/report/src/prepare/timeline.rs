//! The memory timeline's data: each measured series over the run's seconds, and the phase
//! markers.

use reclaim_memory::MemorySnapshot;
use reclaim_records::{ReleaseStage, TimelineSample};

use super::mebibytes;

/// The phase that starts the release (every phase sample from it on is a release step).
/// Read as the phrase `reclaim-train` writes into `memory.jsonl`.
pub(crate) const RELEASE_START_PHASE: &str = ReleaseStage::Trained.as_str();

/// A measured quantity of a [`MemorySnapshot`], one series of the memory figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemorySeries {
    /// Resident set size.
    Resident,
    /// Live heap bytes.
    LiveHeap,
    /// Mapped dataset bytes.
    MappedDataset,
    /// Device memory in use.
    DeviceInUse,
    /// Device memory reserved by the backend's pool.
    DeviceReserved,
}

impl MemorySeries {
    /// Every series, in the order of the legend.
    pub(crate) const ALL: [MemorySeries; 5] = [
        MemorySeries::Resident,
        MemorySeries::LiveHeap,
        MemorySeries::MappedDataset,
        MemorySeries::DeviceInUse,
        MemorySeries::DeviceReserved,
    ];

    /// Its name in the legend.
    pub(crate) fn name(self) -> &'static str {
        match self {
            MemorySeries::Resident => "resident set (RSS)",
            MemorySeries::LiveHeap => "live heap",
            MemorySeries::MappedDataset => "mapped dataset",
            MemorySeries::DeviceInUse => "device in use",
            MemorySeries::DeviceReserved => "device reserved",
        }
    }

    /// Its value in `memory`, where it was measured.
    pub(crate) fn read(self, memory: &MemorySnapshot) -> Option<u64> {
        match self {
            MemorySeries::Resident => memory.resident_bytes,
            MemorySeries::LiveHeap => memory.live_heap_bytes,
            MemorySeries::MappedDataset => Some(memory.mapped_dataset_bytes),
            MemorySeries::DeviceInUse => memory.device_bytes_in_use,
            MemorySeries::DeviceReserved => memory.device_bytes_reserved,
        }
    }

    /// Whether it is read at phase boundaries only (the device's pool), so that its points
    /// are worth showing.
    pub(crate) fn read_at_phases_only(self) -> bool {
        matches!(
            self,
            MemorySeries::DeviceInUse | MemorySeries::DeviceReserved
        )
    }
}

/// One series over the run: `(seconds, MiB)` for each sample where it was measured.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TimelineSeries {
    /// What is measured.
    pub(crate) series: MemorySeries,
    /// The points, in the samples' order.
    pub(crate) points: Vec<(f64, f64)>,
}

/// A phase marker of the timeline: where a phase starts and its label. The release's steps
/// share the marker of the first (`trained → release`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PhaseMark {
    /// Seconds since the run started.
    pub(crate) seconds: f64,
    /// The phase's name.
    pub(crate) label: String,
}

/// Everything the memory timeline panel shows.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MemoryTimelineData {
    /// The series measured at least once, in [`MemorySeries::ALL`]'s order.
    pub(crate) series: Vec<TimelineSeries>,
    /// The phase markers, in the samples' order.
    pub(crate) phases: Vec<PhaseMark>,
    /// The last sample's seconds (0 without a finite one).
    pub(crate) last_second: f64,
    /// Samples taken by the background sampler.
    pub(crate) periodic_samples: usize,
    /// Samples taken at phase boundaries.
    pub(crate) phase_samples: usize,
}

impl MemoryTimelineData {
    /// Prepares the timeline from the samples of `memory.jsonl`; samples whose seconds are not
    /// a finite number are left out of the series.
    pub(crate) fn from_samples(samples: &[TimelineSample]) -> Self {
        let timed: Vec<&TimelineSample> = samples
            .iter()
            .filter(|sample| sample.memory.seconds.is_finite())
            .collect();
        let series = MemorySeries::ALL
            .into_iter()
            .map(|series| TimelineSeries {
                series,
                points: timed
                    .iter()
                    .filter_map(|sample| {
                        let bytes = series.read(&sample.memory)?;
                        Some((sample.memory.seconds, mebibytes(bytes)))
                    })
                    .collect(),
            })
            .filter(|series| !series.points.is_empty())
            .collect();
        let periodic_samples = samples
            .iter()
            .filter(|sample| sample.phase.is_none())
            .count();
        MemoryTimelineData {
            series,
            phases: phase_marks(samples),
            last_second: timed
                .iter()
                .map(|sample| sample.memory.seconds)
                .fold(0.0, f64::max),
            periodic_samples,
            phase_samples: samples.len() - periodic_samples,
        }
    }
}

/// A marker per phase up to [`RELEASE_START_PHASE`], which is labelled `trained → release`
/// and stands for the whole release.
fn phase_marks(samples: &[TimelineSample]) -> Vec<PhaseMark> {
    let mut marks = Vec::new();
    for sample in samples {
        let Some(phase) = sample.phase.as_deref() else {
            continue;
        };
        let release_starts = phase == RELEASE_START_PHASE;
        marks.push(PhaseMark {
            seconds: sample.memory.seconds,
            label: if release_starts {
                format!("{phase} → release")
            } else {
                phase.to_string()
            },
        });
        if release_starts {
            break;
        }
    }
    marks
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    fn sample(seconds: f64, resident_mib: u64, phase: Option<&'static str>) -> TimelineSample {
        TimelineSample {
            memory: MemorySnapshot {
                seconds,
                resident_bytes: Some(resident_mib * MIB),
                mapped_dataset_bytes: MIB / 2,
                device_bytes_in_use: phase.map(|_| 2 * MIB),
                ..MemorySnapshot::default()
            },
            phase: phase.map(Into::into),
        }
    }

    #[test]
    fn series_hold_the_measured_values_in_mebibytes_and_skip_what_was_never_measured() {
        let samples = [
            sample(0.0, 100, Some("before loading")),
            sample(0.5, 150, None),
            sample(f64::NAN, 999, None),
            sample(1.0, 120, Some("trained")),
        ];
        let data = MemoryTimelineData::from_samples(&samples);
        let measured: Vec<MemorySeries> = data.series.iter().map(|line| line.series).collect();
        assert_eq!(
            measured,
            [
                MemorySeries::Resident,
                MemorySeries::MappedDataset,
                MemorySeries::DeviceInUse
            ]
        );
        assert_eq!(
            data.series[0].points,
            [(0.0, 100.0), (0.5, 150.0), (1.0, 120.0)]
        );
        assert_eq!(data.series[1].points[0], (0.0, 0.5));
        assert_eq!(data.series[2].points, [(0.0, 2.0), (1.0, 2.0)]);
        assert_eq!(data.last_second, 1.0);
        assert_eq!((data.periodic_samples, data.phase_samples), (2, 2));
    }

    #[test]
    fn the_release_shares_one_marker_labelled_as_such() {
        let samples = [
            sample(0.0, 100, Some("before loading")),
            sample(1.0, 110, Some("epoch 1")),
            sample(2.0, 120, Some("trained")),
            sample(2.001, 90, Some("dataset dropped")),
            sample(2.002, 80, Some("model dropped")),
        ];
        let labels: Vec<String> = MemoryTimelineData::from_samples(&samples)
            .phases
            .into_iter()
            .map(|mark| mark.label)
            .collect();
        assert_eq!(labels, ["before loading", "epoch 1", "trained → release"]);
    }

    #[test]
    fn only_the_device_pool_is_read_at_phases_only() {
        let at_phases: Vec<MemorySeries> = MemorySeries::ALL
            .into_iter()
            .filter(|series| series.read_at_phases_only())
            .collect();
        assert_eq!(
            at_phases,
            [MemorySeries::DeviceInUse, MemorySeries::DeviceReserved]
        );
    }
}
