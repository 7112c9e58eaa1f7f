//! Per-epoch and per-step metrics, written as JSON lines.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::RecordsError;

/// One line of `metrics.jsonl`: what an epoch did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpochMetrics {
    /// The epoch, counted from 1.
    pub epoch: usize,
    /// Mean training loss over the epoch's batches.
    #[serde(with = "finite_or_text")]
    pub train_loss: f64,
    /// Mean loss on the test split after the epoch.
    #[serde(with = "finite_or_text")]
    pub test_loss: f64,
    /// Fraction of the test split classified correctly, in [0, 1].
    #[serde(with = "finite_or_text")]
    pub test_accuracy: f64,
    /// Wall-clock seconds of the epoch's training (evaluation excluded).
    #[serde(with = "finite_or_text")]
    pub train_seconds: f64,
    /// Wall-clock seconds of the evaluation after it.
    #[serde(with = "finite_or_text")]
    pub evaluation_seconds: f64,
    /// Training samples per second.
    #[serde(with = "finite_or_text")]
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
    /// The mean loss of the steps this line covers (NaN or an infinity when training diverged:
    /// written as the strings `"NaN"`, `"inf"`, `"-inf"`).
    #[serde(with = "finite_or_text")]
    pub loss: f64,
}

/// JSON has no NaN or infinity (serde_json writes them as `null`, which then reads back as an
/// error): finite numbers are written as numbers, the others as the strings `"NaN"`, `"inf"`
/// and `"-inf"`; reading accepts those, numbers, and `null` (as NaN, what older files hold).
/// For `#[serde(with = "reclaim_records::finite_or_text")]` on an `f64` field.
pub mod finite_or_text {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    /// Writes `value` as a number, or as text when it is not finite.
    pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        if value.is_finite() {
            serializer.serialize_f64(*value)
        } else if value.is_nan() {
            serializer.serialize_str("NaN")
        } else if *value > 0.0 {
            serializer.serialize_str("inf")
        } else {
            serializer.serialize_str("-inf")
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumberOrText {
        Number(f64),
        Text(String),
        Null(()),
    }

    /// Reads a number, `"NaN"`, `"inf"`, `"-inf"` or `null` (as NaN).
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        match NumberOrText::deserialize(deserializer)? {
            NumberOrText::Number(value) => Ok(value),
            NumberOrText::Null(()) => Ok(f64::NAN),
            NumberOrText::Text(text) => match text.as_str() {
                "NaN" | "nan" => Ok(f64::NAN),
                "inf" | "+inf" | "Infinity" => Ok(f64::INFINITY),
                "-inf" | "-Infinity" => Ok(f64::NEG_INFINITY),
                other => Err(D::Error::custom(format!(
                    "expected a number, \"NaN\", \"inf\" or \"-inf\", found \"{other}\""
                ))),
            },
        }
    }
}

/// Appends one JSON object per line to a file, flushing after each line.
pub struct JsonLinesWriter {
    path: PathBuf,
    writer: BufWriter<File>,
}

impl JsonLinesWriter {
    /// Creates (truncates) the file.
    pub fn create(path: impl Into<PathBuf>) -> Result<Self, RecordsError> {
        let path = path.into();
        let file = File::create(&path).map_err(|error| RecordsError::io(&path, error))?;
        Ok(JsonLinesWriter {
            path,
            writer: BufWriter::new(file),
        })
    }

    /// Opens the file for appending, creating it if needed.
    pub fn append(path: impl Into<PathBuf>) -> Result<Self, RecordsError> {
        let path = path.into();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|error| RecordsError::io(&path, error))?;
        Ok(JsonLinesWriter {
            path,
            writer: BufWriter::new(file),
        })
    }

    /// Writes `records` to a new file in one go, atomically (temporary file, then rename).
    pub fn write_all_atomically<T: Serialize>(
        path: impl AsRef<Path>,
        records: &[T],
    ) -> Result<(), RecordsError> {
        let mut text = String::new();
        for record in records {
            let line = serde_json::to_string(record).map_err(|source| RecordsError::Json {
                path: path.as_ref().to_path_buf(),
                source,
            })?;
            text.push_str(&line);
            text.push('\n');
        }
        crate::files::write_file_atomically(path.as_ref(), text.as_bytes())
    }

    /// Writes one record as one line and flushes it.
    pub fn write<T: Serialize>(&mut self, record: &T) -> Result<(), RecordsError> {
        let line = serde_json::to_string(record).map_err(|source| RecordsError::Json {
            path: self.path.clone(),
            source,
        })?;
        writeln!(self.writer, "{line}")
            .and_then(|()| self.writer.flush())
            .map_err(|error| RecordsError::io(&self.path, error))
    }
}

