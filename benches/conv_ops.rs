//! The convolutional network's operations one by one, then its whole training step, on the
//! host backends (Flex, NdArray), at batch 64 and the shapes the default CNN has on CIFAR-10
//! (3 → 32 channels at 32 × 32, 32 → 64 at 16 × 16) and on MNIST (1 → 32 at 28 × 28, 32 → 64
//! at 14 × 14), so that a change to one operation shows where it lands.
//!
//! - `conv_forward/SHAPE`: Burn's `conv2d` (3 × 3, padding 1, with bias).
//! - `conv_input_gradient/SHAPE`: the forward and the backward with only the input tracked
//!   (the gradient a convolution hands to the layer below it).
//! - `conv_weight_gradient/SHAPE`: the forward and the backward with only the weight and the
//!   bias tracked (what the optimizer needs; the first layer of a network needs only this).
//! - `max_pool/SHAPE`: 2 × 2 max pooling of stride 2, forward and backward.
//! - `cnn_step/NETWORK`: one training step of reclaim-model's `ConvNet` through Burn's
//!   autodiff and SGD (forward, cross-entropy, backward, update), for CIFAR-10's default
//!   network, its three-block variant and MNIST's, with freed memory kept for reuse
//!   (`FreedMemoryReuse`) as `reclaim train` keeps it through its epochs.
//!
//! Each row's throughput is samples per second. NdArray's rows run only with
//! `RECLAIM_BENCH_NDARRAY=1` (NdArray's convolution backward is scalar loops: one of its steps
//! takes seconds).
//!
//! ```sh
//! cargo bench --features ndarray --bench conv_ops
//! ```
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use std::time::Duration;

use burn::optim::{GradientsParams, ModuleOptimizer, SgdConfig};
use burn::tensor::module::conv2d;
use burn::tensor::module::max_pool2d;
use burn::tensor::ops::{ConvOptions, MaxPoolOptions};
use burn::tensor::{Device, Distribution, Int, Tensor};
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use reclaim::model::{ConvNet, ConvNetConfig};
use reclaim::train::{BackendChoice, FreedMemoryReuse};

/// The PyTorch recipe's batch size.
const BATCH_SIZE: usize = 64;

/// A convolution of the benchmarked networks: `[input channels, output channels, side]`.
#[derive(Clone, Copy)]
struct ConvShape {
    input_channels: usize,
    output_channels: usize,
    side: usize,
}

impl ConvShape {
    fn name(self) -> String {
        let ConvShape {
            input_channels,
            output_channels,
            side,
        } = self;
        format!("{input_channels}to{output_channels}_at{side}")
    }
}

/// The convolutions of the default CNN on CIFAR-10 and on MNIST, the third block of the
/// three-block network on CIFAR-10, and the second and third blocks on 64 × 64 photos.
const CONV_SHAPES: [ConvShape; 7] = [
    ConvShape {
        input_channels: 3,
        output_channels: 32,
        side: 32,
    },
    ConvShape {
        input_channels: 32,
        output_channels: 64,
        side: 16,
    },
    ConvShape {
        input_channels: 1,
        output_channels: 32,
        side: 28,
    },
    ConvShape {
        input_channels: 32,
        output_channels: 64,
        side: 14,
    },
    ConvShape {
        input_channels: 64,
        output_channels: 128,
        side: 8,
    },
    ConvShape {
        input_channels: 32,
        output_channels: 64,
        side: 32,
    },
    ConvShape {
        input_channels: 64,
        output_channels: 128,
        side: 16,
    },
];

/// The backends benchmarked: Flex, and NdArray when asked for.
fn host_backends() -> Vec<BackendChoice> {
    let with_ndarray = std::env::var_os("RECLAIM_BENCH_NDARRAY").is_some_and(|value| value == "1");
    BackendChoice::compiled()
        .into_iter()
        .filter(|backend| match backend {
            BackendChoice::Flex => true,
            BackendChoice::Ndarray => with_ndarray,
            _ => false,
        })
        .collect()
}

fn random(shape: [usize; 4], device: &Device) -> Tensor<4> {
    Tensor::random(shape, Distribution::Uniform(-1.0, 1.0), device)
}

/// The tensors of one convolution: input, weight, bias.
struct ConvTensors {
    input: Tensor<4>,
    weight: Tensor<4>,
    bias: Tensor<1>,
}

impl ConvTensors {
    fn new(shape: ConvShape, device: &Device) -> Self {
        let ConvShape {
            input_channels,
            output_channels,
            side,
        } = shape;
        Self {
            input: random([BATCH_SIZE, input_channels, side, side], device),
            weight: random([output_channels, input_channels, 3, 3], device),
            bias: Tensor::random([output_channels], Distribution::Uniform(-1.0, 1.0), device),
        }
    }

