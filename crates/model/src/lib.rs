//! `reclaim-model`: the classic MNIST multilayer perceptron, one type for every Burn backend.
//!
//! - [`SimpleNn`]: 784 → 128 → ReLU → 10 by default, with [`SimpleNn::forward`],
//!   [`SimpleNn::loss`] (cross-entropy) and [`SimpleNn::correct_predictions`].
//! - [`SimpleNnConfig`]: the layer sizes, a Burn [`Config`](burn::config::Config).
//! - [`WeightFormat`] with [`SimpleNn::to_weight_bytes`] / [`SimpleNn::load_weight_bytes`]:
//!   weights in Burn's burnpack or SafeTensors format, as bytes. This crate knows nothing of
//!   files: the caller decides where the bytes go (the `reclaim-train` crate writes them
//!   atomically).
//! - [`ModelError`]: the one error type of the crate.
//!
//! The backend is chosen by the [`Device`](burn::tensor::Device) the model is created on
//! (Burn 0.22 tensors carry no backend type).
//!
//! ```
//! use burn::tensor::{Device, Tensor};
//! use reclaim_model::{SimpleNnConfig, WeightFormat};
//!
//! # #[allow(deprecated)]
//! let device = Device::ndarray();
//! let model = SimpleNnConfig::new().init(&device);
//! let logits = model.forward(Tensor::<2>::zeros([4, 784], &device));
//! assert_eq!(logits.dims(), [4, 10]);
//!
//! let bytes = model.to_weight_bytes(WeightFormat::Burnpack)?;
//! let restored = SimpleNnConfig::new()
//!     .init(&device)
//!     .load_weight_bytes(&bytes, WeightFormat::Burnpack)?;
//! assert_eq!(restored.to_weight_bytes(WeightFormat::Burnpack)?, bytes);
//! # Ok::<(), reclaim_model::ModelError>(())
//! ```

mod error;
mod simple_nn;

pub use error::ModelError;
pub use simple_nn::{SimpleNn, SimpleNnConfig, WeightFormat};

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
