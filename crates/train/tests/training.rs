//! Training on the real, vendored MNIST with the NdArray backend: the PyTorch recipe's accuracy,
//! determinism, checkpoints and resume, and the files a run leaves.

#![cfg(feature = "ndarray")]

use std::path::{Path, PathBuf};

use reclaim_dataset::{Family, default_data_folder};
use reclaim_model::WeightFormat;
use reclaim_train::{
    BackendChoice, CheckpointFile, EpochMetrics, ProgressDisplay, RunFile, StartPolicy, StepKernel,
    StepMetrics, TimelineSample, TrainConfig, TrainError, latest_checkpoint, read_json_lines,
    train,
};

/// What the run's final weights compute on a fixed batch: equal outputs for equal weights.
/// (Serialized weights are not compared byte for byte: burnpack records each parameter's random
/// id, and the SafeTensors header's order is not fixed.)
fn weights(run: &reclaim_train::TrainRun) -> Vec<f32> {
    let burnpack = std::fs::read(&run.final_weights_path).unwrap();
    #[allow(deprecated)]
    let device = burn::tensor::Device::ndarray();
    let model = reclaim_model::MlpConfig::new()
        .init(&device)
        .load_weight_bytes(&burnpack, WeightFormat::Burnpack)
        .unwrap();
    let pixels: Vec<f32> = (0..16 * 784)
        .map(|index| (index % 251) as f32 / 251.0)
        .collect();
    let input = burn::tensor::Tensor::<2>::from_data(
        burn::tensor::TensorData::new(pixels, [16, 784]),
        &device,
    );
    model
        .forward(input)
        .into_data()
        .try_to_vec::<f32>()
        .unwrap()
}

fn quick_config(run_folder: &Path, limit: usize) -> TrainConfig {
    TrainConfig {
        training_sample_limit: Some(limit),
        progress: ProgressDisplay::Hidden,
        ..TrainConfig::recipe(
            BackendChoice::Ndarray,
            default_data_folder(None, Family::Mnist),
            run_folder.to_path_buf(),
        )
    }
}

#[test]
fn the_seed_recipe_reaches_88_percent_on_the_test_split() {
    let folder = tempfile::tempdir().unwrap();
    let config = TrainConfig {
        progress: ProgressDisplay::Hidden,
        ..TrainConfig::recipe(
            BackendChoice::Ndarray,
            default_data_folder(None, Family::Mnist),
            folder.path().join("run"),
        )
    };
    let run = train(&config).unwrap();
    assert_eq!(run.epochs.len(), 2);
    let accuracy = run.final_test_accuracy().unwrap();
    assert!(accuracy >= 0.88, "test accuracy {accuracy}");
    assert!(run.epochs[1].train_loss < run.epochs[0].train_loss);
    // The summary printed for people (`TrainRun::summary`) is checked in its unit tests;
    // `reclaim train`'s own output in the root's tests.
}

/// Both training steps (the fused step on the host, Burn's dense step) compute the same sums
/// in another order: on Flex and on NdArray they train the same model, to the rounding of
/// `f32`, and each run says which step it took.
#[cfg(feature = "flex")]
#[test]
fn every_step_kernel_trains_the_same_model() {
    let folder = tempfile::tempdir().unwrap();
    let run = |name: &str, backend, step_kernel| {
        let config = TrainConfig {
            backend,
            step_kernel,
            ..quick_config(&folder.path().join(name), 1280)
        };
        train(&config).unwrap()
    };
    let dense = run("flex-dense", BackendChoice::Flex, StepKernel::Dense);
    assert_eq!(dense.step_kernel, StepKernel::Dense);
    let others = [
        run("flex-fused", BackendChoice::Flex, StepKernel::Fused),
        run("ndarray-fused", BackendChoice::Ndarray, StepKernel::Fused),
        run("ndarray-dense", BackendChoice::Ndarray, StepKernel::Dense),
    ];
    let taken: Vec<StepKernel> = others.iter().map(|run| run.step_kernel).collect();
    let expected = [StepKernel::Fused, StepKernel::Fused, StepKernel::Dense];
    assert_eq!(taken, expected);
    let dense_loss = dense.epochs[0].train_loss;
    let dense_weights = weights(&dense);
    for other in &others {
        let loss = other.epochs[0].train_loss;
        assert!(
            (loss - dense_loss).abs() < 1e-4 * dense_loss.abs(),
            "{:?}: train loss {loss} vs {dense_loss}",
            other.step_kernel
        );
        for (index, (o, d)) in weights(other).iter().zip(&dense_weights).enumerate() {
            assert!(
                (o - d).abs() < 1e-3 * (1.0 + d.abs()),
                "{:?}: output {index}: {o} vs {d}",
                other.step_kernel
            );
        }
    }
}

