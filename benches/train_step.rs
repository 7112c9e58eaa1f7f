//! One training step of the MNIST MLP (forward, cross-entropy, backward, SGD) on every compiled
//! backend, at batch 64 (the seed's), 256 and 1024, in one criterion group per batch size. The
//! device is synced inside the timed closure, so queued GPU work is counted.
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
use burn::tensor::{Device, Distribution, Int, Tensor};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use reclaim::memory::{CountingAllocator, allocation_count};
use reclaim::model::{SimpleNn, SimpleNnConfig};
use reclaim::train::BackendChoice;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The seed's batch size, then two larger ones, so that the scaling shows.
const BATCH_SIZES: [usize; 3] = [64, 256, 1024];

/// Steps whose allocations are counted (after as many unmeasured ones).
const COUNTED_STEPS: u64 = 50;

/// A model, its optimizer and one batch on one device, stepped in place.
struct Stepper {
    device: Device,
    model: Option<SimpleNn>,
    optimizer: ModuleOptimizer,
    images: Tensor<2>,
    labels: Tensor<1, Int>,
}

impl Stepper {
    fn new(device: Device, batch_size: usize) -> Self {
        let images =
            Tensor::<2>::random([batch_size, 784], Distribution::Uniform(0.0, 1.0), &device);
        let labels: Vec<i64> = (0..batch_size).map(|index| (index % 10) as i64).collect();
        let labels = Tensor::<1, Int>::from_ints(labels.as_slice(), &device);
        Self {
            model: Some(SimpleNnConfig::new().init(&device)),
            optimizer: SgdConfig::new().init(),
            images,
            labels,
            device,
        }
    }

    /// One step: forward, cross-entropy, backward, SGD, then a device sync.
    fn step(&mut self) {
        let model = self
            .model
            .take()
            .expect("the model is put back after each step");
        let loss = model.loss(model.forward(self.images.clone()), self.labels.clone());
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

fn train_step(criterion: &mut Criterion) {
    for batch_size in BATCH_SIZES {
        // The seed's batch keeps the group name earlier figures were taken under.
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
            let device: Device = backend.device().expect("compiled backend").autodiff();
            let mut stepper = Stepper::new(device, batch_size);
            let allocations = stepper.allocations_per_step();
            eprintln!(
                "{} batch {batch_size}: {allocations:.1} allocations per step",
                backend.name()
            );
            group.bench_function(backend.name(), |bencher| bencher.iter(|| stepper.step()));
        }
        group.finish();
    }
}

criterion_group!(benches, train_step);
criterion_main!(benches);
