//! Trains the CNN on a folder of photos through burn-train's `Learner`, fed by Reclaim's loader
//! reading the folder's pack in place (Flex backend): the folder is packed first (or the pack
//! reused), the CNN sized to the pack's images and classes, pixels standardized with the pack's
//! own statistics, SGD with momentum; then everything is released and the release table and
//! the accuracy are printed.
//!
//! ```sh
//! cargo run --release --features learner --example learner_photos -- FOLDER [HxW] [EPOCHS]
//! ```
//!
//! `FOLDER` is laid out as torchvision's `ImageFolder` (see `reclaim pack --help`); `HxW`
//! defaults to 64x64 and `EPOCHS` to 3. burn-train writes its metrics under
//! `runs/example-learner-photos/` (emptied first: the example owns that folder).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Context as _;
use burn::data::dataloader::DataLoader;
use burn::optim::SgdConfig;
use burn::optim::momentum::MomentumConfig;
use burn::tensor::Device;
use reclaim::dataset::pack::{ImageSize, PackOptions, pack_image_folder_cached};
use reclaim::dataset::{PackDataset, PackSplits};
use reclaim::learner::burn_train::Learner;
use reclaim::learner::{LearnerClassifier, classification_training, epoch_means, trained_model};
use reclaim::loader::{BurnLoader, ImageSource, LoaderConfig, TensorBatch};
use reclaim::memory::{CountingAllocator, FreedMemoryReuse, MemorySnapshot};
use reclaim::model::{Classifier, ModelKind, free_orphaned_autodiff_nodes};
use reclaim::train::{
    PackStatistics, PixelScaling, ReleaseReport, ReleaseStage, model_for_images, photo_augmentation,
};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const RUN_FOLDER: &str = "runs/example-learner-photos";

fn main() -> anyhow::Result<()> {
    reclaim::dataset::install_sigbus_guard()?;
    let mut arguments = std::env::args_os().skip(1);
    let folder = PathBuf::from(arguments.next().context("usage: FOLDER [HxW] [EPOCHS]")?);
    let size: ImageSize = match arguments.next() {
        Some(size) => size.to_string_lossy().parse()?,
        None => ImageSize::new(64, 64).context("64 x 64 is a valid size")?,
    };
    let epochs: usize = match arguments.next() {
        Some(epochs) => epochs.to_string_lossy().parse()?,
        None => 3,
    };
    let device = Device::flex();
    let packed =
        pack_image_folder_cached(&folder, &PackOptions::new(size), &AtomicBool::new(false))?;
    println!(
        "pack {}: {} training and {} test images, {} classes, {} skipped",
        packed.path.display(),
        packed.train_records,
        packed.test_records,
        packed.classes,
        packed.skipped.len()
    );
    let run_folder = fresh_run_folder()?;
    let measure = || MemorySnapshot::take_under(Some(&device), &packed.path);
    let mut report = ReleaseReport::with_capacity(7);
    report.record(ReleaseStage::BeforeLoading, measure());

    // SAFETY: packs are only ever replaced by rename, never written in place, and nothing else
    // writes this one while the example maps it.
    let pack = unsafe { PackSplits::open_mapped(&packed.path)? };
    let loaders = Loaders::new(pack, &device)?;
    let network = train(&loaders, &run_folder, &device, epochs)?;
    report.record(ReleaseStage::Trained, measure());

    drop(loaders); // the loaders, and with them the last owners of the pack: its map goes
    report.record(ReleaseStage::LoaderScopeEnded, measure());
    report.record(ReleaseStage::DatasetDropped, measure());
    device.memory_cleanup();
    report.record(ReleaseStage::DeviceMemoryCleanedUp, measure());
    drop(network);
    report.record(ReleaseStage::ModelDropped, measure());
    // The parameters' nodes in Burn's autodiff graph outlive the model until a backward pass.
    free_orphaned_autodiff_nodes(&device);
    device.memory_cleanup();
    report.record(ReleaseStage::FinalCleanup, measure());

    print!("{}", report.to_markdown());
    let accuracy = epoch_means(&run_folder, "Accuracy")?;
    let final_accuracy = accuracy.valid.last().copied().unwrap_or(f64::NAN);
    println!("test accuracy after the last epoch: {final_accuracy:.2}%");
    Ok(())
}

/// `runs/example-learner-photos`, emptied.
fn fresh_run_folder() -> anyhow::Result<PathBuf> {
    let folder = PathBuf::from(RUN_FOLDER);
    if folder.exists() {
        std::fs::remove_dir_all(&folder)?;
    }
    std::fs::create_dir_all(&folder)?;
    Ok(folder)
}

/// The training loader (batches of 64, shuffled, augmented) and the test loader, over the
/// pack's splits, pixels standardized with the pack's statistics.
struct Loaders {
    training: Arc<dyn DataLoader<TensorBatch<2>>>,
    validation: Arc<dyn DataLoader<TensorBatch<2>>>,
    model: reclaim::model::ClassifierConfig,
}

impl Loaders {
    fn new(pack: PackSplits, device: &Device) -> anyhow::Result<Self> {
        let statistics = PackStatistics::from_manifest(&pack.manifest().statistics)
            .context("the pack's statistics are not usable")?;
        let shape = ImageSource::image_shape(&pack.train);
        let classes = pack.train.number_of_classes();
        let pixel_format = PixelScaling::PackStandardized(statistics).pixel_format();
        let training = LoaderConfig {
            class_count: Some(classes),
            pixel_format,
            augmentation: photo_augmentation(shape),
            num_workers: 1,
            ..LoaderConfig::cifar_training(42)
        };
        let validation = LoaderConfig {
            class_count: Some(classes),
            pixel_format,
            num_workers: 1,
            ..LoaderConfig::cifar_evaluation()
        };
        let loader = |split: PackDataset, config| -> anyhow::Result<_> {
            let loader: Arc<dyn DataLoader<TensorBatch<2>>> =
                Arc::new(BurnLoader::<_, 2>::new(split, config, device.clone())?);
            Ok(loader)
        };
        Ok(Self {
            training: loader(pack.train, training)?,
            validation: loader(pack.test, validation)?,
            model: model_for_images(shape, classes, ModelKind::Cnn),
        })
    }
}

/// `epochs` of SGD (lr 0.01, momentum 0.9) through the `Learner`; the trained network.
fn train(
    loaders: &Loaders,
    run_folder: &Path,
    device: &Device,
    epochs: usize,
) -> anyhow::Result<Classifier> {
    let network = loaders.model.init_seeded(device, 42)?;
    let optimizer = SgdConfig::new()
        .with_momentum(Some(MomentumConfig::new().with_momentum(0.9)))
        .init();
    let learner = Learner::new(LearnerClassifier::new(network), optimizer, 0.01);
    // Each step's multi-MiB buffers reuse the last step's pages, as in `reclaim train`; handed
    // back to the kernel when the training returns, before the release is measured.
    let reuse = FreedMemoryReuse::begin();
    let result = classification_training(
        run_folder,
        Arc::clone(&loaders.training),
        Arc::clone(&loaders.validation),
    )
    .num_epochs(epochs)
    .launch(learner);
    drop(reuse);
    Ok(trained_model(result)?.into_network())
}
