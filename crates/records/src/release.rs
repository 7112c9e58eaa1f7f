//! The release report: memory at each step of giving the run's memory back.

use std::fmt::{self, Write as _};
use std::path::Path;

use indicatif::HumanBytes;
use reclaim_memory::MemorySnapshot;
use serde::{Deserialize, Serialize};

use crate::files::{read_json_file, write_file_atomically, write_json_file};
use crate::{RecordsError, RunFile};

/// A moment of the release, in the order a run passes them: the baseline, the end of training,
/// then each step of giving memory back (the PyTorch recipe's `del loader; del dataset;
/// torch.cuda.empty_cache(); del model`). Written and shown as its phrase (`"dataset
/// dropped"`), in `release.json`, `release.md` and the memory timeline's phases alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReleaseStage {
    /// `"before loading"`: the baseline, after the warm-up, before the model and the dataset.
    #[serde(rename = "before loading")]
    BeforeLoading,
    /// `"trained"`: the last epoch is done; the loader and its epochs still exist.
    #[serde(rename = "trained")]
    Trained,
    /// `"loader scope ended"`: the loader, its epochs and worker threads are gone.
    #[serde(rename = "loader scope ended")]
    LoaderScopeEnded,
    /// `"dataset dropped"`: both splits are dropped, their files unmapped.
    #[serde(rename = "dataset dropped")]
    DatasetDropped,
    /// `"device memory cleaned up"`: the optimizer is dropped and the device pool cleaned.
    #[serde(rename = "device memory cleaned up")]
    DeviceMemoryCleanedUp,
    /// `"model dropped"`: the model is dropped, the last step of the PyTorch recipe's order
    /// (whose cache cleanup came before it): the model's blocks are free but still reserved
    /// by the device pool.
    #[serde(rename = "model dropped")]
    ModelDropped,
    /// `"final cleanup"`: the device pool cleaned once more, after the last
    /// owner of device memory is gone: the order to use (docs/memory.md says why).
    #[serde(rename = "final cleanup")]
    FinalCleanup,
}

impl ReleaseStage {
    /// Every stage, in the order a run passes them.
    pub const ALL: [ReleaseStage; 7] = [
        ReleaseStage::BeforeLoading,
        ReleaseStage::Trained,
        ReleaseStage::LoaderScopeEnded,
        ReleaseStage::DatasetDropped,
        ReleaseStage::DeviceMemoryCleanedUp,
        ReleaseStage::ModelDropped,
        ReleaseStage::FinalCleanup,
    ];

    /// The stage's phrase (`"dataset dropped"`), as serialized and displayed.
    pub const fn as_str(self) -> &'static str {
        match self {
            ReleaseStage::BeforeLoading => "before loading",
            ReleaseStage::Trained => "trained",
            ReleaseStage::LoaderScopeEnded => "loader scope ended",
            ReleaseStage::DatasetDropped => "dataset dropped",
            ReleaseStage::DeviceMemoryCleanedUp => "device memory cleaned up",
            ReleaseStage::ModelDropped => "model dropped",
            ReleaseStage::FinalCleanup => "final cleanup",
        }
    }
}

impl fmt::Display for ReleaseStage {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// One row of the release report: a stage and the memory then.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReleaseStep {
    /// What had just happened ([`ReleaseStage::DatasetDropped`]).
    pub step: ReleaseStage,
    /// The memory right after it.
    pub memory: MemorySnapshot,
}

/// Memory at each step of a run's release, from the baseline before loading to the end.
///
/// The steps mirror the PyTorch recipe's `del loader; del dataset; torch.cuda.empty_cache();
/// del model`, done the Rust way: a scope ends, a value is dropped, the device pool is
/// cleaned.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReleaseReport {
    /// The steps in order; the first is the baseline.
    pub steps: Vec<ReleaseStep>,
}

impl ReleaseReport {
    /// An empty report with room for `steps` steps (so recording allocates nothing).
    pub fn with_capacity(steps: usize) -> Self {
        ReleaseReport {
            steps: Vec::with_capacity(steps),
        }
    }

    /// Appends a step.
    pub fn record(&mut self, step: ReleaseStage, memory: MemorySnapshot) {
        self.steps.push(ReleaseStep { step, memory });
    }

    /// The first step's memory (the baseline before anything was loaded).
    pub fn baseline(&self) -> Option<&MemorySnapshot> {
        self.steps.first().map(|step| &step.memory)
    }

    /// The memory after `stage`, if recorded.
    pub fn memory_at(&self, stage: ReleaseStage) -> Option<&MemorySnapshot> {
        self.steps
            .iter()
            .find(|step| step.step == stage)
            .map(|step| &step.memory)
    }

    /// The last step's memory (after everything was released).
    pub fn released(&self) -> Option<&MemorySnapshot> {
        self.steps.last().map(|step| &step.memory)
    }

