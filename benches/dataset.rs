//! The dataset layer on the real MNIST train split (data/mnist, decompressed cache present):
//!
//! - `open_train/*`: opening and validating the train split (images and labels, labels checked
//!   against the number of classes), memory-mapped versus read into memory.
//! - `scan_train_images/*`: a full scan (the sum of every pixel byte), reported in bytes per second.
//!
//! Run with `cargo bench --bench dataset`; figures go to docs/benchmarks.md.
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use reclaim::dataset::{
    AccessPattern, Family, ImageDataset, Split, default_data_folder, idx::decompress_gz_cached,
};

fn mnist_folder() -> PathBuf {
    let folder = default_data_folder(None, Family::Mnist);
    // Make sure the decompressed cache exists, so that opening measures opening only.
    for entry in Family::Mnist.files(Split::Train).both() {
        let gz = folder.join(entry.compressed_name);
        if gz.is_file() {
            decompress_gz_cached(&gz).expect("the vendored MNIST decompresses");
        }
    }
    folder
}

/// Sums bytes in u32 lanes per 64 KiB block (cannot overflow: 65,536 x 255 < 2^32), so the
/// compiler vectorizes it; the result is the exact sum.
fn sum_of_bytes(bytes: &[u8]) -> u64 {
    bytes
        .chunks(1 << 16)
        .map(|block| u64::from(block.iter().map(|&byte| u32::from(byte)).sum::<u32>()))
        .sum()
}

fn open_train(criterion: &mut Criterion) {
    let folder = mnist_folder();
    let mut group = criterion.benchmark_group("open_train");
    group.bench_function("mapped", |bencher| {
        bencher.iter(|| {
            // SAFETY: the cache files are only ever replaced by rename, never modified in place.
            let dataset = unsafe { ImageDataset::open_mapped(black_box(&folder), Split::Train) }
                .expect("MNIST train opens");
            black_box(dataset.len())
        })
    });
    group.bench_function("owned", |bencher| {
        bencher.iter(|| {
            let dataset = ImageDataset::open_owned(black_box(&folder), Split::Train)
                .expect("MNIST train opens");
            black_box(dataset.len())
        })
    });
    group.finish();
}

fn scan_train_images(criterion: &mut Criterion) {
    let folder = mnist_folder();
    // SAFETY: as above.
    let mapped = unsafe { ImageDataset::open_mapped(&folder, Split::Train) }.expect("opens");
    let owned = ImageDataset::open_owned(&folder, Split::Train).expect("opens");
    assert_eq!(sum_of_bytes(mapped.pixels()), sum_of_bytes(owned.pixels()));

    let mut group = criterion.benchmark_group("scan_train_images");
    group.throughput(Throughput::Bytes(mapped.pixels().len() as u64));
    group.bench_function("mapped", |bencher| {
        bencher.iter(|| black_box(sum_of_bytes(black_box(mapped.pixels()))))
    });
    group.bench_function("owned", |bencher| {
        bencher.iter(|| black_box(sum_of_bytes(black_box(owned.pixels()))))
    });
    group.bench_function("mapped_open_scan", |bencher| {
        bencher.iter(|| {
            // SAFETY: as above.
            let dataset =
                unsafe { ImageDataset::open_mapped(&folder, Split::Train) }.expect("opens");
            black_box(sum_of_bytes(dataset.pixels()))
        })
    });
    group.bench_function("mapped_open_advise_sequential_scan", |bencher| {
        bencher.iter(|| {
            // SAFETY: as above.
            let dataset =
                unsafe { ImageDataset::open_mapped(&folder, Split::Train) }.expect("opens");
            dataset
                .images()
                .advise(AccessPattern::Sequential)
                .expect("madvise");
            black_box(sum_of_bytes(dataset.pixels()))
        })
    });
    group.bench_function("owned_open_scan", |bencher| {
        bencher.iter(|| {
            let dataset = ImageDataset::open_owned(&folder, Split::Train).expect("opens");
            black_box(sum_of_bytes(dataset.pixels()))
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = open_train, scan_train_images
}
criterion_main!(benches);
