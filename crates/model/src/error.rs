use std::fmt;

use crate::ModelKind;

/// Everything that can go wrong in `reclaim-model`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// Serializing the weights into the given format failed.
    #[error("cannot save the weights as {format}: {message}")]
    SaveWeights {
        /// The format that was asked for.
        format: crate::WeightFormat,
        /// What the store reported.
        message: String,
    },
    /// The bytes could not be read as weights of the given format, or did not fit the model
    /// (another architecture's weights, or the same one with other sizes).
    #[error("cannot load {format} weights: {message}")]
    LoadWeights {
        /// The format that was asked for.
        format: crate::WeightFormat,
        /// What the store reported.
        message: String,
    },
    /// A size of the model's configuration is zero.
    #[error("the model's {setting} is 0; it must be at least 1")]
    ZeroSize {
        /// The configuration field, as it is named in the config (`channels`, `hidden_size`…).
        setting: &'static str,
    },
    /// A convolution block of a [`ConvNetConfig`](crate::ConvNetConfig) has no filters.
    #[error("convolution block {block} has 0 filters; it needs at least 1")]
    ZeroFilters {
        /// The block, counted from 0.
        block: usize,
    },
    /// A [`ConvNetConfig`](crate::ConvNetConfig) has too few or too many convolution blocks.
    #[error("the convolutional network has {blocks} blocks; it takes from {minimum} to {maximum}")]
    BlockCount {
        /// The blocks configured (the length of `filters`).
        blocks: usize,
        /// The fewest accepted.
        minimum: usize,
        /// The most accepted.
        maximum: usize,
    },
    /// The image is too small to be halved by every pooling block and keep a pixel.
    #[error(
        "a {height}x{width} image is too small for {blocks} pooling blocks: \
         each side must be at least {minimum_side}"
    )]
    ImageTooSmall {
        /// The configured image height.
        height: usize,
        /// The configured image width.
        width: usize,
        /// The pooling blocks configured.
        blocks: usize,
        /// The smallest side those blocks accept (2 to the power of `blocks`).
        minimum_side: usize,
    },
    /// The configured sizes multiply past what `usize` holds.
    #[error("the model's {quantity} does not fit in a usize")]
    SizeOverflow {
        /// What was being computed (`input size`, `flattened features`…).
        quantity: &'static str,
    },
    /// A batch whose pixels and labels do not make whole images, one label each, given to
    /// [`FusedSgdMlp::step`](crate::FusedSgdMlp::step).
    #[error(
        "{pixel_values} pixel values and {labels} labels are not a batch of images of \
         {input_size} values with one label each (at least one image)"
    )]
    BatchShape {
        /// Pixel values given.
        pixel_values: usize,
        /// Labels given.
        labels: usize,
        /// Values per image the model takes.
        input_size: usize,
    },
    /// A label that names no class of the model.
    #[error("label {label} (image {image} of the batch) is not a class: the model has {classes}")]
    LabelOutOfRange {
        /// The label given.
        label: i64,
        /// Its image's position in the batch, from 0.
        image: usize,
        /// The model's classes (labels run from 0 to this, excluded).
        classes: usize,
    },
    /// A model whose layer sizes are not those of the host parameters written into it.
    #[error(
        "an MLP of sizes {given:?} (input, hidden, classes) cannot take the parameters \
         of one of sizes {expected:?}"
    )]
    LayerSizes {
        /// The model's input, hidden and output sizes.
        given: [usize; 3],
        /// The host parameters' sizes.
        expected: [usize; 3],
    },
    /// A learning rate that is not a finite, non-negative number.
    #[error("learning rate {given} is not a finite number of at least 0")]
    LearningRate {
        /// The learning rate given.
        given: f64,
    },
    /// A tensor could not be read back to the host (a parameter, for the fused step).
    #[error("cannot read {what} back from its device: {message}")]
    TensorRead {
        /// What was being read.
        what: &'static str,
        /// What the backend reported.
        message: String,
    },
    /// A model kind's name that is not one of [`ModelKind::ALL`].
    #[error("unknown model kind {given:?}: the accepted ones are {}", KindNames(.accepted))]
    UnknownModelKind {
        /// The name that was given.
        given: String,
        /// The kinds accepted (always [`ModelKind::ALL`]).
        accepted: &'static [ModelKind],
    },
}

/// `mlp, cnn`: the names of some kinds, for messages.
struct KindNames<'kinds>(&'kinds [ModelKind]);

impl fmt::Display for KindNames<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, kind) in self.0.iter().enumerate() {
            if index > 0 {
                formatter.write_str(", ")?;
            }
            formatter.write_str(kind.name())?;
        }
        Ok(())
    }
}
