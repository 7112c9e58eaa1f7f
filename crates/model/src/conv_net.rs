use burn::config::Config;
use burn::module::Module;
use burn::nn::conv::Conv2d;
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{Linear, LinearConfig, Relu};
use burn::tensor::{Device, Int, Tensor};

use rand_xoshiro::SplitMix64;
use rand_xoshiro::rand_core::SeedableRng;

use crate::seeded::{conv3x3_config, seeded_conv3x3, seeded_linear};
use crate::weights::{count_correct, cross_entropy, load_weights, save_weights};
use crate::{ModelError, WeightFormat};

/// The shape of a [`ConvNet`]. The defaults fit MNIST (1×28×28, 10 classes) with two blocks of
/// 32 and 64 filters and a hidden layer of 128; CIFAR-10 is
/// `ConvNetConfig::new().with_channels(3).with_height(32).with_width(32)`.
///
/// Every block is a 3×3 convolution (padding 1, so the image keeps its size), a ReLU and a 2×2
/// max pooling of stride 2 (which halves each side, rounding down): 28 → 14 → 7, 32 → 16 → 8.
/// The last block's maps are flattened into `hidden_size` → ReLU → `number_of_classes`.
#[derive(Config, Debug, PartialEq, Eq)]
pub struct ConvNetConfig {
    /// Channels per pixel: 1 for grey images (MNIST), 3 for colour ones (CIFAR).
    #[config(default = 1)]
    pub channels: usize,
    /// Image height in pixels.
    #[config(default = 28)]
    pub height: usize,
    /// Image width in pixels.
    #[config(default = 28)]
    pub width: usize,
    /// Number of classes (logits per sample).
    #[config(default = 10)]
    pub number_of_classes: usize,
    /// The filters (output channels) of each convolution block, in order: from
    /// [`ConvNetConfig::MIN_BLOCKS`] to [`ConvNetConfig::MAX_BLOCKS`] blocks.
    #[config(default = "vec![32, 64]")]
    pub filters: Vec<usize>,
    /// Width of the hidden layer of the head.
    #[config(default = 128)]
    pub hidden_size: usize,
}

impl ConvNetConfig {
    /// The fewest convolution blocks a [`ConvNet`] has.
    pub const MIN_BLOCKS: usize = 2;
    /// The most convolution blocks a [`ConvNet`] has.
    pub const MAX_BLOCKS: usize = 3;

    /// Values per flat input sample: `channels × height × width` (784 for MNIST, 3072 for
    /// CIFAR), as the loader hands them to [`ConvNet::forward`]. Saturates at `usize::MAX`,
    /// which [`validate`](Self::validate) refuses.
    pub fn input_size(&self) -> usize {
        self.channels
            .saturating_mul(self.height)
            .saturating_mul(self.width)
    }

    /// The height and width of the last block's feature maps: each side halved (rounding
    /// down) once per block.
    pub fn feature_map_size(&self) -> [usize; 2] {
        let blocks = u32::try_from(self.filters.len()).unwrap_or(u32::MAX);
        [
            self.height.checked_shr(blocks).unwrap_or(0),
            self.width.checked_shr(blocks).unwrap_or(0),
        ]
    }

