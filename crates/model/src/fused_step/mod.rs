//! The MLP's whole training step on the host, fused: forward, cross-entropy, backward and
//! plain SGD in one pass over buffers that are reused from step to step.
//!
//! Burn's step on a CPU backend builds an autodiff graph, allocates every intermediate tensor
//! (hundreds of heap allocations a step of the MNIST MLP, counted by `benches/train_step.rs`:
//! docs/benchmarks.md, "The training step per backend and batch size"), writes each gradient
//! out in full and reads it again to update the weights, and multiplies every pixel, though
//! most of MNIST's are 0. [`FusedSgdMlp`] keeps a [`Mlp`]'s four parameters on the host and
//! steps them itself, allocating nothing once its buffers have grown to the batch:
//!
//! - the batch's non-zero pixels, gathered by pixel in one pass (`gather.rs`);
//! - the hidden layer's forward: each non-zero pixel's row of weights added into the images
//!   that have it, the weights kept as panels of 64 columns, one panel per rayon task
//!   (`kernels.rs`);
//! - the output layer, the softmax and the loss's gradient in a few small loops over the
//!   batch, the output weights kept by class so that every loop runs along contiguous values;
//! - the hidden weights updated in place, `W -= learning_rate · (Xᵀ · dH)`: each weight row's
//!   gradient summed in registers over the images where its pixel is not 0, then subtracted,
//!   so each row is read and written once, and rows whose pixel is 0 in every image not at
//!   all.
//!
//! Every kernel runs with AVX2 and FMA where the CPU has them, found at run time (Reclaim's
//! binaries are built for any x86-64). docs/benchmarks.md times the step against Burn's
//! (`benches/train_step.rs`).
//!
//! It computes what Burn's step computes (`Mlp::loss`'s cross-entropy, then SGD without
//! momentum or weight decay, Burn's `SgdConfig::new()`): the same sums in another order, so the
//! results agree to rounding (the tests compare both roads, step by step). It is the road of
//! `reclaim train` where it applies (reclaim-train's `StepKernel`): an MLP on a CPU
//! backend, pixels mostly 0, plain SGD, and on Flex a batch small enough that Burn's threaded
//! product has not caught up (reclaim-train's `LARGEST_FUSED_STEP_BATCH_ON_FLEX`).

use burn::nn::Linear;
use burn::tensor::{Tensor, TensorData};

mod gather;
mod kernels;

use gather::{SparseRows, TransposedGather};
use kernels::{Instructions, Panels, sgd};

use crate::{Mlp, ModelError};

/// Values summed at once in a dot product: eight independent sums, so that the adds need not
/// wait for one another (a single running sum would be one long chain of dependent adds).
const DOT_LANES: usize = 8;

/// A [`Mlp`]'s parameters on the host, trained in place by plain SGD, one fused step per
/// batch ([`step`](Self::step)); [`write_into`](Self::write_into) puts them back into the
/// model, for evaluation or a checkpoint.
///
/// ```
/// use burn::tensor::Device;
/// use reclaim_model::{FusedSgdMlp, MlpConfig};
///
/// # #[allow(deprecated)]
/// let device = Device::ndarray();
/// let model = MlpConfig::new().init_seeded(&device, 42);
/// let mut host = FusedSgdMlp::from_model(&model)?;
///
/// // Two images of 784 pixels, mostly 0, and their labels.
/// let mut pixels = vec![0.0f32; 2 * 784];
/// pixels[300] = 1.0;
/// pixels[784 + 400] = 0.5;
/// let first = host.step(&pixels, &[3, 7], 0.1)?;
/// let second = host.step(&pixels, &[3, 7], 0.1)?;
/// assert!(second < first, "the loss on the batch falls: {first} then {second}");
///
/// let trained = host.write_into(model)?;
/// # let _ = trained;
/// # Ok::<(), reclaim_model::ModelError>(())
/// ```
#[derive(Debug)]
pub struct FusedSgdMlp {
    input_size: usize,
    hidden_size: usize,
    classes: usize,
    /// `[input_size, hidden_size]`, as panels of columns, one per thread in the update.
    hidden_weight: Panels,
    /// `[hidden_size]`.
    hidden_bias: Vec<f32>,
    /// `[classes, hidden_size]`: the transpose of Burn's `[hidden_size, classes]`, so that a
    /// class's weights are contiguous.
    output_weight_by_class: Vec<f32>,
    /// `[classes]`.
    output_bias: Vec<f32>,
    /// The instructions the kernels run with, found once.
    instructions: Instructions,
    scratch: StepScratch,
}

