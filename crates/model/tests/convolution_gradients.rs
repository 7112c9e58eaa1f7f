//! Burn's 2D convolution and max pooling, forward and every gradient, on each host backend,
//! against a direct f64 evaluation of their definitions, on odd shapes: strides, padding
//! (asymmetric included), dilation, groups, 1 and 3 channels, batch 1, a kernel as large as the
//! image. Flex's convolution gradients and pooling are this workspace's patched ones
//! (patches/burn-flex); NdArray runs Burn's own, so the two backends agreeing with one
//! reference is the patch agreeing with Burn.

use burn::tensor::module::{conv2d, max_pool2d};
use burn::tensor::ops::{ConvOptions, MaxPoolOptions};
use burn::tensor::{Device, Tensor, TensorData};

/// The largest difference allowed, relative to the largest magnitude of the expected values.
const RELATIVE_TOLERANCE: f64 = 1e-4;

/// One convolution: shapes and options.
#[derive(Clone, Copy, Debug)]
struct ConvCase {
    batch: usize,
    channels_in: usize,
    channels_out: usize,
    input: [usize; 2],
    kernel: [usize; 2],
    stride: [usize; 2],
    /// `(before, after)` per axis.
    padding: [(usize, usize); 2],
    dilation: [usize; 2],
    groups: usize,
}

impl ConvCase {
    fn output(&self) -> [usize; 2] {
        [0, 1].map(|axis| {
            let span = self.dilation[axis] * (self.kernel[axis] - 1) + 1;
            let padded = self.input[axis] + self.padding[axis].0 + self.padding[axis].1;
            (padded - span) / self.stride[axis] + 1
        })
    }

    fn options(&self) -> ConvOptions<2> {
        ConvOptions::new_with_padding(self.stride, self.padding, self.dilation, self.groups)
    }

    fn input_shape(&self) -> [usize; 4] {
        [self.batch, self.channels_in, self.input[0], self.input[1]]
    }

    fn weight_shape(&self) -> [usize; 4] {
        let per_group = self.channels_in / self.groups;
        [self.channels_out, per_group, self.kernel[0], self.kernel[1]]
    }

    fn output_shape(&self) -> [usize; 4] {
        let [height, width] = self.output();
        [self.batch, self.channels_out, height, width]
    }
}

fn symmetric(padding: [usize; 2]) -> [(usize, usize); 2] {
    padding.map(|side| (side, side))
}

fn cases() -> Vec<ConvCase> {
    vec![
        // The CNN's first block on a grey image, batch 1.
        ConvCase {
            batch: 1,
            channels_in: 1,
            channels_out: 4,
            input: [7, 9],
            kernel: [3, 3],
            stride: [1, 1],
            padding: symmetric([1, 1]),
            dilation: [1, 1],
            groups: 1,
        },
        // Colour, a non-square kernel, a stride and a padding per axis.
        ConvCase {
            batch: 2,
            channels_in: 3,
            channels_out: 5,
            input: [8, 7],
            kernel: [3, 2],
            stride: [2, 1],
            padding: symmetric([1, 0]),
            dilation: [1, 1],
            groups: 1,
        },
        // Groups, dilation and a padding wider than the kernel's reach.
        ConvCase {
            batch: 3,
            channels_in: 4,
            channels_out: 6,
            input: [9, 9],
            kernel: [3, 3],
            stride: [2, 2],
            padding: symmetric([2, 2]),
            dilation: [2, 2],
            groups: 2,
        },
        // Depthwise, 1 x 1.
        ConvCase {
            batch: 2,
            channels_in: 3,
            channels_out: 3,
            input: [5, 6],
            kernel: [1, 1],
            stride: [1, 1],
            padding: symmetric([0, 0]),
            dilation: [1, 1],
            groups: 3,
        },
        // A kernel as large as the image: one output pixel.
        ConvCase {
            batch: 1,
            channels_in: 3,
            channels_out: 2,
            input: [5, 5],
            kernel: [5, 5],
            stride: [1, 1],
            padding: symmetric([0, 0]),
            dilation: [1, 1],
            groups: 1,
        },
        // Stride 3 that leaves input pixels unread, asymmetric padding.
        ConvCase {
            batch: 2,
            channels_in: 2,
            channels_out: 3,
            input: [10, 11],
            kernel: [2, 2],
            stride: [3, 3],
            padding: [(1, 0), (0, 2)],
            dilation: [1, 1],
            groups: 1,
        },
        // Channels and width enough for Flex's Winograd path (3 x 3, stride 1), batch 1, an
        // odd height: tiles that cross the output's edge.
        ConvCase {
            batch: 1,
            channels_in: 16,
            channels_out: 17,
            input: [7, 33],
            kernel: [3, 3],
            stride: [1, 1],
            padding: symmetric([1, 1]),
            dilation: [1, 1],
            groups: 1,
        },
        // The same path with no padding and asymmetric padding, two samples.
        ConvCase {
            batch: 2,
            channels_in: 17,
            channels_out: 16,
            input: [6, 34],
            kernel: [3, 3],
            stride: [1, 1],
            padding: [(0, 2), (1, 0)],
            dilation: [1, 1],
            groups: 1,
        },
    ]
}

