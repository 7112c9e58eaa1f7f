//! [`RunIdentity`]: the settings a resumed run must share with the run it continues, stored in
//! every checkpoint and compared field by field before a resume.

use std::fmt;
use std::path::PathBuf;

use reclaim_dataset::FileFingerprint;
use reclaim_loader::Augmentation;
use reclaim_model::ClassifierConfig;
use serde::{Deserialize, Serialize};

use crate::{DataFingerprint, PixelScaling, TrainConfig};

impl TrainConfig {
    /// The settings a resumed run must share with the run it continues, on the dataset
    /// `dataset` identifies.
    pub fn identity(&self, dataset: DataFingerprint) -> RunIdentity {
        RunIdentity {
            model: self.model.clone(),
            augmentation: self.augmentation,
            batch_size: self.batch_size,
            learning_rate: self.learning_rate,
            momentum: self.momentum,
            weight_decay: self.weight_decay,
            seed: self.seed,
            pixel_scaling: self.pixel_scaling,
            training_sample_limit: self.training_sample_limit,
            // One folder however it is spelled (`data`, `./data/`, an absolute path or a link):
            // its canonical form, when it exists.
            data_folder: std::fs::canonicalize(&self.data_folder)
                .unwrap_or_else(|_| self.data_folder.clone()),
            dataset,
        }
    }
}

/// The settings a resumed run must share with the run it continues: stored in every
/// checkpoint ([`CheckpointState::run_identity`](crate::CheckpointState::run_identity)) and
/// compared field by field ([`RunIdentity::differences`]) before a resume. The rest of a
/// [`TrainConfig`] (backend, workers, epochs, progress bar, run folder) may change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunIdentity {
    /// The model and its layer sizes.
    pub model: ClassifierConfig,
    /// The training samples' augmentation (its draws are part of every batch).
    pub augmentation: Augmentation,
    /// Samples per batch.
    pub batch_size: usize,
    /// SGD's learning rate.
    pub learning_rate: f64,
    /// SGD momentum, if any.
    pub momentum: Option<f64>,
    /// L2 weight decay, if any.
    pub weight_decay: Option<f32>,
    /// The seed of the weights and of every epoch's shuffle.
    pub seed: u64,
    /// Pixel scaling.
    pub pixel_scaling: PixelScaling,
    /// The training sample limit, if any.
    pub training_sample_limit: Option<usize>,
    /// The dataset folder, canonical (absolute, links resolved) when it exists, as given
    /// otherwise.
    pub data_folder: PathBuf,
    /// The dataset's files, by size and checksum.
    pub dataset: DataFingerprint,
}

/// One setting on which two runs differ, with both values (as Rust writes them: `Some(0.9)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityDifference {
    /// The setting (`"learning rate"`).
    pub setting: &'static str,
    /// Its value in the checkpoint's run.
    pub checkpoint: String,
    /// Its value in this run.
    pub this_run: String,
}

impl fmt::Display for IdentityDifference {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{} is {} in the checkpoint, {} in this run",
            self.setting, self.checkpoint, self.this_run
        )
    }
}

