//! The classifiers through the crate's public API: shapes, seeded weights across backends,
//! weights to bytes and back, the configuration's JSON, and a convolutional network learning.

use burn::optim::{GradientsParams, SgdConfig};
use burn::tensor::{Device, Distribution, Int, Tensor, TensorData};
use reclaim_model::{
    Classifier, ClassifierConfig, ConvNetConfig, MlpConfig, ModelError, ModelKind, WeightFormat,
};

#[allow(deprecated)]
fn ndarray() -> Device {
    Device::ndarray()
}

fn cifar(filters: Vec<usize>) -> ConvNetConfig {
    ConvNetConfig::new()
        .with_channels(3)
        .with_height(32)
        .with_width(32)
        .with_filters(filters)
}

#[test]
fn mnist_and_cifar_shapes_through_the_classifier() {
    let device = ndarray();
    for (config, input_size) in [
        (ClassifierConfig::Cnn(ConvNetConfig::new()), 784),
        (ClassifierConfig::Cnn(cifar(vec![32, 64])), 3072),
        (ClassifierConfig::Mlp(MlpConfig::new()), 784),
    ] {
        assert_eq!(config.input_size(), input_size);
        let model = config.init(&device).unwrap();
        let logits = model.forward(Tensor::<2>::zeros([2, input_size], &device));
        assert_eq!(logits.dims(), [2, 10], "{config:?}");
    }
}

/// The same seeded network on both CPU backends: the same weights (flex's, loaded on ndarray,
/// give exactly ndarray's logits) and, up to rounding, the same logits.
#[test]
fn seeded_networks_agree_on_ndarray_and_flex() {
    let config = ClassifierConfig::Cnn(cifar(vec![4, 8]).with_hidden_size(16));
    let input = |device: &Device| {
        let values: Vec<f32> = (0..2 * 3072)
            .map(|index| (index % 17) as f32 / 17.0)
            .collect();
        Tensor::<2>::from_data(TensorData::new(values, [2, 3072]), device)
    };
    let logits = |model: &Classifier, device: &Device| -> Vec<f32> {
        let output = model.forward(input(device)).into_data();
        output.try_to_vec::<f32>().unwrap()
    };
    let (ndarray, flex) = (ndarray(), Device::flex());
    let on_ndarray = config.init_seeded(&ndarray, 2024).unwrap();
    let on_flex = config.init_seeded(&flex, 2024).unwrap();

    let flex_bytes = on_flex.to_weight_bytes(WeightFormat::Safetensors).unwrap();
    let flex_weights_on_ndarray = config
        .init(&ndarray)
        .unwrap()
        .load_weight_bytes(&flex_bytes, WeightFormat::Safetensors)
        .unwrap();
    assert_eq!(
        logits(&flex_weights_on_ndarray, &ndarray),
        logits(&on_ndarray, &ndarray)
    );

    for (a, b) in logits(&on_ndarray, &ndarray)
        .iter()
        .zip(logits(&on_flex, &flex))
    {
        assert!((a - b).abs() < 1e-4, "{a} vs {b}");
    }
    let other_seed = config.init_seeded(&ndarray, 2025).unwrap();
    assert_ne!(logits(&other_seed, &ndarray), logits(&on_ndarray, &ndarray));
}

fn round_trip(format: WeightFormat) {
    let device = ndarray();
    let config = ClassifierConfig::Cnn(ConvNetConfig::new().with_filters(vec![4, 8, 8]));
    let model = config.init(&device).unwrap();
    let input = Tensor::<2>::random([3, 784], Distribution::Default, &device);
    let expected = model.forward(input.clone()).into_data();
    let bytes = model.to_weight_bytes(format).unwrap();
    let other = config.init(&device).unwrap();
    assert_ne!(other.forward(input.clone()).into_data(), expected);
    let restored = other.load_weight_bytes(&bytes, format).unwrap();
    assert_eq!(restored.kind(), ModelKind::Cnn);
    assert_eq!(restored.forward(input).into_data(), expected);
}

