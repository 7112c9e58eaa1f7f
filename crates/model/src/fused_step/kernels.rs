//! The fused step's hidden-layer arithmetic: the forward from a batch's non-zero pixels and the
//! in-place SGD update of the hidden weights, on weights kept as panels of columns.
//!
//! [`Panels`] stores a `[inputs, outputs]` weight matrix as blocks of [`PANEL_WIDTH`] columns,
//! each block contiguous, and each kernel hands each panel to one rayon task, so no two threads
//! ever write the same values (no lock, no `unsafe` for the sharing). Both kernels read the
//! batch by pixel (row `k` of `images_by_pixel` lists the images where pixel `k` is not 0) and
//! go through a panel row by row, one row per pixel:
//!
//! - the forward adds the pixel's panel row, kept in registers, into the sums of every image
//!   that has the pixel;
//! - the update sums, in registers, the pixel's value times each such image's gradient over the
//!   panel's columns, then subtracts `learning_rate` times that sum from the pixel's panel row:
//!   each weight is read and written once per step, and no gradient matrix is written out.
//!
//! The two kernels have the same shape (a loop over pixels, a branch for a full panel whose
//! 64 values are a fixed-size array the compiler keeps in registers, and one for the last,
//! narrower panel) but different bodies; the branches are kept apart on purpose: with one
//! slice for both, the compiler spilled the sums to the stack and the step was slower
//! (docs/benchmarks.md, the fused step's section).

use rayon::prelude::*;

use super::gather::SparseRows;

/// Columns per panel: 64 `f32` are eight 256-bit registers of sums.
pub(crate) const PANEL_WIDTH: usize = 64;

/// The instructions the kernels run with, found at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Instructions {
    /// AVX2 and FMA. Only [`Instructions::detect`] makes it, after checking that the CPU has
    /// both: holding this value is the proof the `_avx2_fma` kernels need.
    #[cfg(target_arch = "x86_64")]
    Avx2Fma,
    /// Whatever the build targets.
    Portable,
}

impl Instructions {
    /// The best this CPU runs.
    pub(crate) fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Instructions::Avx2Fma;
        }
        Instructions::Portable
    }
}

/// A weight matrix `[inputs, outputs]` stored as panels of [`PANEL_WIDTH`] columns (the last
/// one narrower when `outputs` is no multiple of it): panel `p` holds columns
/// `p · PANEL_WIDTH ..` of every input row, row after row.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Panels {
    inputs: usize,
    outputs: usize,
    values: Vec<f32>,
}

impl Panels {
    /// The panels of the row-major `[inputs, outputs]` matrix `matrix`.
    pub(crate) fn from_row_major(matrix: &[f32], inputs: usize, outputs: usize) -> Self {
        let mut values = Vec::with_capacity(matrix.len());
        for first_column in (0..outputs).step_by(PANEL_WIDTH) {
            let width = PANEL_WIDTH.min(outputs - first_column);
            for row in matrix.chunks_exact(outputs).take(inputs) {
                values.extend_from_slice(&row[first_column..first_column + width]);
            }
        }
        Panels {
            inputs,
            outputs,
            values,
        }
    }

    /// The matrix, row-major `[inputs, outputs]` again.
    pub(crate) fn to_row_major(&self) -> Vec<f32> {
        let mut matrix = vec![0f32; self.inputs * self.outputs];
        for (first_column, width, panel) in self.panels() {
            for (row, panel_row) in matrix
                .chunks_exact_mut(self.outputs)
                .zip(panel.chunks(width))
            {
                row[first_column..first_column + width].copy_from_slice(panel_row);
            }
        }
        matrix
    }

    /// Each panel: its first column, its width and its values.
    fn panels(&self) -> impl Iterator<Item = (usize, usize, &[f32])> {
        let panel_values = (self.inputs * PANEL_WIDTH).max(1);
        (0..)
            .step_by(PANEL_WIDTH)
            .zip(self.values.chunks(panel_values))
            .map(|(first_column, panel)| {
                (
                    first_column,
                    PANEL_WIDTH.min(self.outputs - first_column),
                    panel,
                )
            })
    }
}