/// The step's intermediate values, kept between steps so that a step allocates nothing once
/// they have grown to the batch's size.
#[derive(Debug, Default)]
struct StepScratch {
    /// The batch's non-zero pixels, by pixel: row `k` lists the images whose pixel `k` is
    /// not 0, with the values. The hidden layer's kernels read them so.
    images_by_pixel: SparseRows,
    /// The gather's buffers for `images_by_pixel`.
    gather: TransposedGather,
    /// `[panels, batch, PANEL_WIDTH]`: the hidden layer's sums before they are copied out.
    panel_sums: Vec<f32>,
    /// `[batch, hidden_size]`: the hidden layer's output after its ReLU.
    hidden: Vec<f32>,
    /// `[batch, classes]`: the loss's gradient with respect to the logits.
    logit_gradient: Vec<f32>,
    /// `[batch, hidden_size]`: the loss's gradient with respect to the hidden layer's output
    /// before its ReLU.
    hidden_gradient: Vec<f32>,
    /// `[classes, hidden_size]`: the output weights' gradient, by class.
    output_weight_gradient: Vec<f32>,
    /// `[classes]` and `[hidden_size]`: the biases' gradients.
    output_bias_gradient: Vec<f32>,
    hidden_bias_gradient: Vec<f32>,
}

impl FusedSgdMlp {
    /// The parameters of `model`, read back to the host (one copy of each).
    ///
    /// # Errors
    ///
    /// [`ModelError::ZeroSize`] for a model with a layer of size 0 (one `MlpConfig::init`
    /// makes without [`validate`](crate::MlpConfig::validate));
    /// [`ModelError::TensorRead`] when a parameter cannot be read back, or a layer has no
    /// bias (a `Mlp` always has one).
    pub fn from_model(model: &Mlp) -> Result<Self, ModelError> {
        let [input_size, hidden_size] = model.hidden.weight.dims();
        let [_, classes] = model.output.weight.dims();
        crate::MlpConfig {
            input_size,
            hidden_size,
            number_of_classes: classes,
        }
        .validate()?;
        let output_weight = host_vec(model.output.weight.val(), "the output layer's weight")?;
        let hidden_weight = host_vec(model.hidden.weight.val(), "the hidden layer's weight")?;
        Ok(FusedSgdMlp {
            input_size,
            hidden_size,
            classes,
            hidden_weight: Panels::from_row_major(&hidden_weight, input_size, hidden_size),
            hidden_bias: bias_of(&model.hidden, "the hidden layer's bias")?,
            output_weight_by_class: transposed(&output_weight, hidden_size, classes),
            output_bias: bias_of(&model.output, "the output layer's bias")?,
            instructions: Instructions::detect(),
            scratch: StepScratch::default(),
        })
    }

