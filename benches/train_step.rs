//! One training step of the MNIST MLP (batch 64: forward, cross-entropy, backward, SGD) on
//! every compiled backend, in one criterion group. The device is synced inside the timed
//! closure, so queued GPU work is counted.
//!
//! ```sh
//! cargo bench --features flex,wgpu --bench train_step
//! ```
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use burn::optim::{GradientsParams, SgdConfig};
use burn::tensor::{Device, Distribution, Int, Tensor};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use reclaim::model::SimpleNnConfig;
use reclaim::train::BackendChoice;

const BATCH_SIZE: usize = 64;

fn train_step(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("train_step");
    group.throughput(Throughput::Elements(BATCH_SIZE as u64));
    for backend in BackendChoice::compiled() {
        if backend == BackendChoice::Cuda {
            continue; // measured on a CUDA machine only; see docs/benchmarks.md
        }
        let device: Device = backend.device().expect("compiled backend").autodiff();
        let mut model = Some(SimpleNnConfig::new().init(&device));
        let mut optimizer = SgdConfig::new().init();
        let images =
            Tensor::<2>::random([BATCH_SIZE, 784], Distribution::Uniform(0.0, 1.0), &device);
        let labels = Tensor::<1, Int>::from_ints(
            &std::array::from_fn::<i64, BATCH_SIZE, _>(|index| (index % 10) as i64)[..],
            &device,
        );
        group.bench_function(backend.name(), |bencher| {
            bencher.iter(|| {
                let current = model.take().expect("the model is put back after each step");
                let loss = current.loss(current.forward(images.clone()), labels.clone());
                let gradients = GradientsParams::from_grads(loss.backward(), &current);
                model = Some(optimizer.step(0.01, current, gradients));
                device.sync().expect("device sync");
            })
        });
    }
    group.finish();
}

criterion_group!(benches, train_step);
criterion_main!(benches);