    /// Checks the configuration; [`init`](Self::init) and [`init_seeded`](Self::init_seeded)
    /// call it first.
    ///
    /// # Errors
    ///
    /// - [`ModelError::ZeroSize`] when `channels`, `height`, `width`, `number_of_classes` or
    ///   `hidden_size` is 0;
    /// - [`ModelError::BlockCount`] when `filters` has fewer than [`Self::MIN_BLOCKS`] or more
    ///   than [`Self::MAX_BLOCKS`] entries, [`ModelError::ZeroFilters`] when one of them is 0;
    /// - [`ModelError::ImageTooSmall`] when a side is smaller than 2 to the power of the
    ///   number of blocks (the last pooling would leave no pixel);
    /// - [`ModelError::SizeOverflow`] when the input or the flattened features do not fit in
    ///   a `usize`.
    pub fn validate(&self) -> Result<(), ModelError> {
        let sizes = [
            ("channels", self.channels),
            ("height", self.height),
            ("width", self.width),
            ("number_of_classes", self.number_of_classes),
            ("hidden_size", self.hidden_size),
        ];
        if let Some((setting, _)) = sizes.into_iter().find(|&(_, size)| size == 0) {
            return Err(ModelError::ZeroSize { setting });
        }
        let blocks = self.filters.len();
        if !(Self::MIN_BLOCKS..=Self::MAX_BLOCKS).contains(&blocks) {
            return Err(ModelError::BlockCount {
                blocks,
                minimum: Self::MIN_BLOCKS,
                maximum: Self::MAX_BLOCKS,
            });
        }
        if let Some(block) = self.filters.iter().position(|&filters| filters == 0) {
            return Err(ModelError::ZeroFilters { block });
        }
        let minimum_side = 1 << blocks;
        if self.height < minimum_side || self.width < minimum_side {
            return Err(ModelError::ImageTooSmall {
                height: self.height,
                width: self.width,
                blocks,
                minimum_side,
            });
        }
        self.channels
            .checked_mul(self.height)
            .and_then(|size| size.checked_mul(self.width))
            .ok_or(ModelError::SizeOverflow {
                quantity: "input size (channels x height x width)",
            })?;
        self.checked_flattened_size()
            .ok_or(ModelError::SizeOverflow {
                quantity: "flattened features (filters x height x width after pooling)",
            })?;
        Ok(())
    }

    /// The features the head reads: the last block's filters times its maps' pixels.
    fn checked_flattened_size(&self) -> Option<usize> {
        let [height, width] = self.feature_map_size();
        self.filters.last()?.checked_mul(height)?.checked_mul(width)
    }

    /// The validated flattened size (at least 1 once [`validate`](Self::validate) passed).
    fn flattened_size(&self) -> Result<usize, ModelError> {
        self.validate()?;
        Ok(self.checked_flattened_size().unwrap_or(0))
    }

    /// Creates the network on `device`, with PyTorch's `nn.Conv2d` and `nn.Linear`
    /// initialization (uniform in ±1/√fan_in for weights and biases) drawn by the backend's
    /// own generator.
    ///
    /// # Errors
    ///
    /// Those of [`validate`](Self::validate): nothing is allocated for an invalid shape.
    pub fn init(&self, device: &Device) -> Result<ConvNet, ModelError> {
        let flattened = self.flattened_size()?;
        let mut input_channels = self.channels;
        let blocks = self
            .filters
            .iter()
            .map(|&filters| {
                let conv = conv3x3_config(input_channels, filters).init(device);
                input_channels = filters;
                ConvBlock::new(conv)
            })
            .collect();
        Ok(ConvNet {
            blocks,
            hidden: LinearConfig::new(flattened, self.hidden_size).init(device),
            activation: Relu::new(),
            output: LinearConfig::new(self.hidden_size, self.number_of_classes).init(device),
            channels: self.channels,
            height: self.height,
            width: self.width,
        })
    }

    /// Creates the network on `device` with weights drawn from `seed` alone, as
    /// [`MlpConfig::init_seeded`](crate::MlpConfig::init_seeded) draws them: SplitMix64,
    /// uniform in ±1/√fan_in (a convolution's fan-in is `input channels × 3 × 3`), each layer's
    /// weight then bias in order from the first block to the output. The same values on every
    /// backend and in every run, whatever else uses the backend's own random generator.
    ///
    /// # Errors
    ///
    /// Those of [`validate`](Self::validate).
    pub fn init_seeded(&self, device: &Device, seed: u64) -> Result<ConvNet, ModelError> {
        let flattened = self.flattened_size()?;
        let mut random = SplitMix64::seed_from_u64(seed);
        let mut input_channels = self.channels;
        let blocks = self
            .filters
            .iter()
            .map(|&filters| {
                let conv = seeded_conv3x3(input_channels, filters, device, &mut random);
                input_channels = filters;
                ConvBlock::new(conv)
            })
            .collect();
        let hidden = seeded_linear(flattened, self.hidden_size, device, &mut random);
        let output = seeded_linear(
            self.hidden_size,
            self.number_of_classes,
            device,
            &mut random,
        );
        Ok(ConvNet {
            blocks,
            hidden,
            activation: Relu::new(),
            output,
            channels: self.channels,
            height: self.height,
            width: self.width,
        })
    }
}

