//! The files of a run folder, as a type ([`RunFile`]), and writing them atomically.

use std::path::{Path, PathBuf};

use reclaim_dataset::DatasetError;

use crate::RecordsError;

/// A file that a run writes into its run folder. The checkpoints' own files are
/// reclaim-train's `CheckpointFile`s, in `checkpoints/epoch-NNNN/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunFile {
    /// `metrics.jsonl`: one JSON line per epoch ([`EpochMetrics`](crate::EpochMetrics)).
    EpochMetrics,
    /// `steps.jsonl`: one JSON line per logged step ([`StepMetrics`](crate::StepMetrics)).
    StepMetrics,
    /// `memory.jsonl`: the memory timeline, one JSON line per sample
    /// ([`TimelineSample`](crate::TimelineSample)).
    MemoryTimeline,
    /// `config.json`: the run's settings (reclaim-train's `TrainConfig`).
    Config,
    /// `model.bpk`: the final weights (burnpack).
    FinalWeights,
    /// `release.md`: the release report as a Markdown table.
    ReleaseTable,
    /// `release.json`: the release report ([`ReleaseReport`](crate::ReleaseReport)).
    ReleaseReport,
    /// `phases.json`: where the run's time went ([`PhaseSeconds`](crate::PhaseSeconds)).
    Phases,
}

impl RunFile {
    /// Every run file.
    pub const ALL: [RunFile; 8] = [
        RunFile::EpochMetrics,
        RunFile::StepMetrics,
        RunFile::MemoryTimeline,
        RunFile::Config,
        RunFile::FinalWeights,
        RunFile::ReleaseTable,
        RunFile::ReleaseReport,
        RunFile::Phases,
    ];

    /// The file's name inside the run folder (`"metrics.jsonl"`).
    pub const fn file_name(self) -> &'static str {
        match self {
            RunFile::EpochMetrics => "metrics.jsonl",
            RunFile::StepMetrics => "steps.jsonl",
            RunFile::MemoryTimeline => "memory.jsonl",
            RunFile::Config => "config.json",
            RunFile::FinalWeights => "model.bpk",
            RunFile::ReleaseTable => "release.md",
            RunFile::ReleaseReport => "release.json",
            RunFile::Phases => "phases.json",
        }
    }

    /// The file's path inside `run_folder`.
    pub fn path_in(self, run_folder: &Path) -> PathBuf {
        run_folder.join(self.file_name())
    }
}

/// Writes `bytes` to `path` through reclaim-dataset's atomic write (temporary file, then
/// rename), the workspace's one; a failed write is [`RecordsError::Io`] naming the file, as
/// every other file error of the crate is.
pub fn write_file_atomically(path: &Path, bytes: &[u8]) -> Result<(), RecordsError> {
    reclaim_dataset::write_file_atomically(path, bytes).map_err(|error| match error {
        DatasetError::Io { path, source } => RecordsError::Io { path, source },
        // The atomic write reports file errors only; should another come, it names the file.
        other => RecordsError::io(path, std::io::Error::other(other.to_string())),
    })
}

/// Writes `value` as pretty JSON to `file` inside `folder`, atomically.
pub fn write_json_file<T: serde::Serialize>(
    folder: &Path,
    file: RunFile,
    value: &T,
) -> Result<(), RecordsError> {
    let path = file.path_in(folder);
    let json = serde_json::to_vec_pretty(value).map_err(|source| RecordsError::Json {
        path: path.clone(),
        source,
    })?;
    write_file_atomically(&path, &json)
}

/// Reads the JSON `file` inside `folder`; `None` when there is no such file. An unreadable or
/// malformed file is [`RecordsError::Io`] naming it.
pub fn read_json_file<T: serde::de::DeserializeOwned>(
    folder: &Path,
    file: RunFile,
) -> Result<Option<T>, RecordsError> {
    let path = file.path_in(folder);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(RecordsError::io(&path, error)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|error| RecordsError::io(&path, std::io::Error::from(error)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_files_have_distinct_names_inside_the_run_folder() {
        let folder = Path::new("runs/one");
        let mut names: Vec<&str> = RunFile::ALL.iter().map(|file| file.file_name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), RunFile::ALL.len());
        assert_eq!(
            RunFile::StepMetrics.path_in(folder),
            Path::new("runs/one/steps.jsonl")
        );
        assert_eq!(RunFile::FinalWeights.file_name(), "model.bpk");
    }

    #[test]
    fn an_unwritable_path_is_an_io_error_naming_the_path() {
        let folder = tempfile::tempdir().unwrap();
        // A file where the destination's folder should be.
        std::fs::write(folder.path().join("absent"), b"a file").unwrap();
        let path = folder.path().join("absent").join("report.md");
        let error = write_file_atomically(&path, b"x").unwrap_err();
        assert!(matches!(error, RecordsError::Io { .. }), "{error:?}");
        assert!(error.to_string().contains("absent"));
    }
}
