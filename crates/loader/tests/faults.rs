//! What a loader does with bad settings and bad data: typed errors, never a panic, a hang or
//! an allocation for samples that do not exist.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::{SMALL, synthetic};
use reclaim_loader::{
    ImageShape, ImageSource, Loader, LoaderConfig, LoaderError, RawImages, Sampling,
};

fn errors_of<S: ImageSource>(loader: &Loader<'_, S>) -> Vec<LoaderError> {
    std::thread::scope(|scope| {
        let epoch = loader.epoch(scope, 0).unwrap();
        (&epoch).into_iter().filter_map(Result::err).collect()
    })
}

#[test]
fn a_label_beyond_the_class_count_ends_the_epoch_naming_the_sample() {
    let (pixels, mut labels) = synthetic(40, SMALL);
    labels.iter_mut().for_each(|label| *label %= 10);
    labels[33] = 12;
    let source = RawImages::new(&pixels, &labels, SMALL).unwrap();
    for num_workers in [0, 2] {
        let loader = Loader::new(
            &source,
            LoaderConfig {
                batch_size: 8,
                sampling: Sampling::Sequential,
                num_workers,
                class_count: Some(10),
                ..LoaderConfig::default()
            },
        )
        .unwrap();
        let errors = errors_of(&loader);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            matches!(
                errors[0],
                LoaderError::LabelOutOfRange {
                    index: 33,
                    label: 12,
                    class_count: 10
                }
            ),
            "{:?}",
            errors[0]
        );
        assert!(errors[0].to_string().contains("labels 0 to 9"));
    }
    // Unchecked without a class count.
    let unchecked = Loader::new(&source, LoaderConfig::default()).unwrap();
    assert!(errors_of(&unchecked).is_empty());
}

#[test]
fn worker_and_prefetch_counts_beyond_the_limits_are_refused() {
    let (pixels, labels) = synthetic(4, SMALL);
    let source = RawImages::new(&pixels, &labels, SMALL).unwrap();
    let workers = Loader::new(
        &source,
        LoaderConfig {
            num_workers: usize::MAX,
            ..LoaderConfig::default()
        },
    );
    assert!(matches!(
        workers.unwrap_err(),
        LoaderError::TooManyWorkers {
            requested: usize::MAX,
            maximum: LoaderConfig::MAX_WORKERS
        }
    ));
    let prefetch = Loader::new(
        &source,
        LoaderConfig {
            num_workers: 1,
            prefetch: usize::MAX,
            ..LoaderConfig::default()
        },
    );
    assert!(matches!(
        prefetch.unwrap_err(),
        LoaderError::PrefetchTooDeep {
            requested: usize::MAX,
            ..
        }
    ));
}

#[test]
fn a_batch_size_beyond_the_source_allocates_for_the_samples_there_are() {
    let (pixels, labels) = synthetic(10, SMALL);
    let source = RawImages::new(&pixels, &labels, SMALL).unwrap();
    let loader = Loader::new(
        &source,
        LoaderConfig {
            batch_size: 10_000_000,
            ..LoaderConfig::default()
        },
    )
    .unwrap();
    let sizes: Vec<usize> = std::thread::scope(|scope| {
        let epoch = loader.epoch(scope, 0).unwrap();
        (&epoch)
            .into_iter()
            .map(|batch| batch.unwrap().len())
            .collect()
    });
    assert_eq!(sizes, [10]);
    let pixels_per_image = SMALL.pixels().unwrap();
    // Ten images of f32 pixels, their labels and indices, and the order: far below what a
    // batch of ten million would take.
    let peak = loader.memory_report().peak_bytes;
    assert!(
        peak < 10 * pixels_per_image * 4 * 4 + 4096,
        "peak {peak} bytes"
    );
}

/// A source whose data "changes" after a number of batches, as a mapped file truncated under
/// the map does.
struct ChangesAfter {
    images: Vec<u8>,
    intact_checks_left: AtomicUsize,
}

#[derive(Debug, thiserror::Error)]
#[error("the file changed")]
struct Changed;

impl ImageSource for ChangesAfter {
    fn len(&self) -> usize {
        self.images.len()
    }

    fn image_shape(&self) -> ImageShape {
        ImageShape::grayscale(1, 1)
    }

    fn read_sample(&self, index: usize, pixels: &mut [u8]) -> Result<i64, LoaderError> {
        pixels[0] = self.images[index];
        Ok(0)
    }

    fn verify_intact(&self) -> Result<(), LoaderError> {
        let left = self.intact_checks_left.load(Ordering::SeqCst);
        if left == 0 {
            return Err(LoaderError::SourceChanged(Box::new(Changed)));
        }
        self.intact_checks_left.store(left - 1, Ordering::SeqCst);
        Ok(())
    }
}

#[test]
fn a_source_that_changed_ends_the_epoch_with_its_error() {
    let source = ChangesAfter {
        images: vec![1; 32],
        intact_checks_left: AtomicUsize::new(2),
    };
    let loader = Loader::new(
        &source,
        LoaderConfig {
            batch_size: 8,
            sampling: Sampling::Sequential,
            ..LoaderConfig::default()
        },
    )
    .unwrap();
    let outcomes: Vec<Result<usize, String>> = std::thread::scope(|scope| {
        let epoch = loader.epoch(scope, 0).unwrap();
        (&epoch)
            .into_iter()
            .map(|batch| {
                batch
                    .map(|batch| batch.len())
                    .map_err(|error| error.to_string())
            })
            .collect()
    });
    assert_eq!(
        outcomes,
        [Ok(8), Ok(8), Err("the file changed".to_string())]
    );
}