/// Convolution 3×3 (padding 1) → ReLU → max pooling 2×2, stride 2.
#[derive(Module, Debug)]
struct ConvBlock {
    conv: Conv2d,
    activation: Relu,
    pool: MaxPool2d,
}

impl ConvBlock {
    fn new(conv: Conv2d) -> ConvBlock {
        ConvBlock {
            conv,
            activation: Relu::new(),
            pool: MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init(),
        }
    }

    fn forward(&self, images: Tensor<4>) -> Tensor<4> {
        self.pool
            .forward(self.activation.forward(self.conv.forward(images)))
    }
}

/// A small convolutional network: two or three blocks of 3×3 convolution → ReLU → 2×2 max
/// pooling, then `flatten → hidden → ReLU → logits` (see [`ConvNetConfig`]).
///
/// One type for every backend: the [`Device`] it was created on decides where it runs.
#[derive(Module, Debug)]
pub struct ConvNet {
    blocks: Vec<ConvBlock>,
    hidden: Linear,
    activation: Relu,
    output: Linear,
    channels: usize,
    height: usize,
    width: usize,
}

impl ConvNet {
    /// The `[channels, height, width]` of the images the network was configured for.
    pub fn image_shape(&self) -> [usize; 3] {
        [self.channels, self.height, self.width]
    }

    /// Logits of shape `[batch, classes]` for flat images of shape
    /// `[batch, channels × height × width]` (each row in channel, row, column order, as the
    /// loader gives them), reshaped here to `[batch, channels, height, width]`.
    ///
    /// # Panics
    ///
    /// When a row does not hold `channels × height × width` values.
    pub fn forward(&self, images: Tensor<2>) -> Tensor<2> {
        let [batch, features] = images.dims();
        let [channels, height, width] = self.image_shape();
        assert_eq!(
            features,
            channels * height * width,
            "ConvNet configured for {channels}x{height}x{width} images was given rows of \
             {features} values"
        );
        self.forward_images(images.reshape([batch, channels, height, width]))
    }

    /// Logits of shape `[batch, classes]` for images of shape `[batch, channels, height,
    /// width]`.
    ///
    /// # Panics
    ///
    /// When the images' shape is not the configured one.
    pub fn forward_images(&self, images: Tensor<4>) -> Tensor<2> {
        let [_, channels, height, width] = images.dims();
        assert_eq!(
            [channels, height, width],
            self.image_shape(),
            "ConvNet was given images of another shape than it was configured for"
        );
        let maps = self
            .blocks
            .iter()
            .fold(images, |maps, block| block.forward(maps));
        let features = maps.flatten::<2>(1, 3);
        let hidden = self.activation.forward(self.hidden.forward(features));
        self.output.forward(hidden)
    }

    /// Mean cross-entropy of `logits` against `labels` (class indices), a one-element tensor.
    pub fn loss(&self, logits: Tensor<2>, labels: Tensor<1, Int>) -> Tensor<1> {
        cross_entropy(logits, labels)
    }

    /// How many rows of `logits` have their largest value at the row's label, as a
    /// one-element integer tensor (kept on the device until the caller reads it).
    pub fn correct_predictions(&self, logits: Tensor<2>, labels: Tensor<1, Int>) -> Tensor<1, Int> {
        count_correct(logits, labels)
    }

    /// The weights, serialized in `format`.
    pub fn to_weight_bytes(&self, format: WeightFormat) -> Result<Vec<u8>, ModelError> {
        save_weights(self, format)
    }

    /// This network with its weights replaced by those in `bytes`. Every parameter must be
    /// present with the right shape; anything missing or extra (another configuration's
    /// weights, or a [`Mlp`](crate::Mlp)'s) is an error.
    pub fn load_weight_bytes(
        self,
        bytes: &[u8],
        format: WeightFormat,
    ) -> Result<ConvNet, ModelError> {
        load_weights(self, bytes, format)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(deprecated)]
    fn cpu_device() -> Device {
        Device::ndarray()
    }

