use std::path::PathBuf;

/// Everything that can go wrong reading or writing a run folder's records.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordsError {
    /// Reading or writing a file failed, or a JSON file (not JSON lines) did not parse.
    #[error("{path}: input/output error")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the operating system (or the JSON parser) reported.
        source: std::io::Error,
    },
    /// A value that cannot be written as JSON (a map whose keys are not strings, say, or a
    /// serializer's own error), for the file it was meant for.
    #[error("{path}: cannot be written as JSON")]
    Json {
        /// The file the value was meant for.
        path: PathBuf,
        /// What serde_json reported.
        source: serde_json::Error,
    },
    /// A line of a JSON-lines file that is not a record, other than an unfinished last line.
    #[error("{path}, line {line}: not a valid record")]
    Record {
        /// The file.
        path: PathBuf,
        /// The line's number, from 1.
        line: usize,
        /// What the JSON parser reported.
        source: serde_json::Error,
    },
}

impl RecordsError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        RecordsError::Io {
            path: path.into(),
            source,
        }
    }
}
