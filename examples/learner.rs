//! Trains the MNIST MLP through burn-train's `Learner`, fed by Reclaim's loader, with the PyTorch
//! recipe (2 epochs, SGD lr 0.01, batch 64, shuffled; NdArray backend), then releases
//! everything in the PyTorch recipe's order and prints the release table and the accuracy.
//!
//! ```sh
//! cargo run --release --features learner --example learner
//! ```
//!
//! burn-train writes its metrics under `runs/example-learner/` (emptied first: the example owns
//! that folder).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use burn::data::dataloader::DataLoader;
use burn::optim::SgdConfig;
use burn::tensor::Device;
use reclaim::dataset::{Family, ImageDataset, Split, default_data_folder};
use reclaim::learner::burn_train::Learner;
use reclaim::learner::{LearnerClassifier, classification_training, epoch_means, trained_model};
use reclaim::loader::{BurnLoader, LoaderConfig, PixelFormat, Sampling, TensorBatch};
use reclaim::memory::{CountingAllocator, MemorySnapshot};
use reclaim::model::{Classifier, MlpConfig, free_orphaned_autodiff_nodes};
use reclaim::train::{ReleaseReport, ReleaseStage};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const RUN_FOLDER: &str = "runs/example-learner";

fn main() -> anyhow::Result<()> {
    // A file truncated under the map then stops the run with an error instead of a SIGBUS
    // death (a mitigation for a broken promise, not a licence to break it).
    reclaim::dataset::install_sigbus_guard()?;
    #[allow(deprecated)] // NdArray, the design's reference CPU path, is deprecated in Burn 0.22.
    let device = Device::ndarray();
    let data_folder = default_data_folder(None, Family::Mnist).canonicalize()?;
    let run_folder = fresh_run_folder()?;
    let measure = || MemorySnapshot::take_under(Some(&device), &data_folder);
    let mut report = ReleaseReport::with_capacity(7);
    report.record(ReleaseStage::BeforeLoading, measure());

    let (train_set, test_set) = open_mapped_splits(&data_folder)?;
    let loaders = Loaders::new(&train_set, &test_set, &device)?;
    let network = train(&loaders, &run_folder, &device)?;
    report.record(ReleaseStage::Trained, measure());

    drop(loaders); // the loaders: their pooled buffers and order vectors
    report.record(ReleaseStage::LoaderScopeEnded, measure());
    drop((train_set, test_set)); // the last owners of the datasets: the mappings go
    report.record(ReleaseStage::DatasetDropped, measure());
    device.memory_cleanup();
    report.record(ReleaseStage::DeviceMemoryCleanedUp, measure());
    drop(network);
    report.record(ReleaseStage::ModelDropped, measure());
    // The parameters' nodes in Burn's autodiff graph outlive the model until a backward pass.
    free_orphaned_autodiff_nodes(&device);
    device.memory_cleanup(); // after the last owner is gone (docs/memory.md)
    report.record(ReleaseStage::FinalCleanup, measure());

    print!("{}", report.to_markdown());
    let accuracy = epoch_means(&run_folder, "Accuracy")?;
    let final_accuracy = accuracy.valid.last().copied().unwrap_or(f64::NAN);
    println!("test accuracy after the last epoch: {final_accuracy:.2}%");
    Ok(())
}

/// `runs/example-learner`, emptied.
fn fresh_run_folder() -> anyhow::Result<PathBuf> {
    let folder = PathBuf::from(RUN_FOLDER);
    if folder.exists() {
        std::fs::remove_dir_all(&folder)?;
    }
    std::fs::create_dir_all(&folder)?;
    Ok(folder)
}

/// Both splits of the vendored MNIST, memory-mapped and shared with the loaders.
fn open_mapped_splits(folder: &Path) -> anyhow::Result<(Arc<ImageDataset>, Arc<ImageDataset>)> {
    // SAFETY: nothing modifies the vendored MNIST files (or their decompressed cache) while
    // this program maps them.
    let train_set = unsafe { ImageDataset::open_mapped(folder, Split::Train)? };
    // SAFETY: as above.
    let test_set = unsafe { ImageDataset::open_mapped(folder, Split::Test)? };
    Ok((Arc::new(train_set), Arc::new(test_set)))
}

/// The training loader (the PyTorch recipe's: batches of 64, shuffled) and the test loader.
struct Loaders {
    training: Arc<dyn DataLoader<TensorBatch<2>>>,
    validation: Arc<dyn DataLoader<TensorBatch<2>>>,
}

impl Loaders {
    fn new(
        train_set: &Arc<ImageDataset>,
        test_set: &Arc<ImageDataset>,
        device: &Device,
    ) -> anyhow::Result<Self> {
        // The PyTorch recipe's pixels: `ToTensor()`, in [0, 1].
        let training = LoaderConfig {
            sampling: Sampling::Shuffled,
            num_workers: 2,
            class_count: Some(10),
            pixel_format: PixelFormat::UnitF32,
            ..LoaderConfig::mnist_training(42)
        };
        let validation = LoaderConfig {
            num_workers: 2,
            class_count: Some(10),
            pixel_format: PixelFormat::UnitF32,
            ..LoaderConfig::mnist_evaluation()
        };
        let training =
            BurnLoader::<_, 2>::from_arc(Arc::clone(train_set), training, device.clone())?;
        let validation =
            BurnLoader::<_, 2>::from_arc(Arc::clone(test_set), validation, device.clone())?;
        Ok(Self {
            training: Arc::new(training),
            validation: Arc::new(validation),
        })
    }
}

/// Two epochs of SGD (lr 0.01) through the `Learner`; the trained network.
fn train(loaders: &Loaders, run_folder: &Path, device: &Device) -> anyhow::Result<Classifier> {
    let network = MlpConfig::new().init_seeded(device, 42);
    let learner = Learner::new(
        LearnerClassifier::new(network),
        SgdConfig::new().init(),
        0.01,
    );
    let result = classification_training(
        run_folder,
        Arc::clone(&loaders.training),
        Arc::clone(&loaders.validation),
    )
    .num_epochs(2)
    .launch(learner);
    Ok(trained_model(result)?.into_network())
}
