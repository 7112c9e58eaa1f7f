//! The release, measured: after the loader's scope, the dataset, the device pool and the model
//! are gone, live heap bytes are back to their level before loading and no dataset mapping
//! remains. Its own binary without libtest's harness (`harness = false` in `Cargo.toml`), so
//! that no other thread of the process allocates while it measures: libtest's main thread
//! allocates as it waits on its channel and timers, at moments that depend on the scheduler,
//! which made the exact comparison flaky on a loaded machine.
//!
//! Nine runs of `reclaim_train::train`, one after the other, a pairwise cover of five factors
//! ([`MATRIX`]): every pair of two factors' values that can run together meets in at least one
//! run. Backend: NdArray, Flex; model and step: the MLP's fused step, the MLP through Burn's
//! dense step, the CNN; storage: mapped, owned; loader workers: 0, 2; dataset: MNIST (3,200
//! training images), a generated CIFAR-10 folder, a pack of generated photos. NdArray does not
//! train the CNN (reclaim-train refuses it) and the fused step trains on MNIST only. Then a tenth run
//! goes through burn-train's `Learner`: Flex, the MLP, MNIST mapped, 2 workers.
//!
//! Each run's baseline is taken at its own start, so an earlier run's leftovers, if any, could
//! not hide a later one's. wgpu's release (nothing in use on the device after the final
//! cleanup) is in `wgpu.rs`: its pool is not the heap, and the test needs the `wgpu` feature.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use burn::data::dataloader::DataLoader;
use burn::optim::SgdConfig;
use burn::tensor::Device;
use reclaim_learner::burn_train::Learner;
use reclaim_learner::{LearnerClassifier, classification_training, trained_model};

use reclaim_dataset::cifar::{CifarRecord, CifarVariant, write_cifar_batch};
use reclaim_dataset::pack::{ImageSize, PackOptions, pack_image_folder};
use reclaim_dataset::{
    DatasetName, Family, ImageDataset, PackSplits, Split, StorageKind, default_data_folder,
};
use reclaim_loader::{
    Augmentation, BurnLoader, ImageSource, LoaderConfig, Order, Sampling, TensorBatch,
};
use reclaim_memory::{
    CountingAllocator, live_heap_bytes, mapped_bytes_under, wait_for_settled_process,
};
use reclaim_model::{MlpConfig, ModelKind, free_orphaned_autodiff_nodes};
use reclaim_train::{
    BackendChoice, DatasetStorage, PackStatistics, PixelScaling, ProgressDisplay, ReleaseStage,
    StepKernel, TrainConfig, TrainingDataset, model_for_dataset, model_for_images,
    photo_augmentation, train,
};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn main() {
    let folders = Datasets::generate();
    for run in MATRIX {
        let config = run.config(&folders);
        let left_over = release_gives_back_every_heap_byte_and_unmaps_the_dataset(&config);
        println!(
            "release_gives_back_every_heap_byte_and_unmaps_the_dataset ({run}) ... ok \
             (live heap after release minus before loading: {left_over} B)"
        );
    }
    // burn-train keeps 40 B for the life of the process from its first run on (not broken down
    // further): a first run, unmeasured, makes it before the measured one's baseline.
    learner_run_heap_left_over();
    let left_over = learner_run_heap_left_over();
    assert!(
        left_over <= 0,
        "{left_over} heap bytes not given back by the Learner's run"
    );
    println!(
        "the_learner_gives_back_every_heap_byte_and_unmaps_the_dataset (flex, MLP, burn-train's \
         Learner, MNIST mapped, 2 workers) ... ok (live heap after release minus before: \
         {left_over} B)"
    );
}

/// The model and the step a run trains with.
#[derive(Clone, Copy, Debug)]
enum ModelAndStep {
    /// The MLP through reclaim-model's fused step (MNIST, pixels in `0..=1`).
    MlpFused,
    /// The MLP through Burn's autodiff (standardized pixels, the dataset's augmentation).
    MlpDense,
    /// The CNN through Burn's autodiff (standardized pixels, the dataset's augmentation).
    Cnn,
}