/// `hidden = ReLU(images · weights + bias)`, `[images, outputs]` row-major, from
/// `images_by_pixel` (the batch's non-zero pixels by pixel: row `k` lists the images where
/// pixel `k` is not 0, with its values). Each panel is one rayon task, which adds each pixel's
/// panel row (read once, kept in registers) into the images that have the pixel; the sums
/// gather in `panel_sums` (`[panels, images, PANEL_WIDTH]`, cache-resident for a batch of
/// MNIST's size) before they are copied out row by row.
pub(crate) fn hidden_forward(
    instructions: Instructions,
    images_by_pixel: &SparseRows,
    weights: &Panels,
    bias: &[f32],
    panel_sums: &mut Vec<f32>,
    hidden: &mut [f32],
) {
    let images = images_by_pixel.columns();
    let panel_count = weights.outputs.div_ceil(PANEL_WIDTH);
    panel_sums.clear();
    panel_sums.resize(panel_count * images * PANEL_WIDTH, 0.0);
    let tasks = panel_sums
        .par_chunks_mut((images * PANEL_WIDTH).max(1))
        .zip(
            weights
                .values
                .par_chunks((weights.inputs * PANEL_WIDTH).max(1)),
        )
        .enumerate();
    tasks.for_each(|(panel_index, (sums, panel))| {
        let width = PANEL_WIDTH.min(weights.outputs - panel_index * PANEL_WIDTH);
        let forward = PanelForward {
            images_by_pixel,
            panel,
            width,
        };
        match instructions {
            // SAFETY: `Instructions::Avx2Fma` exists only where the CPU has AVX2 and FMA.
            #[cfg(target_arch = "x86_64")]
            Instructions::Avx2Fma => unsafe { forward.add_avx2_fma(sums) },
            Instructions::Portable => forward.add_with::<false>(sums),
        }
    });
    for (image, output) in hidden.chunks_exact_mut(weights.outputs).enumerate() {
        for (panel_index, (output, bias)) in output
            .chunks_mut(PANEL_WIDTH)
            .zip(bias.chunks(PANEL_WIDTH))
            .enumerate()
        {
            let start = (panel_index * images + image) * PANEL_WIDTH;
            let sums = &panel_sums[start..][..output.len()];
            for ((value, &sum), &bias) in output.iter_mut().zip(sums).zip(bias) {
                *value = (sum + bias).max(0.0);
            }
        }
    }
}

/// `weights -= learning_rate · imagesᵀ · hidden_gradient` (`hidden_gradient` being
/// `[images, outputs]`), from `images_by_pixel` as in [`hidden_forward`]. Each panel is one
/// rayon task, which sums each pixel's gradient row over the images that have the pixel, in
/// registers, then subtracts it from the pixel's panel row: each weight is read and written
/// once per step, rows of pixels that are 0 in every image not at all.
pub(crate) fn hidden_update(
    instructions: Instructions,
    images_by_pixel: &SparseRows,
    weights: &mut Panels,
    hidden_gradient: &[f32],
    learning_rate: f32,
) {
    let (inputs, outputs) = (weights.inputs, weights.outputs);
    let panels = weights
        .values
        .par_chunks_mut((inputs * PANEL_WIDTH).max(1))
        .enumerate();
    panels.for_each(|(panel_index, values)| {
        let first_column = panel_index * PANEL_WIDTH;
        let panel = PanelUpdate {
            images_by_pixel,
            hidden_gradient,
            outputs,
            first_column,
            width: PANEL_WIDTH.min(outputs - first_column),
            learning_rate,
        };
        match instructions {
            // SAFETY: `Instructions::Avx2Fma` exists only where the CPU has AVX2 and FMA.
            #[cfg(target_arch = "x86_64")]
            Instructions::Avx2Fma => unsafe { panel.apply_avx2_fma(values) },
            Instructions::Portable => panel.apply_with::<false>(values),
        }
    });
}

/// `value · weight + sum`: one rounding with `FUSED` (a single instruction only where FMA is
/// compiled in), else a multiply and an add.
#[inline(always)]
fn multiply_add<const FUSED: bool>(value: f32, weight: f32, sum: f32) -> f32 {
    if FUSED {
        value.mul_add(weight, sum)
    } else {
        sum + value * weight
    }
}

