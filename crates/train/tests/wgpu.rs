//! wgpu without a GPU: a few hundred training steps on whatever adapter wgpu finds (on CI,
//! Mesa's software Vulkan driver, installed by `.ci/run`). The loss must fall, and the device
//! pool's bytes in use must drop to 0 once the model is gone and `memory_cleanup` has run, and
//! the pool reserve no more than at the baseline.

#![cfg(feature = "wgpu")]

use reclaim_dataset::{Family, default_data_folder};
use reclaim_train::{
    BackendChoice, ProgressDisplay, ReleaseStage, RunFile, StepMetrics, TrainConfig,
    read_json_lines, train,
};

#[test]
fn training_on_wgpu_lowers_the_loss_and_gives_device_memory_back() {
    let folder = tempfile::tempdir().unwrap();
    let config = TrainConfig {
        // 250 steps of 64 samples.
        training_sample_limit: Some(16_000),
        epochs: 1,
        progress: ProgressDisplay::Hidden,
        ..TrainConfig::recipe(
            BackendChoice::Wgpu,
            default_data_folder(None, Family::Mnist),
            folder.path().join("run"),
        )
    };
    let run = train(&config).unwrap();

    let steps: Vec<StepMetrics> =
        read_json_lines(RunFile::StepMetrics.path_in(&run.run_folder)).unwrap();
    assert_eq!(steps.len(), 25);
    let first = steps.first().unwrap().loss;
    let last = steps.last().unwrap().loss;
    assert!(last < first - 0.3, "loss fell from {first} to {last} only");
    assert!(run.final_test_accuracy().unwrap() > 0.5);

    let in_use = |stage: ReleaseStage| {
        run.release
            .memory_at(stage)
            .and_then(|memory| memory.device_bytes_in_use)
            .unwrap_or_else(|| panic!("wgpu reports its pool at '{stage}'"))
    };
    let trained = in_use(ReleaseStage::Trained);
    let released = in_use(ReleaseStage::FinalCleanup);
    assert!(trained > 0);
    assert!(
        released < trained,
        "device bytes in use: {trained} trained, {released} after release\n{}",
        run.release.to_markdown()
    );
    // The recipe's order leaves the model's blocks reserved; cleaning after the last owner
    // gives them back to the device.
    let reserved = |stage: ReleaseStage| {
        run.release
            .memory_at(stage)
            .and_then(|memory| memory.device_bytes_reserved)
            .unwrap_or_else(|| panic!("wgpu reports its pool at '{stage}'"))
    };
    assert!(
        reserved(ReleaseStage::FinalCleanup) < reserved(ReleaseStage::ModelDropped),
        "reserved: {} after the model, {} after the final cleanup\n{}",
        reserved(ReleaseStage::ModelDropped),
        reserved(ReleaseStage::FinalCleanup),
        run.release.to_markdown()
    );
    // Nothing the run allocated on the device is left: no byte in use, and the pool reserves
    // no more than it did at the baseline (which holds the warm-up's pages).
    assert_eq!(
        in_use(ReleaseStage::FinalCleanup),
        0,
        "device bytes in use after the final cleanup\n{}",
        run.release.to_markdown()
    );
    assert!(
        reserved(ReleaseStage::FinalCleanup) <= reserved(ReleaseStage::BeforeLoading),
        "reserved: {} before loading, {} after the final cleanup\n{}",
        reserved(ReleaseStage::BeforeLoading),
        reserved(ReleaseStage::FinalCleanup),
        run.release.to_markdown()
    );
}