/// The dataset a run reads.
#[derive(Clone, Copy, Debug)]
enum Data {
    /// The vendored MNIST, its first 3,200 training images.
    Mnist,
    /// A generated CIFAR-10 folder ([`write_cifar10`]).
    Cifar10,
    /// A pack of generated photos ([`write_pack`]).
    Pack,
}

/// One configuration of the matrix.
#[derive(Clone, Copy, Debug)]
struct MatrixRun {
    backend: BackendChoice,
    model: ModelAndStep,
    mapped: bool,
    workers: usize,
    data: Data,
}

const fn run(
    backend: BackendChoice,
    model: ModelAndStep,
    mapped: bool,
    workers: usize,
    data: Data,
) -> MatrixRun {
    MatrixRun {
        backend,
        model,
        mapped,
        workers,
        data,
    }
}

/// A pairwise cover: every pair of two factors' values that can run together meets in at
/// least one run (NdArray does not train the CNN, and the fused step trains on MNIST only: it
/// needs pixels in `0..=1` with a background of zeros).
const MATRIX: [MatrixRun; 9] = {
    use BackendChoice::{Flex, Ndarray};
    use Data::{Cifar10, Mnist, Pack};
    use ModelAndStep::{Cnn, MlpDense, MlpFused};
    [
        run(Ndarray, MlpFused, true, 2, Mnist),
        run(Flex, MlpDense, false, 0, Mnist),
        run(Flex, Cnn, true, 2, Pack),
        run(Ndarray, MlpDense, false, 2, Cifar10),
        run(Ndarray, MlpDense, true, 0, Pack),
        run(Flex, Cnn, true, 0, Cifar10),
        run(Flex, MlpFused, false, 0, Mnist),
        run(Flex, Cnn, false, 0, Mnist),
        run(Flex, MlpDense, false, 0, Pack),
    ]
};

impl std::fmt::Display for MatrixRun {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let storage = if self.mapped { "mapped" } else { "owned" };
        write!(
            formatter,
            "{}, {:?}, {:?} {storage}, {} workers",
            self.backend, self.model, self.data, self.workers
        )
    }
}

/// The generated datasets, made once for the whole matrix.
struct Datasets {
    cifar10: tempfile::TempDir,
    pack: tempfile::TempDir,
    runs: tempfile::TempDir,
}

impl Datasets {
    fn generate() -> Self {
        let cifar10 = tempfile::tempdir().unwrap();
        write_cifar10(cifar10.path());
        let pack = tempfile::tempdir().unwrap();
        write_pack(pack.path());
        Datasets {
            cifar10,
            pack,
            runs: tempfile::tempdir().unwrap(),
        }
    }

    fn pack_file(&self) -> PathBuf {
        self.pack.path().join("photos.rpack")
    }
}

impl MatrixRun {
    fn config(&self, folders: &Datasets) -> TrainConfig {
        let kind = match self.model {
            ModelAndStep::MlpFused | ModelAndStep::MlpDense => ModelKind::Mlp,
            ModelAndStep::Cnn => ModelKind::Cnn,
        };
        let fused = matches!(self.model, ModelAndStep::MlpFused);
        let (dataset, data_folder, model, augmentation, pixel_scaling) = match self.data {
            Data::Mnist => (
                DatasetName::Mnist.into(),
                default_data_folder(None, Family::Mnist),
                model_for_dataset(DatasetName::Mnist, kind),
                Augmentation::NONE,
                PixelScaling::UnitRange,
            ),
            Data::Cifar10 => (
                DatasetName::Cifar10.into(),
                folders.cifar10.path().to_path_buf(),
                model_for_dataset(DatasetName::Cifar10, kind),
                Augmentation::CIFAR,
                PixelScaling::Cifar10Standardized,
            ),
            Data::Pack => {
                let opened = PackSplits::open_owned(folders.pack_file()).unwrap();
                let shape = ImageSource::image_shape(&opened.train);
                let statistics =
                    PackStatistics::from_manifest(&opened.manifest().statistics).unwrap();
                let classes = opened.train.number_of_classes();
                (
                    TrainingDataset::Pack,
                    folders.pack_file(),
                    model_for_images(shape, classes, kind),
                    photo_augmentation(shape),
                    PixelScaling::PackStandardized(statistics),
                )
            }
        };
        let storage = if self.mapped {
            // SAFETY: the vendored MNIST and the test's own generated files are not changed by
            // anything while a run maps them.
            unsafe { DatasetStorage::mapped() }
        } else {
            DatasetStorage::owned()
        };
        let run_folder = folders.runs.path().join(format!(
            "run-{}-{:?}-{:?}-{}-{}",
            self.backend, self.model, self.data, self.mapped, self.workers
        ));
        TrainConfig {
            dataset,
            model,
            augmentation,
            pixel_scaling,
            training_sample_limit: matches!(self.data, Data::Mnist).then_some(3200),
            batch_size: if matches!(self.data, Data::Mnist) {
                64
            } else {
                16
            },
            epochs: 1,
            workers: self.workers,
            step_kernel: if fused {
                StepKernel::Fused
            } else {
                StepKernel::Dense
            },
            storage,
            progress: ProgressDisplay::Hidden,
            ..TrainConfig::recipe(self.backend, data_folder, run_folder)
        }
    }
}