#[test]
fn burnpack_round_trip_restores_the_network() {
    round_trip(WeightFormat::Burnpack);
}

#[test]
fn safetensors_round_trip_restores_the_network() {
    round_trip(WeightFormat::Safetensors);
}

#[test]
fn weights_of_the_other_architecture_or_size_are_refused() {
    let device = ndarray();
    let mlp = ClassifierConfig::Mlp(MlpConfig::new())
        .init(&device)
        .unwrap();
    let cnn_config = ClassifierConfig::Cnn(ConvNetConfig::new().with_filters(vec![4, 8]));
    for format in [WeightFormat::Burnpack, WeightFormat::Safetensors] {
        let mlp_bytes = mlp.to_weight_bytes(format).unwrap();
        let error = cnn_config
            .init(&device)
            .unwrap()
            .load_weight_bytes(&mlp_bytes, format)
            .unwrap_err();
        assert!(
            matches!(error, ModelError::LoadWeights { format: f, .. } if f == format),
            "{error}"
        );

        let cnn_bytes = cnn_config
            .init(&device)
            .unwrap()
            .to_weight_bytes(format)
            .unwrap();
        let error = ClassifierConfig::Mlp(MlpConfig::new())
            .init(&device)
            .unwrap()
            .load_weight_bytes(&cnn_bytes, format)
            .unwrap_err();
        assert!(matches!(error, ModelError::LoadWeights { .. }), "{error}");

        let wider = ConvNetConfig::new().with_filters(vec![4, 16]);
        let error = ClassifierConfig::Cnn(wider)
            .init(&device)
            .unwrap()
            .load_weight_bytes(&cnn_bytes, format)
            .unwrap_err();
        assert!(matches!(error, ModelError::LoadWeights { .. }), "{error}");
    }
}

#[test]
fn simple_nn_checkpoints_load_into_a_classifier() {
    let device = ndarray();
    let model = MlpConfig::new().init_seeded(&device, 11);
    let bytes = model.to_weight_bytes(WeightFormat::Burnpack).unwrap();
    let classifier = Classifier::from(MlpConfig::new().init(&device))
        .load_weight_bytes(&bytes, WeightFormat::Burnpack)
        .unwrap();
    let input = Tensor::<2>::ones([1, 784], &device);
    assert_eq!(
        classifier.forward(input.clone()).into_data(),
        model.forward(input).into_data()
    );
}

