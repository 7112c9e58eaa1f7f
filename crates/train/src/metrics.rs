//! Per-epoch and per-step metrics, written as JSON lines.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::TrainError;

/// One line of `metrics.jsonl`: what an epoch did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpochMetrics {
    /// The epoch, counted from 1.
    pub epoch: usize,
    /// Mean training loss over the epoch's batches.
    pub train_loss: f64,
    /// Mean loss on the test split after the epoch.
    pub test_loss: f64,
    /// Fraction of the test split classified correctly, in [0, 1].
    pub test_accuracy: f64,
    /// Wall-clock seconds of the epoch's training (evaluation excluded).
    pub train_seconds: f64,
    /// Wall-clock seconds of the evaluation after it.
    pub evaluation_seconds: f64,
    /// Training samples per second.
    pub samples_per_second: f64,
    /// Resident set size at the end of the epoch.
    pub resident_bytes: Option<u64>,
    /// Device memory in use at the end of the epoch, where the backend reports it.
    pub device_bytes_in_use: Option<u64>,
}

/// One line of `steps.jsonl`: the loss of one optimizer step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepMetrics {
    /// The step, counted from 1 over the whole run.
    pub step: usize,
    /// The epoch it belongs to, counted from 1.
    pub epoch: usize,
    /// The batch's mean loss.
    pub loss: f64,
}

/// Appends one JSON object per line to a file, flushing after each line.
pub struct JsonLinesWriter {
    path: PathBuf,
    writer: BufWriter<File>,
}

impl JsonLinesWriter {
    /// Creates (truncates) the file.
    pub fn create(path: impl Into<PathBuf>) -> Result<Self, TrainError> {
        let path = path.into();
        let file = File::create(&path).map_err(|error| TrainError::io(&path, error))?;
        Ok(JsonLinesWriter {
            path,
            writer: BufWriter::new(file),
        })
    }

    /// Opens the file for appending, creating it if needed.
    pub fn append(path: impl Into<PathBuf>) -> Result<Self, TrainError> {
        let path = path.into();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|error| TrainError::io(&path, error))?;
        Ok(JsonLinesWriter {
            path,
            writer: BufWriter::new(file),
        })
    }

    /// Writes `records` to a new file in one go, atomically (temporary file, then rename).
    pub fn write_all_atomically<T: Serialize>(
        path: impl AsRef<Path>,
        records: &[T],
    ) -> Result<(), TrainError> {
        let mut text = String::new();
        for record in records {
            text.push_str(&serde_json::to_string(record).expect("metrics serialize"));
            text.push('\n');
        }
        crate::files::write_file_atomically(path.as_ref(), text.as_bytes())
    }

    /// Writes one record as one line and flushes it.
    pub fn write<T: Serialize>(&mut self, record: &T) -> Result<(), TrainError> {
        let line = serde_json::to_string(record).expect("metrics serialize");
        writeln!(self.writer, "{line}")
            .and_then(|()| self.writer.flush())
            .map_err(|error| TrainError::io(&self.path, error))
    }
}

/// Reads every line of a JSON-lines file.
pub fn read_json_lines<T: DeserializeOwned>(path: impl AsRef<Path>) -> Result<Vec<T>, TrainError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|error| TrainError::io(path, error))?;
    let mut records = Vec::new();
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|error| TrainError::io(path, error))?;
        if line.trim().is_empty() {
            continue;
        }
        let record = serde_json::from_str(&line).map_err(|source| TrainError::Record {
            path: path.to_path_buf(),
            line: index + 1,
            source,
        })?;
        records.push(record);
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_metrics_round_trip_through_a_file() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("steps.jsonl");
        let records: Vec<StepMetrics> = (1..=5)
            .map(|step| StepMetrics {
                step,
                epoch: 1,
                loss: 1.0 / step as f64,
            })
            .collect();
        let mut writer = JsonLinesWriter::create(&path).unwrap();
        for record in &records {
            writer.write(record).unwrap();
        }
        drop(writer);
        assert_eq!(read_json_lines::<StepMetrics>(&path).unwrap(), records);
    }

    #[test]
    fn a_bad_line_is_an_error_naming_the_file_and_line() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("metrics.jsonl");
        std::fs::write(&path, "{\"step\":1,\"epoch\":1,\"loss\":0.5}\nnot json\n").unwrap();
        let error = read_json_lines::<StepMetrics>(&path).unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("metrics.jsonl") && message.contains("line 2"),
            "{message}"
        );
    }
}
