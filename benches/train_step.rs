//! One training step of the MNIST MLP (forward, cross-entropy, backward, SGD) on every compiled
//! backend, at batch 64 (the PyTorch recipe's), 256 and 1024, in one criterion group per batch
//! size. The device is synced inside the timed closure, so queued GPU work is counted. The
//! batch is the first images of the vendored MNIST's training split, scaled to [0, 1] as the
//! recipe scales them (most of the pixels are 0: docs/benchmarks.md, "Where the time went with
//! Burn's step: a profile").
//!
//! Rows `flex` and `ndarray` time the fused step on the host (`FusedSgdMlp::step`, `--step
//! fused`: the same host code on both, whose parameters stay on the host) at every batch size,
//! including those where `reclaim train` does not take it (on Flex above
//! `LARGEST_FUSED_STEP_BATCH_ON_FLEX`: these rows are how that limit was measured); rows
//! `flex-dense` and `ndarray-dense` time Burn's autodiff step over every pixel (`--step
//! dense`). Other backends have Burn's step only.
//!
//! Before each backend's timing, the bench counts the heap allocations of 50 steps with the
//! counting allocator and prints the mean per step (`allocations per step`), every thread's
//! included (Burn's pools and the GEMM's threads).
//!
//! ```sh
//! cargo bench --features flex,wgpu --bench train_step
//! ```
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use burn::optim::{GradientsParams, ModuleOptimizer, SgdConfig};
use burn::tensor::TensorData;
use burn::tensor::{Device, Int, Tensor};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use reclaim::dataset::{Family, ImageDataset, Split, default_data_folder};
use reclaim::memory::{CountingAllocator, allocation_count};
use reclaim::model::{FusedSgdMlp, Mlp, MlpConfig};
use reclaim::train::{BackendChoice, StepKernel};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The PyTorch recipe's batch size, then two larger ones, so that the scaling shows.
const BATCH_SIZES: [usize; 3] = [64, 256, 1024];

/// Steps whose allocations are counted (after as many unmeasured ones).
const COUNTED_STEPS: u64 = 50;

/// The first `batch_size` images of the vendored MNIST's training split, scaled to [0, 1].
fn mnist_pixels(batch_size: usize) -> Vec<f32> {
    let folder = default_data_folder(None, Family::Mnist);
    let dataset = ImageDataset::open_owned(&folder, Split::Train).expect("the vendored MNIST");
    let bytes = &dataset.pixels()[..batch_size * 784];
    bytes
        .iter()
        .map(|&pixel| f32::from(pixel) / 255.0)
        .collect()
}

/// A model, its optimizer and one batch on one device, stepped in place.
struct Stepper {
    device: Device,
    model: Option<Mlp>,
    optimizer: ModuleOptimizer,
    images: Tensor<2>,
    /// The batch's host pixels and labels, which the fused step reads each step as the
    /// trainer reads a loader's batch.
    pixels: Vec<f32>,
    host_labels: Vec<i64>,
    labels: Tensor<1, Int>,
    /// The fused step's parameters, on the host.
    host: Option<FusedSgdMlp>,
}

impl Stepper {
    fn new(device: Device, pixels: &[f32], step: StepKernel) -> Self {
        let batch_size = pixels.len() / 784;
        let images =
            Tensor::<2>::from_data(TensorData::new(pixels.to_vec(), [batch_size, 784]), &device);
        let labels: Vec<i64> = (0..batch_size).map(|index| (index % 10) as i64).collect();
        let host_labels = labels.clone();
        let labels = Tensor::<1, Int>::from_ints(labels.as_slice(), &device);
        let model = MlpConfig::new().init(&device);
        let host = (step == StepKernel::Fused)
            .then(|| FusedSgdMlp::from_model(&model).expect("the model's parameters"));
        Self {
            model: Some(model),
            optimizer: SgdConfig::new().init(),
            images,
            pixels: pixels.to_vec(),
            host_labels,
            labels,
            device,
            host,
        }
    }

    /// One step: forward, cross-entropy, backward, SGD, then a device sync.
    fn step(&mut self) {
        if let Some(host) = &mut self.host {
            host.step(&self.pixels, &self.host_labels, 0.01)
                .expect("a step on an MNIST batch");
            return;
        }
        let model = self
            .model
            .take()
            .expect("the model is put back after each step");
        let (images, labels) = (self.images.clone(), self.labels.clone());
        let loss = model.loss(model.forward(images), labels);
        let gradients = GradientsParams::from_grads(loss.backward(), &model);
        self.model = Some(self.optimizer.step(0.01, model, gradients));
        self.device.sync().expect("device sync");
    }

    /// The mean number of heap allocations of a step, after as many warm-up steps.
    fn allocations_per_step(&mut self) -> f64 {
        for _ in 0..COUNTED_STEPS {
            self.step();
        }
        let before = allocation_count().expect("the counting allocator is installed");
        for _ in 0..COUNTED_STEPS {
            self.step();
        }
        let after = allocation_count().expect("the counting allocator is installed");
        (after - before) as f64 / COUNTED_STEPS as f64
    }
}

/// The rows of one backend, each named by what `reclaim train` does there: the backend's own
/// name for its default step (the fused step on the host's backends, Burn's dense step
/// elsewhere) and `BACKEND-dense` for Burn's step where the fused one is the default.
fn rows_of(backend: BackendChoice) -> Vec<(String, StepKernel)> {
    let name = backend.name();
    match backend {
        BackendChoice::Flex | BackendChoice::Ndarray => vec![
            (name.to_owned(), StepKernel::Fused),
            (format!("{name}-dense"), StepKernel::Dense),
        ],
        _ => vec![(name.to_owned(), StepKernel::Dense)],
    }
}

fn train_step(criterion: &mut Criterion) {
    for batch_size in BATCH_SIZES {
        let pixels = mnist_pixels(batch_size);
        // Batch 64 keeps the group name earlier figures were taken under.
        let name = match batch_size {
            64 => "train_step".to_owned(),
            _ => format!("train_step_batch_{batch_size}"),
        };
        let mut group = criterion.benchmark_group(name);
        group.throughput(Throughput::Elements(batch_size as u64));
        for backend in BackendChoice::compiled() {
            if backend == BackendChoice::Cuda {
                continue; // measured on a CUDA machine only; see docs/benchmarks.md
            }
            for (row, step) in rows_of(backend) {
                let device: Device = backend.device().expect("compiled backend").autodiff();
                let mut stepper = Stepper::new(device, &pixels, step);
                let allocations = stepper.allocations_per_step();
                eprintln!("{row} batch {batch_size}: {allocations:.1} allocations per step");
                group.bench_function(&row, |bencher| bencher.iter(|| stepper.step()));
            }
        }
        group.finish();
    }
}

criterion_group!(benches, train_step);
criterion_main!(benches);
