//! The 2D convolution's forward pass and its three gradients as products with the unfolded
//! input ("columns", im2col), one sample and one tile of output rows at a time.
//!
//! For sample `b` and group `g`, with `K = channels_per_group × kernel_h × kernel_w` rows and
//! one column per output pixel of the tile:
//!
//! ```text
//! forward          Y[b,g]      = W[g] · columns[b,g]               (Cog × K) · (K × tile)
//! weight gradient  dW[g]      += dY[b,g] · columns[b,g]ᵀ           (Cog × tile) · (tile × K)
//! input gradient   dcolumns    = W[g]ᵀ · dY[b,g], folded into dX   (K × Cog) · (Cog × tile)
//! bias gradient    db[c]       = Σ over samples and pixels of dY[b,c]
//! ```
//!
//! Burn's default backward computes the input gradient with a transposed convolution and the
//! weight gradient with a convolution whose batch and channel axes are swapped, the shape a
//! direct kernel handles worst; both become a GEMM here, on the `gemm` crate Flex already uses.
//! The rows of a column tile are laid out as the weight's `[channel, ky, kx]`, so neither the
//! weight nor its gradient is ever transposed or copied, and the GEMM reads the gradient of the
//! output in place through its strides.
//!
//! Work is shared out over samples (and, for the forward pass, tiles of output rows), one
//! single-threaded GEMM per tile, so a batch keeps every core busy. The weight gradient sums
//! one partial gradient per thread. A column tile holds at most [`COLUMN_TILE_ELEMENTS`]
//! elements (one output row at least), so memory stays bounded for large images.
//!
//! Any stride, padding (asymmetric included: only the leading padding places a window, the
//! output's size comes from the tensors), dilation and groups. f32, f64 and f16 natively, bf16
//! through f32.

use alloc::vec;
use alloc::vec::Vec;
use burn_backend::DType;
use burn_backend::ops::ConvOptions;
use burn_std::{Bytes, Shape, f16};

use crate::{FlexTensor, Layout};

use super::conv_common::{convert_bf16_to_f32, convert_f32_to_bf16};

mod winograd;

/// The most elements of one tile of columns (1 MiB of f32): small enough to stay in a core's
/// L2 cache with the GEMM's packed panels, large enough for the GEMM to run at full speed.
const COLUMN_TILE_ELEMENTS: usize = 256 * 1024;

/// What a convolution's gradients and forward pass need of an element type.
pub(crate) trait ConvElement:
    bytemuck::Pod + num_traits::Float + Send + Sync + burn_backend::Element + 'static
{
    /// Whether 3 x 3 convolutions may go through [`winograd`], whose transforms add
    /// intermediate values that f16's precision would round too far.
    const WINOGRAD: bool;
}

impl ConvElement for f32 {
    const WINOGRAD: bool = true;
}
impl ConvElement for f64 {
    const WINOGRAD: bool = true;
}
impl ConvElement for f16 {
    const WINOGRAD: bool = false;
}

/// The sizes of one 2D convolution, read from its tensors' shapes and its options.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    batch: usize,
    channels_in: usize,
    in_h: usize,
    in_w: usize,
    channels_out: usize,
    kernel_h: usize,
    kernel_w: usize,
    out_h: usize,
    out_w: usize,
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    groups: usize,
}

/// The output size along `axis` of a convolution of `input` values with a `kernel`-wide
/// kernel: Burn's `calculate_conv_output_size_asymmetric`, checked (`None` where the kernel's
/// reach exceeds the padded input, for which that function's subtraction would overflow, and
/// where the padded input's size itself overflows).
fn output_side(input: usize, kernel: usize, axis: usize, options: &ConvOptions<2>) -> Option<usize> {
    let padded = input.checked_add(options.padding_begin()[axis])?.checked_add(options.padding_end()[axis])?;
    let reach = options.dilation[axis].checked_mul(kernel.checked_sub(1)?)?.checked_add(1)?;
    Some(padded.checked_sub(reach)? / options.stride[axis].max(1) + 1)
}

impl Geometry {
    fn new(x_shape: &[usize], weight_shape: &[usize], out_hw: [usize; 2], options: &ConvOptions<2>) -> Self {
        Self {
            batch: x_shape[0],
            channels_in: x_shape[1],
            in_h: x_shape[2],
            in_w: x_shape[3],
            channels_out: weight_shape[0],
            kernel_h: weight_shape[2],
            kernel_w: weight_shape[3],
            out_h: out_hw[0],
            out_w: out_hw[1],
            stride: options.stride,
            padding: options.padding_begin(),
            dilation: options.dilation,
            groups: options.groups,
        }
    }

