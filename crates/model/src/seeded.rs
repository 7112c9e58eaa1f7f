//! Weights drawn from a seed alone: SplitMix64 words, uniform in ±1/√fan_in (PyTorch's
//! `nn.Linear` and `nn.Conv2d` bounds), the same values on every backend.

use burn::module::Param;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{Linear, PaddingConfig2d};
use burn::tensor::{Device, TensorData};
use rand_xoshiro::SplitMix64;
use rand_xoshiro::rand_core::Rng;

/// Uniform in `[-bound, bound)`, from 53 bits of `random`.
pub(crate) fn next_symmetric(random: &mut SplitMix64, bound: f64) -> f32 {
    let unit = (random.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    ((unit * 2.0 - 1.0) * bound) as f32
}

/// `count` draws in ±1/√`fan_in`.
fn draw(random: &mut SplitMix64, fan_in: usize, count: usize) -> Vec<f32> {
    let bound = 1.0 / (fan_in as f64).sqrt();
    (0..count).map(|_| next_symmetric(random, bound)).collect()
}

/// A linear layer `[input_size, output_size]`: the weight's values in row-major order, then
/// the bias's.
pub(crate) fn seeded_linear(
    input_size: usize,
    output_size: usize,
    device: &Device,
    random: &mut SplitMix64,
) -> Linear {
    let weight = TensorData::new(
        draw(random, input_size, input_size * output_size),
        [input_size, output_size],
    );
    let bias = TensorData::new(draw(random, input_size, output_size), [output_size]);
    Linear {
        weight: Param::from_data(weight, device),
        bias: Some(Param::from_data(bias, device)),
    }
}

/// The side of [`seeded_conv3x3`]'s kernel.
pub(crate) const KERNEL_SIDE: usize = 3;

/// A 3×3 convolution with "same" padding, stride 1, `[output_channels, input_channels, 3, 3]`:
/// the weight's values in row-major order, then the bias's; fan-in `input_channels × 9`.
pub(crate) fn seeded_conv3x3(
    input_channels: usize,
    output_channels: usize,
    device: &Device,
    random: &mut SplitMix64,
) -> Conv2d {
    let fan_in = input_channels * KERNEL_SIDE * KERNEL_SIDE;
    let shape = [output_channels, input_channels, KERNEL_SIDE, KERNEL_SIDE];
    let weight = TensorData::new(draw(random, fan_in, output_channels * fan_in), shape);
    let bias = TensorData::new(draw(random, fan_in, output_channels), [output_channels]);
    Conv2d {
        weight: Param::from_data(weight, device),
        bias: Some(Param::from_data(bias, device)),
        stride: [1, 1],
        kernel_size: [KERNEL_SIDE, KERNEL_SIDE],
        dilation: [1, 1],
        groups: 1,
        padding: SAME_PADDING,
    }
}

/// One pixel of zeros around the image: a 3×3 convolution keeps its size.
const SAME_PADDING: PaddingConfig2d = PaddingConfig2d::Explicit(1, 1, 1, 1);

/// The configuration of every convolution of the crate: 3×3, stride 1, padding 1 ("same"),
/// for the backend's own random initialization.
pub(crate) fn conv3x3_config(input_channels: usize, output_channels: usize) -> Conv2dConfig {
    Conv2dConfig::new(
        [input_channels, output_channels],
        [KERNEL_SIDE, KERNEL_SIDE],
    )
    .with_padding(SAME_PADDING)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_xoshiro::rand_core::SeedableRng;

    /// Values drawn by the hand-written SplitMix64 the crate held before it used
    /// `rand_xoshiro`: seeded weights (and so every recorded run) stay the same only if these
    /// never change.
    #[test]
    fn seeded_draws_are_those_of_the_original_generator() {
        let mut random = SplitMix64::seed_from_u64(42);
        let words: Vec<u64> = (0..3).map(|_| random.next_u64()).collect();
        assert_eq!(
            words,
            [
                13_679_457_532_755_275_413,
                2_949_826_092_126_892_291,
                5_139_283_748_462_763_858
            ]
        );
        let mut random = SplitMix64::seed_from_u64(42);
        let drawn: Vec<f32> = (0..3).map(|_| next_symmetric(&mut random, 0.5)).collect();
        assert_eq!(drawn, [0.24156488, -0.34008962, -0.22139888]);
    }
}