#[test]
fn configs_round_trip_through_json_with_their_kind() {
    let configs = [
        ClassifierConfig::default_for(ModelKind::Mlp),
        ClassifierConfig::Cnn(cifar(vec![16, 32, 64]).with_number_of_classes(100)),
    ];
    for config in configs {
        let json = serde_json::to_string(&config).unwrap();
        let kind = format!("\"kind\":\"{}\"", config.kind());
        assert!(json.contains(&kind), "{json}");
        let read: ClassifierConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(read, config);
    }
    let read: ClassifierConfig = serde_json::from_str(
        r#"{"kind":"cnn","channels":3,"height":32,"width":32,"number_of_classes":10,
            "filters":[32,64],"hidden_size":128}"#,
    )
    .unwrap();
    assert_eq!(read, ClassifierConfig::Cnn(cifar(vec![32, 64])));
    assert!(serde_json::from_str::<ClassifierConfig>(r#"{"kind":"rnn"}"#).is_err());
    assert_eq!(serde_json::to_string(&ModelKind::Cnn).unwrap(), "\"cnn\"");
}

#[test]
fn model_kinds_parse_and_name_the_accepted_ones() {
    assert_eq!("mlp".parse::<ModelKind>().unwrap(), ModelKind::Mlp);
    assert_eq!("cnn".parse::<ModelKind>().unwrap(), ModelKind::Cnn);
    let message = "transformer".parse::<ModelKind>().unwrap_err().to_string();
    assert!(message.contains("\"transformer\""), "{message}");
    assert!(message.contains("mlp, cnn"), "{message}");
}

#[test]
fn invalid_configs_are_errors() {
    let device = ndarray();
    let cases = [
        ConvNetConfig::new().with_channels(0),
        ConvNetConfig::new().with_number_of_classes(0),
        ConvNetConfig::new().with_filters(vec![8, 0]),
        ConvNetConfig::new().with_filters(vec![8; 4]),
        ConvNetConfig::new().with_height(3),
    ];
    for config in cases {
        let error = ClassifierConfig::Cnn(config.clone())
            .init(&device)
            .unwrap_err();
        let expected = config.validate().unwrap_err();
        assert_eq!(error.to_string(), expected.to_string());
    }
}

/// Bright left half (class 0) or bright right half (class 1), 1×8×8, with some noise: a task
/// a convolutional network learns in a few steps.
fn halves(device: &Device) -> (Tensor<2>, Tensor<1, Int>) {
    const SAMPLES: usize = 64;
    const SIDE: usize = 8;
    let mut noise = 0x9e37_79b9_u32;
    let mut pixels = Vec::with_capacity(SAMPLES * SIDE * SIDE);
    let mut labels = Vec::with_capacity(SAMPLES);
    for sample in 0..SAMPLES {
        let label = sample % 2;
        labels.push(label as i64);
        for _row in 0..SIDE {
            for column in 0..SIDE {
                let bright = (column < SIDE / 2) == (label == 0);
                noise ^= noise << 13;
                noise ^= noise >> 17;
                noise ^= noise << 5;
                let jitter = (noise % 1000) as f32 / 1000.0 * 0.3;
                pixels.push(if bright { 0.7 + jitter } else { jitter });
            }
        }
    }
    let images = Tensor::from_data(TensorData::new(pixels, [SAMPLES, SIDE * SIDE]), device);
    let labels = Tensor::from_data(TensorData::new(labels, [SAMPLES]), device);
    (images, labels)
}

/// The losses of 30 full-batch SGD steps of a seeded two-block network on `device`, trained as
/// the trainer does: through [`Classifier`], on the device with autodiff.
fn losses_while_learning(device: Device) -> Vec<f32> {
    const STEPS: usize = 30;
    const LEARNING_RATE: f64 = 0.25;
    let device = device.autodiff();
    let (images, labels) = halves(&device);
    let config = ClassifierConfig::Cnn(
        ConvNetConfig::new()
            .with_height(8)
            .with_width(8)
            .with_number_of_classes(2)
            .with_filters(vec![4, 8])
            .with_hidden_size(16),
    );
    let mut model = config.init_seeded(&device, 7).unwrap();
    let mut optimizer = SgdConfig::new().init();
    let mut losses = Vec::with_capacity(STEPS);
    for _ in 0..STEPS {
        let loss = model.loss(model.forward(images.clone()), labels.clone());
        let gradients = GradientsParams::from_grads(loss.backward(), &model);
        model = optimizer.step(LEARNING_RATE, model, gradients);
        losses.push(loss.inner().into_scalar::<f32>());
    }
    let correct = model
        .correct_predictions(model.forward(images), labels)
        .into_scalar::<i64>();
    assert!(correct >= 60, "{correct} of 64 right after training");
    losses
}

fn assert_learns(losses: &[f32]) {
    let (first, last) = (losses[0], losses[losses.len() - 1]);
    assert!(losses.iter().all(|loss| loss.is_finite()), "{losses:?}");
    assert!(last < first / 2.0, "loss {first} -> {last}: {losses:?}");
}

#[test]
fn the_network_learns_on_ndarray() {
    assert_learns(&losses_while_learning(ndarray()));
}

#[test]
fn the_network_learns_on_flex() {
    assert_learns(&losses_while_learning(Device::flex()));
}
