//! Reclaim: train image classifiers (the MNIST family, CIFAR) with Burn, with a fast data
//! pipeline whose memory is released by construction.
//!
//! This crate re-exports the workspace's crates:
//!
//! - [`dataset`]: the IDX and CIFAR formats and the catalogue (`reclaim-dataset`).
//! - [`loader`]: samplers, batching, prefetching and scoped release (`reclaim-loader`).
//! - [`model`]: the MLP and the CNN for every Burn backend (`reclaim-model`).
//! - [`train`]: the training loop, metrics, checkpoints and memory reports (`reclaim-train`).
//! - [`memory`]: the counting allocator, the `/proc` readers and the device pool
//!   (`reclaim-memory`).
//! - [`records`]: a run folder's records, read and written as JSON (`reclaim-records`).
//! - [`report`]: the figures of a run folder (`reclaim-report`).
//! - [`learner`]: the loader and the model inside burn-train's `Learner` (`reclaim-learner`;
//!   the `learner` feature).
//!
//! ```
//! use reclaim::model::{ClassifierConfig, ModelKind};
//! use reclaim::train::{BackendChoice, StepKernel, TrainConfig};
//!
//! // The PyTorch recipe on the default CPU backend: what `reclaim train` runs.
//! let config = TrainConfig::recipe(
//!     BackendChoice::default_cpu(),
//!     reclaim::dataset::default_data_folder(None, reclaim::dataset::Family::Mnist),
//!     "runs/example".into(),
//! );
//! assert!(config.validate().is_ok());
//! assert_eq!(config.step_kernel_used(), StepKernel::Fused, "the MLP takes the fused step");
//! // The CNN takes Burn's step, and the reason is named.
//! let cnn = TrainConfig {
//!     model: ClassifierConfig::default_for(ModelKind::Cnn),
//!     ..config
//! };
//! assert_eq!(cnn.step_kernel_used(), StepKernel::Dense);
//! assert_eq!(cnn.step_kernel_obstacle().unwrap().to_string(), "the model is not the MLP");
//! ```

pub use reclaim_dataset as dataset;
#[cfg(feature = "learner")]
pub use reclaim_learner as learner;
pub use reclaim_loader as loader;
pub use reclaim_memory as memory;
pub use reclaim_model as model;
pub use reclaim_records as records;
pub use reclaim_report as report;
pub use reclaim_train as train;

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