    fn cifar() -> ConvNetConfig {
        ConvNetConfig::new()
            .with_channels(3)
            .with_height(32)
            .with_width(32)
    }

    #[test]
    fn defaults_are_the_mnist_shape() {
        let config = ConvNetConfig::new();
        assert_eq!(config.input_size(), 784);
        assert_eq!(config.feature_map_size(), [7, 7]);
        assert_eq!(config.filters, [32, 64]);
        assert_eq!(cifar().input_size(), 3072);
        assert_eq!(cifar().feature_map_size(), [8, 8]);
        assert_eq!(
            cifar().with_filters(vec![8, 16, 32]).feature_map_size(),
            [4, 4]
        );
    }

    #[test]
    fn mnist_images_give_one_logit_per_class() {
        let device = cpu_device();
        let model = ConvNetConfig::new().init(&device).unwrap();
        assert_eq!(model.image_shape(), [1, 28, 28]);
        let logits = model.forward(Tensor::<2>::ones([2, 784], &device));
        assert_eq!(logits.dims(), [2, 10]);
    }

    #[test]
    fn cifar_images_give_one_logit_per_class_with_three_blocks_too() {
        let device = cpu_device();
        for filters in [vec![32, 64], vec![8, 16, 32]] {
            let model = cifar()
                .with_filters(filters)
                .with_number_of_classes(100)
                .init(&device)
                .unwrap();
            let logits = model.forward(Tensor::<2>::ones([2, 3072], &device));
            assert_eq!(logits.dims(), [2, 100]);
        }
    }

    #[test]
    fn flat_rows_are_read_as_channel_row_column() {
        let device = cpu_device();
        let model = cifar()
            .with_filters(vec![4, 4])
            .init_seeded(&device, 7)
            .unwrap();
        let images =
            Tensor::<4>::random([2, 3, 32, 32], burn::tensor::Distribution::Default, &device);
        let from_images = model.forward_images(images.clone()).into_data();
        let from_rows = model.forward(images.reshape([2, 3072])).into_data();
        assert_eq!(from_images, from_rows);
    }

    #[test]
    #[should_panic(expected = "rows of 784 values")]
    fn rows_of_another_size_are_a_clear_panic() {
        let device = cpu_device();
        let model = cifar().with_filters(vec![2, 2]).init(&device).unwrap();
        model.forward(Tensor::<2>::ones([1, 784], &device));
    }

    #[test]
    fn invalid_shapes_are_typed_errors() {
        let zero = |config: ConvNetConfig| match config.validate() {
            Err(ModelError::ZeroSize { setting }) => setting,
            other => panic!("{other:?}"),
        };
        assert_eq!(zero(ConvNetConfig::new().with_channels(0)), "channels");
        assert_eq!(zero(ConvNetConfig::new().with_height(0)), "height");
        assert_eq!(zero(ConvNetConfig::new().with_width(0)), "width");
        assert_eq!(
            zero(ConvNetConfig::new().with_number_of_classes(0)),
            "number_of_classes"
        );
        assert_eq!(
            zero(ConvNetConfig::new().with_hidden_size(0)),
            "hidden_size"
        );

        let error = ConvNetConfig::new()
            .with_filters(vec![8, 0, 8])
            .validate()
            .unwrap_err();
        assert!(
            matches!(error, ModelError::ZeroFilters { block: 1 }),
            "{error}"
        );

        for filters in [vec![], vec![8], vec![8, 8, 8, 8]] {
            let blocks = filters.len();
            let error = ConvNetConfig::new()
                .with_filters(filters)
                .validate()
                .unwrap_err();
            assert!(
                matches!(error, ModelError::BlockCount { blocks: b, minimum: 2, maximum: 3 } if b == blocks),
                "{error}"
            );
        }

        // Two blocks need 4 pixels a side, three need 8: 7 halves to 3, then 1, then 0.
        assert!(
            ConvNetConfig::new()
                .with_height(4)
                .with_width(4)
                .validate()
                .is_ok()
        );
        let error = ConvNetConfig::new()
            .with_height(7)
            .with_width(28)
            .with_filters(vec![8, 8, 8])
            .validate()
            .unwrap_err();
        assert!(
            matches!(
                error,
                ModelError::ImageTooSmall {
                    height: 7,
                    width: 28,
                    blocks: 3,
                    minimum_side: 8
                }
            ),
            "{error}"
        );
        assert_eq!(
            error.to_string(),
            "a 7x28 image is too small for 3 pooling blocks: each side must be at least 8"
        );

        let error = ConvNetConfig::new()
            .with_channels(usize::MAX)
            .validate()
            .unwrap_err();
        assert!(matches!(error, ModelError::SizeOverflow { .. }), "{error}");
        assert_eq!(
            ConvNetConfig::new().with_channels(usize::MAX).input_size(),
            usize::MAX
        );
    }

