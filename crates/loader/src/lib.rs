//! Feeding Burn models from IDX image datasets, fast, with memory released by construction.
//!
//! - [`ImageSource`]: where samples come from. Implemented zero-copy for
//!   `reclaim_dataset::ImageDataset` (a memory-mapped or owned IDX pair) and [`RawImages`], and
//!   through [`BurnDatasetSource`] for any Burn `Dataset`.
//! - [`Sampler`]s: [`SequentialSampler`], [`ShuffledSampler`], [`SubsetSampler`],
//!   [`WeightedRandomSampler`], [`DistributedSampler`], [`BatchSampler`]; chosen for a loader
//!   with [`Sampling`]. Every epoch's order is a function of the seed and the epoch only.
//! - [`Loader`] borrows its source; [`Loader::epoch`] starts an [`Epoch`] that borrows the
//!   loader and runs `num_workers` prefetching threads in a [`std::thread::scope`]; each
//!   [`Batch`] borrows its epoch and is a view of pooled buffers (pixels converted straight
//!   from the source's rows to `f32` in `[0, 1]`, normalized, or kept as raw `u8`).
//! - [`Batch::into_tensors`] makes Burn tensors (`[B, H*W]`, `[B, H, W]` or `[B, 1, H, W]`
//!   images and `[B]` labels) on any `Device`, lending the pooled buffer to Burn instead of
//!   copying it.
//! - [`BurnLoader`] implements Burn's `DataLoader` so the same pipeline can feed
//!   `burn-train`'s `Learner`.
//! - [`LoaderState`] (serde) resumes an interrupted epoch exactly; [`MemoryReport`] tells what
//!   the loader holds now and at its peak.
//!
//! Dropping an epoch half-way stops its workers, waits for them and frees its buffers; using a
//! batch after its epoch, an epoch after its loader, or a loader after its dataset does not
//! compile.
//!
//! ```
//! use burn::tensor::Device;
//! use reclaim_loader::{ImageShape, Loader, LoaderConfig, RawImages, TensorBatch};
//!
//! # fn main() -> Result<(), reclaim_loader::LoaderError> {
//! // 100 images of 28 x 28 (a real run would open an `ImageDataset` from IDX files).
//! let pixels: Vec<u8> = (0..100 * 784).map(|value| (value % 251) as u8).collect();
//! let labels: Vec<u8> = (0..100).map(|value| (value % 10) as u8).collect();
//! let source = RawImages::new(&pixels, &labels, ImageShape::MNIST)?;
//!
//! let config = LoaderConfig { num_workers: 2, ..LoaderConfig::mnist_training(42) };
//! let loader = Loader::new(&source, config)?;
//! # #[allow(deprecated)]
//! let device = Device::ndarray();
//! std::thread::scope(|scope| -> Result<(), reclaim_loader::LoaderError> {
//!     for epoch_number in 0..2 {
//!         let epoch = loader.epoch(scope, epoch_number)?;
//!         for batch in &epoch {
//!             let TensorBatch { images, labels } = batch?.into_tensors::<2>(&device)?;
//!             assert_eq!(images.dims()[1], 784);
//!             assert_eq!(labels.dims()[0], images.dims()[0]);
//!         }
//!     }
//!     Ok(())
//! })?;
//! // Every epoch is over: the loader holds nothing.
//! assert_eq!(loader.memory_report().current_bytes, 0);
//! assert!(loader.memory_report().peak_bytes > 0);
//! # Ok(())
//! # }
//! ```

mod augment;
mod batch;
mod burn_loader;
mod convert;
mod epoch;
mod error;
mod image_dataset;
mod loader;
mod pool;
mod rng;
mod sampler;
mod source;
mod state;
mod tensor;

pub use augment::{Augmentation, HorizontalFlip, RandomCrop, SampleTransform};
pub use batch::{Batch, BatchImages};
pub use burn_loader::{BurnLoader, BurnLoaderIterator};
pub use convert::{ChannelNormalization, Normalization, PixelFormat};
pub use epoch::WORKER_THREAD_NAME_PREFIX;
pub use error::{BoxedSourceError, LoaderError};
pub use loader::{Batches, Epoch, Loader, LoaderConfig};
pub use pool::MemoryReport;
pub use rng::SampleRng;
pub use sampler::{
    BatchSampler, DistributedSampler, Order, Replacement, Sampler, Sampling, SequentialSampler,
    ShuffledSampler, SubsetSampler, UnevenShards, WeightedRandomSampler, batch_count,
};
pub use source::{BurnDatasetSource, ImageShape, ImageSource, RawImages};
pub use state::LoaderState;
pub use tensor::{RawTensorBatch, TensorBatch};

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