    /// `model` with its four parameters replaced by these values, each on the device of its
    /// old value and under its old id (so an optimizer's state and a checkpoint still name it).
    ///
    /// The values are written untracked by autodiff: on an autodiff device, Burn 0.22.1 keeps a
    /// graph node for every tensor marked as requiring a gradient until its next backward pass,
    /// which the fused road never runs, so marked values would pile up (a run that wrote them
    /// back marked ended further above its baseline than one that wrote them untracked; what
    /// the latter left, the nodes of the model's first parameters, reclaim-train sweeps at
    /// release: docs/benchmarks.md, "Why the release sweeps Burn's autodiff graph"). Each
    /// parameter keeps its setting, and [`Module::train`](burn::module::Module::train) marks the
    /// values again before Burn's own autodiff steps them.
    ///
    /// # Errors
    ///
    /// [`ModelError::LayerSizes`] when `model`'s layers are not this MLP's sizes.
    pub fn write_into(&self, mut model: Mlp) -> Result<Mlp, ModelError> {
        let [input_size, hidden_size] = model.hidden.weight.dims();
        let [_, classes] = model.output.weight.dims();
        let sizes = [self.input_size, self.hidden_size, self.classes];
        if [input_size, hidden_size, classes] != sizes {
            return Err(ModelError::LayerSizes {
                given: [input_size, hidden_size, classes],
                expected: sizes,
            });
        }
        let output_weight = transposed(&self.output_weight_by_class, classes, hidden_size);
        let hidden_weight = self.hidden_weight.to_row_major();
        model.hidden = replaced(model.hidden, &hidden_weight, &self.hidden_bias);
        model.output = replaced(model.output, &output_weight, &self.output_bias);
        Ok(model)
    }

    /// One SGD step on a batch: `pixels` holds the images, `input_size` values each, row after
    /// row, and `labels` their classes. Returns the batch's mean cross-entropy before the step.
    ///
    /// # Errors
    ///
    /// [`ModelError::BatchShape`] when the pixels are not whole images, one per label, or the
    /// batch is empty; [`ModelError::LabelOutOfRange`] for a label that is not a class;
    /// [`ModelError::LearningRate`] for a learning rate that is negative or not finite. The
    /// parameters are untouched by a step that fails.
    pub fn step(
        &mut self,
        pixels: &[f32],
        labels: &[i64],
        learning_rate: f32,
    ) -> Result<f32, ModelError> {
        self.check_batch(pixels, labels, learning_rate)?;
        self.checked_step(pixels, labels, learning_rate)
    }

    /// [`step`](Self::step) on a batch already checked.
    fn checked_step(
        &mut self,
        pixels: &[f32],
        labels: &[i64],
        learning_rate: f32,
    ) -> Result<f32, ModelError> {
        let batch = labels.len();
        let scratch = &mut self.scratch;
        // The batch was checked to be whole images, so the gather takes it; should its `u32`
        // positions not fit the counts, the batch is refused all the same.
        scratch
            .images_by_pixel
            .refill_transposed_from_dense(pixels, self.input_size, &mut scratch.gather)
            .map_err(|_| ModelError::BatchShape {
                pixel_values: pixels.len(),
                labels: batch,
                input_size: self.input_size,
            })?;
        self.hidden_forward(batch);
        let loss = match self.instructions {
            // SAFETY: `Instructions::Avx2Fma` exists only where the CPU has AVX2 and FMA.
            #[cfg(target_arch = "x86_64")]
            Instructions::Avx2Fma => unsafe {
                self.output_layer_step_avx2_fma(labels, learning_rate)
            },
            Instructions::Portable => self.output_layer_step(labels, learning_rate),
        };
        self.update_hidden_layer(batch, learning_rate);
        Ok(loss)
    }