/// What the forward of one panel reads.
struct PanelForward<'a> {
    images_by_pixel: &'a SparseRows,
    /// The panel's values, `[inputs, width]`.
    panel: &'a [f32],
    width: usize,
}

impl PanelForward<'_> {
    /// [`add_with`](Self::add_with), compiled for AVX2 and FMA.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn add_avx2_fma(&self, sums: &mut [f32]) {
        self.add_with::<true>(sums);
    }

    /// For each pixel `k`, for each image `i` where it is `value`: `sums[i] += value ·
    /// panel[k]` (`sums` being `[images, PANEL_WIDTH]`, of which the first `width` columns
    /// are used). Inlined into each caller, so that it is compiled with the caller's target
    /// features.
    #[inline(always)]
    fn add_with<const FUSED: bool>(&self, sums: &mut [f32]) {
        let width = self.width;
        for (pixel, weights) in self.panel.chunks_exact(width).enumerate() {
            let (images, values) = self.images_by_pixel.row(pixel);
            if images.is_empty() {
                continue;
            }
            if let Ok(weights) = <&[f32; PANEL_WIDTH]>::try_from(weights) {
                // A full panel: the pixel's weights stay in registers for all its images.
                let weights = *weights;
                for (&image, &value) in images.iter().zip(values) {
                    let start = image as usize * PANEL_WIDTH;
                    let row: &mut [f32; PANEL_WIDTH] = sums[start..]
                        .first_chunk_mut()
                        .expect("an image's sums lie within the panel's");
                    for (sum, &weight) in row.iter_mut().zip(&weights) {
                        *sum = multiply_add::<FUSED>(value, weight, *sum);
                    }
                }
            } else {
                for (&image, &value) in images.iter().zip(values) {
                    let row = &mut sums[image as usize * PANEL_WIDTH..][..width];
                    for (sum, &weight) in row.iter_mut().zip(weights) {
                        *sum = multiply_add::<FUSED>(value, weight, *sum);
                    }
                }
            }
        }
    }
}

/// What the update of one panel of the hidden weights reads.
struct PanelUpdate<'a> {
    images_by_pixel: &'a SparseRows,
    /// `[images, outputs]`.
    hidden_gradient: &'a [f32],
    outputs: usize,
    /// The panel's first column and its width.
    first_column: usize,
    width: usize,
    learning_rate: f32,
}

impl PanelUpdate<'_> {
    /// [`apply_with`](Self::apply_with), compiled for AVX2 and FMA.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn apply_avx2_fma(&self, panel: &mut [f32]) {
        self.apply_with::<true>(panel);
    }

    /// For each pixel `k`: the gradient of its panel row, `Σ value · gradient[i]` over the
    /// images `i` where it is `value` (`gradient[i]` being image `i`'s hidden gradient over
    /// the panel's columns), summed in registers, then `row -= learning_rate · sum`, rounded
    /// as Burn's SGD rounds it. Inlined into each caller, so that it is compiled with the
    /// caller's target features.
    #[inline(always)]
    fn apply_with<const FUSED: bool>(&self, panel: &mut [f32]) {
        let width = self.width;
        for (pixel, row) in panel.chunks_exact_mut(width).enumerate() {
            let (images, values) = self.images_by_pixel.row(pixel);
            if images.is_empty() {
                continue;
            }
            if let Ok(row) = <&mut [f32; PANEL_WIDTH]>::try_from(&mut *row) {
                // A full panel: the sums are a fixed-size array of their own, which the
                // compiler keeps in vector registers for all the pixel's images.
                let mut sums = [0f32; PANEL_WIDTH];
                for (&image, &value) in images.iter().zip(values) {
                    let start = image as usize * self.outputs + self.first_column;
                    let gradient: &[f32; PANEL_WIDTH] = self.hidden_gradient[start..]
                        .first_chunk()
                        .expect("an image's gradient lies within the batch's");
                    for (sum, &gradient) in sums.iter_mut().zip(gradient) {
                        *sum = multiply_add::<FUSED>(value, gradient, *sum);
                    }
                }
                sgd(row, &sums, self.learning_rate);
            } else {
                let mut sums = [0f32; PANEL_WIDTH];
                let sums = &mut sums[..width];
                for (&image, &value) in images.iter().zip(values) {
                    let start = image as usize * self.outputs + self.first_column;
                    let gradient = &self.hidden_gradient[start..][..width];
                    for (sum, &gradient) in sums.iter_mut().zip(gradient) {
                        *sum = multiply_add::<FUSED>(value, gradient, *sum);
                    }
                }
                sgd(row, sums, self.learning_rate);
            }
        }
    }
}

