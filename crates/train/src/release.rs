//! The release report: memory at each step of giving the run's memory back.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::Path;

use indicatif::HumanBytes;
use reclaim_memory::MemorySnapshot;
use serde::{Deserialize, Serialize};

use crate::{TrainError, files::write_file_atomically, run_files};

/// One row of the release report: a named moment and the memory then.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReleaseStep {
    /// What had just happened (`"dataset dropped"`).
    pub step: Cow<'static, str>,
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
    pub fn record(&mut self, step: impl Into<Cow<'static, str>>, memory: MemorySnapshot) {
        self.steps.push(ReleaseStep {
            step: step.into(),
            memory,
        });
    }

    /// The first step's memory (the baseline before anything was loaded).
    pub fn baseline(&self) -> Option<&MemorySnapshot> {
        self.steps.first().map(|step| &step.memory)
    }

    /// The memory after the step named `name` (`"trained"`, `"dataset dropped"`), if recorded.
    pub fn memory_at(&self, name: &str) -> Option<&MemorySnapshot> {
        self.steps
            .iter()
            .find(|step| step.step == name)
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
    pub fn write_to(&self, folder: &Path) -> Result<(), TrainError> {
        write_file_atomically(
            &folder.join(run_files::RELEASE_TABLE),
            self.to_markdown().as_bytes(),
        )?;
        let json = serde_json::to_vec_pretty(self).expect("release report serializes");
        write_file_atomically(&folder.join(run_files::RELEASE_REPORT), &json)
    }

    /// Reads the `release.json` that [`ReleaseReport::write_to`] left in `folder`; `None` when
    /// there is none (the run stopped before its release).
    pub fn read_from(folder: &Path) -> Result<Option<Self>, TrainError> {
        let path = folder.join(run_files::RELEASE_REPORT);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(TrainError::io(&path, error)),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|error| TrainError::io(&path, std::io::Error::from(error)))
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
        report.record("before loading", snapshot(1000, 0));
        report.record("trained", snapshot(50_000, 47_040_016));
        report.record("model dropped", snapshot(1200, 0));
        assert_eq!(report.heap_bytes_left_over(), Some(200));
        assert_eq!(
            report
                .memory_at("trained")
                .map(|memory| memory.live_heap_bytes),
            Some(Some(50_000))
        );
        assert_eq!(report.memory_at("dataset dropped"), None);
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
        report.record("before loading", snapshot(10, 0));
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
    }
}