/// Reproducible values in [-1, 1): SplitMix64's output scaled.
fn values(count: usize, seed: u64) -> Vec<f64> {
    let mut state = seed;
    (0..count)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut mixed = state;
            mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            mixed ^= mixed >> 31;
            (mixed >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

/// A row-major 4D array of f64, indexed by `[a, b, c, d]`.
struct Array4 {
    shape: [usize; 4],
    data: Vec<f64>,
}

impl Array4 {
    fn zeros(shape: [usize; 4]) -> Self {
        Self {
            shape,
            data: vec![0.0; shape.iter().product()],
        }
    }

    fn random(shape: [usize; 4], seed: u64) -> Self {
        Self {
            shape,
            data: values(shape.iter().product(), seed),
        }
    }

    fn offset(&self, [a, b, c, d]: [usize; 4]) -> usize {
        ((a * self.shape[1] + b) * self.shape[2] + c) * self.shape[3] + d
    }

    fn get(&self, index: [usize; 4]) -> f64 {
        self.data[self.offset(index)]
    }

    fn add(&mut self, index: [usize; 4], value: f64) {
        let offset = self.offset(index);
        self.data[offset] += value;
    }

    fn tensor(&self, device: &Device) -> Tensor<4> {
        let data: Vec<f32> = self.data.iter().map(|&value| value as f32).collect();
        Tensor::from_data(TensorData::new(data, self.shape), device)
    }
}

/// The forward pass and the three gradients of `Σ output × upstream`, by their definitions.
struct ConvReference {
    output: Array4,
    input_gradient: Array4,
    weight_gradient: Array4,
    bias_gradient: Vec<f64>,
}

/// The input position a kernel tap reads, or `None` in the padding.
fn tap(output: usize, kernel: usize, case: &ConvCase, axis: usize) -> Option<usize> {
    let position = (output * case.stride[axis] + kernel * case.dilation[axis]) as isize
        - case.padding[axis].0 as isize;
    (0..case.input[axis] as isize)
        .contains(&position)
        .then_some(position as usize)
}

fn conv_reference(
    case: &ConvCase,
    input: &Array4,
    weight: &Array4,
    bias: &[f64],
    upstream: &Array4,
) -> ConvReference {
    let mut reference = ConvReference {
        output: Array4::zeros(case.output_shape()),
        input_gradient: Array4::zeros(case.input_shape()),
        weight_gradient: Array4::zeros(case.weight_shape()),
        bias_gradient: vec![0.0; case.channels_out],
    };
    let per_group_in = case.channels_in / case.groups;
    let per_group_out = case.channels_out / case.groups;
    let [out_h, out_w] = case.output();
    for b in 0..case.batch {
        for (co, &bias_value) in bias.iter().enumerate() {
            let group = co / per_group_out;
            for oy in 0..out_h {
                for ox in 0..out_w {
                    let gradient = upstream.get([b, co, oy, ox]);
                    let mut sum = bias_value;
                    reference.bias_gradient[co] += gradient;
                    for local in 0..per_group_in {
                        let ci = group * per_group_in + local;
                        for ky in 0..case.kernel[0] {
                            let Some(iy) = tap(oy, ky, case, 0) else {
                                continue;
                            };
                            for kx in 0..case.kernel[1] {
                                let Some(ix) = tap(ox, kx, case, 1) else {
                                    continue;
                                };
                                let (x, w) =
                                    (input.get([b, ci, iy, ix]), weight.get([co, local, ky, kx]));
                                sum += x * w;
                                reference.input_gradient.add([b, ci, iy, ix], w * gradient);
                                reference
                                    .weight_gradient
                                    .add([co, local, ky, kx], x * gradient);
                            }
                        }
                    }
                    reference.output.add([b, co, oy, ox], sum);
                }
            }
        }
    }
    reference
}

fn assert_close(what: &str, device: &Device, actual: Tensor<4>, expected: &Array4) {
    assert_eq!(actual.dims(), expected.shape, "{what} on {device:?}: shape");
    assert_close_values(
        what,
        device,
        expected.shape.to_vec(),
        actual,
        &expected.data,
    );
}

fn assert_close_values<const D: usize>(
    what: &str,
    device: &Device,
    shape: Vec<usize>,
    actual: Tensor<D>,
    expected: &[f64],
) {
    let actual: Vec<f32> = actual
        .into_data()
        .try_to_vec::<f32>()
        .unwrap_or_else(|error| panic!("{what} on {device:?}: {error:?}"));
    assert_eq!(
        actual.len(),
        expected.len(),
        "{what} on {device:?}: {shape:?}"
    );
    let scale = expected
        .iter()
        .fold(1.0f64, |most, value| most.max(value.abs()));
    for (index, (&got, &want)) in actual.iter().zip(expected).enumerate() {
        let difference = (f64::from(got) - want).abs();
        assert!(
            difference <= RELATIVE_TOLERANCE * scale,
            "{what} on {device:?}, shape {shape:?}, element {index}: {got} instead of {want}"
        );
    }
}

fn devices() -> Vec<Device> {
    #[allow(deprecated)] // Burn marks NdArray deprecated in favour of Flex; it runs Burn's own ops.
    let ndarray = Device::ndarray();
    vec![Device::flex().autodiff(), ndarray.autodiff()]
}

#[test]
fn convolution_forward_and_gradients_match_their_definition() {
    for (number, case) in cases().into_iter().enumerate() {
        let seed = number as u64 * 4;
        let input = Array4::random(case.input_shape(), seed);
        let weight = Array4::random(case.weight_shape(), seed + 1);
        let bias = values(case.channels_out, seed + 2);
        let upstream = Array4::random(case.output_shape(), seed + 3);
        let expected = conv_reference(&case, &input, &weight, &bias, &upstream);
        for device in devices() {
            let what = |part: &str| format!("{part} of {case:?}");
            let x = input.tensor(&device).require_grad();
            let w = weight.tensor(&device).require_grad();
            let bias_values: Vec<f32> = bias.iter().map(|&value| value as f32).collect();
            let b = Tensor::<1>::from_floats(bias_values.as_slice(), &device).require_grad();
            let output = conv2d(x.clone(), w.clone(), Some(b.clone()), case.options());
            assert_close(&what("output"), &device, output.clone(), &expected.output);
            let gradients = (output * upstream.tensor(&device)).sum().backward();
            let input_gradient = x.grad(&gradients).expect("the input is tracked");
            assert_close(
                &what("input gradient"),
                &device,
                input_gradient,
                &expected.input_gradient,
            );
            let weight_gradient = w.grad(&gradients).expect("the weight is tracked");
            assert_close(
                &what("weight gradient"),
                &device,
                weight_gradient,
                &expected.weight_gradient,
            );
            let bias_gradient = b.grad(&gradients).expect("the bias is tracked");
            assert_close_values(
                &what("bias gradient"),
                &device,
                vec![case.channels_out],
                bias_gradient,
                &expected.bias_gradient,
            );
        }
    }
}

#[test]
fn a_convolution_of_the_weight_alone_gives_the_weight_gradient() {
    // The first layer of a network: its input is data, not tracked.
    let case = cases()[1];
    let input = Array4::random(case.input_shape(), 40);
    let weight = Array4::random(case.weight_shape(), 41);
    let bias = vec![0.0; case.channels_out];
    let upstream = Array4::random(case.output_shape(), 43);
    let expected = conv_reference(&case, &input, &weight, &bias, &upstream);
    for device in devices() {
        let w = weight.tensor(&device).require_grad();
        let output = conv2d(input.tensor(&device), w.clone(), None, case.options());
        let gradients = (output * upstream.tensor(&device)).sum().backward();
        let weight_gradient = w.grad(&gradients).expect("the weight is tracked");
        assert_close(
            "weight gradient",
            &device,
            weight_gradient,
            &expected.weight_gradient,
        );
    }
}

/// One max pooling: input, kernel, stride, padding.
#[derive(Clone, Copy, Debug)]
struct PoolCase {
    input: [usize; 4],
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    /// Inputs rounded to whole numbers below 2, so that most windows hold a tie (as ReLU's
    /// zeros do): the gradient must go to the window's first largest input, in row-major order.
    ties: bool,
}

impl PoolCase {
    fn output(&self) -> [usize; 2] {
        [0, 1].map(|axis| {
            (self.input[2 + axis] + 2 * self.padding[axis] - self.kernel[axis]) / self.stride[axis]
                + 1
        })
    }
}

/// Max pooling's output and the gradient of `Σ output × upstream` (the upstream value goes to
/// the window's first largest input).
fn pool_reference(case: &PoolCase, input: &Array4, upstream: &Array4) -> (Array4, Array4) {
    let [batch, channels, in_h, in_w] = case.input;
    let [out_h, out_w] = case.output();
    let mut output = Array4::zeros([batch, channels, out_h, out_w]);
    let mut gradient = Array4::zeros(case.input);
    for b in 0..batch {
        for c in 0..channels {
            for oy in 0..out_h {
                for ox in 0..out_w {
                    let mut best: Option<([usize; 4], f64)> = None;
                    for ky in 0..case.kernel[0] {
                        for kx in 0..case.kernel[1] {
                            let iy = (oy * case.stride[0] + ky) as isize - case.padding[0] as isize;
                            let ix = (ox * case.stride[1] + kx) as isize - case.padding[1] as isize;
                            if !(0..in_h as isize).contains(&iy)
                                || !(0..in_w as isize).contains(&ix)
                            {
                                continue;
                            }
                            let index = [b, c, iy as usize, ix as usize];
                            let value = input.get(index);
                            if best.is_none_or(|(_, most)| value > most) {
                                best = Some((index, value));
                            }
                        }
                    }
                    let (index, value) = best.expect("every window holds an input pixel");
                    output.add([b, c, oy, ox], value);
                    gradient.add(index, upstream.get([b, c, oy, ox]));
                }
            }
        }
    }
    (output, gradient)
}

#[test]
fn max_pooling_and_its_gradient_match_their_definition() {
    let cases = [
        // The CNN's pooling; an odd side drops its last row and column.
        PoolCase {
            input: [2, 3, 7, 6],
            kernel: [2, 2],
            stride: [2, 2],
            padding: [0, 0],
            ties: false,
        },
        // The same with ties in most windows.
        PoolCase {
            input: [2, 3, 7, 6],
            kernel: [2, 2],
            stride: [2, 2],
            padding: [0, 0],
            ties: true,
        },
        // Overlapping windows, batch 1, one channel.
        PoolCase {
            input: [1, 1, 6, 5],
            kernel: [3, 2],
            stride: [1, 2],
            padding: [0, 0],
            ties: false,
        },
        // Padding: windows partly outside the image.
        PoolCase {
            input: [2, 2, 5, 5],
            kernel: [3, 3],
            stride: [2, 2],
            padding: [1, 1],
            ties: true,
        },
    ];
    for (number, case) in cases.into_iter().enumerate() {
        let mut input = Array4::random(case.input, 100 + number as u64);
        if case.ties {
            input
                .data
                .iter_mut()
                .for_each(|value| *value = value.abs().min(1.0).round());
        }
        let [out_h, out_w] = case.output();
        let upstream = Array4::random([case.input[0], case.input[1], out_h, out_w], 200);
        let (expected_output, expected_gradient) = pool_reference(&case, &input, &upstream);
        for device in devices() {
            let x = input.tensor(&device).require_grad();
            let options = MaxPoolOptions::new(case.kernel)
                .with_stride(case.stride)
                .with_padding(case.padding);
            let output = max_pool2d(x.clone(), options);
            let what = format!("{case:?}");
            assert_close(
                &format!("pooled {what}"),
                &device,
                output.clone(),
                &expected_output,
            );
            let gradients = (output * upstream.tensor(&device)).sum().backward();
            let gradient = x.grad(&gradients).expect("the input is tracked");
            assert_close(
                &format!("gradient of {what}"),
                &device,
                gradient,
                &expected_gradient,
            );
        }
    }
}