    /// The sizes of a gradient's convolution, whose output size is the output gradient's.
    /// Panics, naming the shapes, when the output gradient is not the forward pass's output
    /// shape for `x`, the weight and `options` (`[batch, channels_out, out_h, out_w]`): the
    /// products read it through raw strides, and the transforms lay its rows inside the input's.
    fn of_gradient(x_shape: &[usize], weight_shape: &[usize], grad_shape: &[usize], options: &ConvOptions<2>) -> Self {
        let expected = [
            Some(x_shape[0]),
            Some(weight_shape[0]),
            output_side(x_shape[2], weight_shape[2], 0, options),
            output_side(x_shape[3], weight_shape[3], 1, options),
        ];
        assert!(
            grad_shape.len() == 4 && grad_shape.iter().zip(&expected).all(|(&side, &want)| Some(side) == want),
            "conv2d backward: the output gradient's shape {grad_shape:?} is not the output shape {expected:?} of an input of shape {x_shape:?}, a weight of shape {weight_shape:?} and {options:?}",
        );
        Self::new(x_shape, weight_shape, [grad_shape[2], grad_shape[3]], options)
    }

    fn channels_per_group(&self) -> usize {
        self.channels_in / self.groups
    }

    fn out_channels_per_group(&self) -> usize {
        self.channels_out / self.groups
    }

    /// Rows of a column tile: one per weight of an output channel.
    fn column_rows(&self) -> usize {
        self.channels_per_group() * self.kernel_h * self.kernel_w
    }

    fn in_plane(&self) -> usize {
        self.in_h * self.in_w
    }

    fn out_plane(&self) -> usize {
        self.out_h * self.out_w
    }

    /// Output rows per tile of columns: as many as fit in [`COLUMN_TILE_ELEMENTS`], at least one.
    fn rows_per_tile(&self) -> usize {
        let per_row = self.column_rows() * self.out_w;
        (COLUMN_TILE_ELEMENTS / per_row.max(1)).clamp(1, self.out_h.max(1))
    }

    /// The tiles of output rows, `[first, end)`.
    fn row_tiles(&self) -> impl Iterator<Item = (usize, usize)> + Clone {
        let rows = self.rows_per_tile();
        let out_h = self.out_h;
        (0..out_h.div_ceil(rows)).map(move |tile| (tile * rows, ((tile + 1) * rows).min(out_h)))
    }

    /// The output columns `[first, end)` whose window position `offset + ox × stride` lies
    /// inside `[0, length)`, for a kernel offset `offset` (which may be negative: padding).
    fn valid_outputs(offset: isize, stride: usize, length: usize, outputs: usize) -> (usize, usize) {
        let stride = stride as isize;
        let first = if offset >= 0 { 0 } else { (-offset + stride - 1) / stride };
        let last_position = length as isize - 1 - offset;
        let end = if last_position < 0 { 0 } else { last_position / stride + 1 };
        let end = (end as usize).min(outputs);
        let first = (first as usize).min(end);
        (first, end)
    }
}

/// Writes the columns of output rows `[row_start, row_end)` for the channels of one group of
/// one sample (`input`: those channels' planes, contiguous) into `columns`, row-major
/// `[column_rows, tile]`; padding reads as zero.
fn fill_columns<T: ConvElement>(
    columns: &mut [T],
    input: &[T],
    geometry: &Geometry,
    (row_start, row_end): (usize, usize),
) {
    let g = geometry;
    let tile = (row_end - row_start) * g.out_w;
    let mut column_row = 0;
    for channel in 0..g.channels_per_group() {
        let plane = &input[channel * g.in_plane()..][..g.in_plane()];
        for ky in 0..g.kernel_h {
            for kx in 0..g.kernel_w {
                let destination = &mut columns[column_row * tile..][..tile];
                column_row += 1;
                let x_offset = (kx * g.dilation[1]) as isize - g.padding[1] as isize;
                let (ox_first, ox_end) =
                    Geometry::valid_outputs(x_offset, g.stride[1], g.in_w, g.out_w);
                for (tile_row, oy) in (row_start..row_end).enumerate() {
                    let out = &mut destination[tile_row * g.out_w..][..g.out_w];
                    let iy = (oy * g.stride[0] + ky * g.dilation[0]) as isize - g.padding[0] as isize;
                    if iy < 0 || iy >= g.in_h as isize || ox_first == ox_end {
                        out.fill(T::zero());
                        continue;
                    }
                    let source = &plane[iy as usize * g.in_w..][..g.in_w];
                    out[..ox_first].fill(T::zero());
                    out[ox_end..].fill(T::zero());
                    let ix_first = (ox_first as isize * g.stride[1] as isize + x_offset) as usize;
                    if g.stride[1] == 1 {
                        out[ox_first..ox_end]
                            .copy_from_slice(&source[ix_first..ix_first + (ox_end - ox_first)]);
                    } else {
                        for (step, value) in out[ox_first..ox_end].iter_mut().enumerate() {
                            *value = source[ix_first + step * g.stride[1]];
                        }
                    }
                }
            }
        }
    }
}

