//! Fault injection on `reclaim train`, done for real: processes killed with SIGKILL at several
//! points and resumed, two runs on one folder, a dataset truncated under a mapped run, Ctrl-C,
//! divergence, wrong shapes and out-of-range options. Each asserts the outcome: the exit status
//! (never a signal), the message, and what the run folder holds afterwards.

mod common;

use std::ffi::{OsStr, OsString};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{reclaim, scratch, text, vendored_mnist};
use reclaim_dataset::idx::{IdxArray, write_idx};
use reclaim_model::{MlpConfig, WeightFormat};
use reclaim_train::{EpochMetrics, StepMetrics, latest_checkpoint, read_json_lines};

/// The vendored MNIST decompressed into `folder` as raw IDX files (so that a run maps the
/// files the test then changes).
fn raw_mnist_copy(folder: &Path) -> PathBuf {
    std::fs::create_dir_all(folder).unwrap();
    for name in [
        "train-images-idx3-ubyte",
        "train-labels-idx1-ubyte",
        "t10k-images-idx3-ubyte",
        "t10k-labels-idx1-ubyte",
    ] {
        let array = IdxArray::open_owned(vendored_mnist().join(format!("{name}.gz"))).unwrap();
        write_idx(folder.join(name), array.shape(), array.data_bytes()).unwrap();
    }
    folder.to_path_buf()
}

/// A dataset folder of `shape` images (train and test shapes may differ), labels 0 to 9 unless
/// `labels` is given.
fn synthetic_dataset(folder: &Path, train_shape: [usize; 3], test_shape: [usize; 3]) {
    std::fs::create_dir_all(folder).unwrap();
    for (prefix, [count, height, width]) in [("train", train_shape), ("t10k", test_shape)] {
        let pixels: Vec<u8> = (0..count * height * width)
            .map(|index| (index % 251) as u8)
            .collect();
        let labels: Vec<u8> = (0..count).map(|index| (index % 10) as u8).collect();
        let images = folder.join(format!("{prefix}-images-idx3-ubyte"));
        write_idx(images, &[count, height, width], &pixels).unwrap();
        write_idx(
            folder.join(format!("{prefix}-labels-idx1-ubyte")),
            &[count],
            &labels,
        )
        .unwrap();
    }
}

