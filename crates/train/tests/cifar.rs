//! Training on colour images: a CNN on a generated CIFAR-10 folder (the real record format),
//! with augmentation, learns; a run stopped after an epoch and resumed ends exactly as the
//! uninterrupted one (the augmentation's draws are part of the run's identity); and a dataset
//! that does not fit the model is refused before anything is written.

use std::path::Path;

use reclaim_dataset::{
    DatasetName,
    cifar::{CifarRecord, CifarVariant, write_cifar_batch},
};
use reclaim_loader::Augmentation;
use reclaim_model::{ClassifierConfig, ConvNetConfig, ModelKind, WeightFormat};
use reclaim_train::{
    BackendChoice, PixelScaling, ProgressDisplay, StartPolicy, TrainConfig, TrainError,
    model_for_dataset, train,
};

const TRAINING_FILES: [&str; 5] = [
    "data_batch_1.bin",
    "data_batch_2.bin",
    "data_batch_3.bin",
    "data_batch_4.bin",
    "data_batch_5.bin",
];

/// Record `index`: class 0 images are bright in their red plane, class 1 in their blue plane,
/// with a pixel pattern that varies from image to image.
fn image(index: usize) -> (u8, Vec<u8>) {
    let label = (index % 2) as u8;
    let bright_plane = if label == 0 { 0 } else { 2 };
    let pixels = (0..3 * 1024)
        .map(|pixel| {
            let texture = ((pixel * 13 + index * 29) % 40) as u8;
            if pixel / 1024 == bright_plane {
                180 + texture
            } else {
                20 + texture
            }
        })
        .collect();
    (label, pixels)
}

/// A CIFAR-10 folder: five training files of `per_file` records and a test file of `test_len`.
fn write_cifar10(folder: &Path, per_file: usize, test_len: usize) {
    let mut next = 0;
    let mut write = |name: &str, count: usize| {
        let images: Vec<(u8, Vec<u8>)> = (next..next + count).map(image).collect();
        next += count;
        let records: Vec<CifarRecord<'_>> = images
            .iter()
            .map(|(label, pixels)| CifarRecord::cifar10(*label, pixels))
            .collect();
        write_cifar_batch(folder.join(name), CifarVariant::Cifar10, &records).unwrap();
    };
    for name in TRAINING_FILES {
        write(name, per_file);
    }
    write("test_batch.bin", test_len);
}

/// A small CNN (4 and 8 filters) for CIFAR's shape: quick in the tests' debug build.
fn small_cnn() -> ClassifierConfig {
    ClassifierConfig::Cnn(ConvNetConfig {
        channels: 3,
        height: 32,
        width: 32,
        number_of_classes: 10,
        filters: vec![4, 8],
        hidden_size: 16,
    })
}

fn cifar_config(data: &Path, run_folder: &Path) -> TrainConfig {
    TrainConfig {
        dataset: DatasetName::Cifar10.into(),
        model: small_cnn(),
        augmentation: Augmentation::CIFAR,
        pixel_scaling: PixelScaling::Cifar10Standardized,
        batch_size: 16,
        learning_rate: 0.05,
        progress: ProgressDisplay::Hidden,
        ..TrainConfig::recipe(
            BackendChoice::Flex,
            data.to_path_buf(),
            run_folder.to_path_buf(),
        )
    }
}

/// What the final weights compute on a fixed batch.
fn outputs(weights: &Path) -> Vec<f32> {
    #[allow(deprecated)]
    let device = burn::tensor::Device::ndarray();
    let model = small_cnn()
        .init(&device)
        .unwrap()
        .load_weight_bytes(&std::fs::read(weights).unwrap(), WeightFormat::Burnpack)
        .unwrap();
    let pixels: Vec<f32> = (0..4 * 3072)
        .map(|value| (value % 17) as f32 / 17.0)
        .collect();
    let input = burn::tensor::Tensor::<2>::from_data(
        burn::tensor::TensorData::new(pixels, [4, 3072]),
        &device,
    );
    model
        .forward(input)
        .into_data()
        .try_to_vec::<f32>()
        .unwrap()
}

