//! The release, measured: after the loader's scope, the dataset, the device pool and the model
//! are gone, live heap bytes are back to their level before loading and no dataset mapping
//! remains. Its own binary without libtest's harness (`harness = false` in `Cargo.toml`), so
//! that no other thread of the process allocates while it measures: libtest's main thread
//! allocates as it waits on its channel and timers, at moments that depend on the scheduler,
//! which made the exact comparison flaky on a loaded machine.
//!
//! Three runs, one after the other, whose settings differ in every factor they can: NdArray with
//! the fused MLP step, MNIST mapped and 2 loader workers; Flex (the default backend) with Burn's
//! dense step, MNIST read into memory and no worker; Flex with the CNN on a pack of photos
//! (made by the test from generated PNGs), mapped, 2 workers, augmented and standardized. Each
//! run's baseline is taken at its own start, so an earlier run's leftovers, if any, could not
//! hide a later one's.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use reclaim_dataset::pack::{ImageSize, PackOptions, pack_image_folder};
use reclaim_dataset::{Family, PackSplits, StorageKind, default_data_folder};
use reclaim_loader::ImageSource;
use reclaim_memory::CountingAllocator;
use reclaim_model::ModelKind;
use reclaim_train::{
    BackendChoice, DatasetStorage, PackStatistics, PixelScaling, ProgressDisplay, ReleaseStage,
    StepKernel, TrainConfig, TrainingDataset, model_for_images, photo_augmentation, train,
};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn main() {
    let runs = [
        (
            "ndarray, fused step, mapped, 2 workers",
            BackendChoice::Ndarray,
            StepKernel::Fused,
            // SAFETY: the vendored MNIST is not changed by anything while this test runs.
            unsafe { DatasetStorage::mapped() },
            2,
        ),
        (
            "flex, dense step, owned, 0 workers",
            BackendChoice::Flex,
            StepKernel::Dense,
            DatasetStorage::owned(),
            0,
        ),
    ];
    for (name, backend, step_kernel, storage, workers) in runs {
        let folder = tempfile::tempdir().unwrap();
        let config = TrainConfig {
            training_sample_limit: Some(3200),
            epochs: 1,
            workers,
            step_kernel,
            storage,
            progress: ProgressDisplay::Hidden,
            ..TrainConfig::recipe(
                backend,
                default_data_folder(None, Family::Mnist),
                folder.path().join("run"),
            )
        };
        let left_over = release_gives_back_every_heap_byte_and_unmaps_the_dataset(&config);
        println!(
            "release_gives_back_every_heap_byte_and_unmaps_the_dataset ({name}) ... ok \
             (live heap after release minus before loading: {left_over} B)"
        );
    }
    let photos = tempfile::tempdir().unwrap();
    let config = cnn_on_a_pack(photos.path());
    let left_over = release_gives_back_every_heap_byte_and_unmaps_the_dataset(&config);
    println!(
        "release_gives_back_every_heap_byte_and_unmaps_the_dataset (flex, CNN, a pack of photos, \
         mapped, 2 workers) ... ok (live heap after release minus before loading: {left_over} B)"
    );
}

/// A pack of 96 generated PNGs (3 classes, 16 x 16 RGB) in `folder`, and a run of the CNN on
/// it: Flex, mapped, 2 workers, the photo augmentation, the pack's own statistics.
fn cnn_on_a_pack(folder: &Path) -> TrainConfig {
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
    let pack: PathBuf = folder.join("photos.rpack");
    let options = PackOptions {
        progress: ProgressDisplay::Hidden,
        ..PackOptions::new(ImageSize::new(16, 16).unwrap())
    };
    pack_image_folder(
        &folder.join("photos"),
        &pack,
        &options,
        &AtomicBool::new(false),
    )
    .unwrap();
    let opened = PackSplits::open_owned(&pack).unwrap();
    let shape = ImageSource::image_shape(&opened.train);
    let statistics = PackStatistics::from_manifest(&opened.manifest().statistics).unwrap();
    let classes = opened.train.number_of_classes();
    drop(opened);
    TrainConfig {
        dataset: TrainingDataset::Pack,
        model: model_for_images(shape, classes, ModelKind::Cnn),
        augmentation: photo_augmentation(shape),
        pixel_scaling: PixelScaling::PackStandardized(statistics),
        epochs: 1,
        batch_size: 16,
        workers: 2,
        step_kernel: StepKernel::Dense,
        // SAFETY: the pack is this test's own and nothing changes it while the run maps it.
        storage: unsafe { DatasetStorage::mapped() },
        progress: ProgressDisplay::Hidden,
        ..TrainConfig::recipe(BackendChoice::Flex, pack, folder.join("run"))
    }
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
            TrainingDataset::Catalogue(_) => 50_000_000,
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
