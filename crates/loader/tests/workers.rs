//! Worker threads: none outlives its epoch, panics become errors, stopping half-way joins.
//!
//! The tests here count this process's loader threads, so they take a lock to run one at a time.

mod common;

use std::sync::{Mutex, MutexGuard};

use common::{
    PanicsAt, SMALL, live_worker_threads, no_worker_threads_left, started_worker_threads, synthetic,
};
use reclaim_loader::{Loader, LoaderConfig, LoaderError, RawImages, Sampling};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn exclusive() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn config(num_workers: usize) -> LoaderConfig {
    LoaderConfig {
        batch_size: 4,
        num_workers,
        prefetch: 2,
        sampling: Sampling::Sequential,
        ..LoaderConfig::default()
    }
}

#[test]
fn workers_live_exactly_as_long_as_their_epoch() {
    let _guard = exclusive();
    let (pixels, labels) = synthetic(400, SMALL);
    let source = RawImages::new(&pixels, &labels, SMALL).unwrap();
    let loader = Loader::new(&source, config(3)).unwrap();
    assert!(no_worker_threads_left());
    std::thread::scope(|scope| {
        let epoch = loader.epoch(scope, 0).unwrap();
        assert_eq!(epoch.worker_threads(), 3);
        let names = started_worker_threads(3);
        assert_eq!(
            names,
            ["loader-worker-0", "loader-worker-1", "loader-worker-2"]
        );
        // Half-way: five batches of a hundred, with every worker's queue full.
        for _ in 0..5 {
            drop(epoch.next_batch().unwrap().unwrap());
        }
        drop(epoch);
        assert!(no_worker_threads_left(), "{:?}", live_worker_threads());
        assert_eq!(loader.memory_report().current_bytes, 0);
    });
}

#[test]
fn a_panicking_worker_becomes_an_error_without_hanging_or_leaking() {
    let _guard = exclusive();
    let source = PanicsAt {
        len: 200,
        panic_at: 37,
    };
    for num_workers in [1, 2, 4] {
        let loader = Loader::new(&source, config(num_workers)).unwrap();
        std::thread::scope(|scope| {
            let epoch = loader.epoch(scope, 0).unwrap();
            let outcomes: Vec<Result<Vec<usize>, LoaderError>> = epoch
                .batches()
                .map(|batch| batch.map(|batch| batch.indices().to_vec()))
                .collect();
            // Batches 0..9 hold samples 0..36; batch 9 holds sample 37.
            assert_eq!(outcomes.len(), 10, "{num_workers} workers");
            for (number, outcome) in outcomes[..9].iter().enumerate() {
                let expected: Vec<usize> = (number * 4..number * 4 + 4).collect();
                assert_eq!(outcome.as_ref().unwrap(), &expected);
            }
            match &outcomes[9] {
                Err(LoaderError::WorkerPanicked {
                    worker,
                    batch: 9,
                    message,
                }) => {
                    assert_eq!(*worker, 9 % num_workers);
                    assert!(message.contains("sample 37 is cursed"), "{message}");
                }
                other => panic!("{other:?}"),
            }
            assert!(epoch.next_batch().is_none());
        });
        // The scope ended normally (no propagated panic) and no worker is left.
        assert!(no_worker_threads_left());
        assert_eq!(loader.memory_report().current_bytes, 0);
    }
}

#[test]
fn an_epoch_dropped_before_its_first_batch_stops_its_workers() {
    let _guard = exclusive();
    let (pixels, labels) = synthetic(10_000, SMALL);
    let source = RawImages::new(&pixels, &labels, SMALL).unwrap();
    let loader = Loader::new(
        &source,
        LoaderConfig {
            prefetch: 8,
            ..config(2)
        },
    )
    .unwrap();
    for epoch_number in 0..20 {
        std::thread::scope(|scope| {
            let epoch = loader.epoch(scope, epoch_number).unwrap();
            drop(epoch);
        });
        assert!(no_worker_threads_left());
    }
    assert_eq!(loader.memory_report().current_bytes, 0);
}

/// Six samples whose reading waits until the test opens the gate, so that workers stay alive
/// (and visible) for as long as the test needs.
#[derive(Debug, Default)]
struct Gated {
    open: std::sync::atomic::AtomicBool,
}

impl reclaim_loader::ImageSource for Gated {
    fn len(&self) -> usize {
        6
    }

    fn image_shape(&self) -> reclaim_loader::ImageShape {
        SMALL
    }

    fn read_sample(&self, index: usize, pixels: &mut [u8]) -> Result<i64, LoaderError> {
        while !self.open.load(std::sync::atomic::Ordering::Acquire) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        pixels.fill(index as u8);
        Ok(index as i64)
    }
}

#[test]
fn fewer_batches_than_workers_start_fewer_threads() {
    let _guard = exclusive();
    let source = Gated::default();
    let loader = Loader::new(&source, config(8)).unwrap();
    std::thread::scope(|scope| {
        let epoch = loader.epoch(scope, 0).unwrap();
        // Two batches: two workers, both waiting at the gate.
        assert_eq!(epoch.worker_threads(), 2);
        assert_eq!(
            started_worker_threads(2),
            ["loader-worker-0", "loader-worker-1"]
        );
        source
            .open
            .store(true, std::sync::atomic::Ordering::Release);
        let sizes: Vec<usize> = epoch.batches().map(|batch| batch.unwrap().len()).collect();
        assert_eq!(sizes, [4, 2]);
    });
    assert!(no_worker_threads_left());
}