/// Adds the gradient of columns (row-major `[column_rows, tile]`, for output rows
/// `[row_start, row_end)`) back into the gradient of the input planes of one group of one
/// sample: the transpose of [`fill_columns`].
fn fold_columns<T: ConvElement>(
    input_gradient: &mut [T],
    columns: &[T],
    geometry: &Geometry,
    (row_start, row_end): (usize, usize),
) {
    let g = geometry;
    let tile = (row_end - row_start) * g.out_w;
    let mut column_row = 0;
    for channel in 0..g.channels_per_group() {
        let plane = &mut input_gradient[channel * g.in_plane()..][..g.in_plane()];
        for ky in 0..g.kernel_h {
            for kx in 0..g.kernel_w {
                let source = &columns[column_row * tile..][..tile];
                column_row += 1;
                let x_offset = (kx * g.dilation[1]) as isize - g.padding[1] as isize;
                let (ox_first, ox_end) =
                    Geometry::valid_outputs(x_offset, g.stride[1], g.in_w, g.out_w);
                if ox_first == ox_end {
                    continue;
                }
                for (tile_row, oy) in (row_start..row_end).enumerate() {
                    let iy = (oy * g.stride[0] + ky * g.dilation[0]) as isize - g.padding[0] as isize;
                    if iy < 0 || iy >= g.in_h as isize {
                        continue;
                    }
                    let gradient_row = &source[tile_row * g.out_w..][ox_first..ox_end];
                    let destination = &mut plane[iy as usize * g.in_w..][..g.in_w];
                    let ix_first = (ox_first as isize * g.stride[1] as isize + x_offset) as usize;
                    if g.stride[1] == 1 {
                        let destination = &mut destination[ix_first..ix_first + gradient_row.len()];
                        for (sum, &value) in destination.iter_mut().zip(gradient_row) {
                            *sum = *sum + value;
                        }
                    } else {
                        for (step, &value) in gradient_row.iter().enumerate() {
                            let sum = &mut destination[ix_first + step * g.stride[1]];
                            *sum = *sum + value;
                        }
                    }
                }
            }
        }
    }
}

/// A matrix operand for [`multiply`]: its first element and its column and row strides.
#[derive(Clone, Copy)]
struct Operand<T> {
    pointer: *const T,
    column_stride: isize,
    row_stride: isize,
}

