//! A run folder and its checkpoint written by this version, committed under
//! `tests/fixtures/run-0.1.0/` (one epoch of the PyTorch recipe on the first 3,200 MNIST
//! training images: `reclaim train --data data/mnist --limit 3200 --epochs 1`, figures left
//! out), read back with today's types and commands. A change of the checkpoint, weights or
//! records format (a Burn upgrade, a renamed field) fails here, so that it is a decision, with a
//! migration or a note for users, rather than a `--resume` that fails on a user's machine.
//!
//! Not covered: resuming the committed run itself, since its identity records the canonical
//! data folder of the machine that wrote it; resume is covered by the fault tests on runs
//! written by the same build.

mod common;

use std::path::{Path, PathBuf};

use common::{reclaim, scratch, text, vendored_mnist};
use reclaim_model::{ClassifierConfig, ModelKind};
use reclaim_train::{
    BackendChoice, CheckpointFile, EpochMetrics, PhaseSeconds, ReleaseReport, ReleaseStage,
    RunFile, StepMetrics, TimelineSample, load_checkpoint, read_checkpoint_state, read_json_lines,
};

/// The committed run folder.
fn fixture_run() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run-0.1.0")
}

/// Its one checkpoint, at the end of epoch 1.
fn fixture_checkpoint() -> PathBuf {
    fixture_run().join("checkpoints/epoch-0001")
}

#[test]
fn the_committed_checkpoint_state_reads_with_todays_types() {
    let state = read_checkpoint_state(&fixture_checkpoint()).unwrap();
    assert_eq!((state.epochs_completed, state.steps_completed), (1, 50));
    assert_eq!(state.loader_state.epoch, 1);
    assert!(state.partial_epoch.is_none());
    let identity = &state.run_identity;
    assert_eq!(
        identity.model,
        ClassifierConfig::default_for(ModelKind::Mlp)
    );
    assert_eq!(
        (identity.batch_size, identity.learning_rate, identity.seed),
        (64, 0.01, 42)
    );
    assert_eq!(identity.training_sample_limit, Some(3200));
    let recorded: Vec<EpochMetrics> =
        read_json_lines(RunFile::EpochMetrics.path_in(&fixture_run())).unwrap();
    assert_eq!(state.epoch_metrics, recorded);
}

#[test]
fn the_committed_weights_and_optimizer_state_load_into_todays_model() {
    let device = BackendChoice::default_cpu().device().unwrap().autodiff();
    let model = ClassifierConfig::default_for(ModelKind::Mlp)
        .init(&device)
        .unwrap();
    let optimizer = burn::optim::SgdConfig::new().init();
    let loaded = load_checkpoint(&fixture_checkpoint(), model, optimizer).unwrap();
    assert_eq!(loaded.state.steps_completed, 50);
    for file in [CheckpointFile::Weights, CheckpointFile::OptimizerState] {
        assert!(file.path_in(&fixture_checkpoint()).is_file(), "{file:?}");
    }
}

/// `reclaim eval` on the committed checkpoint and on the run's final weights gives the test
/// accuracy the run recorded: within 0.1 points, since another CPU's kernels may sum in another
/// order and flip a prediction that is a near tie (weights that did not load would score about
/// 10%, a tenth of the classes).
#[test]
fn eval_of_the_committed_weights_gives_the_recorded_accuracy() {
    let recorded: Vec<EpochMetrics> =
        read_json_lines(RunFile::EpochMetrics.path_in(&fixture_run())).unwrap();
    let expected = recorded[0].test_accuracy * 100.0;
    for weights in [
        fixture_checkpoint(),
        RunFile::FinalWeights.path_in(&fixture_run()),
    ] {
        let output = reclaim([
            "eval".as_ref(),
            "--checkpoint".as_ref(),
            weights.as_os_str(),
            "--data".as_ref(),
            vendored_mnist().as_os_str(),
        ]);
        let stdout = text(&output.stdout);
        assert!(
            output.status.success(),
            "{}: {stdout}{}",
            weights.display(),
            text(&output.stderr)
        );
        let accuracy: f64 = stdout
            .lines()
            .find_map(|line| line.strip_prefix("test accuracy ")?.strip_suffix('%'))
            .and_then(|number| number.parse().ok())
            .unwrap_or_else(|| panic!("{}: no accuracy in {stdout}", weights.display()));
        assert!(
            (accuracy - expected).abs() <= 0.1,
            "{}: {accuracy}% against the recorded {expected}%",
            weights.display()
        );
    }
}

/// The run folder's records read with today's types, and `reclaim report` redraws its figures
/// from them (in a copy: the fixture is not written to).
#[test]
fn the_committed_records_read_and_redraw() {
    let run = fixture_run();
    let steps: Vec<StepMetrics> = read_json_lines(RunFile::StepMetrics.path_in(&run)).unwrap();
    assert_eq!(steps.last().map(|step| step.step), Some(50));
    let timeline: Vec<TimelineSample> =
        read_json_lines(RunFile::MemoryTimeline.path_in(&run)).unwrap();
    assert!(timeline.iter().any(|sample| sample.phase.is_some()));
    let release = ReleaseReport::read_from(&run).unwrap().unwrap();
    assert!(release.memory_at(ReleaseStage::ModelDropped).is_some());
    assert!(PhaseSeconds::read_from(&run).unwrap().unwrap().total > 0.0);

    let copy = scratch("format-fixtures", "run");
    for file in RunFile::ALL {
        std::fs::copy(file.path_in(&run), file.path_in(&copy)).unwrap();
    }
    let output = reclaim(["report".as_ref(), copy.as_os_str()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    for figure in ["curves.svg", "curves.png", "memory.svg", "memory.png"] {
        assert!(copy.join(figure).is_file(), "{figure}");
    }
    std::fs::remove_dir_all(copy).unwrap();
}
