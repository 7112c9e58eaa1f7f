//! The `Learner` job fed by Reclaim's loader: `BurnLoader`s over the memory-mapped IDX files.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use burn::data::dataloader::DataLoader;
use burn::tensor::Device;
use reclaim::dataset::{ImageDataset, Split};
use reclaim::learner::LearnerClassifier;
use reclaim::loader::{
    BurnLoader, ImageShape, ImageSource, LoaderConfig, LoaderError, TensorBatch,
};

use crate::{JobFigures, Recipe, fit, initial_network, learner};

/// Trains through the `Learner` on Reclaim's loaders; everything is dropped before it returns.
pub fn run(recipe: Recipe, data: &Path, out: &Path, device: &Device) -> anyhow::Result<JobFigures> {
    let started = Instant::now();
    // SAFETY: the benchmark's data folder is not modified while the job maps it.
    let train_set = Arc::new(unsafe { ImageDataset::open_mapped(data, Split::Train)? });
    // SAFETY: as above.
    let test_set = Arc::new(unsafe { ImageDataset::open_mapped(data, Split::Test)? });
    let training_samples = train_set.len();
    let loaders = loaders(&train_set, &test_set, recipe, device)?;
    let setup = started.elapsed();

    let model = LearnerClassifier::new(initial_network(device));
    Ok(JobFigures {
        setup,
        training_samples,
        fit: fit(learner(model, recipe), loaders, recipe, out)?,
    })
}

/// One epoch through the same `Learner` code on 128 generated images, before the baseline:
/// burn-train's, the backend's and the loader's one-time state is then in place, so that what
/// the real job leaves behind is its own.
pub fn warm_up(recipe: Recipe, out: &Path, device: &Device) -> anyhow::Result<()> {
    let config = |seed| LoaderConfig {
        batch_size: recipe.batch_size,
        num_workers: recipe.workers,
        class_count: Some(10),
        ..LoaderConfig::mnist_training(seed)
    };
    let training = BurnLoader::<_, 2>::new(GeneratedDigits, config(recipe.seed), device.clone())?;
    let validation = BurnLoader::<_, 2>::new(GeneratedDigits, config(recipe.seed), device.clone())?;
    let model = LearnerClassifier::new(initial_network(device));
    let one_epoch = Recipe {
        epochs: 1,
        ..recipe
    };
    let loaders: Loaders = (Arc::new(training), Arc::new(validation));
    fit(learner(model, one_epoch), loaders, one_epoch, out)?;
    Ok(())
}

/// 128 images of 28 x 28 whose brightness is their label.
#[derive(Debug)]
struct GeneratedDigits;

impl ImageSource for GeneratedDigits {
    fn len(&self) -> usize {
        128
    }

    fn image_shape(&self) -> ImageShape {
        ImageShape::MNIST
    }

    fn read_sample(&self, index: usize, pixels: &mut [u8]) -> Result<i64, LoaderError> {
        let label = index % 10;
        pixels.fill(label as u8 * 25);
        Ok(label as i64)
    }
}

type Loaders = (
    Arc<dyn DataLoader<TensorBatch<2>>>,
    Arc<dyn DataLoader<TensorBatch<2>>>,
);

/// The training loader (shuffled, seeded) and the validation loader (in order), with pixels
/// normalized as in Burn's MNIST example (MNIST's mean and standard deviation).
fn loaders(
    train_set: &Arc<ImageDataset>,
    test_set: &Arc<ImageDataset>,
    recipe: Recipe,
    device: &Device,
) -> anyhow::Result<Loaders> {
    let training = LoaderConfig {
        batch_size: recipe.batch_size,
        num_workers: recipe.workers,
        class_count: Some(10),
        ..LoaderConfig::mnist_training(recipe.seed)
    };
    let validation = LoaderConfig {
        batch_size: recipe.batch_size,
        num_workers: recipe.workers,
        class_count: Some(10),
        ..LoaderConfig::mnist_evaluation()
    };
    let training = BurnLoader::<_, 2>::from_arc(Arc::clone(train_set), training, device.clone())?;
    let validation =
        BurnLoader::<_, 2>::from_arc(Arc::clone(test_set), validation, device.clone())?;
    Ok((Arc::new(training), Arc::new(validation)))
}