/// Reads every line of a JSON-lines file.
///
/// A last line without its newline that does not parse is an unfinished write (the process was
/// killed while appending it) and is left out; any other line that does not parse is
/// [`RecordsError::Record`].
pub fn read_json_lines<T: DeserializeOwned>(
    path: impl AsRef<Path>,
) -> Result<Vec<T>, RecordsError> {
    let path = path.as_ref();
    let text = std::fs::read(path).map_err(|error| RecordsError::io(path, error))?;
    parse_json_lines(path, &text)
}

/// [`read_json_lines`] on bytes already read; `path` names them in errors. Never panics,
/// whatever the bytes (the fuzz target's entry point).
pub fn parse_json_lines<T: DeserializeOwned>(
    path: &Path,
    text: &[u8],
) -> Result<Vec<T>, RecordsError> {
    let unfinished_start = text
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map_or(0, |newline| newline + 1);
    let mut records = Vec::new();
    for (index, line) in text.split(|&byte| byte == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice(line) {
            Ok(record) => records.push(record),
            Err(_) if line.as_ptr() == text[unfinished_start..].as_ptr() => break,
            Err(source) => {
                return Err(RecordsError::Record {
                    path: path.to_path_buf(),
                    line: index + 1,
                    source,
                });
            }
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record serde_json cannot write (a map with keys that are not strings) is an error
    /// naming the file, not a panic, and writes no line.
    #[test]
    fn a_record_that_is_not_json_is_an_error_naming_the_file() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("odd.jsonl");
        let not_json: std::collections::HashMap<(u8, u8), u8> = [((1, 2), 3)].into();
        let mut writer = JsonLinesWriter::create(&path).unwrap();
        let error = writer.write(&not_json).unwrap_err();
        assert!(
            matches!(&error, RecordsError::Json { path: named, .. } if *named == path),
            "{error:?}"
        );
        drop(writer);
        assert_eq!(std::fs::read(&path).unwrap(), b"");
        let error = JsonLinesWriter::write_all_atomically(&path, &[not_json]).unwrap_err();
        assert!(matches!(error, RecordsError::Json { .. }), "{error:?}");
    }

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
    fn non_finite_numbers_are_written_as_text_and_read_back() {
        for loss in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.25] {
            let record = StepMetrics {
                step: 3,
                epoch: 1,
                loss,
            };
            let line = serde_json::to_string(&record).unwrap();
            assert!(!line.contains("null"), "{line}");
            let back: StepMetrics = serde_json::from_str(&line).unwrap();
            assert!(
                back.loss == loss || (back.loss.is_nan() && loss.is_nan()),
                "{line}"
            );
        }
        // What serde_json alone wrote before: `null`.
        let old: StepMetrics = serde_json::from_str(r#"{"step":1,"epoch":1,"loss":null}"#).unwrap();
        assert!(old.loss.is_nan());
        let wrong = serde_json::from_str::<StepMetrics>(r#"{"step":1,"epoch":1,"loss":"much"}"#);
        assert!(wrong.unwrap_err().to_string().contains("much"));
    }

    #[test]
    fn an_unfinished_last_line_is_left_out_but_a_bad_middle_line_is_an_error() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("steps.jsonl");
        std::fs::write(
            &path,
            "{\"step\":1,\"epoch\":1,\"loss\":0.5}\n{\"step\":2,\"ep",
        )
        .unwrap();
        let records = read_json_lines::<StepMetrics>(&path).unwrap();
        assert_eq!(records.len(), 1);
        std::fs::write(
            &path,
            "{\"step\":2,\"ep\n{\"step\":1,\"epoch\":1,\"loss\":0.5}\n",
        )
        .unwrap();
        assert!(read_json_lines::<StepMetrics>(&path).is_err());
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