    /// Live heap bytes after release minus the baseline's (negative: less than before).
    pub fn heap_bytes_left_over(&self) -> Option<i64> {
        let baseline = self.baseline()?.live_heap_bytes?;
        let released = self.released()?.live_heap_bytes?;
        Some(released as i64 - baseline as i64)
    }

    /// The report as a Markdown table.
    pub fn to_markdown(&self) -> String {
        let optional = |value: Option<u64>| {
            value.map_or_else(|| "n/a".to_string(), |bytes| HumanBytes(bytes).to_string())
        };
        let mut table = String::from(
            "| step | RSS | live heap | mapped dataset | device in use | device reserved |\n\
             |---|---:|---:|---:|---:|---:|\n",
        );
        for step in &self.steps {
            let memory = &step.memory;
            let _ = writeln!(
                table,
                "| {} | {} | {} | {} | {} | {} |",
                step.step,
                optional(memory.resident_bytes),
                optional(memory.live_heap_bytes),
                HumanBytes(memory.mapped_dataset_bytes),
                optional(memory.device_bytes_in_use),
                optional(memory.device_bytes_reserved),
            );
        }
        table
    }

    /// Writes `release.md` and `release.json` into `folder`, atomically.
    pub fn write_to(&self, folder: &Path) -> Result<(), RecordsError> {
        write_file_atomically(
            &RunFile::ReleaseTable.path_in(folder),
            self.to_markdown().as_bytes(),
        )?;
        write_json_file(folder, RunFile::ReleaseReport, self)
    }

    /// Reads the `release.json` that [`ReleaseReport::write_to`] left in `folder`; `None` when
    /// there is none (the run stopped before its release).
    pub fn read_from(folder: &Path) -> Result<Option<Self>, RecordsError> {
        read_json_file(folder, RunFile::ReleaseReport)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(heap: u64, mapped: u64) -> MemorySnapshot {
        MemorySnapshot {
            live_heap_bytes: Some(heap),
            mapped_dataset_bytes: mapped,
            resident_bytes: Some(heap * 2),
            ..MemorySnapshot::default()
        }
    }

    #[test]
    fn left_over_heap_is_released_minus_baseline() {
        let mut report = ReleaseReport::default();
        report.record(ReleaseStage::BeforeLoading, snapshot(1000, 0));
        report.record(ReleaseStage::Trained, snapshot(50_000, 47_040_016));
        report.record(ReleaseStage::ModelDropped, snapshot(1200, 0));
        assert_eq!(report.heap_bytes_left_over(), Some(200));
        assert_eq!(
            report
                .memory_at(ReleaseStage::Trained)
                .map(|memory| memory.live_heap_bytes),
            Some(Some(50_000))
        );
        assert_eq!(report.memory_at(ReleaseStage::DatasetDropped), None);
        let table = report.to_markdown();
        assert_eq!(table.lines().count(), 2 + 3);
        assert!(
            table.contains("| trained | 97.66 KiB | 48.83 KiB | 44.86 MiB | n/a | n/a |"),
            "{table}"
        );
    }

    #[test]
    fn written_files_read_back() {
        let folder = tempfile::tempdir().unwrap();
        let mut report = ReleaseReport::default();
        report.record(ReleaseStage::BeforeLoading, snapshot(10, 0));
        report.write_to(folder.path()).unwrap();
        assert_eq!(
            ReleaseReport::read_from(folder.path()).unwrap(),
            Some(report.clone())
        );
        let json = std::fs::read(folder.path().join("release.json")).unwrap();
        assert_eq!(
            serde_json::from_slice::<ReleaseReport>(&json).unwrap(),
            report
        );
        assert!(
            std::fs::read_to_string(folder.path().join("release.md"))
                .unwrap()
                .contains("before loading")
        );
        let text = String::from_utf8(json).unwrap();
        assert!(text.contains(r#""step": "before loading""#), "{text}");
    }

    #[test]
    fn stages_serialize_and_display_as_their_phrases() {
        let phrases: Vec<String> = ReleaseStage::ALL
            .iter()
            .map(|stage| stage.to_string())
            .collect();
        assert_eq!(
            phrases,
            [
                "before loading",
                "trained",
                "loader scope ended",
                "dataset dropped",
                "device memory cleaned up",
                "model dropped",
                "final cleanup"
            ]
        );
        for stage in ReleaseStage::ALL {
            let json = serde_json::to_string(&stage).unwrap();
            assert_eq!(json, format!("\"{stage}\""));
            assert_eq!(serde_json::from_str::<ReleaseStage>(&json).unwrap(), stage);
        }
        assert!(serde_json::from_str::<ReleaseStage>("\"dataset opened\"").is_err());
    }
}
