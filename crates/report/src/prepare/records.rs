//! [`RunRecords`]: a run folder's files, read.

use std::path::Path;

use reclaim_records::{EpochMetrics, RunFile, StepMetrics, TimelineSample, read_json_lines};

use crate::ReportError;

/// The records of a run folder that its figures and summaries are made from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunRecords {
    /// `steps.jsonl`: the loss of each logged step.
    pub steps: Vec<StepMetrics>,
    /// `metrics.jsonl`: each epoch's metrics.
    pub epochs: Vec<EpochMetrics>,
    /// `memory.jsonl`: the memory timeline.
    pub samples: Vec<TimelineSample>,
}

impl RunRecords {
    /// Reads `steps.jsonl`, `metrics.jsonl` and `memory.jsonl` from `run_folder`, in this
    /// order. A missing or unreadable file, or a line that does not parse, is
    /// [`ReportError::Io`] naming the file (and the line).
    pub fn read(run_folder: &Path) -> Result<Self, ReportError> {
        Ok(RunRecords {
            steps: read_json_lines(RunFile::StepMetrics.path_in(run_folder))?,
            epochs: read_json_lines(RunFile::EpochMetrics.path_in(run_folder))?,
            samples: read_json_lines(RunFile::MemoryTimeline.path_in(run_folder))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reclaim_records::JsonLinesWriter;

    #[test]
    fn the_three_files_are_read_and_the_first_missing_one_is_named() {
        let folder = tempfile::tempdir().unwrap();
        let error = RunRecords::read(folder.path()).unwrap_err();
        assert!(
            matches!(&error, ReportError::Io { path, .. } if path.ends_with("steps.jsonl")),
            "{error:?}"
        );
        let steps = [StepMetrics {
            step: 10,
            epoch: 1,
            loss: 0.5,
        }];
        JsonLinesWriter::write_all_atomically(folder.path().join("steps.jsonl"), &steps).unwrap();
        std::fs::write(folder.path().join("metrics.jsonl"), "").unwrap();
        let error = RunRecords::read(folder.path()).unwrap_err();
        assert!(error.to_string().contains("memory.jsonl"), "{error}");
        std::fs::write(folder.path().join("memory.jsonl"), "\n").unwrap();
        let records = RunRecords::read(folder.path()).unwrap();
        assert_eq!(records.steps, steps);
        assert!(records.epochs.is_empty() && records.samples.is_empty());
    }
}