impl RunIdentity {
    /// Every setting on which `self` (a checkpoint's) and `this_run` differ; empty when a
    /// resume may go ahead.
    pub fn differences(&self, this_run: &RunIdentity) -> Vec<IdentityDifference> {
        // Destructured, so that a field added to `RunIdentity` must be compared here.
        let RunIdentity {
            model,
            augmentation,
            batch_size,
            learning_rate,
            momentum,
            weight_decay,
            seed,
            pixel_scaling,
            training_sample_limit,
            data_folder,
            dataset,
        } = self;
        [
            difference("model", model, &this_run.model),
            difference("augmentation", augmentation, &this_run.augmentation),
            difference("batch size", batch_size, &this_run.batch_size),
            difference("learning rate", learning_rate, &this_run.learning_rate),
            difference("momentum", momentum, &this_run.momentum),
            difference("weight decay", weight_decay, &this_run.weight_decay),
            difference("seed", seed, &this_run.seed),
            difference("pixel scaling", pixel_scaling, &this_run.pixel_scaling),
            difference(
                "training sample limit",
                training_sample_limit,
                &this_run.training_sample_limit,
            ),
            difference("data folder", data_folder, &this_run.data_folder),
            dataset_difference(dataset, &this_run.dataset),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

fn difference<T: PartialEq + fmt::Debug>(
    setting: &'static str,
    checkpoint: &T,
    this_run: &T,
) -> Option<IdentityDifference> {
    (checkpoint != this_run).then(|| IdentityDifference {
        setting,
        checkpoint: format!("{checkpoint:?}"),
        this_run: format!("{this_run:?}"),
    })
}

/// Each file of a fingerprint, named for a message: the four IDX files, or CIFAR's record files
/// split by split (`training file 1`, ..., `test file 1`).
fn named_files(fingerprint: &DataFingerprint) -> Vec<(String, FileFingerprint)> {
    match fingerprint {
        DataFingerprint::Idx(idx) => [
            ("training images", &idx.train_images),
            ("training labels", &idx.train_labels),
            ("test images", &idx.test_images),
            ("test labels", &idx.test_labels),
        ]
        .into_iter()
        .map(|(name, file)| (name.to_string(), file.clone()))
        .collect(),
        DataFingerprint::Cifar(cifar) => {
            let numbered = |split: &str, files: &[FileFingerprint]| {
                let split = split.to_string();
                files
                    .iter()
                    .enumerate()
                    .map(move |(number, file)| {
                        (format!("{split} file {}", number + 1), file.clone())
                    })
                    .collect::<Vec<_>>()
            };
            let mut files = numbered(&format!("{} training", cifar.variant), &cifar.train);
            files.extend(numbered(&format!("{} test", cifar.variant), &cifar.test));
            files
        }
        DataFingerprint::Pack(pack) => vec![("pack".to_string(), pack.pack.clone())],
    }
}

/// The dataset's difference, named by file rather than printed whole (a checksum per file):
/// each file that differs, with its size and checksum on each side (every file, when the two
/// datasets are of different formats or counts of files).
fn dataset_difference(
    checkpoint: &DataFingerprint,
    this_run: &DataFingerprint,
) -> Option<IdentityDifference> {
    let (checkpoint_files, this_run_files) = (named_files(checkpoint), named_files(this_run));
    let describe = |differing: &[(String, FileFingerprint)]| {
        let described: Vec<String> = differing
            .iter()
            .map(|(file, print)| {
                format!("{file} of {} bytes, XXH3 {}", print.bytes, print.xxh3_128)
            })
            .collect();
        described.join(", ")
    };
    let comparable = checkpoint_files.len() == this_run_files.len()
        && checkpoint_files
            .iter()
            .zip(&this_run_files)
            .all(|(before, now)| before.0 == now.0);
    if !comparable {
        return Some(IdentityDifference {
            setting: "dataset",
            checkpoint: describe(&checkpoint_files),
            this_run: describe(&this_run_files),
        });
    }
    let (before, now): (Vec<_>, Vec<_>) = checkpoint_files
        .into_iter()
        .zip(this_run_files)
        .filter(|(before, now)| before.1 != now.1)
        .unzip();
    (!before.is_empty()).then(|| IdentityDifference {
        setting: "dataset",
        checkpoint: describe(&before),
        this_run: describe(&now),
    })
}

#[cfg(test)]
mod tests {
    use reclaim_dataset::ProgressDisplay;

    use super::*;
    use crate::{BackendChoice, DatasetStorage};

    fn config() -> TrainConfig {
        TrainConfig::recipe(BackendChoice::Ndarray, "data".into(), "run".into())
    }

    /// The fingerprint of a small dataset whose first training label is `first_label`.
    fn fingerprint(first_label: u8) -> DataFingerprint {
        let folder = tempfile::tempdir().unwrap();
        crate::test_support::write_tiny_dataset(folder.path(), [2, 2], 3, 2);
        let labels = folder.path().join("train-labels-idx1-ubyte");
        reclaim_dataset::idx::write_idx(&labels, &[3], &[first_label, 1, 2]).unwrap();
        let splits = DatasetStorage::owned().open_splits(folder.path()).unwrap();
        DataFingerprint::Idx(splits.fingerprint())
    }

    /// The fingerprint of a CIFAR-10 folder of one training and one test record.
    fn cifar_fingerprint() -> DataFingerprint {
        use reclaim_dataset::cifar::{CifarRecord, CifarVariant, write_cifar_batch};
        let folder = tempfile::tempdir().unwrap();
        let image = [7u8; 3072];
        for name in ["data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin"]
            .into_iter()
            .chain(["data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"])
        {
            let records = [CifarRecord::cifar10(3, &image)];
            write_cifar_batch(folder.path().join(name), CifarVariant::Cifar10, &records).unwrap();
        }
        let splits = DatasetStorage::owned()
            .open_cifar_splits(folder.path(), CifarVariant::Cifar10)
            .unwrap();
        DataFingerprint::Cifar(splits.fingerprint())
    }

    #[test]
    fn a_dataset_of_another_format_differs_in_every_file() {
        let checkpoint = config().identity(fingerprint(0));
        let this_run = config().identity(cifar_fingerprint());
        let differences = checkpoint.differences(&this_run);
        assert_eq!(differences.len(), 1);
        let text = differences[0].to_string();
        assert!(text.contains("training images of"), "{text}");
        assert!(
            text.contains("CIFAR-10 test file 1 of 3073 bytes"),
            "{text}"
        );
        assert!(
            config()
                .identity(cifar_fingerprint())
                .differences(&this_run)
                .is_empty()
        );
    }

    #[test]
    fn a_changed_augmentation_is_a_difference() {
        let checkpoint = config().identity(fingerprint(0));
        let this_run = TrainConfig {
            augmentation: Augmentation::CIFAR,
            ..config()
        }
        .identity(fingerprint(0));
        let differences = checkpoint.differences(&this_run);
        assert_eq!(differences.len(), 1);
        assert_eq!(differences[0].setting, "augmentation");
    }

    #[test]
    fn the_same_settings_have_no_difference() {
        let config = config();
        let other_run = TrainConfig {
            epochs: 5,
            workers: 3,
            run_folder: "elsewhere".into(),
            progress: ProgressDisplay::Hidden,
            ..config.clone()
        };
        let dataset = fingerprint(0);
        assert_eq!(
            config.identity(dataset.clone()),
            other_run.identity(dataset.clone())
        );
        assert!(
            config
                .identity(dataset.clone())
                .differences(&other_run.identity(dataset.clone()))
                .is_empty()
        );
        // One existing folder, spelled three ways.
        let folder = tempfile::tempdir().unwrap();
        let data = folder.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let spelled = |data_folder: PathBuf| {
            TrainConfig {
                data_folder,
                ..config.clone()
            }
            .identity(dataset.clone())
        };
        assert_eq!(spelled(data.clone()), spelled(data.join(".")));
        assert_eq!(
            spelled(data.clone()),
            spelled(folder.path().join("./data/"))
        );
    }

    #[test]
    fn each_differing_setting_is_named_with_both_values() {
        let checkpoint = config().identity(fingerprint(0));
        let this_run = TrainConfig {
            learning_rate: 0.5,
            momentum: Some(0.9),
            data_folder: "other-data".into(),
            ..config()
        }
        .identity(fingerprint(0));
        let differences = checkpoint.differences(&this_run);
        let text: Vec<String> = differences.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "learning rate is 0.01 in the checkpoint, 0.5 in this run",
                "momentum is None in the checkpoint, Some(0.9) in this run",
                r#"data folder is "data" in the checkpoint, "other-data" in this run"#,
            ]
        );
    }

    #[test]
    fn a_changed_dataset_is_a_difference() {
        let checkpoint = config().identity(fingerprint(0));
        let this_run = config().identity(fingerprint(9));
        let differences = checkpoint.differences(&this_run);
        assert_eq!(differences.len(), 1);
        assert_eq!(differences[0].setting, "dataset");
        // Only the file that changed is named.
        let text = differences[0].to_string();
        assert!(
            text.starts_with("dataset is training labels of 11 bytes, XXH3 "),
            "{text}"
        );
        assert!(!text.contains("images"), "{text}");
    }

    #[test]
    fn the_identity_round_trips_through_json() {
        let identity = TrainConfig {
            weight_decay: Some(1e-4),
            training_sample_limit: Some(640),
            ..config()
        }
        .identity(fingerprint(0));
        let json = serde_json::to_string(&identity).unwrap();
        assert_eq!(
            serde_json::from_str::<RunIdentity>(&json).unwrap(),
            identity
        );
    }
}
