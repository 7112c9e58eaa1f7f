//! The `Learner` job fed by Burn's own pipeline, as Burn's MNIST example builds it:
//! `MnistDataset` (the IDX files read into a `Vec` per image), a `Batcher` that makes a tensor
//! per image and normalizes it, and `DataLoaderBuilder`'s shuffled multi-threaded loader.

use std::path::Path;
use std::time::Instant;

use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::{Dataset, InMemDataset};
use burn::module::Module;
use burn::tensor::{Device, Int, Tensor, TensorData};
use burn_dataset::vision::{MnistDataset, MnistItem};
use reclaim::learner::burn_train::{ClassificationOutput, InferenceStep, TrainOutput, TrainStep};
use reclaim::model::Mlp;

use crate::{JobFigures, Recipe, fit, initial_network, learner};

/// Trains through the `Learner` on Burn's loaders; everything is dropped before it returns.
pub fn run(recipe: Recipe, out: &Path, device: &Device) -> anyhow::Result<JobFigures> {
    let started = Instant::now();
    let train_set = MnistDataset::train();
    let test_set = MnistDataset::test();
    let training_samples = train_set.len();
    let training = DataLoaderBuilder::new(MnistBatcher)
        .batch_size(recipe.batch_size)
        .shuffle(recipe.seed)
        .num_workers(recipe.workers)
        .set_device(device.clone())
        .build(train_set);
    let validation = DataLoaderBuilder::new(MnistBatcher)
        .batch_size(recipe.batch_size)
        .num_workers(recipe.workers)
        .set_device(device.clone())
        .build(test_set);
    let setup = started.elapsed();

    let model = BurnBatchMlp {
        network: initial_network(device),
    };
    Ok(JobFigures {
        setup,
        training_samples,
        fit: fit(learner(model, recipe), (training, validation), recipe, out)?,
    })
}

/// One epoch through the same `Learner` code on 128 generated items, before the baseline:
/// burn-train's, the backend's and the loader's one-time state is then in place, so that what
/// the real job leaves behind is its own.
pub fn warm_up(recipe: Recipe, out: &Path, device: &Device) -> anyhow::Result<()> {
    let items = |count: usize| -> Vec<MnistItem> {
        (0..count)
            .map(|index| MnistItem {
                image: [[(index % 10) as f32 * 25.0; 28]; 28],
                label: (index % 10) as u8,
            })
            .collect()
    };
    let loader = |dataset: InMemDataset<MnistItem>| {
        DataLoaderBuilder::new(MnistBatcher)
            .batch_size(recipe.batch_size)
            .shuffle(recipe.seed)
            .num_workers(recipe.workers)
            .set_device(device.clone())
            .build(dataset)
    };
    let loaders = (
        loader(InMemDataset::new(items(128))),
        loader(InMemDataset::new(items(128))),
    );
    let model = BurnBatchMlp {
        network: initial_network(device),
    };
    let one_epoch = Recipe {
        epochs: 1,
        ..recipe
    };
    fit(learner(model, one_epoch), loaders, one_epoch, out)?;
    Ok(())
}

/// Burn's MNIST example's batcher: a tensor per image, scaled to [0, 1] and normalized with
/// MNIST's mean and standard deviation, then concatenated; a one-element tensor per label.
#[derive(Clone, Debug, Default)]
struct MnistBatcher;

/// A batch of Burn's pipeline: images `[B, 28, 28]`, labels `[B]`.
#[derive(Clone, Debug)]
pub struct MnistBatch {
    images: Tensor<3>,
    targets: Tensor<1, Int>,
}

impl Batcher<MnistItem, MnistBatch> for MnistBatcher {
    fn batch(&self, items: Vec<MnistItem>, device: &Device) -> MnistBatch {
        let images = items
            .iter()
            .map(|item| TensorData::from(item.image).convert::<f32>())
            .map(|data| Tensor::<2>::from_data(data, device))
            .map(|tensor| tensor.reshape([1, 28, 28]))
            // Scale to [0, 1], then MNIST's mean and standard deviation, as in the example.
            .map(|tensor| ((tensor / 255) - 0.1307) / 0.3081)
            .collect();
        let targets = items
            .iter()
            .map(|item| Tensor::<1, Int>::from_data([i64::from(item.label)], device))
            .collect();
        MnistBatch {
            images: Tensor::cat(images, 0),
            targets: Tensor::cat(targets, 0),
        }
    }
}

/// The same MLP, with burn-train's step traits for Burn's batches (flattened to 784 inputs,
/// as the example's model does in its forward pass).
#[derive(Module, Debug)]
pub struct BurnBatchMlp {
    network: Mlp,
}

impl BurnBatchMlp {
    fn classify(&self, batch: MnistBatch) -> ClassificationOutput {
        let [batch_size, height, width] = batch.images.dims();
        let images = batch.images.reshape([batch_size, height * width]);
        let logits = self.network.forward(images);
        let loss = self.network.loss(logits.clone(), batch.targets.clone());
        ClassificationOutput::new(loss, logits, batch.targets)
    }
}

impl TrainStep for BurnBatchMlp {
    type Input = MnistBatch;
    type Output = ClassificationOutput;

    fn step(&self, batch: MnistBatch) -> TrainOutput<ClassificationOutput> {
        let output = self.classify(batch);
        let gradients = output.loss.backward();
        TrainOutput::new(self, gradients, output)
    }
}

impl InferenceStep for BurnBatchMlp {
    type Input = MnistBatch;
    type Output = ClassificationOutput;

    fn step(&self, batch: MnistBatch) -> ClassificationOutput {
        self.classify(batch)
    }
}