/// A CIFAR-10 folder in `folder`: five training files of 16 records and a test file of 16, in
/// the real record format (a label byte, then 3 x 32 x 32 pixels, channel-major).
fn write_cifar10(folder: &Path) {
    std::fs::create_dir_all(folder).unwrap();
    let names = (1..=5)
        .map(|batch| format!("data_batch_{batch}.bin"))
        .chain(["test_batch.bin".to_string()]);
    for (file, name) in names.enumerate() {
        let pixels: Vec<Vec<u8>> = (0..16)
            .map(|index| {
                (0..3 * 1024)
                    .map(|pixel| ((pixel * 7 + index * 31 + file * 3) % 256) as u8)
                    .collect()
            })
            .collect();
        let records: Vec<CifarRecord<'_>> = pixels
            .iter()
            .enumerate()
            .map(|(index, pixels)| CifarRecord::cifar10((index % 10) as u8, pixels))
            .collect();
        write_cifar_batch(folder.join(name), CifarVariant::Cifar10, &records).unwrap();
    }
}

/// A pack of 120 generated PNGs (3 classes, 20 x 18 RGB, packed at 16 x 16; 32 a class for
/// training, 8 for testing) in `folder`, as `photos.rpack`.
fn write_pack(folder: &Path) {
    for (split, count) in [("train", 32), ("test", 8)] {
        for (class, channel) in [("blue", 2usize), ("green", 1), ("red", 0)] {
            let class_folder = folder.join("photos").join(split).join(class);
            std::fs::create_dir_all(&class_folder).unwrap();
            for index in 0..count {
                let image = image::RgbImage::from_fn(20, 18, |x, y| {
                    let mut pixel = [((x + y + index) % 50) as u8; 3];
                    pixel[channel] = 200;
                    image::Rgb(pixel)
                });
                image
                    .save(class_folder.join(format!("{index}.png")))
                    .unwrap();
            }
        }
    }
    let options = PackOptions {
        progress: ProgressDisplay::Hidden,
        ..PackOptions::new(ImageSize::new(16, 16).unwrap())
    };
    pack_image_folder(
        &folder.join("photos"),
        &folder.join("photos.rpack"),
        &options,
        &AtomicBool::new(false),
    )
    .unwrap();
}

