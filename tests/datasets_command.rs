//! `reclaim train` and `reclaim eval` on other datasets and models: a CNN with augmentation on a
//! generated CIFAR-10 folder (the real record format), Fashion-MNIST's IDX files, and the
//! refusals of datasets, models and folders that do not go together.

mod common;

use std::path::Path;

use common::{reclaim, scratch, text};
use reclaim_dataset::{
    cifar::{CifarRecord, CifarVariant, write_cifar_batch},
    idx::write_idx,
};

/// A CIFAR-10 folder of `per_file` records in each of the six files, in the archive's own
/// subfolder (`cifar-10-batches-bin/`), as `reclaim fetch` leaves it.
fn write_cifar10(folder: &Path, per_file: usize) {
    let files = folder.join("cifar-10-batches-bin");
    std::fs::create_dir_all(&files).unwrap();
    let names = [
        "data_batch_1.bin",
        "data_batch_2.bin",
        "data_batch_3.bin",
        "data_batch_4.bin",
        "data_batch_5.bin",
        "test_batch.bin",
    ];
    for (file_number, name) in names.into_iter().enumerate() {
        let images: Vec<Vec<u8>> = (0..per_file)
            .map(|index| {
                (0..3072)
                    .map(|pixel| ((pixel * 3 + index * 11 + file_number) % 256) as u8)
                    .collect()
            })
            .collect();
        let records: Vec<CifarRecord<'_>> = images
            .iter()
            .enumerate()
            .map(|(index, image)| CifarRecord::cifar10((index % 10) as u8, image))
            .collect();
        write_cifar_batch(files.join(name), CifarVariant::Cifar10, &records).unwrap();
    }
}

/// Fashion-MNIST's four IDX files (MNIST's names and layout), `count` images each.
fn write_fashion_mnist(folder: &Path, count: usize) {
    std::fs::create_dir_all(folder).unwrap();
    for prefix in ["train", "t10k"] {
        let pixels: Vec<u8> = (0..count * 784).map(|index| (index % 253) as u8).collect();
        let labels: Vec<u8> = (0..count).map(|index| (index % 10) as u8).collect();
        write_idx(
            folder.join(format!("{prefix}-images-idx3-ubyte")),
            &[count, 28, 28],
            &pixels,
        )
        .unwrap();
        write_idx(
            folder.join(format!("{prefix}-labels-idx1-ubyte")),
            &[count],
            &labels,
        )
        .unwrap();
    }
}

#[test]
fn a_cnn_trains_on_cifar10_with_augmentation_and_its_weights_evaluate() {
    let folder = scratch("datasets", "cifar");
    let data = folder.join("cifar-10");
    // Few and small: the default CNN's backward pass is slow in a debug build.
    write_cifar10(&data, 8);
    let run = folder.join("run");
    let settings = [
        "--dataset",
        "cifar10",
        "--model",
        "cnn",
        "--augment",
        "--standardize",
        "--epochs",
        "1",
        "--batch-size",
        "8",
        "--limit",
        "8",
        "--workers",
        "1",
    ];
    let mut arguments: Vec<&std::ffi::OsStr> = vec!["train".as_ref(), "--quiet".as_ref()];
    arguments.extend(settings.iter().map(std::ffi::OsStr::new));
    arguments.extend([
        "--data".as_ref(),
        data.as_os_str(),
        "--out".as_ref(),
        run.as_os_str(),
    ]);
    let output = reclaim(&arguments);
    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        text(&output.stderr)
    );
    assert!(stdout.trim_end().ends_with('%'), "{stdout}");
    assert!(stdout.contains("test accuracy"), "{stdout}");
    let config: String = std::fs::read_to_string(run.join("config.json"))
        .unwrap()
        .split_whitespace()
        .collect();
    for recorded in [
        r#""dataset":"Cifar10""#,
        r#""kind":"cnn""#,
        r#""padding":4"#,
    ] {
        assert!(
            config.contains(recorded),
            "{recorded} missing from {config}"
        );
    }
    for file in ["metrics.jsonl", "release.json", "model.bpk", "memory.png"] {
        assert!(run.join(file).is_file(), "{file} missing");
    }

    let evaluated = reclaim([
        "eval".as_ref(),
        "--dataset".as_ref(),
        "cifar10".as_ref(),
        "--model".as_ref(),
        "cnn".as_ref(),
        "--standardize".as_ref(),
        "--checkpoint".as_ref(),
        run.as_os_str(),
        "--data".as_ref(),
        data.as_os_str(),
    ]);
    let stdout = text(&evaluated.stdout);
    assert!(evaluated.status.success(), "{}", text(&evaluated.stderr));
    assert!(stdout.contains("8 test samples"), "{stdout}");

    // The same weights as an MLP's: a typed error naming the weights, no panic.
    let as_mlp = reclaim([
        "eval".as_ref(),
        "--dataset".as_ref(),
        "cifar10".as_ref(),
        "--checkpoint".as_ref(),
        run.as_os_str(),
        "--data".as_ref(),
        data.as_os_str(),
    ]);
    let stderr = text(&as_mlp.stderr);
    assert_eq!(as_mlp.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("model.bpk"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn fashion_mnist_trains_from_its_idx_files() {
    let folder = scratch("datasets", "fashion");
    let data = folder.join("fashion-mnist");
    write_fashion_mnist(&data, 40);
    let run = folder.join("run");
    let output = reclaim([
        "train".as_ref(),
        "--quiet".as_ref(),
        "--dataset".as_ref(),
        "fashion-mnist".as_ref(),
        "--augment".as_ref(),
        "--epochs".as_ref(),
        "1".as_ref(),
        "--data".as_ref(),
        data.as_os_str(),
        "--out".as_ref(),
        run.as_os_str(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let config: String = std::fs::read_to_string(run.join("config.json"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert!(config.contains(r#""dataset":"FashionMnist""#), "{config}");
    assert!(config.contains(r#""padding":2"#), "{config}");
}

#[test]
fn datasets_models_and_folders_that_do_not_go_together_are_refused() {
    let folder = scratch("datasets", "refused");
    let mnist = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/mnist");
    let run = folder.join("run");

    // CIFAR asked of MNIST's folder: the folder and the dataset named.
    let output = reclaim([
        "train".as_ref(),
        "--dataset".as_ref(),
        "cifar10".as_ref(),
        "--data".as_ref(),
        mnist.as_os_str(),
        "--out".as_ref(),
        run.as_os_str(),
    ]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("data/mnist") && stderr.contains("cifar-10"),
        "{stderr}"
    );
    assert!(!run.exists());

    // The CNN on NdArray: refused before anything is read or written, the backend to use named.
    let cifar = folder.join("cifar-10");
    write_cifar10(&cifar, 4);
    let output = reclaim([
        "train".as_ref(),
        "--backend".as_ref(),
        "ndarray".as_ref(),
        "--dataset".as_ref(),
        "cifar10".as_ref(),
        "--model".as_ref(),
        "cnn".as_ref(),
        "--data".as_ref(),
        cifar.as_os_str(),
        "--out".as_ref(),
        run.as_os_str(),
    ]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cnn model is not offered for training on the ndarray backend")
            && stderr.contains("flex"),
        "{stderr}"
    );
    assert!(!run.exists());

    // An unknown model or dataset: the command line is refused, the accepted names listed.
    for (option, value, accepted) in [
        ("--model", "resnet", "cnn"),
        ("--dataset", "imagenet", "cifar-100"),
    ] {
        let output = reclaim(["train", option, value]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(value) && stderr.contains(accepted),
            "{stderr}"
        );
    }
}