#[test]
fn a_run_leaves_metrics_checkpoints_weights_and_reports() {
    let folder = tempfile::tempdir().unwrap();
    let run_folder = folder.path().join("run");
    let run = train(&quick_config(&run_folder, 1280)).unwrap();

    let epochs: Vec<EpochMetrics> =
        read_json_lines(RunFile::EpochMetrics.path_in(&run_folder)).unwrap();
    assert_eq!(epochs, run.epochs);
    assert_eq!(
        epochs.iter().map(|epoch| epoch.epoch).collect::<Vec<_>>(),
        [1, 2]
    );
    assert!(epochs.iter().all(|epoch| epoch.samples_per_second > 0.0));

    // 1280 samples in batches of 64: 20 steps an epoch, logged every 10 steps.
    let steps: Vec<StepMetrics> =
        read_json_lines(RunFile::StepMetrics.path_in(&run_folder)).unwrap();
    assert_eq!(
        steps.iter().map(|step| step.step).collect::<Vec<_>>(),
        [10, 20, 30, 40]
    );

    let timeline: Vec<TimelineSample> =
        read_json_lines(RunFile::MemoryTimeline.path_in(&run_folder)).unwrap();
    let phases: Vec<&str> = timeline
        .iter()
        .filter_map(|sample| sample.phase.as_deref())
        .collect();
    for phase in [
        "before loading",
        "dataset opened",
        "epoch 1",
        "evaluation 2",
        "model dropped",
    ] {
        assert!(phases.contains(&phase), "{phase} missing from {phases:?}");
    }

    let checkpoint = latest_checkpoint(&run_folder).unwrap();
    assert!(
        checkpoint.ends_with("epoch-0002"),
        "{}",
        checkpoint.display()
    );
    assert_eq!(
        run.final_weights_path,
        RunFile::FinalWeights.path_in(&run_folder)
    );
    assert_eq!(
        std::fs::read(&run.final_weights_path).unwrap(),
        std::fs::read(CheckpointFile::Weights.path_in(&checkpoint)).unwrap()
    );
    assert!(run_folder.join("release.md").is_file());
    assert!(run_folder.join("release.json").is_file());
    for file in RunFile::ALL {
        assert!(file.path_in(&run_folder).is_file(), "{file:?} missing");
    }
}

#[test]
fn the_same_seed_gives_the_same_weights_and_another_seed_does_not() {
    let folder = tempfile::tempdir().unwrap();
    let first = train(&quick_config(&folder.path().join("first"), 640)).unwrap();
    let second = train(&quick_config(&folder.path().join("second"), 640)).unwrap();
    assert!(weights(&first) == weights(&second), "final weights differ");
    let other_seed = TrainConfig {
        seed: 7,
        ..quick_config(&folder.path().join("third"), 640)
    };
    assert!(weights(&train(&other_seed).unwrap()) != weights(&first));
}

