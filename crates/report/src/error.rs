//! [`ReportError`]: everything that can go wrong while reading a run's files or drawing.

use std::path::PathBuf;

use reclaim_records::RecordsError;

/// Everything that can go wrong in `reclaim-report`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// Reading or writing a file failed: a run file is missing, one of its lines does not
    /// parse, or a figure cannot be written.
    #[error("{}: input/output error", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error (for a line that does not parse, it names the line).
        #[source]
        source: std::io::Error,
    },
    /// A figure's input holds nothing to draw.
    #[error("cannot draw {}: {reason}", path.display())]
    NothingToDraw {
        /// The input file at fault, or the figure asked for.
        path: PathBuf,
        /// What is missing.
        reason: String,
    },
    /// Drawing or encoding a figure failed.
    #[error("cannot draw {}: {message}", path.display())]
    Drawing {
        /// The figure being drawn (its SVG file).
        path: PathBuf,
        /// What plotters, the font or the PNG encoder reported.
        message: String,
    },
    /// Another failure reported by `reclaim-records`, whose readers this crate uses (a line
    /// of a JSON-lines file that is not a record).
    #[error(transparent)]
    Records(RecordsError),
}

impl From<RecordsError> for ReportError {
    /// `reclaim-records`' file errors become [`ReportError::Io`], naming the same file.
    fn from(error: RecordsError) -> Self {
        match error {
            RecordsError::Io { path, source } => ReportError::Io { path, source },
            other => ReportError::Records(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn a_file_error_of_the_records_names_the_same_file_and_keeps_its_source() {
        let error = ReportError::from(RecordsError::Io {
            path: "run/steps.jsonl".into(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        });
        assert!(
            matches!(&error, ReportError::Io { path, .. } if path.ends_with("steps.jsonl")),
            "{error:?}"
        );
        assert_eq!(error.to_string(), "run/steps.jsonl: input/output error");
        assert_eq!(error.source().unwrap().to_string(), "no such file");
    }

    #[test]
    fn other_record_errors_are_passed_through() {
        let source = serde_json::from_str::<u8>("x").unwrap_err();
        let error = ReportError::from(RecordsError::Record {
            path: "run/steps.jsonl".into(),
            line: 3,
            source,
        });
        assert!(matches!(error, ReportError::Records(_)), "{error:?}");
        assert!(error.to_string().contains("line 3"), "{error}");
    }
}
