//! The release panel's data: the memory right after each step of the release, in MiB.

use reclaim_records::TimelineSample;

use super::timeline::RELEASE_START_PHASE;
use super::{MemorySeries, mebibytes};

/// One group of bars: a step of the release and each series' value right after it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ReleaseStepBars {
    /// The step's name (`"dataset dropped"`).
    pub(crate) name: String,
    /// MiB of each of [`ReleaseBars::series`], `None` where it was not measured.
    pub(crate) mebibytes: Vec<Option<f64>>,
}

/// Everything the release panel shows: the baseline, then every step from
/// [`RELEASE_START_PHASE`] on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ReleaseBars {
    /// The series measured at one step at least, in [`MemorySeries::ALL`]'s order.
    pub(crate) series: Vec<MemorySeries>,
    /// The steps, in order.
    pub(crate) steps: Vec<ReleaseStepBars>,
}

impl ReleaseBars {
    /// Prepares the panel from the samples of `memory.jsonl`: the first phase (the baseline)
    /// and every phase from [`RELEASE_START_PHASE`] on; every phase when there is no such
    /// phase.
    pub(crate) fn from_samples(samples: &[TimelineSample]) -> Self {
        let steps = release_steps(samples);
        let series: Vec<MemorySeries> = MemorySeries::ALL
            .into_iter()
            .filter(|series| steps.iter().any(|step| series.read(&step.memory).is_some()))
            .collect();
        let steps = steps
            .into_iter()
            .map(|step| ReleaseStepBars {
                name: step.phase.as_deref().unwrap_or("sample").to_string(),
                mebibytes: series
                    .iter()
                    .map(|series| series.read(&step.memory).map(mebibytes))
                    .collect(),
            })
            .collect();
        ReleaseBars { series, steps }
    }

    /// The highest value of the panel in MiB, at least 1.
    pub(crate) fn highest(&self) -> f64 {
        self.steps
            .iter()
            .flat_map(|step| step.mebibytes.iter().flatten())
            .copied()
            .fold(1.0, f64::max)
    }
}

fn release_steps(samples: &[TimelineSample]) -> Vec<&TimelineSample> {
    let phases: Vec<&TimelineSample> = samples
        .iter()
        .filter(|sample| sample.phase.is_some())
        .collect();
    let release_start = phases
        .iter()
        .position(|sample| sample.phase.as_deref() == Some(RELEASE_START_PHASE));
    match release_start {
        Some(start) if start > 0 => std::iter::once(phases[0])
            .chain(phases[start..].iter().copied())
            .collect(),
        _ => phases,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reclaim_memory::MemorySnapshot;

    const MIB: u64 = 1024 * 1024;

    fn sample(
        resident_mib: u64,
        heap_mib: Option<u64>,
        phase: Option<&'static str>,
    ) -> TimelineSample {
        TimelineSample {
            memory: MemorySnapshot {
                resident_bytes: Some(resident_mib * MIB),
                live_heap_bytes: heap_mib.map(|mib| mib * MIB),
                ..MemorySnapshot::default()
            },
            phase: phase.map(Into::into),
        }
    }

    #[test]
    fn the_panel_holds_the_baseline_and_the_steps_from_trained_on() {
        let samples = [
            sample(100, Some(10), Some("before loading")),
            sample(150, Some(60), Some("epoch 1")),
            sample(160, None, None),
            sample(184, Some(70), Some("trained")),
            sample(131, None, Some("dataset dropped")),
            sample(125, Some(12), Some("model dropped")),
        ];
        let bars = ReleaseBars::from_samples(&samples);
        let names: Vec<&str> = bars.steps.iter().map(|step| step.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "before loading",
                "trained",
                "dataset dropped",
                "model dropped"
            ]
        );
        assert_eq!(
            bars.series,
            [
                MemorySeries::Resident,
                MemorySeries::LiveHeap,
                MemorySeries::MappedDataset
            ]
        );
        assert_eq!(
            bars.steps[1].mebibytes,
            [Some(184.0), Some(70.0), Some(0.0)]
        );
        assert_eq!(bars.steps[2].mebibytes[1], None, "not measured: no bar");
        assert_eq!(bars.highest(), 184.0);
    }

    #[test]
    fn without_a_release_every_phase_is_a_step() {
        let samples = [
            sample(1, None, Some("before loading")),
            sample(1, None, Some("epoch 1")),
        ];
        let bars = ReleaseBars::from_samples(&samples);
        assert_eq!(bars.steps.len(), 2);
        assert_eq!(bars.highest(), 1.0, "at least 1 MiB tall");
        assert!(ReleaseBars::from_samples(&[]).steps.is_empty());
    }
}
