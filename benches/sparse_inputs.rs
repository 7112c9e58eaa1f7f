//! The sparse-input kernel (`reclaim_model::SparseRows`) on the step's two products, from a
//! real batch of the vendored MNIST scaled to [0, 1] (about 81% of its pixels are 0): building
//! the sparse rows, their transpose, the forward `x @ W1` (64 × 784 · 784 × 128) and the weight
//! gradient `x^T @ dh` (784 × 64 · 64 × 128). `benches/gemm_shapes.rs` times the same two
//! products dense; docs/benchmarks.md compares them.
//!
//! ```sh
//! cargo bench --bench sparse_inputs
//! ```
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use criterion::{Criterion, criterion_group, criterion_main};
use reclaim::dataset::{Family, ImageDataset, Split, default_data_folder};
use reclaim::model::SparseRows;

const BATCH: usize = 64;
const PIXELS: usize = 784;
const HIDDEN: usize = 128;

fn sparse_inputs(criterion: &mut Criterion) {
    let folder = default_data_folder(None, Family::Mnist);
    let dataset = ImageDataset::open_owned(&folder, Split::Train).expect("the vendored MNIST");
    let pixels: Vec<f32> = dataset.pixels()[..BATCH * PIXELS]
        .iter()
        .map(|&pixel| f32::from(pixel) / 255.0)
        .collect();
    let weights: Vec<f32> = (0..PIXELS * HIDDEN)
        .map(|index| (index % 97) as f32 / 97.0 - 0.5)
        .collect();
    let hidden_gradient: Vec<f32> = (0..BATCH * HIDDEN)
        .map(|index| (index % 89) as f32 / 89.0 - 0.5)
        .collect();
    let rows = SparseRows::from_dense(&pixels, PIXELS).expect("whole rows");
    let columns = rows.transpose();
    eprintln!("batch density: {:.3}", rows.density());

    let mut group = criterion.benchmark_group("sparse_inputs");
    group.bench_function("from_dense", |bencher| {
        bencher.iter(|| SparseRows::from_dense(&pixels, PIXELS).expect("whole rows"))
    });
    group.bench_function("transpose", |bencher| bencher.iter(|| rows.transpose()));
    group.bench_function("forward x@W1", |bencher| {
        bencher.iter(|| rows.times_dense(&weights, HIDDEN).expect("shapes fit"))
    });
    group.bench_function("weight gradient x^T@dh", |bencher| {
        bencher.iter(|| {
            columns
                .times_dense(&hidden_gradient, HIDDEN)
                .expect("shapes fit")
        })
    });
    group.finish();
}

criterion_group!(benches, sparse_inputs);
criterion_main!(benches);
