//! The matrix products of one training step of the MNIST MLP at batch 64, alone: the two GEMMs
//! of the first layer (`x @ W1`, 64 x 784 x 128, and its weight gradient `x^T @ dh`, 784 x 64 x
//! 128, which together are nearly all of the step's arithmetic: docs/benchmarks.md, "Where the
//! time went with Burn's step: a profile") through the two GEMM crates under
//! Burn's CPU backends: `matrixmultiply` (NdArray's) and `gemm` (Flex's), the latter on one
//! thread and on rayon's pool (`matrixmultiply` runs on `MATMUL_NUM_THREADS` threads, by
//! default the physical cores, when the `rayon` feature turns its threading on; set it to 1 for
//! one thread). It says how far the step is from the GEMMs' own time on this CPU,
//! and what a second thread could give (Burn 0.22.1's Flex runs a product on rayon only from
//! 192^3 multiply-adds up; the step's are 6.4 M, below that).
//!
//! ```sh
//! cargo bench --bench gemm_shapes
//! ```
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// One product `C[m, n] = A[m, k] @ B[k, n]`; `A` is read transposed from a `[k, m]` buffer when
/// `transposed_lhs` (the weight gradient's `x^T`, a view in Burn).
struct Product {
    name: &'static str,
    m: usize,
    k: usize,
    n: usize,
    transposed_lhs: bool,
}

const BATCH: usize = 64;

const PRODUCTS: [Product; 2] = [
    Product {
        name: "forward_x_w1",
        m: BATCH,
        k: 784,
        n: 128,
        transposed_lhs: false,
    },
    Product {
        name: "weight_gradient_xt_dh",
        m: 784,
        k: BATCH,
        n: 128,
        transposed_lhs: true,
    },
];

/// Row and column strides of the left operand.
fn lhs_strides(product: &Product) -> (isize, isize) {
    if product.transposed_lhs {
        (1, product.m as isize)
    } else {
        (product.k as isize, 1)
    }
}

/// Panics unless the buffers hold exactly the product's operands and result.
fn assert_sizes(product: &Product, lhs: &[f32], rhs: &[f32], out: &[f32]) {
    assert_eq!(lhs.len(), product.m * product.k);
    assert_eq!(rhs.len(), product.k * product.n);
    assert_eq!(out.len(), product.m * product.n);
}

fn with_matrixmultiply(product: &Product, lhs: &[f32], rhs: &[f32], out: &mut [f32]) {
    assert_sizes(product, lhs, rhs, out);
    let (row_stride, column_stride) = lhs_strides(product);
    let Product { m, k, n, .. } = *product;
    // SAFETY: `lhs` holds m * k values, `rhs` k * n and `out` m * n (asserted above); the
    // strides address only those elements.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            lhs.as_ptr(),
            row_stride,
            column_stride,
            rhs.as_ptr(),
            n as isize,
            1,
            0.0,
            out.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

fn with_gemm(
    product: &Product,
    lhs: &[f32],
    rhs: &[f32],
    out: &mut [f32],
    parallelism: gemm::Parallelism,
) {
    assert_sizes(product, lhs, rhs, out);
    let (row_stride, column_stride) = lhs_strides(product);
    let Product { m, k, n, .. } = *product;
    // SAFETY: as in `with_matrixmultiply`; `gemm` takes column strides before row strides.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out.as_mut_ptr(),
            1,
            n as isize,
            false,
            lhs.as_ptr(),
            column_stride,
            row_stride,
            rhs.as_ptr(),
            1,
            n as isize,
            0.0f32,
            1.0f32,
            false,
            false,
            false,
            parallelism,
        );
    }
}

fn gemm_shapes(criterion: &mut Criterion) {
    for product in &PRODUCTS {
        let lhs: Vec<f32> = (0..product.m * product.k)
            .map(|index| (index % 7) as f32 * 0.1)
            .collect();
        let rhs: Vec<f32> = (0..product.k * product.n)
            .map(|index| (index % 5) as f32 * 0.1)
            .collect();
        let mut out = vec![0f32; product.m * product.n];
        let mut group = criterion.benchmark_group(format!("gemm_shapes/{}", product.name));
        // One "element" per floating-point operation (a multiply-add is two): criterion's
        // Gelem/s is then GFLOP/s, the figure docs/benchmarks.md quotes.
        group.throughput(Throughput::Elements(
            (2 * product.m * product.k * product.n) as u64,
        ));
        group.bench_function("matrixmultiply", |bencher| {
            bencher.iter(|| with_matrixmultiply(product, &lhs, &rhs, &mut out))
        });
        group.bench_function("gemm_one_thread", |bencher| {
            bencher.iter(|| with_gemm(product, &lhs, &rhs, &mut out, gemm::Parallelism::None))
        });
        group.bench_function("gemm_rayon", |bencher| {
            bencher.iter(|| with_gemm(product, &lhs, &rhs, &mut out, gemm::Parallelism::Rayon(0)))
        });
        group.finish();
    }
}

criterion_group!(benches, gemm_shapes);
criterion_main!(benches);
