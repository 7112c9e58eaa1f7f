//! Release by construction, measured: a counting global allocator shows that once a loader's
//! scope ends the live heap is back, to the byte, where it was before; and once the dataset is
//! dropped its file is no longer mapped.
//!
//! A global allocator is per binary, and its counter sees every thread of the process, so this
//! binary holds a single check that runs its scenarios one after the other, without libtest's
//! harness (`harness = false` in `Cargo.toml`): the harness's main thread allocates when its
//! timers fire, at moments that depend on the scheduler.

mod common;

use std::path::Path;

use burn::data::dataloader::DataLoader;
use burn::tensor::Device;
use common::write_idx_pair;
use reclaim_dataset::{ImageDataset, Split};
use reclaim_loader::{
    BurnLoader, ImageShape, Loader, LoaderConfig, Normalization, PixelFormat, TensorBatch,
};
use reclaim_memory::CountingAllocator;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Live heap bytes of the whole process, as a signed number so that differences read as such.
fn live_heap_bytes() -> isize {
    reclaim_memory::live_heap_bytes().expect("the counting allocator is installed") as isize
}

fn mapped(path: &Path) -> bool {
    reclaim_memory::mapped_bytes_of(&[path.canonicalize().unwrap()]) > 0
}

fn training_config(num_workers: usize) -> LoaderConfig {
    LoaderConfig {
        num_workers,
        prefetch: 3,
        ..LoaderConfig::mnist_training(5)
    }
}

/// A whole epoch into tensors that are dropped at once, then half an epoch dropped with its
/// queues full, then tensors kept past their epoch. Checks on the way that what the loader
/// reports is really on the heap, and returns the most it reported.
fn loader_scope(dataset: &ImageDataset, device: &Device, num_workers: usize) -> usize {
    let before = live_heap_bytes();
    let loader = Loader::new(dataset, training_config(num_workers)).unwrap();
    let mut most_reported = 0;
    let kept = std::thread::scope(|scope| {
        let epoch = loader.epoch(scope, 0).unwrap();
        for batch in &epoch {
            let tensors: TensorBatch<2> = batch.unwrap().into_tensors(device).unwrap();
            // The report first: a worker's buffer is on the heap before it is in the report.
            let reported = loader.memory_report().current_bytes;
            let growth = live_heap_bytes() - before;
            assert!(growth >= reported as isize, "{growth} < {reported}");
            most_reported = most_reported.max(reported);
            drop(tensors);
        }
        drop(epoch);

        let half = loader.epoch(scope, 1).unwrap();
        for _ in 0..half.remaining_batches() / 2 {
            drop(half.next_batch().unwrap().unwrap());
        }
        drop(half);

        let last = loader.epoch(scope, 2).unwrap();
        let kept: Vec<TensorBatch<4>> = (0..3)
            .map(|_| {
                last.next_batch()
                    .unwrap()
                    .unwrap()
                    .into_tensors(device)
                    .unwrap()
            })
            .collect();
        kept
    });
    assert_eq!(kept.len(), 3);
    drop(kept);
    assert_eq!(loader.memory_report().current_bytes, 0);
    drop(loader);
    most_reported
}

fn burn_loader_scope(dataset: &std::sync::Arc<ImageDataset>, device: &Device) {
    let loader = BurnLoader::<_, 2>::from_arc(
        std::sync::Arc::clone(dataset),
        training_config(2),
        device.clone(),
    )
    .unwrap();
    let mut iterator = loader.iter();
    let first = iterator.next().unwrap().unwrap();
    assert_eq!(first.images.dims(), [64, 784]);
    drop(first);
    drop(iterator);
    let count = loader.iter().count();
    assert_eq!(count, loader.num_items().div_ceil(64));
}

/// The first time a thread waits on a `std::sync::mpsc` channel, std gives it a waiting
/// context that it keeps until the thread ends (a few dozen bytes, the thread's and not the
/// channel's). Whether the test thread first waits in a warm-up run or in a measured one
/// depends on timing, so it is made to wait once here, before anything is measured: the
/// sender holds back until the receiver has certainly gone to sleep.
fn make_this_thread_wait_on_a_channel_once() {
    let (sender, receiver) = std::sync::mpsc::sync_channel::<()>(0);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            sender.send(()).unwrap();
        });
        receiver.recv().unwrap();
    });
}

fn main() {
    every_byte_comes_back_when_the_loader_and_the_dataset_go();
    println!("every_byte_comes_back_when_the_loader_and_the_dataset_go ... ok");
}

fn every_byte_comes_back_when_the_loader_and_the_dataset_go() {
    make_this_thread_wait_on_a_channel_once();

    let folder = tempfile::tempdir().unwrap();
    write_idx_pair(folder.path(), 3000, ImageShape::MNIST);
    let images_path = folder.path().join("train-images-idx3-ubyte");

    // SAFETY: the files live in a private temporary folder nobody else modifies.
    let dataset = unsafe { ImageDataset::open_mapped(folder.path(), Split::Train) }.unwrap();
    assert!(mapped(&images_path));

    // Flex keeps a lent buffer as the tensor's storage (it stays the loader's until the tensor
    // goes); NdArray takes it over as its own `Vec` (it leaves the loader's report at once).
    #[allow(deprecated)] // Burn 0.22 deprecates NdArray in favour of Flex; we support both.
    let devices = [(Device::flex(), true), (Device::ndarray(), false)];
    for (device, keeps_lent_buffers) in &devices {
        for num_workers in [0, 2] {
            // The first run initializes Burn's and std's lazily created globals (device
            // settings, thread bookkeeping), which stay for the life of the process and are
            // not the loader's.
            loader_scope(&dataset, device, num_workers);
            // A worker's thread-local state is freed as its thread exits, which may come just
            // after the scope that joined it has ended: read once every thread is asleep.
            reclaim_memory::wait_for_settled_process();
            let before = live_heap_bytes();
            let most_reported = loader_scope(&dataset, device, num_workers);
            reclaim_memory::wait_for_settled_process();
            let after = live_heap_bytes();
            assert_eq!(
                after,
                before,
                "{device:?}, {num_workers} workers: {} bytes not released",
                after - before
            );
            let order_bytes = 3000 * size_of::<usize>();
            let at_least = if *keeps_lent_buffers {
                order_bytes + 64 * 784 * 4
            } else {
                order_bytes
            };
            assert!(most_reported >= at_least, "{device:?}: {most_reported}");
        }
    }

    let shared = std::sync::Arc::new(dataset);
    burn_loader_scope(&shared, &devices[0].0);
    let before = live_heap_bytes();
    burn_loader_scope(&shared, &devices[0].0);
    assert_eq!(live_heap_bytes(), before);

    let dataset = std::sync::Arc::into_inner(shared).unwrap();
    assert!(mapped(&images_path));
    drop(dataset);
    assert!(!mapped(&images_path));

    // Normalization settings are data, not allocations: a loader that is never iterated costs
    // nothing once dropped either.
    let owned = ImageDataset::open_owned(folder.path(), Split::Train).unwrap();
    let before = live_heap_bytes();
    let config = LoaderConfig {
        pixel_format: PixelFormat::NormalizedF32(Normalization::MNIST),
        ..LoaderConfig::default()
    };
    drop(Loader::new(&owned, config).unwrap());
    assert_eq!(live_heap_bytes(), before);
}
