//! Reclaim: train on IDX image datasets (MNIST and its family) with Burn, with a fast data
//! pipeline whose memory is released by construction.
//!
//! This crate re-exports the workspace's crates:
//!
//! - [`dataset`]: the IDX format and the MNIST-family catalogue (`reclaim-dataset`).
//! - [`loader`]: samplers, batching, prefetching and scoped release (`reclaim-loader`).
//! - [`model`]: the MLP for every Burn backend (`reclaim-model`).
//! - [`train`]: the training loop, metrics, checkpoints and memory reports (`reclaim-train`).
//! - [`memory`]: the counting allocator, the `/proc` readers and the device pool
//!   (`reclaim-memory`).
//! - [`report`]: the figures and text summaries of a run folder (`reclaim-report`).
//! - [`learner`]: the loader and the model inside burn-train's `Learner` (`reclaim-learner`;
//!   the `learner` feature).

pub use reclaim_dataset as dataset;
#[cfg(feature = "learner")]
pub use reclaim_learner as learner;
pub use reclaim_loader as loader;
pub use reclaim_memory as memory;
pub use reclaim_model as model;
pub use reclaim_report as report;
pub use reclaim_train as train;

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