    /// [`output_layer_step`](Self::output_layer_step), compiled for AVX2 and FMA.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn output_layer_step_avx2_fma(&mut self, labels: &[i64], learning_rate: f32) -> f32 {
        self.output_layer_step(labels, learning_rate)
    }

    /// The step's middle, after the hidden layer's forward: the logits, the loss and its
    /// gradient, the hidden layer's gradient, and SGD on the output layer. Returns the loss.
    /// Inlined (with the functions it calls) into each caller, so that it is compiled with the
    /// caller's target features.
    #[inline(always)]
    fn output_layer_step(&mut self, labels: &[i64], learning_rate: f32) -> f32 {
        let batch = labels.len();
        let loss = self.output_forward_and_logit_gradient(labels);
        self.hidden_backward(batch);
        self.update_output_layer(batch, learning_rate);
        loss
    }

    /// [`ModelError::BatchShape`], [`ModelError::LabelOutOfRange`] or
    /// [`ModelError::LearningRate`] for a batch or a rate the step cannot take.
    fn check_batch(
        &self,
        pixels: &[f32],
        labels: &[i64],
        learning_rate: f32,
    ) -> Result<(), ModelError> {
        if labels.is_empty() || labels.len().checked_mul(self.input_size) != Some(pixels.len()) {
            return Err(ModelError::BatchShape {
                pixel_values: pixels.len(),
                labels: labels.len(),
                input_size: self.input_size,
            });
        }
        let is_class = |label: i64| usize::try_from(label).is_ok_and(|class| class < self.classes);
        if let Some((image, &label)) = labels
            .iter()
            .enumerate()
            .find(|(_, label)| !is_class(**label))
        {
            return Err(ModelError::LabelOutOfRange {
                label,
                image,
                classes: self.classes,
            });
        }
        if !learning_rate.is_finite() || learning_rate < 0.0 {
            return Err(ModelError::LearningRate {
                given: f64::from(learning_rate),
            });
        }
        Ok(())
    }

    /// `hidden = ReLU(images · W + b)`, from the non-zero pixels only.
    fn hidden_forward(&mut self, batch: usize) {
        let scratch = &mut self.scratch;
        scratch.hidden.resize(batch * self.hidden_size, 0.0);
        kernels::hidden_forward(
            self.instructions,
            &scratch.images_by_pixel,
            &self.hidden_weight,
            &self.hidden_bias,
            &mut scratch.panel_sums,
            &mut scratch.hidden,
        );
    }

    /// The logits, their softmax and the batch's mean cross-entropy, which is returned; leaves
    /// the loss's gradient with respect to the logits, `(softmax - one_hot(label)) / batch`, in
    /// the scratch.
    #[inline(always)]
    fn output_forward_and_logit_gradient(&mut self, labels: &[i64]) -> f32 {
        let scratch = &mut self.scratch;
        let batch = labels.len();
        scratch.logit_gradient.resize(batch * self.classes, 0.0);
        let mut loss_sum = 0f64;
        let rows = scratch.hidden.chunks_exact(self.hidden_size);
        let gradients = scratch.logit_gradient.chunks_exact_mut(self.classes);
        for ((hidden, gradient), &label) in rows.zip(gradients).zip(labels) {
            let weights = self.output_weight_by_class.chunks_exact(self.hidden_size);
            for ((logit, class_weights), &bias) in
                gradient.iter_mut().zip(weights).zip(&self.output_bias)
            {
                *logit = dot(hidden, class_weights) + bias;
            }
            // Checked in `check_batch`: the label is a class.
            let label = label as usize;
            loss_sum += f64::from(softmax_cross_entropy_in_place(gradient, label));
            for value in gradient.iter_mut() {
                *value /= batch as f32;
            }
        }
        (loss_sum / batch as f64) as f32
    }

    /// The loss's gradient with respect to the hidden layer's output before its ReLU:
    /// `(logit_gradient · W_out) ⊙ [hidden > 0]`, with the output weights as they were in the
    /// forward pass.
    #[inline(always)]
    fn hidden_backward(&mut self, batch: usize) {
        let scratch = &mut self.scratch;
        scratch.hidden_gradient.clear();
        scratch
            .hidden_gradient
            .resize(batch * self.hidden_size, 0.0);
        let rows = scratch.hidden_gradient.chunks_exact_mut(self.hidden_size);
        let logit_gradients = scratch.logit_gradient.chunks_exact(self.classes);
        let hidden = scratch.hidden.chunks_exact(self.hidden_size);
        for ((row, logit_gradient), hidden) in rows.zip(logit_gradients).zip(hidden) {
            let weights = self.output_weight_by_class.chunks_exact(self.hidden_size);
            for (&scale, class_weights) in logit_gradient.iter().zip(weights) {
                for (value, &weight) in row.iter_mut().zip(class_weights) {
                    *value += scale * weight;
                }
            }
            for (value, &activation) in row.iter_mut().zip(hidden) {
                if activation <= 0.0 {
                    *value = 0.0;
                }
            }
        }
    }

    /// SGD on the output layer: its weight's gradient `hiddenᵀ · logit_gradient` (kept by
    /// class) and its bias's, the column sums of `logit_gradient`.
    #[inline(always)]
    fn update_output_layer(&mut self, batch: usize, learning_rate: f32) {
        let scratch = &mut self.scratch;
        let weight_gradient = &mut scratch.output_weight_gradient;
        weight_gradient.clear();
        weight_gradient.resize(self.classes * self.hidden_size, 0.0);
        let hidden = scratch.hidden.chunks_exact(self.hidden_size);
        let logit_gradients = scratch.logit_gradient.chunks_exact(self.classes);
        for (hidden, logit_gradient) in hidden.zip(logit_gradients) {
            let class_rows = weight_gradient.chunks_exact_mut(self.hidden_size);
            for (class_row, &scale) in class_rows.zip(logit_gradient) {
                for (value, &activation) in class_row.iter_mut().zip(hidden) {
                    *value += scale * activation;
                }
            }
        }
        column_sums_into(
            &scratch.logit_gradient,
            self.classes,
            batch,
            &mut scratch.output_bias_gradient,
        );
        sgd(
            &mut self.output_weight_by_class,
            weight_gradient,
            learning_rate,
        );
        sgd(
            &mut self.output_bias,
            &scratch.output_bias_gradient,
            learning_rate,
        );
    }

    /// SGD on the hidden layer: its bias's gradient is the column sums of `hidden_gradient`;
    /// its weight's, `imagesᵀ · hidden_gradient`, is subtracted row by row as it is summed,
    /// from the pixels that are not 0 only.
    fn update_hidden_layer(&mut self, batch: usize, learning_rate: f32) {
        let scratch = &mut self.scratch;
        column_sums_into(
            &scratch.hidden_gradient,
            self.hidden_size,
            batch,
            &mut scratch.hidden_bias_gradient,
        );
        sgd(
            &mut self.hidden_bias,
            &scratch.hidden_bias_gradient,
            learning_rate,
        );
        kernels::hidden_update(
            self.instructions,
            &scratch.images_by_pixel,
            &mut self.hidden_weight,
            &scratch.hidden_gradient,
            learning_rate,
        );
    }
}

