//! burn-train's `Learner` fed by Reclaim's loader: a short MNIST run, loader errors, and two
//! devices through burn-train's multi-device strategy.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use burn::data::dataloader::DataLoader;
use burn::optim::SgdConfig;
use burn::tensor::Device;
use burn_train::{ExecutionStrategy, Learner, LearningResult, MultiDeviceOptim};
use reclaim_dataset::{Family, ImageDataset, Split, default_data_folder};
use reclaim_learner::{
    LearnerClassifier, LearnerError, classification_training, epoch_means, trained_model,
};
use reclaim_loader::{
    BurnLoader, ImageShape, ImageSource, LoaderConfig, LoaderError, Order, Sampling, TensorBatch,
};
use reclaim_model::MlpConfig;

type Loader = Arc<dyn DataLoader<TensorBatch<2>>>;

/// The vendored MNIST folder of the workspace.
fn mnist_folder() -> PathBuf {
    let vendored = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/mnist");
    default_data_folder(Some(vendored.as_path()), Family::Mnist)
}

/// A loader over the first `count` samples of a split of the vendored MNIST, read into memory.
fn mnist_loader(split: Split, count: usize, order: Order, device: &Device) -> Loader {
    let dataset = ImageDataset::open_owned(mnist_folder(), split).expect("the vendored MNIST");
    let config = LoaderConfig {
        sampling: Sampling::Subset {
            indices: (0..count).collect(),
            order,
        },
        class_count: Some(10),
        num_workers: 1,
        ..LoaderConfig::mnist_training(11)
    };
    Arc::new(BurnLoader::<_, 2>::new(dataset, config, device.clone()).expect("a valid loader"))
}

fn learner(device: &Device, learning_rate: f64) -> Learner<LearnerClassifier> {
    let network = MlpConfig::new().init_seeded(device, 42);
    Learner::new(
        LearnerClassifier::new(network),
        SgdConfig::new().init(),
        learning_rate,
    )
}

/// Every file under `folder`, as paths relative to it.
fn files_under(folder: &Path) -> BTreeSet<String> {
    let mut files = BTreeSet::new();
    let mut pending = vec![folder.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).expect("a readable folder") {
            let path = entry.expect("a readable entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(folder).expect("under the folder");
                files.insert(relative.to_string_lossy().into_owned());
            }
        }
    }
    files
}

#[test]
fn a_short_mnist_run_learns_and_leaves_its_metrics() {
    let device = Device::flex();
    let folder = tempfile::tempdir().unwrap();
    let training = mnist_loader(Split::Train, 640, Order::Shuffled, &device);
    let validation = mnist_loader(Split::Test, 200, Order::AsGiven, &device);

    let result = classification_training(folder.path(), training, validation)
        .num_epochs(2)
        .launch(learner(&device, 0.05));
    trained_model(result).expect("the run finishes");

    let loss = epoch_means(folder.path(), "Loss").unwrap();
    let accuracy = epoch_means(folder.path(), "Accuracy").unwrap();
    assert_eq!(loss.train.len(), 2, "{loss:?}");
    assert!(loss.train[1] < loss.train[0], "the loss falls: {loss:?}");
    assert!(loss.valid[1] < loss.valid[0], "the loss falls: {loss:?}");
    assert!(
        accuracy.valid[1] > 50.0,
        "well above chance (10%): {accuracy:?}"
    );

    let expected: BTreeSet<String> = ["train", "valid"]
        .iter()
        .flat_map(|split| {
            (1..=2).flat_map(move |epoch| {
                ["Accuracy", "Loss"].map(|metric| format!("{split}/epoch-{epoch}/{metric}.log"))
            })
        })
        .collect();
    assert_eq!(files_under(folder.path()), expected);
}

/// `len` one-colour images labelled `index % 10`, whose sample `fails_at` cannot be read.
#[derive(Debug)]
struct FailsAt {
    len: usize,
    fails_at: usize,
}

impl ImageSource for FailsAt {
    fn len(&self) -> usize {
        self.len
    }

    fn image_shape(&self) -> ImageShape {
        ImageShape::MNIST
    }