/// burn-train's `Learner` fed by Reclaim's loader over the mapped MNIST (2 workers for the
/// training split, 1,280 samples; 256 for validation), one epoch on Flex. Once the result, the
/// model, both loaders and both datasets are dropped, the live heap is back at its reading
/// before the datasets were opened (what this returns: live heap bytes after minus before) and
/// no page of MNIST is mapped (asserted here).
fn learner_run_heap_left_over() -> i64 {
    let mnist = default_data_folder(None, Family::Mnist)
        .canonicalize()
        .unwrap();
    let metrics = tempfile::tempdir().unwrap();
    let device = Device::flex();
    wait_for_settled_process();
    let before = live_heap_bytes().unwrap();
    {
        let loader = |split: Split, count: usize, workers: usize| {
            // SAFETY: the vendored MNIST is not changed by anything while this test runs.
            let dataset = unsafe { ImageDataset::open_mapped(&mnist, split) }.unwrap();
            let config = LoaderConfig {
                sampling: Sampling::Subset {
                    indices: (0..count).collect(),
                    order: Order::Shuffled,
                },
                class_count: Some(10),
                num_workers: workers,
                ..LoaderConfig::mnist_training(7)
            };
            let loader: Arc<dyn DataLoader<TensorBatch<2>>> =
                Arc::new(BurnLoader::<_, 2>::new(dataset, config, device.clone()).unwrap());
            loader
        };
        let training = loader(Split::Train, 1280, 2);
        let validation = loader(Split::Test, 256, 0);
        assert!(
            mapped_bytes_under(&mnist) >= 50_000_000,
            "both splits mapped"
        );
        let learner = Learner::new(
            LearnerClassifier::new(MlpConfig::new().init_seeded(&device, 42)),
            SgdConfig::new().init(),
            0.05,
        );
        let result = classification_training(metrics.path(), training, validation)
            .num_epochs(1)
            .launch(learner);
        let model = trained_model(result).unwrap();
        drop(model);
        // The model's parameters' nodes in Burn's autodiff graph outlive it until a backward
        // pass sweeps them: 3,872 B for the MLP when this sweep is left out.
        free_orphaned_autodiff_nodes(&device);
    }
    wait_for_settled_process();
    assert_eq!(
        mapped_bytes_under(&mnist),
        0,
        "no page of MNIST left mapped"
    );
    let after = live_heap_bytes().unwrap();
    after as i64 - before as i64
}

fn release_gives_back_every_heap_byte_and_unmaps_the_dataset(config: &TrainConfig) -> i64 {
    let run = train(config).unwrap();
    assert_eq!(
        run.step_kernel, config.step_kernel,
        "the step asked for ran"
    );
    let steps: Vec<ReleaseStage> = run.release.steps.iter().map(|step| step.step).collect();
    assert_eq!(
        steps,
        [
            ReleaseStage::BeforeLoading,
            ReleaseStage::Trained,
            ReleaseStage::LoaderScopeEnded,
            ReleaseStage::DatasetDropped,
            ReleaseStage::DeviceMemoryCleanedUp,
            ReleaseStage::ModelDropped,
            ReleaseStage::FinalCleanup
        ]
    );
    // (Each stage's phrase, as `release.json` and `release.md` write it, is checked beside
    // `ReleaseStage`.)
    let memory = |stage: ReleaseStage| *run.release.memory_at(stage).unwrap();
    // The four MNIST files (55 MB decompressed), or the pack, are mapped while training, where
    // they are mapped ...
    if config.storage.kind() == StorageKind::Mapped {
        let data_bytes = match config.dataset {
            TrainingDataset::Pack => std::fs::metadata(&config.data_folder).unwrap().len(),
            TrainingDataset::Catalogue(DatasetName::Mnist) => 50_000_000,
            // The record files: 96 records of 3,073 bytes.
            TrainingDataset::Catalogue(_) => 96 * 3073,
        };
        assert!(memory(ReleaseStage::Trained).mapped_dataset_bytes >= data_bytes);
    } else {
        assert_eq!(memory(ReleaseStage::Trained).mapped_dataset_bytes, 0);
    }
    // ... and unmapped once the dataset is dropped.
    assert_eq!(memory(ReleaseStage::DatasetDropped).mapped_dataset_bytes, 0);
    let before = memory(ReleaseStage::BeforeLoading).live_heap_bytes.unwrap();
    let trained = memory(ReleaseStage::Trained).live_heap_bytes.unwrap();
    assert!(
        trained > before,
        "training holds heap: {trained} vs {before}"
    );
    let left_over = run.release.heap_bytes_left_over().unwrap();
    assert!(
        left_over <= 0,
        "{left_over} heap bytes not given back\n{}",
        run.release.to_markdown()
    );
    left_over
}