/// `Σ left[i] · right[i]`, in [`DOT_LANES`] independent sums.
#[inline(always)]
fn dot(left: &[f32], right: &[f32]) -> f32 {
    let mut sums = [0f32; DOT_LANES];
    let left_chunks = left.chunks_exact(DOT_LANES);
    let right_chunks = right.chunks_exact(DOT_LANES);
    let tail: f32 = left_chunks
        .remainder()
        .iter()
        .zip(right_chunks.remainder())
        .map(|(&left, &right)| left * right)
        .sum();
    for (left, right) in left_chunks.zip(right_chunks) {
        for ((sum, &left), &right) in sums.iter_mut().zip(left).zip(right) {
            *sum += left * right;
        }
    }
    sums.iter().sum::<f32>() + tail
}

/// Replaces `logits` by the gradient of `-log softmax(logits)[label]` with respect to them,
/// `softmax(logits) - one_hot(label)`, and returns that loss (computed from the largest logit
/// down, so that no exponential overflows).
#[inline(always)]
fn softmax_cross_entropy_in_place(logits: &mut [f32], label: usize) -> f32 {
    let largest = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let label_logit = logits[label];
    let mut exponential_sum = 0f32;
    for value in logits.iter_mut() {
        *value = (*value - largest).exp();
        exponential_sum += *value;
    }
    for value in logits.iter_mut() {
        *value /= exponential_sum;
    }
    logits[label] -= 1.0;
    largest + exponential_sum.ln() - label_logit
}

/// The sums of the `columns` columns of `matrix` (`rows` rows) into `sums`.
#[inline(always)]
fn column_sums_into(matrix: &[f32], columns: usize, rows: usize, sums: &mut Vec<f32>) {
    sums.clear();
    sums.resize(columns, 0.0);
    for row in matrix.chunks_exact(columns).take(rows) {
        for (sum, &value) in sums.iter_mut().zip(row) {
            *sum += value;
        }
    }
}