#[test]
fn a_cnn_learns_colour_images_with_augmentation_and_resumes_exactly() {
    let folder = tempfile::tempdir().unwrap();
    let data = folder.path().join("cifar-10");
    std::fs::create_dir(&data).unwrap();
    write_cifar10(&data, 32, 48);

    let whole = cifar_config(&data, &folder.path().join("whole"));
    let run = train(&whole).unwrap();
    assert_eq!(run.epochs.len(), 2);
    assert!(
        run.epochs[1].train_loss < run.epochs[0].train_loss,
        "{:?}",
        run.epochs
    );
    let accuracy = run.final_test_accuracy().unwrap();
    assert!(
        accuracy >= 0.9,
        "test accuracy {accuracy} on red against blue"
    );
    assert!(run.release.steps.len() >= 5);

    let stopped_folder = folder.path().join("stopped");
    let stopped = TrainConfig {
        stop_after_epochs: Some(1),
        // Another worker count: the batches and their augmentation must not change.
        workers: 2,
        ..cifar_config(&data, &stopped_folder)
    };
    assert_eq!(train(&stopped).unwrap().epochs.len(), 1);
    let resumed = train(&TrainConfig {
        start: StartPolicy::ResumeLatestCheckpoint,
        ..cifar_config(&data, &stopped_folder)
    })
    .unwrap();
    assert_eq!(resumed.epochs.len(), 2);
    assert_eq!(resumed.epochs[1].train_loss, run.epochs[1].train_loss);
    assert_eq!(resumed.epochs[1].test_accuracy, run.epochs[1].test_accuracy);
    assert_eq!(
        outputs(&resumed.final_weights_path),
        outputs(&run.final_weights_path)
    );

    // A resume with another augmentation is refused, naming it.
    let error = train(&TrainConfig {
        start: StartPolicy::ResumeLatestCheckpoint,
        augmentation: Augmentation::NONE,
        ..cifar_config(&data, &stopped_folder)
    })
    .unwrap_err();
    assert!(error.to_string().contains("augmentation"), "{error}");
}

#[test]
fn a_model_for_other_images_or_classes_is_refused_before_the_run_starts() {
    let folder = tempfile::tempdir().unwrap();
    let data = folder.path().join("cifar-10");
    std::fs::create_dir(&data).unwrap();
    write_cifar10(&data, 2, 2);
    let run_folder = folder.path().join("run");

    // MNIST's MLP takes 784 inputs; CIFAR's images are 3 x 32 x 32.
    let error = train(&TrainConfig {
        model: model_for_dataset(DatasetName::Mnist, ModelKind::Mlp),
        ..cifar_config(&data, &run_folder)
    })
    .unwrap_err();
    assert!(
        matches!(
            error,
            TrainError::InputSizeMismatch {
                channels: 3,
                pixels: 3072,
                model_inputs: 784,
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("data_batch_1.bin"), "{error}");

    // A CNN of the same number of values, arranged as 1 x 96 x 32.
    let error = train(&TrainConfig {
        model: ClassifierConfig::Cnn(ConvNetConfig {
            channels: 1,
            height: 96,
            width: 32,
            number_of_classes: 10,
            filters: vec![4, 8],
            hidden_size: 16,
        }),
        ..cifar_config(&data, &run_folder)
    })
    .unwrap_err();
    assert!(
        matches!(error, TrainError::ImageShapeMismatch { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("3x32x32"), "{error}");

    // One class is fewer than the labels 0 and 1 of the files need.
    let error = train(&TrainConfig {
        model: ClassifierConfig::Cnn(ConvNetConfig {
            number_of_classes: 1,
            ..ConvNetConfig::new()
                .with_channels(3)
                .with_height(32)
                .with_width(32)
        }),
        ..cifar_config(&data, &run_folder)
    })
    .unwrap_err();
    assert!(
        matches!(error, TrainError::LabelOutOfRange { label: 1, .. }),
        "{error}"
    );

    // MNIST's normalization does not describe three channels.
    let error = train(&TrainConfig {
        pixel_scaling: PixelScaling::MnistStandardized,
        ..cifar_config(&data, &run_folder)
    })
    .unwrap_err();
    assert!(error.to_string().contains("channel"), "{error}");
    assert!(!run_folder.exists(), "nothing was written");
}
