//! `reclaim-model`: the image classifiers Reclaim trains, one type each for every Burn backend.
//!
//! - [`Mlp`]: the classic MNIST multilayer perceptron (MLP), 784 → 128 → ReLU → 10 by default,
//!   sized by [`MlpConfig`].
//! - [`ConvNet`]: a small convolutional network, two or three blocks of 3×3 convolution →
//!   ReLU → 2×2 max pooling, then a hidden layer and the logits; sized by [`ConvNetConfig`]
//!   for 1×28×28 (MNIST, the default) or 3×32×32 (CIFAR) images. It takes the same flat
//!   `[batch, channels × height × width]` batches as the MLP and reshapes them itself.
//! - [`Classifier`] and [`ClassifierConfig`]: either architecture behind one type, for the
//!   trainer; [`ModelKind`] names the architecture (`mlp`, `cnn`).
//! - Every model has `forward`, `loss` (cross-entropy), `correct_predictions`, `init` and
//!   `init_seeded` on its config (weights drawn from a seed alone: the same values on every
//!   backend), and `to_weight_bytes` / `load_weight_bytes`: weights in Burn's burnpack or
//!   SafeTensors format ([`WeightFormat`]), as bytes. This crate knows nothing of files: the
//!   caller decides where the bytes go (the `reclaim-train` crate writes them atomically).
//! - [`FusedSgdMlp`]: an MLP's parameters on the host, trained by a fused step
//!   (forward, cross-entropy, backward and plain SGD from the non-zero pixels, in buffers reused
//!   from step to step), then written back into the [`Mlp`]: on the CPU backends, the
//!   fastest training step measured for the MNIST MLP, on Flex up to a batch size
//!   (reclaim-train's `LARGEST_FUSED_STEP_BATCH_ON_FLEX`; docs/benchmarks.md, "The training
//!   step per backend and batch size").
//! - [`ModelError`]: the one error type of the crate; an invalid configuration is one of its
//!   variants, never a panic.
//!
//! The backend is chosen by the [`Device`](burn::tensor::Device) the model is created on
//! (Burn 0.22 tensors carry no backend type).
//!
//! ```
//! use burn::tensor::{Device, Tensor};
//! use reclaim_model::{MlpConfig, WeightFormat};
//!
//! # #[allow(deprecated)]
//! let device = Device::ndarray();
//! let model = MlpConfig::new().init(&device);
//! let logits = model.forward(Tensor::<2>::zeros([4, 784], &device));
//! assert_eq!(logits.dims(), [4, 10]);
//!
//! let bytes = model.to_weight_bytes(WeightFormat::Burnpack)?;
//! let restored = MlpConfig::new()
//!     .init(&device)
//!     .load_weight_bytes(&bytes, WeightFormat::Burnpack)?;
//! assert_eq!(restored.to_weight_bytes(WeightFormat::Burnpack)?, bytes);
//! # Ok::<(), reclaim_model::ModelError>(())
//! ```
//!
//! The convolutional network on CIFAR-shaped images, behind the trainer's one model type:
//!
//! ```
//! use burn::tensor::{Device, Tensor};
//! use reclaim_model::{ClassifierConfig, ConvNetConfig, ModelError, ModelKind, WeightFormat};
//!
//! # #[allow(deprecated)]
//! let device = Device::ndarray();
//! let kind: ModelKind = "cnn".parse()?;
//! assert_eq!(kind, ModelKind::Cnn);
//! let config = ClassifierConfig::Cnn(
//!     ConvNetConfig::new().with_channels(3).with_height(32).with_width(32),
//! );
//! assert_eq!((config.kind(), config.input_size()), (kind, 3 * 32 * 32));
//!
//! // Flat rows, as the loader gives them: reshaped to [4, 3, 32, 32] inside.
//! let model = config.init_seeded(&device, 42)?;
//! let logits = model.forward(Tensor::<2>::zeros([4, 3072], &device));
//! assert_eq!(logits.dims(), [4, 10]);
//!
//! // An MLP's weights do not fit the network.
//! let mlp = ClassifierConfig::default_for(ModelKind::Mlp).init(&device)?;
//! let bytes = mlp.to_weight_bytes(WeightFormat::Safetensors)?;
//! let refused = model.load_weight_bytes(&bytes, WeightFormat::Safetensors);
//! assert!(matches!(refused, Err(ModelError::LoadWeights { .. })));
//!
//! // Too small an image for two poolings is an error, not a panic.
//! let tiny = ConvNetConfig::new().with_height(3).with_width(3);
//! assert!(matches!(tiny.validate(), Err(ModelError::ImageTooSmall { .. })));
//! # Ok::<(), ModelError>(())
//! ```

mod autodiff_graph;
mod classifier;
mod conv_net;
mod error;
mod fused_step;
mod mlp;
mod seeded;
mod weights;

pub use autodiff_graph::free_orphaned_autodiff_nodes;
pub use classifier::{Classifier, ClassifierConfig, ModelKind};
pub use conv_net::{ConvNet, ConvNetConfig};
pub use error::ModelError;
pub use fused_step::FusedSgdMlp;
pub use mlp::{Mlp, MlpConfig};
pub use weights::WeightFormat;

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