/// The transpose of a row-major `rows × columns` matrix.
fn transposed(matrix: &[f32], rows: usize, columns: usize) -> Vec<f32> {
    let mut transpose = vec![0f32; matrix.len()];
    for (row, values) in matrix.chunks_exact(columns).take(rows).enumerate() {
        for (column, &value) in values.iter().enumerate() {
            transpose[column * rows + row] = value;
        }
    }
    transpose
}

/// The values of `tensor`, read back to the host as `f32`; `what` names it in an error.
fn host_vec<const D: usize>(tensor: Tensor<D>, what: &'static str) -> Result<Vec<f32>, ModelError> {
    let error = |message: String| ModelError::TensorRead { what, message };
    tensor
        .try_into_data_as::<f32>()
        .map_err(|read| error(read.to_string()))?
        .try_into_vec::<f32>()
        .map_err(|data| error(format!("{data:?}")))
}

/// The bias of `layer`, read back to the host; [`ModelError::TensorRead`] naming `what` when
/// the layer has none.
fn bias_of(layer: &Linear, what: &'static str) -> Result<Vec<f32>, ModelError> {
    let bias = layer.bias.as_ref().ok_or(ModelError::TensorRead {
        what,
        message: "the layer has no bias".into(),
    })?;
    host_vec(bias.val(), what)
}

/// `layer` with its weight and bias replaced by `weight` and `bias` (its shapes), on the same
/// device, under the same ids, untracked by autodiff ([`FusedSgdMlp::write_into`]).
fn replaced(mut layer: Linear, weight: &[f32], bias: &[f32]) -> Linear {
    layer.weight = layer.weight.map(|old| with_values_of(old, weight));
    layer.bias = layer
        .bias
        .map(|parameter| parameter.map(|old| with_values_of(old, bias)));
    layer
}

/// A tensor of `old`'s shape and device holding `values`, untracked by autodiff.
fn with_values_of<const D: usize>(old: Tensor<D>, values: &[f32]) -> Tensor<D> {
    let data = TensorData::new(values.to_vec(), old.shape());
    Tensor::from_data(data, &old.device())
}

#[cfg(test)]
mod tests {
    use burn::module::Module;
    use burn::optim::{GradientsParams, ModuleOptimizer, SgdConfig};
    use burn::tensor::{Device, Int};

    use super::*;
    use crate::MlpConfig;

    #[allow(deprecated)]
    fn cpu_device() -> Device {
        Device::ndarray()
    }