fn train_command(arguments: &[&OsStr]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_reclaim"));
    command
        .arg("train")
        .arg("--quiet")
        .args(arguments)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// `settings` followed by `--data DATA --out RUN`.
fn in_folders<'a>(settings: &'a [&'a str], data: &'a Path, run: &'a Path) -> Vec<&'a OsStr> {
    settings
        .iter()
        .map(OsStr::new)
        .chain([
            OsStr::new("--data"),
            data.as_os_str(),
            OsStr::new("--out"),
            run.as_os_str(),
        ])
        .collect()
}

/// Runs `reclaim train --quiet` with `settings` and then `extra` on `data` into `run`, to its end.
fn train_to_end(data: &Path, run: &Path, settings: &[&str], extra: &[&str]) -> Output {
    let mut arguments = in_folders(settings, data, run);
    arguments.extend(extra.iter().map(OsStr::new));
    wait(train_command(&arguments).spawn().unwrap())
}

/// Waits for `child` to end (at most a minute).
fn wait(mut child: Child) -> Output {
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("reclaim train did not end within a minute");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// Polls every millisecond until `condition` holds, while `child` runs.
fn wait_until(child: &mut Child, what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        if let Some(status) = child.try_wait().unwrap() {
            panic!("reclaim train ended ({status}) before: {what}");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn checkpoint_names(run: &Path) -> Vec<String> {
    std::fs::read_dir(run.join("checkpoints"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| entry.file_name().into_string().ok())
                .filter(|name| name.starts_with("epoch-"))
                .collect()
        })
        .unwrap_or_default()
}

/// What the weights in `path` compute on a fixed batch: equal outputs for equal weights.
fn outputs_of(path: &Path) -> Vec<f32> {
    let burnpack = std::fs::read(path).unwrap();
    let device = reclaim_train::BackendChoice::default_cpu()
        .device()
        .expect("the default CPU backend is compiled in");
    let model = MlpConfig::new()
        .init(&device)
        .load_weight_bytes(&burnpack, WeightFormat::Burnpack)
        .unwrap();
    let pixels: Vec<f32> = (0..8 * 784)
        .map(|index| (index % 97) as f32 / 97.0)
        .collect();
    let input = burn::tensor::Tensor::<2>::from_data(
        burn::tensor::TensorData::new(pixels, [8, 784]),
        &device,
    );
    model
        .forward(input)
        .into_data()
        .try_to_vec::<f32>()
        .unwrap()
}

fn assert_no_panic(output: &Output) {
    let stderr = text(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.signal(), None, "killed by a signal: {stderr}");
}

/// The settings of the kill-and-resume runs: 3 epochs of 50 steps, a checkpoint every 7 steps.
fn resumable_run(data: &Path, run: &Path) -> Vec<OsString> {
    let mut arguments: Vec<OsString> = [
        "--limit",
        "3200",
        "--epochs",
        "3",
        "--checkpoint-every",
        "7",
        "--storage",
        "owned",
        "--data",
    ]
    .map(OsString::from)
    .to_vec();
    arguments.extend([data.into(), "--out".into(), run.into()]);
    arguments
}

/// Starts the run fresh (`--overwrite`: a killed start may have left a folder without a
/// checkpoint) or resumes it from its newest checkpoint.
fn start_or_resume(data: &Path, run: &Path) -> Child {
    let mut arguments = resumable_run(data, run);
    let policy = if latest_checkpoint(run).is_some() {
        "--resume"
    } else {
        "--overwrite"
    };
    arguments.push(policy.into());
    let arguments: Vec<&OsStr> = arguments.iter().map(OsString::as_os_str).collect();
    train_command(&arguments).spawn().unwrap()
}

#[test]
fn runs_killed_at_any_moment_and_resumed_end_with_the_uninterrupted_weights() {
    let folder = scratch("faults", "kill-resume");
    let data = vendored_mnist();
    let reference = folder.join("reference");
    let output = wait(start_or_resume(&data, &reference));
    assert!(output.status.success(), "{}", text(&output.stderr));
    let expected = outputs_of(&reference.join("model.bpk"));

    type KillPoint = (&'static str, fn(&Path) -> bool);
    let kill_points: [KillPoint; 4] = [
        ("right after the start", |_| true),
        ("after the first checkpoint within epoch 1", |run| {
            checkpoint_names(run)
                .iter()
                .any(|name| name.starts_with("epoch-0001-step-"))
        }),
        ("after epoch 1's checkpoint", |run| {
            checkpoint_names(run)
                .iter()
                .any(|name| name == "epoch-0001")
        }),
        ("after a checkpoint within epoch 2", |run| {
            checkpoint_names(run)
                .iter()
                .any(|name| name.starts_with("epoch-0002-step-"))
        }),
    ];
    for (index, (point, reached)) in kill_points.iter().enumerate() {
        let run = folder.join(format!("killed-{index}"));
        let mut child = start_or_resume(&data, &run);
        wait_until(&mut child, point, || reached(&run));
        child.kill().unwrap();
        let killed = child.wait().unwrap();
        assert_eq!(killed.signal(), Some(9), "{point}: {killed}");

        // One start or resume after the kill must finish the run: a kill at any moment leaves
        // either no checkpoint (the run starts over with `--overwrite`) or a complete one.
        let output = wait(start_or_resume(&data, &run));
        assert_no_panic(&output);
        assert!(output.status.success(), "{point}: {}", text(&output.stderr));
        assert_eq!(
            outputs_of(&run.join("model.bpk")),
            expected,
            "killed {point}: the resumed run's weights differ"
        );
        let epochs: Vec<EpochMetrics> = read_json_lines(run.join("metrics.jsonl")).unwrap();
        let numbers: Vec<usize> = epochs.iter().map(|epoch| epoch.epoch).collect();
        assert_eq!(numbers, [1, 2, 3], "killed {point}");
        assert!(!run.join(".previous-run").exists());
    }
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn a_second_run_on_the_same_folder_is_refused_naming_the_first() {
    let folder = scratch("faults", "two-runs");
    let run = folder.join("run");
    let data = vendored_mnist();
    let first_arguments = in_folders(&["--epochs", "1000", "--limit", "640"], &data, &run);
    let mut first = train_command(&first_arguments).spawn().unwrap();
    wait_until(&mut first, "the first run has written a step", || {
        std::fs::metadata(run.join("steps.jsonl")).is_ok_and(|file| file.len() > 0)
    });
    let mut second_arguments = first_arguments.clone();
    second_arguments.push(OsStr::new("--overwrite"));
    let second = wait(train_command(&second_arguments).spawn().unwrap());
    first.kill().unwrap();
    first.wait().unwrap();
    let stderr = text(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("in use by another run"), "{stderr}");
    assert!(
        stderr.contains(&format!("process {}", first.id())),
        "{stderr}"
    );
    // The refused run changed nothing: the first run's files are in place.
    assert!(run.join("config.json").is_file() && !run.join(".previous-run").exists());
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn a_dataset_truncated_under_a_mapped_run_stops_it_with_an_error_naming_the_file() {
    let folder = scratch("faults", "truncated");
    let data = raw_mnist_copy(&folder.join("data"));
    let run = folder.join("run");
    let arguments = in_folders(&["--epochs", "1000", "--storage", "mapped"], &data, &run);
    let mut child = train_command(&arguments).spawn().unwrap();
    wait_until(&mut child, "the run has written a step", || {
        std::fs::metadata(run.join("steps.jsonl")).is_ok_and(|file| file.len() > 0)
    });
    let images = data.join("train-images-idx3-ubyte");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&images)
        .unwrap()
        .set_len(16)
        .unwrap();
    let output = wait(child);
    let stderr = text(&output.stderr);
    assert_no_panic(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&images.display().to_string()), "{stderr}");
    assert!(stderr.contains("truncated"), "{stderr}");
    // The files it wrote stay readable.
    read_json_lines::<StepMetrics>(run.join("steps.jsonl")).unwrap();
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn ctrl_c_checkpoints_mid_epoch_and_prints_a_resume_command_that_works() {
    let folder = scratch("faults", "ctrl-c");
    let run = folder.join("run");
    let data = vendored_mnist();
    let arguments = in_folders(
        &["--epochs", "2", "--limit", "12800", "--lr", "0.05"],
        &data,
        &run,
    );
    let mut child = train_command(&arguments).spawn().unwrap();
    wait_until(&mut child, "the run has written a step", || {
        std::fs::metadata(run.join("steps.jsonl")).is_ok_and(|file| file.len() > 0)
    });
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let output = wait(child);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.starts_with("interrupted: checkpoint written to"),
        "{stderr}"
    );
    let checkpoint = latest_checkpoint(&run).unwrap();
    let name = checkpoint.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("epoch-0001-step-"), "{name}");

    // The printed command, run as printed (the binary's path first), finishes the run.
    let command = stderr.lines().last().unwrap().trim();
    let words = shell_words::split(command).unwrap();
    assert!(words.contains(&"--resume".to_string()), "{command}");
    let resumed = Command::new(&words[0]).args(&words[1..]).output().unwrap();
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    let epochs: Vec<EpochMetrics> = read_json_lines(run.join("metrics.jsonl")).unwrap();
    assert_eq!(epochs.len(), 2);
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn divergence_stops_the_run_with_its_own_status_and_leaves_readable_files() {
    let folder = scratch("faults", "diverged");
    let run = folder.join("run");
    let data = vendored_mnist();
    let arguments = [
        "train",
        "--quiet",
        "--lr",
        "1e30",
        "--limit",
        "640",
        "--checkpoint-every",
        "1",
        "--data",
    ]
    .map(OsString::from);
    let arguments: Vec<OsString> = arguments
        .into_iter()
        .chain([
            data.into_os_string(),
            "--out".into(),
            run.clone().into_os_string(),
        ])
        .collect();
    let output = reclaim(&arguments);
    let stderr = text(&output.stderr);
    assert_no_panic(&output);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("diverged") && stderr.contains("at step"),
        "{stderr}"
    );
    let steps: Vec<StepMetrics> = read_json_lines(run.join("steps.jsonl")).unwrap();
    assert!(steps.iter().any(|line| !line.loss.is_finite()), "{steps:?}");

    let report = reclaim([OsStr::new("report"), run.as_os_str()]);
    assert!(report.status.success(), "{}", text(&report.stderr));
    // The last checkpoint, written before the divergence, resumes (and diverges again).
    let mut resume = arguments.clone();
    resume.push("--resume".into());
    let resumed = reclaim(&resume);
    assert_no_panic(&resumed);
    assert_eq!(resumed.status.code(), Some(3), "{}", text(&resumed.stderr));
    std::fs::remove_dir_all(folder).unwrap();
}

/// Runs `reclaim train` on `data` into `folder/run` with `extra` arguments; expects exit status 1
/// with every fragment of `expected` in its message, and no run folder left behind.
fn assert_refused(folder: &Path, data: &Path, extra: &[&str], expected: &[&str]) {
    let run = folder.join("run");
    let mut arguments: Vec<OsString> = vec!["train".into(), "--quiet".into(), "--data".into()];
    arguments.extend([
        data.as_os_str().to_owned(),
        "--out".into(),
        run.clone().into(),
    ]);
    arguments.extend(extra.iter().map(OsString::from));
    let output = reclaim(&arguments);
    let stderr = text(&output.stderr);
    assert_no_panic(&output);
    assert_eq!(output.status.code(), Some(1), "{extra:?}: {stderr}");
    for fragment in expected {
        assert!(
            stderr.contains(fragment),
            "{extra:?}: {fragment:?} not in {stderr}"
        );
    }
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(!run.exists(), "{extra:?} left a run folder");
}

#[test]
fn each_wrong_shape_is_refused_before_the_run_folder_is_made() {
    let folder = scratch("faults", "shapes");
    let cifar_sized = folder.join("32x32");
    synthetic_dataset(&cifar_sized, [20, 32, 32], [5, 32, 32]);
    assert_refused(
        &folder,
        &cifar_sized,
        &[],
        &["1 x 32 x 32 = 1024 pixels", "784 inputs", "train-images"],
    );

    let mixed = folder.join("mixed");
    synthetic_dataset(&mixed, [20, 28, 28], [5, 32, 32]);
    assert_refused(
        &folder,
        &mixed,
        &[],
        &["test images are 32 x 32", "28 x 28"],
    );

    let empty = folder.join("empty");
    synthetic_dataset(&empty, [0, 28, 28], [5, 28, 28]);
    assert_refused(
        &folder,
        &empty,
        &[],
        &["holds no image", "train-images-idx3-ubyte"],
    );

    let bad_label = folder.join("bad-label");
    synthetic_dataset(&bad_label, [20, 28, 28], [5, 28, 28]);
    write_idx(
        bad_label.join("train-labels-idx1-ubyte"),
        &[20],
        &[200u8; 20],
    )
    .unwrap();
    assert_refused(
        &folder,
        &bad_label,
        &[],
        &["label 200", "train-labels-idx1-ubyte"],
    );
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn each_out_of_range_option_is_refused_naming_it() {
    let folder = scratch("faults", "options");
    let data = vendored_mnist();
    let cases: [(&[&str], &[&str]); 9] = [
        (&["--epochs", "18446744073709551615"], &["invalid epochs"]),
        (
            &["--epochs", "1000000000000"],
            &["invalid epochs", "1000000000000"],
        ),
        (&["--epochs", "0"], &["invalid epochs"]),
        (&["--batch-size", "0"], &["invalid batch size"]),
        (&["--lr", "inf"], &["invalid learning rate", "inf"]),
        (&["--momentum", "NaN"], &["invalid momentum", "NaN"]),
        (&["--weight-decay=-1"], &["invalid weight decay"]),
        (&["--workers", "18446744073709551615"], &["invalid workers"]),
        (&["--limit", "0"], &["invalid training sample limit"]),
    ];
    for (arguments, expected) in cases {
        assert_refused(&folder, &data, arguments, expected);
    }
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn a_batch_larger_than_the_dataset_trains_one_batch_per_epoch() {
    let folder = scratch("faults", "huge-batch");
    let run = folder.join("run");
    let data = vendored_mnist();
    let output = reclaim([
        OsStr::new("train"),
        OsStr::new("--quiet"),
        OsStr::new("--epochs"),
        OsStr::new("1"),
        OsStr::new("--limit"),
        OsStr::new("640"),
        OsStr::new("--batch-size"),
        OsStr::new("10000000"),
        OsStr::new("--data"),
        data.as_os_str(),
        OsStr::new("--out"),
        run.as_os_str(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let steps: Vec<StepMetrics> = read_json_lines(run.join("steps.jsonl")).unwrap();
    assert_eq!(steps.last().unwrap().step, 1);
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn a_fresh_run_into_another_runs_folder_needs_overwrite_and_then_replaces_it() {
    let folder = scratch("faults", "overwrite");
    let run = folder.join("run");
    let data = vendored_mnist();
    let train = |extra: &[&str]| train_to_end(&data, &run, &["--limit", "320"], extra);
    assert!(train(&["--seed", "1", "--epochs", "1"]).status.success());
    let first_weights = outputs_of(&run.join("model.bpk"));
    let refused = train(&["--seed", "2", "--epochs", "1"]);
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("holds another run") && stderr.contains("--overwrite"),
        "{stderr}"
    );
    assert_eq!(outputs_of(&run.join("model.bpk")), first_weights);

    let replaced = train(&["--seed", "2", "--epochs", "1", "--overwrite"]);
    assert!(replaced.status.success(), "{}", text(&replaced.stderr));
    assert_ne!(outputs_of(&run.join("model.bpk")), first_weights);
    assert!(!run.join(".previous-run").exists());
    // A resume keeps config.json as the run's first start wrote it.
    let config_before = std::fs::read(run.join("config.json")).unwrap();
    let resumed = train(&["--seed", "2", "--resume", "--epochs", "2"]);
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert_eq!(
        std::fs::read(run.join("config.json")).unwrap(),
        config_before
    );
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn a_damaged_history_or_checkpoint_is_named_by_the_resume_not_dropped() {
    let folder = scratch("faults", "damaged");
    let run = folder.join("run");
    let data = vendored_mnist();
    let train = |extra: &[&str]| train_to_end(&data, &run, &["--limit", "640"], extra);
    let first = train(&["--epochs", "1", "--checkpoint-every", "3"]);
    assert!(first.status.success(), "{}", text(&first.stderr));

    // A line in the middle of steps.jsonl that is not a record: the resume names it.
    let steps_path = run.join("steps.jsonl");
    let steps = std::fs::read_to_string(&steps_path).unwrap();
    let mut lines: Vec<&str> = steps.lines().collect();
    lines[1] = "{\"garbage";
    std::fs::write(&steps_path, lines.join("\n") + "\n").unwrap();
    let resumed = train(&["--epochs", "2", "--resume"]);
    let stderr = text(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("steps.jsonl, line 2"), "{stderr}");
    std::fs::write(&steps_path, steps).unwrap();

    // Weights cut short in the newest checkpoint: the resume names the checkpoint and file.
    let checkpoint = latest_checkpoint(&run).unwrap();
    let weights = checkpoint.join("model.bpk");
    let length = std::fs::metadata(&weights).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&weights)
        .unwrap()
        .set_len(length / 2)
        .unwrap();
    let resumed = train(&["--epochs", "2", "--resume"]);
    let stderr = text(&resumed.stderr);
    assert_no_panic(&resumed);
    assert_eq!(resumed.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&checkpoint.display().to_string()) && stderr.contains("model.bpk"),
        "{stderr}"
    );
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn a_run_stopped_before_its_first_step_is_reported_and_resumed() {
    let folder = scratch("faults", "no-step");
    let run = folder.join("run");
    let data = vendored_mnist();
    let arguments = in_folders(&["--epochs", "1", "--limit", "640"], &data, &run);
    let mut child = train_command(&arguments).spawn().unwrap();
    // The lock file holds its owner once the handler is installed and the folder is prepared.
    wait_until(&mut child, "the run folder is locked", || {
        std::fs::read_to_string(run.join(".lock")).is_ok_and(|owner| !owner.is_empty())
    });
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let output = wait(child);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    let report = reclaim([OsStr::new("report"), run.as_os_str()]);
    assert!(report.status.success(), "{}", text(&report.stderr));
    let mut resume: Vec<&OsStr> = arguments.clone();
    resume.push(OsStr::new("--resume"));
    let resumed = wait(train_command(&resume).spawn().unwrap());
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    std::fs::remove_dir_all(folder).unwrap();
}