    fn read_sample(&self, index: usize, pixels: &mut [u8]) -> Result<i64, LoaderError> {
        if index == self.fails_at {
            return Err(LoaderError::Source {
                index,
                source: format!("sector of sample {index} unreadable").into(),
            });
        }
        let label = index % 10;
        pixels.fill(u8::try_from(label * 25).unwrap());
        Ok(i64::try_from(label).unwrap())
    }
}

fn failing_loader(len: usize, fails_at: usize, num_workers: usize, device: &Device) -> Loader {
    let config = LoaderConfig {
        batch_size: 16,
        sampling: Sampling::Sequential,
        num_workers,
        ..LoaderConfig::default()
    };
    let source = FailsAt { len, fails_at };
    Arc::new(BurnLoader::<_, 2>::new(source, config, device.clone()).unwrap())
}

fn assert_stopped_by_sample(result: LearningResult<LearnerClassifier>, sample: usize) {
    let error = trained_model(result).expect_err("the run stops on the loader's error");
    assert!(
        matches!(error, LearnerError::LoaderFailed { .. }),
        "{error:?}"
    );
    let loader_error = error.loader_error().expect("Reclaim's error is kept");
    assert!(
        matches!(loader_error, LoaderError::Source { index, .. } if *index == sample),
        "{loader_error:?}"
    );
    let chain = std::iter::successors(Some(&error as &dyn std::error::Error), |cause| {
        cause.source()
    })
    .map(ToString::to_string)
    .collect::<Vec<_>>()
    .join(": ");
    assert!(
        chain.contains(&format!("sector of sample {sample} unreadable")),
        "{chain}"
    );
}

#[test]
fn a_training_loader_error_ends_the_run_without_a_panic_and_is_returned() {
    let device = Device::flex();
    for num_workers in [0, 2] {
        let folder = tempfile::tempdir().unwrap();
        let training = failing_loader(100, 37, num_workers, &device);
        let validation = failing_loader(20, usize::MAX, 0, &device);
        let result = classification_training(folder.path(), training, validation)
            .num_epochs(3)
            .launch(learner(&device, 0.01));
        assert_stopped_by_sample(result, 37);
        // Training stopped in the third batch of epoch 1: no validation, no second epoch.
        assert!(!folder.path().join("valid").exists());
        assert!(!folder.path().join("train/epoch-2").exists());
    }
}

#[test]
fn a_validation_loader_error_ends_the_run_after_the_first_training_epoch() {
    let device = Device::flex();
    let folder = tempfile::tempdir().unwrap();
    let training = failing_loader(64, usize::MAX, 1, &device);
    let validation = failing_loader(40, 5, 1, &device);
    let result = classification_training(folder.path(), training, validation)
        .num_epochs(2)
        .launch(learner(&device, 0.01));
    assert_stopped_by_sample(result, 5);
    assert!(!folder.path().join("train/epoch-2").exists());
}

/// burn-train's multi-device strategy with two CPU devices: the training loader is split with
/// `DataLoader::slice`, one part per device, and each step's gradients are summed on the first.
#[test]
fn two_cpu_devices_train_through_the_multi_device_strategy() {
    #[allow(deprecated)] // NdArray is deprecated in Burn 0.22 in favour of Flex, still supported.
    let devices = vec![Device::flex(), Device::ndarray()];
    let folder = tempfile::tempdir().unwrap();
    let training = mnist_loader(Split::Train, 640, Order::Shuffled, &devices[0]);
    let validation = mnist_loader(Split::Test, 200, Order::AsGiven, &devices[0]);
    let strategy = ExecutionStrategy::multi(devices.clone(), MultiDeviceOptim::OptimMainDevice);
    let result = classification_training(folder.path(), training, validation)
        .with_training_strategy(strategy.into())
        .num_epochs(2)
        .launch(learner(&devices[0], 0.05));
    trained_model(result).expect("the run finishes");

    let loss = epoch_means(folder.path(), "Loss").unwrap();
    let accuracy = epoch_means(folder.path(), "Accuracy").unwrap();
    assert!(loss.train[1] < loss.train[0], "the loss falls: {loss:?}");
    assert!(
        accuracy.valid[1] > 50.0,
        "well above chance (10%): {accuracy:?}"
    );
}