#[test]
fn an_interrupted_run_resumed_ends_with_the_uninterrupted_weights() {
    let folder = tempfile::tempdir().unwrap();
    let momentum = |run_folder: PathBuf| TrainConfig {
        momentum: Some(0.9),
        epochs: 3,
        ..quick_config(&run_folder, 960)
    };
    let uninterrupted = train(&momentum(folder.path().join("straight"))).unwrap();

    let interrupted_folder = folder.path().join("interrupted");
    let interrupted = train(&TrainConfig {
        stop_after_epochs: Some(1),
        ..momentum(interrupted_folder.clone())
    })
    .unwrap();
    assert_eq!(interrupted.epochs.len(), 1);
    assert!(
        weights(&interrupted) != weights(&uninterrupted),
        "final weights are equal"
    );

    let resumed = train(&TrainConfig {
        start: StartPolicy::ResumeLatestCheckpoint,
        ..momentum(interrupted_folder.clone())
    })
    .unwrap();
    assert!(
        weights(&resumed) == weights(&uninterrupted),
        "final weights differ"
    );
    assert_eq!(resumed.epochs.len(), 3);
    let losses =
        |run: &reclaim_train::TrainRun| run.epochs.iter().map(|e| e.train_loss).collect::<Vec<_>>();
    assert_eq!(losses(&resumed), losses(&uninterrupted));
    let steps: Vec<StepMetrics> =
        read_json_lines(RunFile::StepMetrics.path_in(&interrupted_folder)).unwrap();
    let straight_steps: Vec<StepMetrics> =
        read_json_lines(RunFile::StepMetrics.path_in(&folder.path().join("straight"))).unwrap();
    assert_eq!(steps, straight_steps);
}

#[test]
fn resuming_needs_a_checkpoint_with_the_same_settings() {
    let folder = tempfile::tempdir().unwrap();
    let run_folder = folder.path().join("run");
    let resume = |run_folder: &Path| TrainConfig {
        start: StartPolicy::ResumeLatestCheckpoint,
        ..quick_config(run_folder, 320)
    };
    let error = train(&resume(&run_folder)).unwrap_err();
    assert!(matches!(error, TrainError::NoCheckpoint { .. }), "{error}");

    train(&TrainConfig {
        stop_after_epochs: Some(1),
        ..quick_config(&run_folder, 320)
    })
    .unwrap();
    let error = train(&TrainConfig {
        learning_rate: 0.5,
        ..resume(&run_folder)
    })
    .unwrap_err();
    assert!(matches!(error, TrainError::Checkpoint { .. }), "{error}");
    assert!(error.to_string().contains("epoch-0001"), "{error}");
    // Each differing setting is named with both values; the others are not.
    assert!(
        error
            .to_string()
            .contains("learning rate is 0.01 in the checkpoint, 0.5 in this run"),
        "{error}"
    );
    assert!(!error.to_string().contains("batch size"), "{error}");
}

#[test]
fn invalid_settings_and_a_missing_dataset_are_typed_errors() {
    let folder = tempfile::tempdir().unwrap();
    let error = train(&TrainConfig {
        batch_size: 0,
        ..quick_config(&folder.path().join("run"), 64)
    })
    .unwrap_err();
    assert!(
        matches!(
            error,
            TrainError::InvalidConfig {
                setting: "batch size",
                ..
            }
        ),
        "{error}"
    );

    let error = train(&TrainConfig {
        data_folder: folder.path().join("no-such-folder"),
        ..quick_config(&folder.path().join("run"), 64)
    })
    .unwrap_err();
    assert!(matches!(error, TrainError::Dataset(_)), "{error}");
    assert!(error.to_string().contains("no-such-folder"), "{error}");
}

/// The tests are built without the `cuda` feature, so CUDA is a backend the build lacks.
#[cfg(not(feature = "cuda"))]
#[test]
fn a_backend_not_compiled_in_is_an_error_naming_the_feature_and_leaves_no_run_folder() {
    let folder = tempfile::tempdir().unwrap();
    let run_folder = folder.path().join("run");
    let config = TrainConfig {
        backend: BackendChoice::Cuda,
        ..quick_config(&run_folder, 64)
    };
    let Err(error) = train(&config) else {
        panic!("a run on cuda started in a build without the cuda feature");
    };
    assert!(
        matches!(error, TrainError::BackendNotCompiled { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("cuda"), "{error}");
    assert!(!run_folder.exists(), "a run folder was created");
}