    #[test]
    fn init_refuses_an_invalid_shape_instead_of_panicking() {
        let device = cpu_device();
        let tiny = ConvNetConfig::new().with_height(2).with_width(2);
        assert!(matches!(
            tiny.init(&device),
            Err(ModelError::ImageTooSmall { .. })
        ));
        assert!(matches!(
            tiny.init_seeded(&device, 1),
            Err(ModelError::ImageTooSmall { .. })
        ));
    }

    /// Every parameter, in the order they are drawn.
    fn parameters(model: &ConvNet) -> Vec<f32> {
        let values = |data: burn::tensor::TensorData| data.try_to_vec::<f32>().unwrap();
        let mut all = Vec::new();
        for block in &model.blocks {
            all.extend(values(block.conv.weight.val().into_data()));
            all.extend(values(block.conv.bias.as_ref().unwrap().val().into_data()));
        }
        for linear in [&model.hidden, &model.output] {
            all.extend(values(linear.weight.val().into_data()));
            all.extend(values(linear.bias.as_ref().unwrap().val().into_data()));
        }
        all
    }

    #[test]
    fn seeded_initialization_is_the_same_on_every_backend_and_depends_on_the_seed() {
        let config = cifar().with_filters(vec![8, 16]).with_hidden_size(32);
        let ndarray = config.init_seeded(&cpu_device(), 42).unwrap();
        let flex = config.init_seeded(&Device::flex(), 42).unwrap();
        assert!(parameters(&ndarray) == parameters(&flex));
        let other = config.init_seeded(&cpu_device(), 43).unwrap();
        assert!(parameters(&ndarray) != parameters(&other));

        // The first convolution's fan-in is 3 x 3 x 3 = 27, the second's 8 x 3 x 3 = 72.
        let first = &ndarray.blocks[0].conv;
        assert_eq!(first.weight.dims(), [8, 3, 3, 3]);
        for (block, fan_in) in [(0, 27.0f32), (1, 72.0)] {
            let weight = ndarray.blocks[block]
                .conv
                .weight
                .val()
                .into_data()
                .try_to_vec::<f32>()
                .unwrap();
            let bound = 1.0 / fan_in.sqrt();
            assert!(weight.iter().all(|value| value.abs() <= bound));
            // Drawn over the whole range, not a narrower one.
            assert!(weight.iter().any(|value| value.abs() > 0.9 * bound));
        }
        assert_eq!(ndarray.hidden.weight.dims(), [16 * 8 * 8, 32]);
    }

    #[test]
    fn both_initializations_draw_in_the_same_bounds() {
        let device = cpu_device();
        let config = ConvNetConfig::new().with_filters(vec![4, 8]);
        let drawn = parameters(&config.init(&device).unwrap());
        let seeded = parameters(&config.init_seeded(&device, 3).unwrap());
        assert_eq!(drawn.len(), seeded.len());
        let largest = |values: &[f32]| values.iter().fold(0f32, |max, value| max.max(value.abs()));
        // The first convolution's bound, 1/√9, is the largest of the network's (Burn's own
        // initializer computes it in floating point: allow it an ulp or two).
        let bound = 1.0 / 3.0 + 1e-6;
        assert!(largest(&drawn) <= bound && largest(&seeded) <= bound);
    }
}