    fn forward(&self, input: Tensor<4>, weight: Tensor<4>, bias: Tensor<1>) -> Tensor<4> {
        conv2d(
            input,
            weight,
            Some(bias),
            ConvOptions::new([1, 1], [1, 1], [1, 1], 1),
        )
    }
}

fn bench_convolutions(group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    for backend in host_backends() {
        let device = backend.device().expect("compiled backend").autodiff();
        for shape in CONV_SHAPES {
            let tensors = ConvTensors::new(shape, &device);
            let row = format!("{}/{}", backend.name(), shape.name());
            group.bench_function(format!("conv_forward/{row}"), |bencher| {
                bencher.iter(|| {
                    let output = tensors.forward(
                        tensors.input.clone(),
                        tensors.weight.clone(),
                        tensors.bias.clone(),
                    );
                    output.into_data()
                })
            });
            group.bench_function(format!("conv_input_gradient/{row}"), |bencher| {
                bencher.iter(|| {
                    let input = tensors.input.clone().require_grad();
                    let output = tensors.forward(
                        input.clone(),
                        tensors.weight.clone(),
                        tensors.bias.clone(),
                    );
                    let gradients = output.sum().backward();
                    input.grad(&gradients).expect("tracked").into_data()
                })
            });
            group.bench_function(format!("conv_weight_gradient/{row}"), |bencher| {
                bencher.iter(|| {
                    let weight = tensors.weight.clone().require_grad();
                    let bias = tensors.bias.clone().require_grad();
                    let output =
                        tensors.forward(tensors.input.clone(), weight.clone(), bias.clone());
                    let gradients = output.sum().backward();
                    let weight_gradient = weight.grad(&gradients).expect("tracked");
                    (
                        weight_gradient.into_data(),
                        bias.grad(&gradients).expect("tracked").into_data(),
                    )
                })
            });
            let maps = random(
                [BATCH_SIZE, shape.output_channels, shape.side, shape.side],
                &device,
            );
            group.bench_function(format!("max_pool/{row}"), |bencher| {
                bencher.iter(|| {
                    let maps = maps.clone().require_grad();
                    let pooled = max_pool2d(maps.clone(), MaxPoolOptions::new([2, 2]));
                    let gradients = pooled.sum().backward();
                    maps.grad(&gradients).expect("tracked").into_data()
                })
            });
        }
    }
}

/// A network, its optimizer and one batch on one device, stepped in place.
struct CnnStepper {
    device: Device,
    model: Option<ConvNet>,
    optimizer: ModuleOptimizer,
    images: Tensor<2>,
    labels: Tensor<1, Int>,
}

impl CnnStepper {
    fn new(config: &ConvNetConfig, device: Device) -> Self {
        let images = Tensor::random(
            [BATCH_SIZE, config.input_size()],
            Distribution::Uniform(0.0, 1.0),
            &device,
        );
        let labels: Vec<i64> = (0..BATCH_SIZE)
            .map(|index| (index % config.number_of_classes) as i64)
            .collect();
        let labels = Tensor::<1, Int>::from_ints(labels.as_slice(), &device);
        Self {
            model: Some(config.init(&device).expect("a valid network")),
            optimizer: SgdConfig::new().init(),
            images,
            labels,
            device,
        }
    }

    fn step(&mut self) {
        let model = self.model.take().expect("put back after each step");
        let loss = model.loss(model.forward(self.images.clone()), self.labels.clone());
        let gradients = GradientsParams::from_grads(loss.backward(), &model);
        self.model = Some(self.optimizer.step(0.01, model, gradients));
        self.device.sync().expect("device sync");
    }
}

fn bench_steps(group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    let networks = [
        (
            "cifar10",
            ConvNetConfig::new()
                .with_channels(3)
                .with_height(32)
                .with_width(32),
        ),
        (
            "cifar10_three_blocks",
            ConvNetConfig::new()
                .with_channels(3)
                .with_height(32)
                .with_width(32)
                .with_filters(vec![32, 64, 128]),
        ),
        ("mnist", ConvNetConfig::new()),
    ];
    // The policy `reclaim train` holds through its epochs: each step's buffers reuse the last
    // step's pages, whatever the allocator's state when the row starts.
    let _reuse = FreedMemoryReuse::begin();
    for backend in host_backends() {
        for (name, config) in &networks {
            let device = backend.device().expect("compiled backend").autodiff();
            let mut stepper = CnnStepper::new(config, device);
            group.bench_function(format!("cnn_step/{}/{name}", backend.name()), |bencher| {
                bencher.iter(|| stepper.step())
            });
        }
    }
}

fn conv_ops(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("conv_ops");
    group.throughput(Throughput::Elements(BATCH_SIZE as u64));
    group.sample_size(20);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    bench_convolutions(&mut group);
    bench_steps(&mut group);
    group.finish();
}

criterion_group!(benches, conv_ops);
criterion_main!(benches);
