//! A run's memory measurement: the memory timeline (`memory.jsonl`) and the release report,
//! read on the run's device, with one call that records a release stage in both.

use std::borrow::Cow;
use std::path::Path;

use burn::tensor::Device;

use super::config::TrainConfig;
use crate::timeline::MemoryTimeline;
use crate::{ReleaseReport, ReleaseStage};
use crate::{RunFile, TrainError};
use reclaim_memory::MemorySnapshot;

/// The timeline and the release report of one run.
pub(super) struct RunMeasurement {
    timeline: MemoryTimeline,
    report: ReleaseReport,
    device: Device,
}

impl RunMeasurement {
    /// Starts the timeline and records the baseline, [`ReleaseStage::BeforeLoading`].
    /// Everything the measurement itself needs is made here, before the baseline's sample.
    pub(super) fn start_at_baseline(
        config: &TrainConfig,
        device: &Device,
    ) -> Result<Self, TrainError> {
        let timeline = MemoryTimeline::start(
            config.memory_sample_interval,
            &RunFile::MemoryTimeline.path_in(&config.run_folder),
            &config.data_folder,
        )?;
        let mut measurement = RunMeasurement {
            timeline,
            // Room for every stage, so that recording one allocates nothing.
            report: ReleaseReport::with_capacity(8),
            device: device.clone(),
        };
        measurement.record_release(ReleaseStage::BeforeLoading);
        Ok(measurement)
    }

    /// The device whose pool is read at each phase.
    pub(super) fn device(&self) -> &Device {
        &self.device
    }

    /// Marks a phase of the run (`"epoch 1"`) in the timeline. Returns the sample.
    pub(super) fn mark(&self, phase: impl Into<Cow<'static, str>>) -> MemorySnapshot {
        self.timeline.mark(phase, Some(&self.device))
    }

    /// Records a release stage in both the timeline (as its phase) and the release report.
    pub(super) fn record_release(&mut self, stage: ReleaseStage) {
        let memory = self.mark(stage.as_str());
        self.report.record(stage, memory);
    }

    /// Stops the timeline, writes the release report into `run_folder` and returns it.
    pub(super) fn finish(self, run_folder: &Path) -> Result<ReleaseReport, TrainError> {
        let RunMeasurement {
            timeline, report, ..
        } = self;
        timeline.finish()?;
        report.write_to(run_folder)?;
        Ok(report)
    }
}