    /// `rows` images of `columns` values, about `zero_share` of them 0 and the rest in (0, 1],
    /// drawn from `seed`.
    fn images(rows: usize, columns: usize, zero_share: f64, seed: u64) -> Vec<f32> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..rows * columns)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let uniform = (state >> 11) as f64 / (1u64 << 53) as f64;
                if uniform < zero_share {
                    0.0
                } else {
                    ((uniform - zero_share) / (1.0 - zero_share)) as f32
                }
            })
            .map(|value| if value == 0.0 { 0.0 } else { value.max(1e-3) })
            .collect()
    }

    fn labels(rows: usize, classes: usize, seed: usize) -> Vec<i64> {
        (0..rows)
            .map(|row| ((row * 7 + seed) % classes) as i64)
            .collect()
    }

    /// Every parameter of `model`, in one vector per parameter (weights, then biases).
    fn parameters(model: &Mlp) -> Vec<Vec<f32>> {
        let hidden_bias = model.hidden.bias.as_ref().unwrap();
        let output_bias = model.output.bias.as_ref().unwrap();
        vec![
            host_vec(model.hidden.weight.val(), "w1").unwrap(),
            host_vec(hidden_bias.val(), "b1").unwrap(),
            host_vec(model.output.weight.val(), "w2").unwrap(),
            host_vec(output_bias.val(), "b2").unwrap(),
        ]
    }

    fn assert_close(actual: &[Vec<f32>], expected: &[Vec<f32>], tolerance: f32) {
        for (parameter, (actual, expected)) in actual.iter().zip(expected).enumerate() {
            assert_eq!(actual.len(), expected.len(), "parameter {parameter}");
            for (index, (a, e)) in actual.iter().zip(expected).enumerate() {
                assert!(
                    (a - e).abs() <= tolerance * (1.0 + e.abs()),
                    "parameter {parameter}, value {index}: {a} against Burn's {e}"
                );
            }
        }
    }

    /// Burn's own step on `model`: forward, `Mlp::loss`, backward, `SgdConfig::new()`.
    fn burn_step(
        model: Mlp,
        optimizer: &mut ModuleOptimizer,
        pixels: &[f32],
        labels: &[i64],
        input_size: usize,
        learning_rate: f64,
    ) -> (Mlp, f32) {
        let device = model.devices()[0].clone();
        let rows = labels.len();
        let images = Tensor::<2>::from_data(
            TensorData::new(pixels.to_vec(), [rows, input_size]),
            &device,
        );
        let labels = Tensor::<1, Int>::from_ints(labels, &device);
        let loss = model.loss(model.forward(images), labels);
        let value = loss.clone().into_scalar::<f32>();
        let gradients = GradientsParams::from_grads(loss.backward(), &model);
        (optimizer.step(learning_rate, model, gradients), value)
    }

    /// Twenty steps of both kinds from the same weights, on both CPU backends, with MNIST's
    /// sizes and with sizes whose hidden layer is no whole number of 64-column passes: the
    /// losses and every parameter agree to rounding after every step.
    #[test]
    fn twenty_fused_steps_follow_burns_steps() {
        let sizes = [(784, 128, 10, 64), (50, 100, 3, 7)];
        for device in [cpu_device().autodiff(), Device::flex().autodiff()] {
            for (input_size, hidden_size, classes, batch) in sizes {
                let config = MlpConfig::new()
                    .with_input_size(input_size)
                    .with_hidden_size(hidden_size)
                    .with_number_of_classes(classes);
                let mut burn_model = config.init_seeded(&device, 11);
                let mut host = FusedSgdMlp::from_model(&burn_model).unwrap();
                let mut optimizer = SgdConfig::new().init();
                for step in 0..20 {
                    let pixels = images(batch, input_size, 0.8, step);
                    let labels = labels(batch, classes, step as usize);
                    let burn_loss;
                    (burn_model, burn_loss) = burn_step(
                        burn_model,
                        &mut optimizer,
                        &pixels,
                        &labels,
                        input_size,
                        0.05,
                    );
                    let host_loss = host.step(&pixels, &labels, 0.05).unwrap();
                    assert!(
                        (host_loss - burn_loss).abs() <= 1e-5 * (1.0 + burn_loss.abs()),
                        "step {step}: loss {host_loss} against Burn's {burn_loss}"
                    );
                }
                let fused_model = host.write_into(config.init_seeded(&device, 11)).unwrap();
                assert_close(&parameters(&fused_model), &parameters(&burn_model), 1e-5);
            }
        }
    }

    /// Dense inputs (no pixel 0) take the same road and agree as well.
    #[test]
    fn a_step_on_inputs_without_zeros_follows_burns_step() {
        let device = cpu_device().autodiff();
        let model = MlpConfig::new().init_seeded(&device, 3);
        let mut host = FusedSgdMlp::from_model(&model).unwrap();
        let pixels = images(16, 784, 0.0, 9);
        assert!(pixels.iter().all(|&value| value != 0.0));
        let labels = labels(16, 10, 1);
        let mut optimizer = SgdConfig::new().init();
        let (burn_model, _) = burn_step(model.clone(), &mut optimizer, &pixels, &labels, 784, 0.01);
        host.step(&pixels, &labels, 0.01).unwrap();
        let fused_model = host.write_into(model).unwrap();
        assert_close(&parameters(&fused_model), &parameters(&burn_model), 1e-5);
    }

    /// Written back, the parameters keep their ids and devices, untracked until
    /// `Module::train` marks them again on an autodiff device; read and written back with no
    /// step between, they are the same values.
    #[test]
    fn writing_back_keeps_ids_and_devices_and_train_tracks_the_values_again() {
        for device in [
            cpu_device(),
            cpu_device().autodiff(),
            Device::flex().autodiff(),
        ] {
            let model = MlpConfig::new().init_seeded(&device, 8);
            let ids = (model.hidden.weight.id, model.output.weight.id);
            let before = parameters(&model);
            let host = FusedSgdMlp::from_model(&model).unwrap();
            let written = host.write_into(model).unwrap();
            assert_eq!(before, parameters(&written));
            assert_eq!(ids, (written.hidden.weight.id, written.output.weight.id));
            assert_eq!(written.devices(), vec![device.clone()]);
            assert!(!written.hidden.weight.val().is_require_grad());
            let trained = written.train();
            assert_eq!(before, parameters(&trained));
            // On a device without autodiff the flag has nothing to track (Burn reports it set).
            if device.is_autodiff() {
                let bias = trained.output.bias.as_ref().unwrap().val();
                assert!(bias.is_require_grad(), "{device:?}");
                assert!(trained.hidden.weight.val().is_require_grad(), "{device:?}");
            }
        }
    }

    #[test]
    fn batches_that_do_not_fit_are_errors_and_leave_the_parameters_as_they_were() {
        let device = cpu_device();
        let model = MlpConfig::new().init_seeded(&device, 2);
        let mut host = FusedSgdMlp::from_model(&model).unwrap();
        let pixels = images(2, 784, 0.8, 1);
        let cases: [(&[f32], &[i64], f32, ModelError); 6] = [
            (
                &pixels[..1000],
                &[1, 2],
                0.01,
                ModelError::BatchShape {
                    pixel_values: 1000,
                    labels: 2,
                    input_size: 784,
                },
            ),
            (
                &pixels,
                &[1],
                0.01,
                ModelError::BatchShape {
                    pixel_values: 1568,
                    labels: 1,
                    input_size: 784,
                },
            ),
            (
                &[],
                &[],
                0.01,
                ModelError::BatchShape {
                    pixel_values: 0,
                    labels: 0,
                    input_size: 784,
                },
            ),
            (
                &pixels,
                &[1, 10],
                0.01,
                ModelError::LabelOutOfRange {
                    label: 10,
                    image: 1,
                    classes: 10,
                },
            ),
            (
                &pixels,
                &[-1, 0],
                0.01,
                ModelError::LabelOutOfRange {
                    label: -1,
                    image: 0,
                    classes: 10,
                },
            ),
            (
                &pixels,
                &[0, 1],
                f32::NAN,
                ModelError::LearningRate { given: f64::NAN },
            ),
        ];
        for (pixels, labels, learning_rate, expected) in cases {
            let error = host.step(pixels, labels, learning_rate).unwrap_err();
            assert_eq!(error.to_string(), expected.to_string());
        }
        let untouched = host.write_into(model.clone()).unwrap();
        assert_eq!(parameters(&untouched), parameters(&model));

        let empty = MlpConfig::new().with_number_of_classes(0).init(&device);
        let error = FusedSgdMlp::from_model(&empty).unwrap_err();
        assert!(
            matches!(
                error,
                ModelError::ZeroSize {
                    setting: "number_of_classes"
                }
            ),
            "{error}"
        );

        let other = MlpConfig::new().with_hidden_size(64).init(&device);
        let error = host.write_into(other).unwrap_err();
        assert!(
            matches!(
                error,
                ModelError::LayerSizes {
                    given: [784, 64, 10],
                    expected: [784, 128, 10]
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn huge_logits_give_a_finite_loss_and_gradient() {
        let mut logits = [1e30f32, -1e30, 0.0];
        let loss = softmax_cross_entropy_in_place(&mut logits, 1);
        assert!(loss.is_finite() && loss > 1e29, "{loss}");
        assert!(logits.iter().all(|value| value.is_finite()), "{logits:?}");
        assert_eq!(logits, [1.0, -1.0, 0.0]);
    }
}
