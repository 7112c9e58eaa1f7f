//! The release, measured: after the loader's scope, the dataset, the device pool and the model
//! are gone, live heap bytes are back to their level before loading and no dataset mapping
//! remains. Its own binary without libtest's harness (`harness = false` in `Cargo.toml`), so
//! that no other thread of the process allocates while it measures: libtest's main thread
//! allocates as it waits on its channel and timers, at moments that depend on the scheduler,
//! which made the exact comparison flaky on a loaded machine.
//!
//! Two runs, one after the other, whose settings differ in every factor: NdArray with the fused
//! step, the dataset mapped and 2 loader workers; Flex (the default backend) with Burn's dense
//! step, the dataset read into memory and no worker. Each run's baseline is taken at its own
//! start, so the first run's leftovers, if any, could not hide the second's.

use reclaim_dataset::{Family, StorageKind, default_data_folder};
use reclaim_memory::CountingAllocator;
use reclaim_train::{
    BackendChoice, DatasetStorage, ProgressDisplay, ReleaseStage, StepKernel, TrainConfig, train,
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
    // The four MNIST files (55 MB decompressed) are mapped while training, where they are
    // mapped ...
    if config.storage.kind() == StorageKind::Mapped {
        assert!(memory(ReleaseStage::Trained).mapped_dataset_bytes > 50_000_000);
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