/// `parameter -= learning_rate · gradient`, rounded as Burn's SGD rounds it.
#[inline(always)]
pub(crate) fn sgd(parameter: &mut [f32], gradient: &[f32], learning_rate: f32) {
    for (value, &gradient) in parameter.iter_mut().zip(gradient) {
        *value -= learning_rate * gradient;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(rows: usize, columns: usize) -> Vec<f32> {
        (0..rows * columns)
            .map(|index| index as f32 * 0.25 - 3.0)
            .collect()
    }

    #[test]
    fn panels_give_back_the_matrix_they_were_made_of() {
        for (rows, columns) in [(784, 128), (5, 100), (3, 64), (7, 10), (1, 1)] {
            let matrix = matrix(rows, columns);
            let panels = Panels::from_row_major(&matrix, rows, columns);
            assert_eq!(panels.to_row_major(), matrix, "{rows} × {columns}");
            let widths: Vec<usize> = panels.panels().map(|(_, width, _)| width).collect();
            let expected: Vec<usize> = (0..columns)
                .step_by(PANEL_WIDTH)
                .map(|first| PANEL_WIDTH.min(columns - first))
                .collect();
            assert_eq!(widths, expected);
        }
    }

    /// The forward and the update, both instruction sets, against the textbook sums, with a
    /// full panel and a partial one.
    #[test]
    fn the_kernels_compute_the_textbook_forward_and_update() {
        let (images, inputs, outputs) = (5, 40, 100);
        let pixels: Vec<f32> = (0..images * inputs)
            .map(|index| {
                if index % 3 == 0 {
                    (index % 7) as f32 / 7.0
                } else {
                    0.0
                }
            })
            .collect();
        let by_pixel = SparseRows::from_dense(&pixels, inputs).unwrap().transpose();
        let weights: Vec<f32> = matrix(inputs, outputs).iter().map(|w| w / 100.0).collect();
        let bias: Vec<f32> = (0..outputs)
            .map(|column| column as f32 / 50.0 - 1.0)
            .collect();
        let gradient: Vec<f32> = (0..images * outputs)
            .map(|index| (index % 11) as f32 - 5.0)
            .collect();
        let mut expected_hidden = vec![0f32; images * outputs];
        let mut expected_weights = weights.clone();
        for image in 0..images {
            for output in 0..outputs {
                let mut sum = bias[output];
                for input in 0..inputs {
                    let pixel = pixels[image * inputs + input];
                    sum += pixel * weights[input * outputs + output];
                    expected_weights[input * outputs + output] -=
                        0.1 * pixel * gradient[image * outputs + output];
                }
                expected_hidden[image * outputs + output] = sum.max(0.0);
            }
        }
        let mut instruction_sets = vec![Instructions::Portable];
        if Instructions::detect() != Instructions::Portable {
            instruction_sets.push(Instructions::detect());
        }
        for instructions in instruction_sets {
            let mut panels = Panels::from_row_major(&weights, inputs, outputs);
            let mut hidden = vec![f32::NAN; images * outputs];
            let mut panel_sums = Vec::new();
            hidden_forward(
                instructions,
                &by_pixel,
                &panels,
                &bias,
                &mut panel_sums,
                &mut hidden,
            );
            hidden_update(instructions, &by_pixel, &mut panels, &gradient, 0.1);
            let close = |a: f32, e: f32| (a - e).abs() <= 1e-4 * (1.0 + e.abs());
            for (index, (&a, &e)) in hidden.iter().zip(&expected_hidden).enumerate() {
                assert!(close(a, e), "{instructions:?} hidden {index}: {a} vs {e}");
            }
            let updated = panels.to_row_major();
            for (index, (&a, &e)) in updated.iter().zip(&expected_weights).enumerate() {
                assert!(close(a, e), "{instructions:?} weight {index}: {a} vs {e}");
            }
        }
    }
}