/// `destination (m × n) = [destination +] left (m × depth) · right (depth × n)`, on the calling
/// thread, through the `gemm` crate.
///
/// # Safety
///
/// Every element of the three matrices that their sizes and strides address must lie inside
/// one live allocation, and `destination`'s must not be read or written by anything else
/// during the call.
#[allow(clippy::too_many_arguments)]
unsafe fn multiply<T: ConvElement>(
    [m, n, depth]: [usize; 3],
    destination: (*mut T, isize),
    accumulate: bool,
    left: Operand<T>,
    right: Operand<T>,
) {
    // SAFETY: the caller guarantees the operands' extents; gemm reads `left` and `right` and
    // writes `destination` (row-major, row stride `destination.1`) within them.
    unsafe {
        gemm::gemm(
            m,
            n,
            depth,
            destination.0,
            1,
            destination.1,
            accumulate,
            left.pointer,
            left.column_stride,
            left.row_stride,
            right.pointer,
            right.column_stride,
            right.row_stride,
            T::one(),
            T::one(),
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// Runs `work` for each index in `0..count`, on rayon's pool where compiled in.
fn for_each_index(count: usize, work: impl Fn(usize) + Send + Sync) {
    #[cfg(feature = "rayon")]
    {
        use rayon::prelude::*;
        (0..count).into_par_iter().for_each(work);
    }
    #[cfg(not(feature = "rayon"))]
    (0..count).for_each(work);
}

/// Runs `work(columns, index)` for each index in `0..count`, in parallel with the `rayon`
/// feature, where `columns` is a scratch buffer of `scratch_len` elements that `work` may
/// overwrite: one buffer per rayon job rather than per index, so the buffer is allocated and
/// zeroed a few times per call instead of once per index. Each buffer is freed when the call
/// returns.
fn for_each_index_with_columns<T: ConvElement>(
    count: usize,
    scratch_len: usize,
    work: impl Fn(&mut [T], usize) + Send + Sync,
) {
    let scratch = || vec![T::zero(); scratch_len];
    #[cfg(feature = "rayon")]
    {
        use rayon::prelude::*;
        (0..count)
            .into_par_iter()
            .for_each_init(scratch, |columns, index| work(columns, index));
    }
    #[cfg(not(feature = "rayon"))]
    {
        let mut columns = scratch();
        (0..count).for_each(|index| work(&mut columns, index));
    }
}

/// How many parts to share a sum over `count` items into: one per thread.
fn partial_sums(count: usize) -> usize {
    #[cfg(feature = "rayon")]
    let threads = rayon::current_num_threads();
    #[cfg(not(feature = "rayon"))]
    let threads = 1;
    threads.clamp(1, count.max(1))
}

/// A pointer that may be shared among the threads of [`for_each_index`]; each thread writes a
/// part of the buffer no other thread touches.
#[derive(Clone, Copy)]
struct SharedBuffer<T>(*mut T);

// SAFETY: the pointer is only dereferenced for disjoint parts of one live buffer (each user
// says which part) while the buffer's owner waits for every thread.
unsafe impl<T: Send> Send for SharedBuffer<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedBuffer<T> {}

impl<T> SharedBuffer<T> {
    /// The buffer's start (a method, so that closures capture the whole `Send` wrapper).
    fn start(self) -> *mut T {
        self.0
    }
}

fn tensor_from<T: ConvElement>(data: Vec<T>, shape: [usize; 4], dtype: DType) -> FlexTensor {
    FlexTensor::new(Bytes::from_elems(data), Layout::contiguous(Shape::from(shape.to_vec())), dtype)
}

/// The forward pass: `[batch, channels_out, out_h, out_w]`.
fn forward<T: ConvElement>(
    x: FlexTensor,
    weight: FlexTensor,
    bias: Option<FlexTensor>,
    options: &ConvOptions<2>,
    dtype: DType,
) -> FlexTensor {
    let (x, weight) = (x.to_contiguous(), weight.to_contiguous());
    let (x_shape, w_shape) = (x.layout().shape().to_vec(), weight.layout().shape().to_vec());
    let out_hw = [0, 1].map(|axis| {
        burn_backend::ops::conv::calculate_conv_output_size(
            w_shape[2 + axis],
            options.stride[axis],
            options.padding_begin()[axis],
            options.dilation[axis],
            x_shape[2 + axis],
        )
    });
    let g = Geometry::new(&x_shape, &w_shape, out_hw, options);
    let (x_data, w_data): (&[T], &[T]) = (x.storage(), weight.storage());
    let bias = bias.map(|bias| bias.to_contiguous());
    let bias_data: Option<&[T]> = bias.as_ref().map(|bias| bias.storage());
    // Each (sample, tile, group) product below overwrites its part of the output without
    // reading it (`accumulate` false; with no input channels, gemm writes zeros). The parts
    // cover the whole buffer when the groups share the output channels evenly, and then it is
    // not zeroed first; otherwise (which Burn's checks allow) it is, so that the channels past
    // the last whole group read as zero.
    let output_len = g.batch * g.channels_out * g.out_plane();
    let products_cover_output = g.channels_out % g.groups == 0;
    let mut output: Vec<T> =
        if products_cover_output { Vec::with_capacity(output_len) } else { vec![T::zero(); output_len] };
    let output_pointer = SharedBuffer(output.as_mut_ptr());
    if winograd::applies::<T>(&g) {
        winograd::forward(output_pointer, x_data, w_data, bias_data, &g);
    } else {
        forward_by_columns(output_pointer, x_data, w_data, bias_data, &g);
    }
    if products_cover_output {
        // SAFETY: the groups share the output channels evenly, so every element of the
        // capacity was written by one product above (or, through Winograd's transforms, by
        // one tile, and there is one group).
        unsafe { output.set_len(output_len) };
    }
    tensor_from(output, [g.batch, g.channels_out, g.out_h, g.out_w], dtype)
}

/// The forward pass by columns into `output` (`[batch, channels_out, out_h, out_w]`): every
/// element written once where the groups share the output channels evenly, the rest left as
/// they were.
fn forward_by_columns<T: ConvElement>(
    output_pointer: SharedBuffer<T>,
    x_data: &[T],
    w_data: &[T],
    bias_data: Option<&[T]>,
    g: &Geometry,
) {
    let tiles: Vec<(usize, usize)> = g.row_tiles().collect();
    let rows = g.column_rows();
    let scratch_len = rows * g.rows_per_tile() * g.out_w;
    for_each_index_with_columns(g.batch * tiles.len(), scratch_len, |columns: &mut [T], item| {
        let (sample, tile) = (item / tiles.len(), tiles[item % tiles.len()]);
        let tile_len = (tile.1 - tile.0) * g.out_w;
        let columns = &mut columns[..rows * tile_len];
        for group in 0..g.groups {
            let input = &x_data[(sample * g.channels_in + group * g.channels_per_group()) * g.in_plane()..];
            fill_columns(columns, input, g, tile);
            let first_channel = sample * g.channels_out + group * g.out_channels_per_group();
            let destination = first_channel * g.out_plane() + tile.0 * g.out_w;
            // SAFETY: this (sample, tile) writes only rows `tile` of its sample's output planes
            // (no other item does); the weight's group block and the columns are in bounds.
            unsafe {
                multiply(
                    [g.out_channels_per_group(), tile_len, rows],
                    (output_pointer.start().add(destination), g.out_plane() as isize),
                    false,
                    Operand {
                        pointer: w_data.as_ptr().add(group * g.out_channels_per_group() * rows),
                        column_stride: 1,
                        row_stride: rows as isize,
                    },
                    Operand { pointer: columns.as_ptr(), column_stride: 1, row_stride: tile_len as isize },
                );
            }
            // The bias, while the tile's rows are still in cache.
            let Some(bias_data) = bias_data else { continue };
            for channel in 0..g.out_channels_per_group() {
                let value = bias_data[group * g.out_channels_per_group() + channel];
                // SAFETY: the rows of this tile in this output channel of this sample, which
                // only this item writes (as above).
                let rows = unsafe {
                    core::slice::from_raw_parts_mut(
                        output_pointer.start().add(destination + channel * g.out_plane()),
                        tile_len,
                    )
                };
                rows.iter_mut().for_each(|element| *element = *element + value);
            }
        }
    });
}

/// The gradient of the weight: `[channels_out, channels_per_group, kernel_h, kernel_w]`.
fn weight_gradient<T: ConvElement>(
    x: FlexTensor,
    weight_shape: &[usize],
    output_grad: FlexTensor,
    options: &ConvOptions<2>,
    dtype: DType,
) -> FlexTensor {
    let (x, output_grad) = (x.to_contiguous(), output_grad.to_contiguous());
    let grad_shape = output_grad.layout().shape().to_vec();
    let g = Geometry::of_gradient(x.layout().shape(), weight_shape, &grad_shape, options);
    let (x_data, grad_data): (&[T], &[T]) = (x.storage(), output_grad.storage());
    let shape = [weight_shape[0], weight_shape[1], weight_shape[2], weight_shape[3]];
    if winograd::applies::<T>(&g) {
        return tensor_from(winograd::weight_gradient(x_data, grad_data, &g), shape, dtype);
    }
    let rows = g.column_rows();
    let weight_len = g.channels_out * rows;
    let parts = partial_sums(g.batch);
    let samples_per_part = g.batch.div_ceil(parts);
    let mut partials = vec![T::zero(); parts * weight_len];
    let partials_pointer = SharedBuffer(partials.as_mut_ptr());
    for_each_index(parts, |part| {
        let samples = part * samples_per_part..((part + 1) * samples_per_part).min(g.batch);
        let mut columns = vec![T::zero(); rows * g.rows_per_tile() * g.out_w];
        for sample in samples {
            for tile in g.row_tiles() {
                let tile_len = (tile.1 - tile.0) * g.out_w;
                for group in 0..g.groups {
                    let input = &x_data[(sample * g.channels_in + group * g.channels_per_group()) * g.in_plane()..];
                    fill_columns(&mut columns, input, &g, tile);
                    let first_channel = sample * g.channels_out + group * g.out_channels_per_group();
                    let gradient = &grad_data[first_channel * g.out_plane() + tile.0 * g.out_w..];
                    let destination = part * weight_len + group * g.out_channels_per_group() * rows;
                    // SAFETY: part `part` alone writes its partial gradient; the output
                    // gradient's rows of this tile and the columns are in bounds.
                    unsafe {
                        multiply(
                            [g.out_channels_per_group(), rows, tile_len],
                            (partials_pointer.start().add(destination), rows as isize),
                            true,
                            Operand {
                                pointer: gradient.as_ptr(),
                                column_stride: 1,
                                row_stride: g.out_plane() as isize,
                            },
                            Operand { pointer: columns.as_ptr(), column_stride: tile_len as isize, row_stride: 1 },
                        );
                    }
                }
            }
        }
    });
    let (total, rest) = partials.split_at_mut(weight_len);
    for partial in rest.chunks(weight_len) {
        total.iter_mut().zip(partial).for_each(|(sum, &value)| *sum = *sum + value);
    }
    partials.truncate(weight_len);
    tensor_from(partials, shape, dtype)
}

/// The gradient of the input: `x`'s shape.
fn input_gradient<T: ConvElement>(
    x_shape: &[usize],
    weight: FlexTensor,
    output_grad: FlexTensor,
    options: &ConvOptions<2>,
    dtype: DType,
) -> FlexTensor {
    let (weight, output_grad) = (weight.to_contiguous(), output_grad.to_contiguous());
    let grad_shape = output_grad.layout().shape().to_vec();
    let g = Geometry::of_gradient(x_shape, weight.layout().shape(), &grad_shape, options);
    let (w_data, grad_data): (&[T], &[T]) = (weight.storage(), output_grad.storage());
    let sample_len = g.channels_in * g.in_plane();
    // Each sample's planes are zeroed by the thread that folds into them (ops/fresh.rs says
    // why), not by `calloc`.
    let mut input_grad: Vec<T> = Vec::with_capacity(g.batch * sample_len);
    let input_pointer = SharedBuffer(input_grad.as_mut_ptr());
    if winograd::applies::<T>(&g) {
        winograd::input_gradient(input_pointer, w_data, grad_data, &g);
    } else {
        input_gradient_by_columns(input_pointer, w_data, grad_data, &g);
    }
    // SAFETY: every sample's planes, so every element of the capacity, were zeroed by the
    // thread that summed into them.
    unsafe { input_grad.set_len(g.batch * sample_len) };
    tensor_from(input_grad, [x_shape[0], x_shape[1], x_shape[2], x_shape[3]], dtype)
}

/// The gradient of the input by columns into `input_pointer` (`x`'s shape, not yet
/// initialised): each sample's planes zeroed, then summed into, by one thread.
fn input_gradient_by_columns<T: ConvElement>(
    input_pointer: SharedBuffer<T>,
    w_data: &[T],
    grad_data: &[T],
    g: &Geometry,
) {
    let rows = g.column_rows();
    let sample_len = g.channels_in * g.in_plane();
    for_each_index_with_columns(g.batch, rows * g.rows_per_tile() * g.out_w, |columns: &mut [T], sample| {
        // SAFETY: sample `sample` alone writes, then reads, its own planes of the input
        // gradient, inside the vector's capacity; it zeroes them first (`T` is `Pod`, whose
        // all-zero bits are a valid value, and zero for the float types here).
        let sample_gradient = unsafe {
            let start = input_pointer.start().add(sample * sample_len);
            core::ptr::write_bytes(start, 0, sample_len);
            core::slice::from_raw_parts_mut(start, sample_len)
        };
        for tile in g.row_tiles() {
            let tile_len = (tile.1 - tile.0) * g.out_w;
            for group in 0..g.groups {
                let first_channel = sample * g.channels_out + group * g.out_channels_per_group();
                let gradient = &grad_data[first_channel * g.out_plane() + tile.0 * g.out_w..];
                // SAFETY: the columns buffer is this thread's; the weight's group block and
                // the output gradient's rows of this tile are in bounds.
                unsafe {
                    multiply(
                        [rows, tile_len, g.out_channels_per_group()],
                        (columns.as_mut_ptr(), tile_len as isize),
                        false,
                        Operand {
                            pointer: w_data.as_ptr().add(group * g.out_channels_per_group() * rows),
                            column_stride: rows as isize,
                            row_stride: 1,
                        },
                        Operand { pointer: gradient.as_ptr(), column_stride: 1, row_stride: g.out_plane() as isize },
                    );
                }
                let planes = &mut sample_gradient[group * g.channels_per_group() * g.in_plane()..];
                fold_columns(planes, &columns[..rows * tile_len], g, tile);
            }
        }
    });
}

/// The gradient of the bias: `[channels_out]`, the output gradient summed over samples and
/// pixels.
fn bias_gradient<T: ConvElement>(output_grad: FlexTensor, dtype: DType) -> FlexTensor {
    let output_grad = output_grad.to_contiguous();
    let shape = output_grad.layout().shape().to_vec();
    let (channels, plane) = (shape[1], shape[2] * shape[3]);
    let data: &[T] = &output_grad.storage()[..shape[0] * channels * plane];
    // One channel per task, its planes summed in sample order (the serial loop's order, so
    // the sums are the same bit for bit), on rayon's pool where the gradient is large.
    let channel_sum = |channel: usize| {
        (0..shape[0]).fold(T::zero(), |sum, sample| {
            let start = (sample * channels + channel) * plane;
            sum + sum_in_lanes(&data[start..start + plane])
        })
    };
    #[cfg(feature = "rayon")]
    let sums: Vec<T> = if data.len() >= crate::ops::PARALLEL_THRESHOLD {
        use rayon::prelude::*;
        (0..channels).into_par_iter().map(channel_sum).collect()
    } else {
        (0..channels).map(channel_sum).collect()
    };
    #[cfg(not(feature = "rayon"))]
    let sums: Vec<T> = (0..channels).map(channel_sum).collect();
    FlexTensor::new(Bytes::from_elems(sums), Layout::contiguous(Shape::from(vec![channels])), dtype)
}

/// The sum of `values`, in eight independent running sums so that the additions vectorize.
fn sum_in_lanes<T: ConvElement>(values: &[T]) -> T {
    const LANES: usize = 8;
    let mut lanes = [T::zero(); LANES];
    let chunks = values.chunks_exact(LANES);
    let rest = chunks.remainder().iter().fold(T::zero(), |total, &value| total + value);
    for chunk in chunks {
        for (lane, &value) in lanes.iter_mut().zip(chunk) {
            *lane = *lane + value;
        }
    }
    lanes.iter().fold(rest, |total, &lane| total + lane)
}

fn bf16_through_f32(tensor: FlexTensor) -> FlexTensor {
    convert_bf16_to_f32(&tensor)
}

/// Whether [`conv::conv2d_f32`](super::conv) and its siblings have a path without columns for
/// this convolution, which [`conv2d`] leaves to them: a pointwise one (1 x 1, stride 1, no
/// padding: the input already is its columns) or a depthwise one (one input channel per
/// group).
pub(crate) fn has_direct_path(x: &FlexTensor, weight: &FlexTensor, options: &ConvOptions<2>) -> bool {
    let (x_shape, w_shape) = (x.layout().shape(), weight.layout().shape());
    let pointwise = w_shape[2] == 1
        && w_shape[3] == 1
        && options.stride == [1, 1]
        && options.padding_begin() == [0, 0]
        && !options.is_asymmetric();
    let depthwise = options.groups > 1 && options.groups == x_shape[1] && w_shape[1] == 1;
    pointwise || depthwise
}

/// [`forward`] for the tensor's dtype.
pub(crate) fn conv2d(
    x: FlexTensor,
    weight: FlexTensor,
    bias: Option<FlexTensor>,
    options: &ConvOptions<2>,
) -> FlexTensor {
    match x.dtype() {
        DType::F32 => forward::<f32>(x, weight, bias, options, DType::F32),
        DType::F64 => forward::<f64>(x, weight, bias, options, DType::F64),
        DType::F16 => forward::<f16>(x, weight, bias, options, DType::F16),
        DType::BF16 => convert_f32_to_bf16(&forward::<f32>(
            bf16_through_f32(x),
            bf16_through_f32(weight),
            bias.map(bf16_through_f32),
            options,
            DType::F32,
        )),
        dtype => panic!("conv2d: unsupported dtype {:?}", dtype),
    }
}

/// [`weight_gradient`] for the tensor's dtype.
pub(crate) fn conv2d_weight_backward(
    x: FlexTensor,
    weight: FlexTensor,
    output_grad: FlexTensor,
    options: &ConvOptions<2>,
) -> FlexTensor {
    let weight_shape = weight.layout().shape().to_vec();
    match x.dtype() {
        DType::F32 => weight_gradient::<f32>(x, &weight_shape, output_grad, options, DType::F32),
        DType::F64 => weight_gradient::<f64>(x, &weight_shape, output_grad, options, DType::F64),
        DType::F16 => weight_gradient::<f16>(x, &weight_shape, output_grad, options, DType::F16),
        DType::BF16 => convert_f32_to_bf16(&weight_gradient::<f32>(
            bf16_through_f32(x),
            &weight_shape,
            bf16_through_f32(output_grad),
            options,
            DType::F32,
        )),
        dtype => panic!("conv2d_weight_backward: unsupported dtype {:?}", dtype),
    }
}

/// [`input_gradient`] for the tensor's dtype.
pub(crate) fn conv2d_x_backward(
    x: FlexTensor,
    weight: FlexTensor,
    output_grad: FlexTensor,
    options: &ConvOptions<2>,
) -> FlexTensor {
    let x_shape = x.layout().shape().to_vec();
    match x.dtype() {
        DType::F32 => input_gradient::<f32>(&x_shape, weight, output_grad, options, DType::F32),
        DType::F64 => input_gradient::<f64>(&x_shape, weight, output_grad, options, DType::F64),
        DType::F16 => input_gradient::<f16>(&x_shape, weight, output_grad, options, DType::F16),
        DType::BF16 => convert_f32_to_bf16(&input_gradient::<f32>(
            &x_shape,
            bf16_through_f32(weight),
            bf16_through_f32(output_grad),
            options,
            DType::F32,
        )),
        dtype => panic!("conv2d_x_backward: unsupported dtype {:?}", dtype),
    }
}

/// [`bias_gradient`] for the tensor's dtype.
pub(crate) fn conv2d_bias_backward(output_grad: FlexTensor) -> FlexTensor {
    match output_grad.dtype() {
        DType::F32 => bias_gradient::<f32>(output_grad, DType::F32),
        DType::F64 => bias_gradient::<f64>(output_grad, DType::F64),
        DType::F16 => bias_gradient::<f16>(output_grad, DType::F16),
        DType::BF16 => convert_f32_to_bf16(&bias_gradient::<f32>(bf16_through_f32(output_grad), DType::F32)),
        dtype => panic!("conv2d_bias_backward: unsupported dtype {:?}", dtype),
    }
}


#[cfg(test)]
mod tests {
    use super::conv2d_bias_backward;
    use crate::{FlexTensor, Layout};
    use alloc::vec::Vec;
    use burn_backend::DType;
    use burn_std::{Bytes, Shape};

    /// The bias gradient of an output gradient of `shape`, against the definition (every
    /// sample's and pixel's value of each channel summed in f64): small enough to stay on the
    /// calling thread, and large enough (600,000 elements) to be split one channel per task.
    #[test]
    fn bias_gradient_sums_each_channel_over_samples_and_pixels() {
        for shape in [[2usize, 3, 5, 7], [3, 5, 200, 200]] {
            let [batch, channels, height, width] = shape;
            let plane = height * width;
            let values: Vec<f64> =
                (0..batch * channels * plane).map(|index| ((index * 7919) % 1013) as f64 / 64.0 - 7.5).collect();
            let tensor = FlexTensor::new(
                Bytes::from_elems(values.clone()),
                Layout::contiguous(Shape::from(shape.to_vec())),
                DType::F64,
            );
            let gradient = conv2d_bias_backward(tensor);
            assert_eq!(gradient.layout().shape().to_vec(), [channels], "shape {shape:?}");
            let actual: &[f64] = gradient.storage();
            for (channel, &sum) in actual.iter().enumerate() {
                let expected: f64 = (0..batch)
                    .flat_map(|sample| values[(sample * channels + channel) * plane..][..plane].iter())
                    .sum();
                let tolerance = 1e-9 * expected.abs().max(1.0);
                assert!((sum - expected).abs() <= tolerance, "shape {shape:?}, channel {channel}: {sum} against {expected}");
            }
        }
    }
}
