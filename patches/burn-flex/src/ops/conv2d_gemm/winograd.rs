//! 3 × 3, stride-1 convolutions by Winograd's minimal filtering F(m × m, 3 × 3) (Lavin and
//! Gray, "Fast Algorithms for Convolutional Neural Networks", 2016): the forward pass and both
//! gradients from transformed tiles, in two sizes. F(2 × 2, 3 × 3) does 16 multiplications per
//! 2 × 2 block of output instead of 36; F(4 × 4, 3 × 3) does 36 per 4 × 4 block instead of 144.
//!
//! The output is cut into `m × m` tiles; tile `t` reads the `p × p` patch (`p = m + 2`) of input
//! `d` that its windows cover. With the `p × p` transforms `Bᵀ d B` of the input, `G w Gᵀ` of
//! each 3 × 3 weight and `Aᵀ M A` back to `m × m`, the forward pass is, for each of the `p²`
//! points `q`:
//!
//! ```text
//! V[q]  (tiles × Cin)  = (Bᵀ d B)[q] of every tile and input channel
//! U[q]  (Cin × Cout)   = (G w Gᵀ)[q] of every weight
//! M[q]  (tiles × Cout) = V[q] · U[q]                       p² products, depth Cin
//! y                    = Aᵀ M A of every tile and output channel
//! ```
//!
//! The gradients are the same linear maps transposed, so they reuse the transforms:
//!
//! ```text
//! dM[q] = (A dy Aᵀ)[q]          dV[q] = dM[q] · U[q]ᵀ      dx += B dV Bᵀ  (patches overlap)
//! dU[q] = V[q]ᵀ · dM[q]         dw    = Gᵀ dU G
//! ```
//!
//! F(2 × 2)'s transforms add and halve only; F(4 × 4)'s also multiply by small constants (up to
//! 8, and 1/24 in `G`), so they round more. Both equal the columns path's results within a float
//! tolerance (the tests below compare them with the definition). An infinite input is the
//! exception: the transforms may subtract it from itself, so its outputs can be NaN where the
//! columns path gives an infinity. Tiles are transformed and multiplied a batch at
//! a time ([`TRANSFORMED_ELEMENTS`] bounds a batch's buffers), so memory stays bounded for
//! large images and the products stay in a core's cache. Transformed values are laid out
//! `[point, channel, tile]`, tiles contiguous, so that both the transforms and the products
//! walk memory in order. The transforms run in fixed-size blocks of tiles ([`BLOCK`]), the
//! passes along the rows over a whole batch at once (each tile row's part gathered first),
//! and, with the `simd` feature, are compiled once per instruction set and chosen at run time
//! (`macerator::with_simd`, as the rest of Flex's kernels are), so that
//! they are vector code on the CPU they run on.
//!
//! Used for 3 × 3 kernels with stride 1, dilation 1 and one group, any padding, when both
//! channel counts reach [`MIN_CHANNELS`] (with fewer, the products are too shallow to gain
//! over the columns path) and the output is at least [`MIN_TILE_COLUMNS`] 2 × 2 tiles wide, for
//! f32 and f64 ([`ConvElement::WINOGRAD`]). The 4 × 4 tiles are taken from
//! [`MIN_LARGE_TILE_COLUMNS`] of them across ([`TileSide`]).

use alloc::vec;
use alloc::vec::Vec;
use core::ops::Range;

use num_traits::Float;

use super::{ConvElement, Geometry, Operand, SharedBuffer, for_each_index, multiply, partial_sums};

/// The most transformed values (input and output together) of one batch of tiles (1 MiB of
/// f32), so that a batch's buffers stay in a core's L2 cache.
const TRANSFORMED_ELEMENTS: usize = 256 * 1024;

/// The fewest input and output channels for which this path is taken.
pub(super) const MIN_CHANNELS: usize = 16;

/// The fewest 2 × 2 tiles across the output for which this path is taken: from 4 tiles across
/// the three passes measured level with the columns path or ahead of it (docs/benchmarks.md has
/// the per-op figures, taken when the passes along the rows still ran one tile row at a time);
/// narrower outputs were not measured and keep the columns path.
pub(super) const MIN_TILE_COLUMNS: usize = 4;

/// The fewest 4 × 4 tiles across the output for which F(4 × 4, 3 × 3) is taken instead of
/// F(2 × 2, 3 × 3): at 4 across (16 × 16 outputs) it measured ahead, at 2 across (8 × 8) behind,
/// both in a first build whose row passes ran one tile row at a time and with the passes over
/// whole batches; 3 across was not measured (docs/benchmarks.md has the figures).
pub(super) const MIN_LARGE_TILE_COLUMNS: usize = 4;

/// Whether this path computes the convolution of `geometry` in `T`.
pub(super) fn applies<T: ConvElement>(geometry: &Geometry) -> bool {
    let g = geometry;
    T::WINOGRAD
        && [g.kernel_h, g.kernel_w] == [3, 3]
        && g.stride == [1, 1]
        && g.dilation == [1, 1]
        && g.groups == 1
        && g.channels_in >= MIN_CHANNELS
        && g.channels_out >= MIN_CHANNELS
        && g.out_h > 0
        && g.out_w.div_ceil(2) >= MIN_TILE_COLUMNS
}

/// The side of the output tiles a convolution is cut into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TileSide {
    /// F(2 × 2, 3 × 3): 4 × 4 patches, 16 points.
    Two,
    /// F(4 × 4, 3 × 3): 6 × 6 patches, 36 points.
    Four,
}

impl TileSide {
    /// 4 × 4 tiles where the output holds [`MIN_LARGE_TILE_COLUMNS`] of them across, 2 × 2 ones
    /// otherwise.
    fn of(g: &Geometry) -> Self {
        if g.out_w.div_ceil(4) >= MIN_LARGE_TILE_COLUMNS {
            TileSide::Four
        } else {
            TileSide::Two
        }
    }
}

/// The 1D transforms of F(M × M, 3 × 3), on one row or column of a tile: `M` outputs from a
/// patch line of `P = M + 2` inputs.
trait Transforms<const M: usize, const P: usize> {
    /// `Bᵀ d`: an input patch's line.
    fn input<T: Float>(d: [T; P]) -> [T; P];
    /// `B v`: the transpose of [`input`](Self::input).
    fn input_transposed<T: Float>(v: [T; P]) -> [T; P];
    /// `G w`: a 3-tap kernel's line.
    fn weight<T: Float>(w: [T; 3]) -> [T; P];
    /// `Gᵀ u`: the transpose of [`weight`](Self::weight).
    fn weight_transposed<T: Float>(u: [T; P]) -> [T; 3];
    /// `Aᵀ m`: back to `M` outputs.
    fn output<T: Float>(m: [T; P]) -> [T; M];
    /// `A y`: the transpose of [`output`](Self::output).
    fn output_transposed<T: Float>(y: [T; M]) -> [T; P];
}

/// The tile of F(M × M, 3 × 3), whose [`Transforms`] are implemented for `M` = 2 and 4.
struct Tile<const M: usize, const P: usize>;

/// `value`, a small integer or a fraction of one, which every float type holds.
#[inline(always)]
fn constant<T: Float>(value: f64) -> T {
    T::from(value).expect("a small constant fits every float type")
}

impl Transforms<2, 4> for Tile<2, 4> {
    #[inline(always)]
    fn input<T: Float>(d: [T; 4]) -> [T; 4] {
        [d[0] - d[2], d[1] + d[2], d[2] - d[1], d[1] - d[3]]
    }

    #[inline(always)]
    fn input_transposed<T: Float>(v: [T; 4]) -> [T; 4] {
        [v[0], v[1] - v[2] + v[3], v[1] + v[2] - v[0], -v[3]]
    }

    #[inline(always)]
    fn weight<T: Float>(w: [T; 3]) -> [T; 4] {
        let h = constant::<T>(0.5);
        [w[0], (w[0] + w[1] + w[2]) * h, (w[0] - w[1] + w[2]) * h, w[2]]
    }

    #[inline(always)]
    fn weight_transposed<T: Float>(u: [T; 4]) -> [T; 3] {
        let h = constant::<T>(0.5);
        [u[0] + (u[1] + u[2]) * h, (u[1] - u[2]) * h, (u[1] + u[2]) * h + u[3]]
    }

    #[inline(always)]
    fn output<T: Float>(m: [T; 4]) -> [T; 2] {
        [m[0] + m[1] + m[2], m[1] - m[2] - m[3]]
    }

    #[inline(always)]
    fn output_transposed<T: Float>(y: [T; 2]) -> [T; 4] {
        [y[0], y[0] + y[1], y[0] - y[1], -y[1]]
    }
}

/// Lavin and Gray's matrices for F(4 × 4, 3 × 3):
///
/// ```text
/// Bᵀ = [4  0 -5  0  1  0]    G = [ 1/4     0     0]    Aᵀ = [1  1  1  1  1  0]
///      [0 -4 -4  1  1  0]        [-1/6  -1/6  -1/6]         [0  1 -1  2 -2  0]
///      [0  4 -4 -1  1  0]        [-1/6   1/6  -1/6]         [0  1  1  4  4  0]
///      [0 -2 -1  2  1  0]        [1/24  1/12   1/6]         [0  1 -1  8 -8  1]
///      [0  2 -1 -2  1  0]        [1/24 -1/12   1/6]
///      [0  4  0 -5  0  1]        [   0     0     1]
/// ```
impl Transforms<4, 6> for Tile<4, 6> {
    #[inline(always)]
    fn input<T: Float>(d: [T; 6]) -> [T; 6] {
        let (four, five) = (constant::<T>(4.0), constant::<T>(5.0));
        let (a, b) = (d[4] - four * d[2], d[3] - four * d[1]);
        let (c, e) = (d[4] - d[2], (d[3] - d[1]) * constant::<T>(2.0));
        [
            four * d[0] - five * d[2] + d[4],
            a + b,
            a - b,
            c + e,
            c - e,
            four * d[1] - five * d[3] + d[5],
        ]
    }

    #[inline(always)]
    fn input_transposed<T: Float>(v: [T; 6]) -> [T; 6] {
        let (two, four, five) = (constant::<T>(2.0), constant::<T>(4.0), constant::<T>(5.0));
        let (sum, difference) = (v[1] + v[2], v[2] - v[1]);
        let (odd_sum, odd_difference) = (v[3] + v[4], v[3] - v[4]);
        [
            four * v[0],
            four * difference - two * odd_difference + four * v[5],
            -five * v[0] - four * sum - odd_sum,
            -difference + two * odd_difference - five * v[5],
            v[0] + sum + odd_sum,
            v[5],
        ]
    }

    #[inline(always)]
    fn weight<T: Float>(w: [T; 3]) -> [T; 6] {
        let (outer, middle) = (w[0] + w[2], w[1]);
        let sixth = constant::<T>(1.0 / 6.0);
        let outer_part = w[0] * constant::<T>(1.0 / 24.0) + w[2] * sixth;
        let twelfth_middle = middle * constant::<T>(1.0 / 12.0);
        [
            w[0] * constant::<T>(0.25),
            -(outer + middle) * sixth,
            -(outer - middle) * sixth,
            outer_part + twelfth_middle,
            outer_part - twelfth_middle,
            w[2],
        ]
    }

    #[inline(always)]
    fn weight_transposed<T: Float>(u: [T; 6]) -> [T; 3] {
        let sixth = constant::<T>(1.0 / 6.0);
        let (sum, difference) = (u[1] + u[2], u[2] - u[1]);
        let (odd_sum, odd_difference) = (u[3] + u[4], u[3] - u[4]);
        [
            u[0] * constant::<T>(0.25) - sum * sixth + odd_sum * constant::<T>(1.0 / 24.0),
            difference * sixth + odd_difference * constant::<T>(1.0 / 12.0),
            (odd_sum - sum) * sixth + u[5],
        ]
    }

    #[inline(always)]
    fn output<T: Float>(m: [T; 6]) -> [T; 4] {
        let (two, four, eight) = (constant::<T>(2.0), constant::<T>(4.0), constant::<T>(8.0));
        let (sum, difference) = (m[1] + m[2], m[1] - m[2]);
        let (odd_sum, odd_difference) = (m[3] + m[4], m[3] - m[4]);
        [
            m[0] + sum + odd_sum,
            difference + two * odd_difference,
            sum + four * odd_sum,
            difference + eight * odd_difference + m[5],
        ]
    }

    #[inline(always)]
    fn output_transposed<T: Float>(y: [T; 4]) -> [T; 6] {
        let (two, four, eight) = (constant::<T>(2.0), constant::<T>(4.0), constant::<T>(8.0));
        let (even, odd) = (y[0] + y[2], y[1] + y[3]);
        let (even_wide, odd_wide) = (y[0] + four * y[2], two * y[1] + eight * y[3]);
        [
            y[0],
            even + odd,
            even - odd,
            even_wide + odd_wide,
            even_wide - odd_wide,
            y[3],
        ]
    }
}

/// `L x Lᵀ` for the square `x` and a 1D transform `L` (`line`): `L` down each column, then
/// along each row.
fn square<T: Copy, const I: usize, const O: usize>(x: [[T; I]; I], line: fn([T; I]) -> [T; O]) -> [[T; O]; O] {
    let columns: [[T; O]; I] = core::array::from_fn(|column| line(core::array::from_fn(|row| x[row][column])));
    core::array::from_fn(|row| line(core::array::from_fn(|column| columns[column][row])))
}

/// The tiles of one convolution: `M × M` blocks of output (patches of `P × P`), `rows ×
/// columns` per sample. A tile row is the `columns` tiles of one row of one sample (tile rows
/// are numbered sample by sample), and a batch, transformed and multiplied at once, is a run of
/// whole tile rows.
#[derive(Clone, Copy, Debug)]
struct Tiling<const M: usize, const P: usize> {
    rows: usize,
    columns: usize,
    /// Tile rows transformed and multiplied at once, at least one.
    rows_per_batch: usize,
}

/// Where one tile row lies: its sample, its first output row, and the first input row of its
/// patches (negative in the padding; their first input column is `-padding[1]`).
#[derive(Clone, Copy)]
struct TileRow {
    sample: usize,
    out_y: usize,
    in_y: isize,
}

impl<const M: usize, const P: usize> Tiling<M, P> {
    /// Points of a transformed tile: `P × P`.
    const POINTS: usize = P * P;

    /// The tiles of `g`, in batches whose transformed values (input and output together)
    /// number at most `transformed_elements`, or one tile row where a row holds more.
    fn new(g: &Geometry, transformed_elements: usize) -> Self {
        let columns = g.out_w.div_ceil(M);
        let per_row = Self::POINTS * (g.channels_in + g.channels_out) * columns;
        let rows_per_batch = (transformed_elements / per_row).max(1);
        Self {
            rows: g.out_h.div_ceil(M),
            columns,
            rows_per_batch,
        }
    }

    fn tiles_per_batch(self) -> usize {
        self.rows_per_batch * self.columns
    }

    #[inline(always)]
    fn tile_row(self, g: &Geometry, index: usize) -> TileRow {
        let (sample, out_y) = (index / self.rows, index % self.rows * M);
        TileRow {
            sample,
            out_y,
            in_y: out_y as isize - g.padding[0] as isize,
        }
    }

    /// Where each tile row of `batch` lies, in order.
    fn tile_rows(self, g: &Geometry, batch: Range<usize>) -> Vec<TileRow> {
        batch.map(|index| self.tile_row(g, index)).collect()
    }

    /// The batches of the tile rows of `samples`, in order.
    fn batches(self, samples: Range<usize>) -> impl Iterator<Item = Range<usize>> {
        let (first, end) = (samples.start * self.rows, samples.end * self.rows);
        let step = self.rows_per_batch;
        (first..end)
            .step_by(step)
            .map(move |start| start..(start + step).min(end))
    }
}

/// Values a 1D pass takes at once: a block of 8 f32 fills one AVX2 register, and what is left
/// of a line goes by half blocks, then one by one. Written as fixed-size arrays, a block
/// compiles to vector instructions even on a line of one block, where the loop vectorizer alone
/// leaves lines shorter than several registers to scalar code.
const BLOCK: usize = 8;

/// The `N` values of `line` from `start`.
#[inline(always)]
fn block_at<T: Copy, const N: usize>(line: &[T], start: usize) -> [T; N] {
    line[start..start + N].try_into().expect("a whole block")
}

/// Runs `blocks::<N>(start)` for every whole block of `N` from 0 below `length`, for `N`
/// a [`BLOCK`] and then half of one, and `single(k)` for the rest.
macro_rules! by_blocks {
    ($length:expr, |$start:ident, $n:ident| $blocks:expr, |$k:ident| $single:expr) => {{
        let length: usize = $length;
        let mut $start = 0;
        while $start + BLOCK <= length {
            const $n: usize = BLOCK;
            $blocks;
            $start += BLOCK;
        }
        while $start + BLOCK / 2 <= length {
            const $n: usize = BLOCK / 2;
            $blocks;
            $start += BLOCK / 2;
        }
        for $k in $start..length {
            $single;
        }
    }};
}

/// `outputs[o][k] = line(inputs[0][k], inputs[1][k], …)[o]` for every `k` below the outputs'
/// length: one 1D transform applied across a line of tiles, by blocks.
#[inline(always)]
fn across<T: Copy, const I: usize, const O: usize>(
    outputs: [&mut [T]; O],
    inputs: [&[T]; I],
    line: fn([T; I]) -> [T; O],
) {
    let length = outputs.iter().map(|output| output.len()).min().unwrap_or(0);
    let inputs = inputs.map(|input| &input[..length]);
    let mut outputs = outputs.map(|output| &mut output[..length]);
    by_blocks!(
        length,
        |start, N| across_block::<T, I, O, N>(&mut outputs, inputs, line, start),
        |k| {
            let values = line(core::array::from_fn(|i| inputs[i][k]));
            for (output, value) in outputs.iter_mut().zip(values) {
                output[k] = value;
            }
        }
    );
}

/// [`across`] for the `N` values from `start`.
#[inline(always)]
fn across_block<T: Copy, const I: usize, const O: usize, const N: usize>(
    outputs: &mut [&mut [T]; O],
    inputs: [&[T]; I],
    line: fn([T; I]) -> [T; O],
    start: usize,
) {
    let block: [[T; N]; I] = core::array::from_fn(|i| block_at(inputs[i], start));
    let lanes: [[T; O]; N] = core::array::from_fn(|lane| line(core::array::from_fn(|i| block[i][lane])));
    for (o, output) in outputs.iter_mut().enumerate() {
        let values: [T; N] = core::array::from_fn(|lane| lanes[lane][o]);
        output[start..start + N].copy_from_slice(&values);
    }
}

/// `phases[j][k] = groups[M k + j]` for every `j` below `K` (≤ `M`) and every `k` below the
/// phases' length, by blocks: the first `K` of a row's `M` phases.
#[inline(always)]
fn deinterleave<T: Copy, const M: usize, const K: usize>(groups: &[T], phases: [&mut [T]; K]) {
    debug_assert!(K <= M, "at most one phase per place of a group");
    let count = phases.iter().map(|phase| phase.len()).min().unwrap_or(0);
    let groups = &groups[..M * count];
    let mut phases = phases.map(|phase| &mut phase[..count]);
    by_blocks!(
        count,
        |start, N| {
            let block: [[T; M]; N] = core::array::from_fn(|k| block_at(groups, M * (start + k)));
            for (j, phase) in phases.iter_mut().enumerate() {
                let values: [T; N] = core::array::from_fn(|k| block[k][j]);
                phase[start..start + N].copy_from_slice(&values);
            }
        },
        |k| {
            for (j, phase) in phases.iter_mut().enumerate() {
                phase[k] = groups[M * k + j];
            }
        }
    );
}

/// `row[M k + j] = put(row[M k + j], phases[j][k])` for every `j` below `K` (≤ `M`) and every
/// `k` below the phases' length, by blocks; the other values of `row` are left as they are.
#[inline(always)]
fn interleave<T: Copy, const M: usize, const K: usize>(row: &mut [T], phases: [&[T]; K], put: impl Fn(T, T) -> T) {
    debug_assert!(K <= M, "at most one phase per place of a group");
    let count = phases.iter().map(|phase| phase.len()).min().unwrap_or(0);
    let row = &mut row[..M * count];
    by_blocks!(
        count,
        |start, N| {
            let block = &mut row[M * start..M * (start + N)];
            let old: [[T; M]; N] = core::array::from_fn(|k| block_at(block, M * k));
            let values: [[T; N]; K] = core::array::from_fn(|j| block_at(phases[j], start));
            let new: [[T; M]; N] = core::array::from_fn(|k| {
                core::array::from_fn(|j| if j < K { put(old[k][j], values[j][k]) } else { old[k][j] })
            });
            block.copy_from_slice(new.as_flattened());
        },
        |k| {
            for (j, phase) in phases.iter().enumerate() {
                row[M * k + j] = put(row[M * k + j], phase[k]);
            }
        }
    );
}

/// Writes `row` into `padded` from `left` on, or zeros where the row is absent (in the
/// padding). The rest of `padded`, zero since its creation, is written by no caller, so that
/// it reads as the padding of every row placed.
#[inline(always)]
fn place_row<T: ConvElement>(padded: &mut [T], row: Option<&[T]>, left: usize, width: usize) {
    let inside = &mut padded[left..left + width];
    match row {
        Some(row) => inside.copy_from_slice(row),
        None => inside.fill(T::zero()),
    }
}

/// `U = G w Gᵀ` of every weight, laid out `[point, channel_in, channel_out]`.
fn transformed_weight<T: ConvElement, const M: usize, const P: usize>(weight: &[T], g: &Geometry) -> Vec<T>
where
    Tile<M, P>: Transforms<M, P>,
{
    let (cin, cout) = (g.channels_in, g.channels_out);
    let mut transformed = vec![T::zero(); P * P * cin * cout];
    for out_channel in 0..cout {
        for in_channel in 0..cin {
            let w = &weight[(out_channel * cin + in_channel) * 9..][..9];
            let kernel: [[T; 3]; 3] = core::array::from_fn(|row| core::array::from_fn(|column| w[row * 3 + column]));
            let u = square(kernel, Tile::<M, P>::weight);
            for (point, &value) in u.iter().flatten().enumerate() {
                transformed[(point * cin + in_channel) * cout + out_channel] = value;
            }
        }
    }
    transformed
}

/// `dw = Gᵀ dU G` of every weight, from `dU` laid out `[point, channel_in, channel_out]`, as
/// the weight's `[channel_out, channel_in, 3, 3]`.
fn weight_from_transformed<T: ConvElement, const M: usize, const P: usize>(transformed: &[T], g: &Geometry) -> Vec<T>
where
    Tile<M, P>: Transforms<M, P>,
{
    let (cin, cout) = (g.channels_in, g.channels_out);
    let mut weight = vec![T::zero(); cout * cin * 9];
    for out_channel in 0..cout {
        for in_channel in 0..cin {
            let u: [[T; P]; P] = core::array::from_fn(|row| {
                core::array::from_fn(|column| transformed[((row * P + column) * cin + in_channel) * cout + out_channel])
            });
            let w = square(u, Tile::<M, P>::weight_transposed);
            weight[(out_channel * cin + in_channel) * 9..][..9].copy_from_slice(w.as_flattened());
        }
    }
    weight
}

/// Scratch of the 1D passes over one batch of `tiles` tiles of `M × M` (patches of `P × P`),
/// `columns` to a tile row. The passes along the rows run over the whole batch at once, from
/// lines of `tiles` values that each tile row fills with its part.
struct PassScratch<T> {
    /// `M` lines of `tiles` values: the `M` phases of one row of every tile row, `heads[j][t]` =
    /// column `j` of tile `t`'s patch (or its output).
    heads: Vec<T>,
    /// 2 lines of `tiles` values: columns `M` and `M + 1` of every tile's patch, the first two
    /// of the next tile's.
    tails: Vec<T>,
    /// `P²` lines of `tiles` values, `[row of the patch, column of the points, tile]`: the
    /// pass along the rows, for every tile of the batch, so that the pass down the columns
    /// runs over the whole batch at once.
    lines: Vec<T>,
    /// `P` lines of `tiles` values: one row of every tile's patch of the input gradient.
    patches: Vec<T>,
    /// One output row, or one input row with its padding: `M × (columns + 1)` values.
    row: Vec<T>,
}

impl<T: ConvElement> PassScratch<T> {
    fn new<const M: usize, const P: usize>(tiling: Tiling<M, P>, tiles: usize) -> Self {
        Self {
            heads: vec![T::zero(); M * tiles],
            tails: vec![T::zero(); 2 * tiles],
            lines: vec![T::zero(); P * P * tiles],
            patches: vec![T::zero(); P * tiles],
            row: vec![T::zero(); M * (tiling.columns + 1)],
        }
    }
}

/// `N` lines of `length` values of `buffer`, `stride` apart from `first` (`length ≤ stride`).
#[inline(always)]
fn strided_lines_mut<T, const N: usize>(buffer: &mut [T], first: usize, stride: usize, length: usize) -> [&mut [T]; N] {
    let mut lines = buffer[first..].chunks_mut(stride).map(|line| &mut line[..length]);
    core::array::from_fn(|_| lines.next().expect("N lines"))
}

/// [`strided_lines_mut`], for reading.
#[inline(always)]
fn strided_lines<T, const N: usize>(buffer: &[T], first: usize, stride: usize, length: usize) -> [&[T]; N] {
    core::array::from_fn(|line| &buffer[first + line * stride..][..length])
}

/// `V = Bᵀ d B` of every tile of the tile rows `batch` and every input channel, into
/// `transformed` (`[point, channel_in, tile]`); the input reads as zero in the padding.
// `S` only selects the instruction set the body is compiled for (`with_simd` dispatches on it),
// as in Flex's other kernels.
#[allow(clippy::extra_unused_type_parameters)]
#[cfg_attr(feature = "simd", macerator::with_simd)]
fn transform_input<#[cfg(feature = "simd")] S: macerator::Simd, T: ConvElement, const M: usize, const P: usize>(
    transformed: &mut [T],
    input: &[T],
    g: &Geometry,
    tiling: Tiling<M, P>,
    batch: Range<usize>,
) where
    Tile<M, P>: Transforms<M, P>,
{
    let (columns, tiles) = (tiling.columns, batch.len() * tiling.columns);
    let PassScratch {
        heads,
        tails,
        lines,
        row: padded,
        ..
    } = &mut PassScratch::new(tiling, tiles);
    let places = tiling.tile_rows(g, batch);
    let left = g.padding[1];
    for channel in 0..g.channels_in {
        for row in 0..P {
            // Row `row` of each tile row's patches, split into the patches' columns…
            for (offset, place) in places.iter().enumerate() {
                let plane = &input[(place.sample * g.channels_in + channel) * g.in_plane()..][..g.in_plane()];
                let y = place.in_y + row as isize;
                let source = (y >= 0 && (y as usize) < g.in_h).then(|| &plane[y as usize * g.in_w..][..g.in_w]);
                place_row(padded, source, left, g.in_w);
                let at = offset * columns;
                deinterleave::<T, M, M>(padded, strided_lines_mut(heads, at, tiles, columns));
                deinterleave::<T, M, 2>(&padded[M..], strided_lines_mut(tails, at, tiles, columns));
            }
            // …then transformed along that row of every patch of the batch at once…
            let inputs: [&[T]; P] = core::array::from_fn(|i| {
                if i < M {
                    &heads[i * tiles..][..tiles]
                } else {
                    &tails[(i - M) * tiles..][..tiles]
                }
            });
            across(
                strided_lines_mut(lines, row * P * tiles, tiles, tiles),
                inputs,
                Tile::<M, P>::input,
            );
        }
        // …and down their columns.
        for point_column in 0..P {
            let vertical: [&[T]; P] = strided_lines(lines, point_column * tiles, P * tiles, tiles);
            let first = (point_column * g.channels_in + channel) * tiles;
            across(
                strided_lines_mut(transformed, first, P * g.channels_in * tiles, tiles),
                vertical,
                Tile::<M, P>::input,
            );
        }
    }
}

/// `dM = A dy Aᵀ` of every tile of the tile rows `batch` and every output channel, into
/// `transformed` (`[point, channel_out, tile]`); outputs past the edge read as zero.
// `S` only selects the instruction set the body is compiled for (`with_simd` dispatches on it),
// as in Flex's other kernels.
#[allow(clippy::extra_unused_type_parameters)]
#[cfg_attr(feature = "simd", macerator::with_simd)]
fn transform_output_gradient<
    #[cfg(feature = "simd")] S: macerator::Simd,
    T: ConvElement,
    const M: usize,
    const P: usize,
>(
    transformed: &mut [T],
    output_grad: &[T],
    g: &Geometry,
    tiling: Tiling<M, P>,
    batch: Range<usize>,
) where
    Tile<M, P>: Transforms<M, P>,
{
    let (columns, tiles) = (tiling.columns, batch.len() * tiling.columns);
    let PassScratch {
        heads,
        lines,
        row: padded,
        ..
    } = &mut PassScratch::new(tiling, tiles);
    let places = tiling.tile_rows(g, batch);
    for channel in 0..g.channels_out {
        for row in 0..M {
            for (offset, place) in places.iter().enumerate() {
                let plane = &output_grad[(place.sample * g.channels_out + channel) * g.out_plane()..][..g.out_plane()];
                let y = place.out_y + row;
                let source = (y < g.out_h).then(|| &plane[y * g.out_w..][..g.out_w]);
                place_row(padded, source, 0, g.out_w);
                deinterleave::<T, M, M>(padded, strided_lines_mut(heads, offset * columns, tiles, columns));
            }
            let inputs: [&[T]; M] = strided_lines(heads, 0, tiles, tiles);
            let outputs = strided_lines_mut(lines, row * P * tiles, tiles, tiles);
            across(outputs, inputs, Tile::<M, P>::output_transposed);
        }
        for point_column in 0..P {
            let vertical: [&[T]; M] = strided_lines(lines, point_column * tiles, P * tiles, tiles);
            let first = (point_column * g.channels_out + channel) * tiles;
            let outputs = strided_lines_mut(transformed, first, P * g.channels_out * tiles, tiles);
            across(outputs, vertical, Tile::<M, P>::output_transposed);
        }
    }
}

/// `y = Aᵀ M A` of every tile of the tile rows `batch` and every output channel, plus the
/// bias, into `output` (`[batch, channels_out, out_h, out_w]`), each output written once.
// `S` only selects the instruction set the body is compiled for (`with_simd` dispatches on it),
// as in Flex's other kernels. `with_simd` needs the bias's lifetime named.
#[allow(clippy::extra_unused_type_parameters, clippy::needless_lifetimes)]
#[cfg_attr(feature = "simd", macerator::with_simd)]
fn transform_output<'a, #[cfg(feature = "simd")] S: macerator::Simd, T: ConvElement, const M: usize, const P: usize>(
    output: SharedBuffer<T>,
    transformed: &[T],
    bias: Option<&'a [T]>,
    g: &Geometry,
    tiling: Tiling<M, P>,
    batch: Range<usize>,
) where
    Tile<M, P>: Transforms<M, P>,
{
    let (columns, tiles) = (tiling.columns, batch.len() * tiling.columns);
    let PassScratch {
        heads,
        lines,
        row: interleaved,
        ..
    } = &mut PassScratch::new(tiling, tiles);
    let places = tiling.tile_rows(g, batch);
    for channel in 0..g.channels_out {
        let bias = bias.map_or(T::zero(), |bias| bias[channel]);
        // Down the points' columns into `M` rows, for the whole batch at once…
        for point_column in 0..P {
            let first = (point_column * g.channels_out + channel) * tiles;
            let vertical: [&[T]; P] = strided_lines(transformed, first, P * g.channels_out * tiles, tiles);
            let outputs: [&mut [T]; M] = strided_lines_mut(lines, point_column * tiles, P * tiles, tiles);
            across(outputs, vertical, Tile::<M, P>::output);
        }
        for row in 0..M {
            // …then along each row of every tile…
            let inputs: [&[T]; P] = strided_lines(lines, row * P * tiles, tiles, tiles);
            across(strided_lines_mut(heads, 0, tiles, tiles), inputs, Tile::<M, P>::output);
            // …into the output, tile row by tile row.
            for (offset, place) in places.iter().enumerate() {
                if place.out_y + row >= g.out_h {
                    continue;
                }
                let phases: [&[T]; M] = strided_lines(heads, offset * columns, tiles, columns);
                interleave::<T, M, M>(interleaved, phases, |_, value| value + bias);
                let at = (place.sample * g.channels_out + channel) * g.out_plane() + (place.out_y + row) * g.out_w;
                // SAFETY: one output row of this sample and channel, `out_w` elements inside
                // the buffer; each output row belongs to one tile row, and each tile row to one
                // batch. `interleave` has just written the first `M × columns ≥ out_w` values
                // of `interleaved`.
                unsafe { core::ptr::copy_nonoverlapping(interleaved.as_ptr(), output.start().add(at), g.out_w) };
            }
        }
    }
}

/// Adds `B dV Bᵀ` of every tile of the tile rows `batch` and every input channel into the
/// input gradient of the samples from `first_sample` on, leaving out what falls in the padding.
// `S` only selects the instruction set the body is compiled for (`with_simd` dispatches on it),
// as in Flex's other kernels.
#[allow(clippy::extra_unused_type_parameters)]
#[cfg_attr(feature = "simd", macerator::with_simd)]
fn add_input_patches<#[cfg(feature = "simd")] S: macerator::Simd, T: ConvElement, const M: usize, const P: usize>(
    gradient: &mut [T],
    first_sample: usize,
    transformed: &[T],
    g: &Geometry,
    tiling: Tiling<M, P>,
    batch: Range<usize>,
) where
    Tile<M, P>: Transforms<M, P>,
{
    let (columns, tiles) = (tiling.columns, batch.len() * tiling.columns);
    let PassScratch {
        lines,
        patches,
        row: padded,
        ..
    } = &mut PassScratch::new(tiling, tiles);
    let places = tiling.tile_rows(g, batch);
    let left = g.padding[1];
    for channel in 0..g.channels_in {
        for point_column in 0..P {
            let first = (point_column * g.channels_in + channel) * tiles;
            let vertical: [&[T]; P] = strided_lines(transformed, first, P * g.channels_in * tiles, tiles);
            across(
                strided_lines_mut(lines, point_column * tiles, P * tiles, tiles),
                vertical,
                Tile::<M, P>::input_transposed,
            );
        }
        for row in 0..P {
            // Along that row of every patch of the batch at once…
            let inputs: [&[T]; P] = strided_lines(lines, row * P * tiles, tiles, tiles);
            across(
                strided_lines_mut(patches, 0, tiles, tiles),
                inputs,
                Tile::<M, P>::input_transposed,
            );
            // …then summed into the gradient, tile row by tile row: `P` values per tile,
            // overlapping the next tile's by two.
            for (offset, place) in places.iter().enumerate() {
                let y = place.in_y + row as isize;
                if y < 0 || y as usize >= g.in_h {
                    continue;
                }
                let patch: [&[T]; P] = strided_lines(patches, offset * columns, tiles, columns);
                padded[M * columns..].fill(T::zero());
                interleave::<T, M, M>(padded, core::array::from_fn(|j| patch[j]), |_, value| value);
                interleave::<T, M, 2>(&mut padded[M..], [patch[M], patch[M + 1]], |sum, value| sum + value);
                let plane_start = ((place.sample - first_sample) * g.channels_in + channel) * g.in_plane();
                add_padded_row(
                    &mut gradient[plane_start + y as usize * g.in_w..][..g.in_w],
                    padded,
                    left,
                );
            }
        }
    }
}

/// `row[x] += padded[x + left]` wherever `padded` covers `x + left` (`left`: the padding).
#[inline(always)]
fn add_padded_row<T: ConvElement>(row: &mut [T], padded: &[T], left: usize) {
    for (sum, &value) in row.iter_mut().zip(&padded[left..]) {
        *sum = *sum + value;
    }
}

/// The products of one batch: for each of `points` points, `destination[p] (rows × tiles) =
/// left[p] (rows × depth) · right[p] (depth × tiles)`, where `right[p]` is laid out
/// `[depth, tiles]` and `left[p]` is given by its strides inside a `[point, ...]` buffer.
///
/// # Safety
///
/// `left` must address `points` blocks of `left_point_len` elements, each a `rows × depth`
/// matrix with the strides of `left`, inside one live allocation.
#[allow(clippy::too_many_arguments)]
unsafe fn multiply_points<T: ConvElement>(
    destination: &mut [T],
    [rows, depth, tiles]: [usize; 3],
    points: usize,
    left: Operand<T>,
    left_point_len: usize,
    right: &[T],
) {
    assert!(destination.len() >= points * rows * tiles && right.len() >= points * depth * tiles);
    for point in 0..points {
        // SAFETY: point `point`'s blocks of `destination` and `right` are in bounds (asserted
        // above) and the caller guarantees `left`'s; `destination` is borrowed mutably here.
        unsafe {
            multiply(
                [rows, tiles, depth],
                (destination.as_mut_ptr().add(point * rows * tiles), tiles as isize),
                false,
                Operand {
                    pointer: left.pointer.add(point * left_point_len),
                    ..left
                },
                Operand {
                    pointer: right.as_ptr().add(point * depth * tiles),
                    column_stride: 1,
                    row_stride: tiles as isize,
                },
            );
        }
    }
}

/// The forward pass into `output` (`[batch, channels_out, out_h, out_w]`, every element
/// written once), with the bias added.
pub(super) fn forward<T: ConvElement>(
    output: SharedBuffer<T>,
    x: &[T],
    weight: &[T],
    bias: Option<&[T]>,
    g: &Geometry,
) {
    match TileSide::of(g) {
        TileSide::Two => forward_tiled(output, x, weight, bias, g, Tiling::<2, 4>::new(g, TRANSFORMED_ELEMENTS)),
        TileSide::Four => forward_tiled(output, x, weight, bias, g, Tiling::<4, 6>::new(g, TRANSFORMED_ELEMENTS)),
    }
}

fn forward_tiled<T: ConvElement, const M: usize, const P: usize>(
    output: SharedBuffer<T>,
    x: &[T],
    weight: &[T],
    bias: Option<&[T]>,
    g: &Geometry,
    tiling: Tiling<M, P>,
) where
    Tile<M, P>: Transforms<M, P>,
{
    let points = Tiling::<M, P>::POINTS;
    let transformed_weight = transformed_weight::<T, M, P>(weight, g);
    let batches: Vec<Range<usize>> = tiling.batches(0..g.batch).collect();
    let (cin, cout) = (g.channels_in, g.channels_out);
    let scratch_len = points * (cin + cout) * tiling.tiles_per_batch();
    super::for_each_index_with_columns(batches.len(), scratch_len, |scratch: &mut [T], index| {
        let batch = batches[index].clone();
        let tiles = batch.len() * tiling.columns;
        let (input_points, output_points) = scratch.split_at_mut(points * cin * tiles);
        transform_input(input_points, x, g, tiling, batch.clone());
        // SAFETY: `transformed_weight` holds `points` blocks of `cin × cout`, read as their
        // transposes `cout × cin` (row stride 1, column stride `cout`).
        unsafe {
            multiply_points(
                output_points,
                [cout, cin, tiles],
                points,
                Operand {
                    pointer: transformed_weight.as_ptr(),
                    column_stride: cout as isize,
                    row_stride: 1,
                },
                cin * cout,
                input_points,
            );
        }
        transform_output(output, output_points, bias, g, tiling, batch);
    });
}

/// The gradient of the input into `input_grad` (`x`'s shape, not yet initialised: every
/// sample's planes are zeroed by the thread that sums into them).
pub(super) fn input_gradient<T: ConvElement>(
    input_grad: SharedBuffer<T>,
    weight: &[T],
    output_grad: &[T],
    g: &Geometry,
) {
    match TileSide::of(g) {
        TileSide::Two => input_gradient_tiled(
            input_grad,
            weight,
            output_grad,
            g,
            Tiling::<2, 4>::new(g, TRANSFORMED_ELEMENTS),
        ),
        TileSide::Four => input_gradient_tiled(
            input_grad,
            weight,
            output_grad,
            g,
            Tiling::<4, 6>::new(g, TRANSFORMED_ELEMENTS),
        ),
    }
}

fn input_gradient_tiled<T: ConvElement, const M: usize, const P: usize>(
    input_grad: SharedBuffer<T>,
    weight: &[T],
    output_grad: &[T],
    g: &Geometry,
    tiling: Tiling<M, P>,
) where
    Tile<M, P>: Transforms<M, P>,
{
    let points = Tiling::<M, P>::POINTS;
    let transformed_weight = transformed_weight::<T, M, P>(weight, g);
    let (cin, cout) = (g.channels_in, g.channels_out);
    let sample_len = cin * g.in_plane();
    // The input patches of neighbouring tiles overlap, so one job owns whole samples.
    let samples_per_job = (tiling.rows_per_batch / tiling.rows).max(1);
    let scratch_len = points * (cin + cout) * tiling.tiles_per_batch();
    super::for_each_index_with_columns(
        g.batch.div_ceil(samples_per_job),
        scratch_len,
        |scratch: &mut [T], job| {
            let samples = job * samples_per_job..((job + 1) * samples_per_job).min(g.batch);
            // SAFETY: this job alone writes, then reads, the planes of its samples, inside the
            // buffer; it zeroes them first (all-zero bits are zero for the float types here).
            let gradient = unsafe {
                let start = input_grad.start().add(samples.start * sample_len);
                core::ptr::write_bytes(start, 0, samples.len() * sample_len);
                core::slice::from_raw_parts_mut(start, samples.len() * sample_len)
            };
            for batch in tiling.batches(samples.clone()) {
                let tiles = batch.len() * tiling.columns;
                let (output_points, input_points) = scratch.split_at_mut(points * cout * tiles);
                transform_output_gradient(output_points, output_grad, g, tiling, batch.clone());
                // SAFETY: `transformed_weight` holds `points` blocks of `cin × cout`, row-major.
                unsafe {
                    multiply_points(
                        input_points,
                        [cin, cout, tiles],
                        points,
                        Operand {
                            pointer: transformed_weight.as_ptr(),
                            column_stride: 1,
                            row_stride: cout as isize,
                        },
                        cin * cout,
                        output_points,
                    );
                }
                add_input_patches(gradient, samples.start, input_points, g, tiling, batch);
            }
        },
    );
}

/// The gradient of the weight, `[channels_out, channels_in, 3, 3]`.
pub(super) fn weight_gradient<T: ConvElement>(x: &[T], output_grad: &[T], g: &Geometry) -> Vec<T> {
    match TileSide::of(g) {
        TileSide::Two => weight_gradient_tiled(x, output_grad, g, Tiling::<2, 4>::new(g, TRANSFORMED_ELEMENTS)),
        TileSide::Four => weight_gradient_tiled(x, output_grad, g, Tiling::<4, 6>::new(g, TRANSFORMED_ELEMENTS)),
    }
}

fn weight_gradient_tiled<T: ConvElement, const M: usize, const P: usize>(
    x: &[T],
    output_grad: &[T],
    g: &Geometry,
    tiling: Tiling<M, P>,
) -> Vec<T>
where
    Tile<M, P>: Transforms<M, P>,
{
    let points = Tiling::<M, P>::POINTS;
    let (cin, cout) = (g.channels_in, g.channels_out);
    let transformed_len = points * cin * cout;
    let parts = partial_sums(g.batch);
    let samples_per_part = g.batch.div_ceil(parts);
    let mut partials = vec![T::zero(); parts * transformed_len];
    let partials_pointer = SharedBuffer(partials.as_mut_ptr());
    for_each_index(parts, |part| {
        let samples = part * samples_per_part..((part + 1) * samples_per_part).min(g.batch);
        let mut scratch = vec![T::zero(); points * (cin + cout) * tiling.tiles_per_batch()];
        // SAFETY: part `part` alone writes its partial sum, inside `partials`.
        let partial = unsafe {
            core::slice::from_raw_parts_mut(partials_pointer.start().add(part * transformed_len), transformed_len)
        };
        for batch in tiling.batches(samples) {
            let tiles = batch.len() * tiling.columns;
            let (input_points, output_points) = scratch.split_at_mut(points * cin * tiles);
            transform_input(input_points, x, g, tiling, batch.clone());
            transform_output_gradient(output_points, output_grad, g, tiling, batch);
            for point in 0..points {
                // SAFETY: point `point`'s blocks of the three buffers, in bounds; `partial` is
                // this part's alone.
                unsafe {
                    multiply(
                        [cin, cout, tiles],
                        (partial.as_mut_ptr().add(point * cin * cout), cout as isize),
                        true,
                        Operand {
                            pointer: input_points.as_ptr().add(point * cin * tiles),
                            column_stride: 1,
                            row_stride: tiles as isize,
                        },
                        Operand {
                            pointer: output_points.as_ptr().add(point * cout * tiles),
                            column_stride: tiles as isize,
                            row_stride: 1,
                        },
                    );
                }
            }
        }
    });
    let (total, rest) = partials.split_at_mut(transformed_len);
    for partial in rest.chunks(transformed_len) {
        total
            .iter_mut()
            .zip(partial)
            .for_each(|(sum, &value)| *sum = *sum + value);
    }
    weight_from_transformed::<T, M, P>(total, g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn_backend::ops::ConvOptions;

    /// One convolution to test: batch, input and output channels, input size, padding
    /// `[(top, bottom), (left, right)]`.
    struct Case {
        batch: usize,
        channels: [usize; 2],
        input: [usize; 2],
        padding: [(usize, usize); 2],
    }

    impl Case {
        fn geometry(&self) -> Geometry {
            let options = ConvOptions::new_with_padding([1, 1], self.padding, [1, 1], 1);
            let [in_h, in_w] = self.input;
            let out = [
                in_h + self.padding[0].0 + self.padding[0].1 - 2,
                in_w + self.padding[1].0 + self.padding[1].1 - 2,
            ];
            Geometry::new(
                &[self.batch, self.channels[0], in_h, in_w],
                &[self.channels[1], self.channels[0], 3, 3],
                out,
                &options,
            )
        }
    }

    fn cases() -> Vec<Case> {
        vec![
            // One pixel, one channel, batch 1: a single tile, mostly padding.
            Case {
                batch: 1,
                channels: [1, 1],
                input: [1, 1],
                padding: [(1, 1), (1, 1)],
            },
            // Colour, odd sides: tiles that cross the output's edge.
            Case {
                batch: 2,
                channels: [3, 5],
                input: [5, 7],
                padding: [(1, 1), (1, 1)],
            },
            // No padding: an output smaller than the input.
            Case {
                batch: 3,
                channels: [2, 4],
                input: [6, 5],
                padding: [(0, 0), (0, 0)],
            },
            // Padding wider than the kernel's reach.
            Case {
                batch: 1,
                channels: [4, 3],
                input: [4, 5],
                padding: [(2, 2), (2, 2)],
            },
            // Asymmetric padding, as the gradients see it.
            Case {
                batch: 2,
                channels: [3, 2],
                input: [7, 4],
                padding: [(1, 0), (0, 2)],
            },
            // Rows of exactly one block of tiles (15 outputs across: 8 tiles, the last one
            // half outside), with padding on one side only.
            Case {
                batch: 1,
                channels: [2, 3],
                input: [4, 16],
                padding: [(1, 1), (0, 1)],
            },
            // Rows of a block of tiles, a half block and two more (27 outputs across: 14 tiles).
            Case {
                batch: 2,
                channels: [3, 2],
                input: [5, 27],
                padding: [(1, 1), (1, 1)],
            },
            // Rows of 4 × 4 tiles of one block and one more (34 outputs across: 9 tiles; 17 of
            // 2 × 2), and of a block and a half block (47 across: 12 tiles; 24 of 2 × 2).
            Case {
                batch: 1,
                channels: [2, 3],
                input: [6, 34],
                padding: [(1, 1), (1, 1)],
            },
            Case {
                batch: 2,
                channels: [2, 2],
                input: [5, 47],
                padding: [(0, 2), (1, 1)],
            },
            // Padding on the left only, wider than the kernel's reach at the top and right of
            // none: the zero-padded row filled to its last value for 2 × 2 tiles (18 outputs
            // across).
            Case {
                batch: 1,
                channels: [2, 2],
                input: [3, 18],
                padding: [(0, 3), (2, 0)],
            },
            // One input column inside wide padding.
            Case {
                batch: 1,
                channels: [1, 2],
                input: [2, 1],
                padding: [(1, 0), (5, 4)],
            },
            // Rows of a block of tiles and three more (22 outputs across: 11 tiles), batch 1.
            Case {
                batch: 1,
                channels: [2, 2],
                input: [3, 22],
                padding: [(1, 1), (1, 1)],
            },
        ]
    }

    /// Reproducible values in [-1, 1): SplitMix64's output scaled.
    fn values(count: usize, seed: u64) -> Vec<f64> {
        let mut state = seed;
        (0..count)
            .map(|_| {
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
            })
            .collect()
    }

    /// The convolution's definition, in f64: the output, and the gradients of the input and
    /// of the weight for the output gradient `upstream`.
    fn reference(g: &Geometry, x: &[f64], w: &[f64], bias: &[f64], upstream: &[f64]) -> [Vec<f64>; 3] {
        let (cin, cout) = (g.channels_in, g.channels_out);
        let mut output = vec![0.0; g.batch * cout * g.out_plane()];
        let mut input_grad = vec![0.0; x.len()];
        let mut weight_grad = vec![0.0; w.len()];
        for (b, co, oy, ox) in every_output(g.batch, cout, g.out_h, g.out_w) {
            let out_at = ((b * cout + co) * g.out_h + oy) * g.out_w + ox;
            output[out_at] = bias[co];
            for (ci, ky, kx) in (0..cin).flat_map(|ci| (0..3).flat_map(move |ky| (0..3).map(move |kx| (ci, ky, kx)))) {
                let iy = (oy + ky) as isize - g.padding[0] as isize;
                let ix = (ox + kx) as isize - g.padding[1] as isize;
                if iy < 0 || ix < 0 || iy as usize >= g.in_h || ix as usize >= g.in_w {
                    continue;
                }
                let x_at = ((b * cin + ci) * g.in_h + iy as usize) * g.in_w + ix as usize;
                let w_at = ((co * cin + ci) * 3 + ky) * 3 + kx;
                output[out_at] += x[x_at] * w[w_at];
                input_grad[x_at] += upstream[out_at] * w[w_at];
                weight_grad[w_at] += upstream[out_at] * x[x_at];
            }
        }
        [output, input_grad, weight_grad]
    }

    fn every_output(a: usize, b: usize, c: usize, d: usize) -> impl Iterator<Item = (usize, usize, usize, usize)> {
        (0..a).flat_map(move |i| (0..b).flat_map(move |j| (0..c).flat_map(move |k| (0..d).map(move |l| (i, j, k, l)))))
    }

    fn assert_close<T: ConvElement>(what: &str, actual: &[T], expected: &[f64], tolerance: f64) {
        assert_eq!(actual.len(), expected.len(), "{what}: length");
        let scale = expected.iter().fold(1.0f64, |most, value| most.max(value.abs()));
        for (index, (got, want)) in actual.iter().zip(expected).enumerate() {
            let got = num_traits::ToPrimitive::to_f64(got).expect("a float");
            assert!(
                (got - want).abs() <= tolerance * scale,
                "{what}, element {index}: {got} instead of {want}"
            );
        }
    }

    /// Winograd's three passes in `T` with tiles of `M × M` against the definition, with batches
    /// of `rows_per_batch` tile rows.
    fn check<T: ConvElement, const M: usize, const P: usize>(case: &Case, rows_per_batch: usize, tolerance: f64)
    where
        Tile<M, P>: Transforms<M, P>,
    {
        let g = case.geometry();
        let convert = |values: Vec<f64>| -> Vec<T> {
            values
                .into_iter()
                .map(|value| T::from(value).expect("in range"))
                .collect()
        };
        let x = values(g.batch * g.channels_in * g.in_plane(), 1);
        let w = values(g.channels_out * g.channels_in * 9, 2);
        let bias = values(g.channels_out, 3);
        let upstream = values(g.batch * g.channels_out * g.out_plane(), 4);
        let [output, input_grad, weight_grad] = reference(&g, &x, &w, &bias, &upstream);
        let (x, w, bias, upstream) = (convert(x), convert(w), convert(bias), convert(upstream));
        let tiling = Tiling::<M, P>::new(
            &g,
            rows_per_batch * g.out_w.div_ceil(M) * Tiling::<M, P>::POINTS * (g.channels_in + g.channels_out),
        );
        let what = |pass: &str| {
            format!(
                "{pass} of {:?}, {tiling:?}",
                (
                    g.batch,
                    g.channels_in,
                    g.channels_out,
                    g.in_h,
                    g.in_w,
                    g.padding,
                    g.out_h,
                    g.out_w
                )
            )
        };

        let mut actual = vec![T::nan(); output.len()];
        forward_tiled(SharedBuffer(actual.as_mut_ptr()), &x, &w, Some(&bias), &g, tiling);
        assert_close(&what("output"), &actual, &output, tolerance);

        let mut actual = vec![T::nan(); input_grad.len()];
        input_gradient_tiled(SharedBuffer(actual.as_mut_ptr()), &w, &upstream, &g, tiling);
        assert_close(&what("input gradient"), &actual, &input_grad, tolerance);

        let actual = weight_gradient_tiled(&x, &upstream, &g, tiling);
        assert_close(&what("weight gradient"), &actual, &weight_grad, tolerance);
    }

    #[test]
    fn winograd_matches_the_definition_in_f64() {
        for case in cases() {
            for rows_per_batch in [1, 2, 1000] {
                check::<f64, 2, 4>(&case, rows_per_batch, 1e-12);
                check::<f64, 4, 6>(&case, rows_per_batch, 1e-12);
            }
        }
    }

    #[test]
    fn winograd_matches_the_definition_in_f32() {
        for case in cases() {
            check::<f32, 2, 4>(&case, 2, 1e-5);
            check::<f32, 4, 6>(&case, 2, 1e-5);
        }
    }

    /// Each 1D transform of F(4 × 4, 3 × 3) against its matrix (and its transpose), and the
    /// three together: `Aᵀ ((G w) ⊙ (Bᵀ d))` is the correlation of `d` with `w`.
    #[test]
    fn the_large_tile_transforms_are_lavin_and_grays_matrices() {
        let input_matrix: [[f64; 6]; 6] = [
            [4.0, 0.0, -5.0, 0.0, 1.0, 0.0],
            [0.0, -4.0, -4.0, 1.0, 1.0, 0.0],
            [0.0, 4.0, -4.0, -1.0, 1.0, 0.0],
            [0.0, -2.0, -1.0, 2.0, 1.0, 0.0],
            [0.0, 2.0, -1.0, -2.0, 1.0, 0.0],
            [0.0, 4.0, 0.0, -5.0, 0.0, 1.0],
        ];
        let (sixth, twelfth, twenty_fourth) = (1.0 / 6.0, 1.0 / 12.0, 1.0 / 24.0);
        let weight_matrix: [[f64; 3]; 6] = [
            [0.25, 0.0, 0.0],
            [-sixth, -sixth, -sixth],
            [-sixth, sixth, -sixth],
            [twenty_fourth, twelfth, sixth],
            [twenty_fourth, -twelfth, sixth],
            [0.0, 0.0, 1.0],
        ];
        let output_matrix: [[f64; 6]; 4] = [
            [1.0, 1.0, 1.0, 1.0, 1.0, 0.0],
            [0.0, 1.0, -1.0, 2.0, -2.0, 0.0],
            [0.0, 1.0, 1.0, 4.0, 4.0, 0.0],
            [0.0, 1.0, -1.0, 8.0, -8.0, 1.0],
        ];
        fn times<const R: usize, const C: usize>(matrix: &[[f64; C]; R], v: [f64; C]) -> [f64; R] {
            core::array::from_fn(|row| (0..C).map(|column| matrix[row][column] * v[column]).sum())
        }
        fn transposed_times<const R: usize, const C: usize>(matrix: &[[f64; C]; R], v: [f64; R]) -> [f64; C] {
            core::array::from_fn(|column| (0..R).map(|row| matrix[row][column] * v[row]).sum())
        }
        let close = |what: &str, got: &[f64], want: &[f64]| {
            assert_eq!(got.len(), want.len(), "{what}: length");
            for (index, (got, want)) in got.iter().zip(want).enumerate() {
                assert!((got - want).abs() < 1e-12, "{what}[{index}]: {got} instead of {want}");
            }
        };
        let values = values(6 + 6 + 3 + 4, 5);
        let d: [f64; 6] = core::array::from_fn(|i| values[i]);
        let v: [f64; 6] = core::array::from_fn(|i| values[6 + i]);
        let w: [f64; 3] = core::array::from_fn(|i| values[12 + i]);
        let y: [f64; 4] = core::array::from_fn(|i| values[15 + i]);
        close("Bᵀ d", &Tile::<4, 6>::input(d), &times(&input_matrix, d));
        close(
            "B v",
            &Tile::<4, 6>::input_transposed(v),
            &transposed_times(&input_matrix, v),
        );
        close("G w", &Tile::<4, 6>::weight(w), &times(&weight_matrix, w));
        close(
            "Gᵀ v",
            &Tile::<4, 6>::weight_transposed(v),
            &transposed_times(&weight_matrix, v),
        );
        close("Aᵀ v", &Tile::<4, 6>::output(v), &times(&output_matrix, v));
        close(
            "A y",
            &Tile::<4, 6>::output_transposed(y),
            &transposed_times(&output_matrix, y),
        );
        let product: [f64; 6] = core::array::from_fn(|i| Tile::<4, 6>::weight(w)[i] * Tile::<4, 6>::input(d)[i]);
        let correlation: [f64; 4] = core::array::from_fn(|x| (0..3).map(|k| d[x + k] * w[k]).sum());
        close("Aᵀ (G w ⊙ Bᵀ d)", &Tile::<4, 6>::output(product), &correlation);
    }

    #[test]
    #[should_panic(expected = "the output gradient's shape [2, 3, 4, 4] is not the output shape")]
    fn a_gradient_of_the_wrong_channels_is_refused_before_it_is_read() {
        use burn_backend::DType;
        let zeros =
            |shape: [usize; 4]| super::super::tensor_from(vec![0.0f32; shape.iter().product()], shape, DType::F32);
        let options = ConvOptions::new([1, 1], [1, 1], [1, 1], 1);
        super::super::conv2d_x_backward(zeros([2, 4, 4, 4]), zeros([5, 4, 3, 3]), zeros([2, 3, 4, 4]), &options);
    }

    /// An output gradient narrower than the forward pass's output would leave the input's rows
    /// no room in the input transform's padded row, which the weight gradient runs.
    #[test]
    #[should_panic(expected = "the output gradient's shape [1, 16, 16, 8] is not the output shape")]
    fn a_gradient_of_the_wrong_width_is_refused_before_it_is_read() {
        use burn_backend::DType;
        let zeros =
            |shape: [usize; 4]| super::super::tensor_from(vec![0.0f32; shape.iter().product()], shape, DType::F32);
        let options = ConvOptions::new([1, 1], [1, 1], [1, 1], 1);
        super::super::conv2d_weight_backward(
            zeros([1, 16, 16, 16]),
            zeros([16, 16, 3, 3]),
            zeros([1, 16, 16, 8]),
            &options,
        );
    }

    /// Padding so large that the padded input's size overflows is refused with the shapes
    /// named, not by an arithmetic overflow.
    #[test]
    #[should_panic(expected = "the output gradient's shape [1, 16, 16, 16] is not the output shape")]
    fn padding_whose_sum_overflows_is_refused_with_the_shapes_named() {
        use burn_backend::DType;
        let zeros =
            |shape: [usize; 4]| super::super::tensor_from(vec![0.0f32; shape.iter().product()], shape, DType::F32);
        let options = ConvOptions::new_with_padding([1, 1], [(usize::MAX, 1), (1, 1)], [1, 1], 1);
        super::super::conv2d_weight_backward(
            zeros([1, 16, 16, 16]),
            zeros([16, 16, 3, 3]),
            zeros([1, 16, 16, 16]),
            &options,
        );
    }

    #[test]
    fn winograd_is_taken_only_where_it_applies() {
        let side = 2 * MIN_TILE_COLUMNS;
        let case = Case {
            batch: 1,
            channels: [MIN_CHANNELS, MIN_CHANNELS],
            input: [side, side],
            padding: [(1, 1), (1, 1)],
        };
        let g = case.geometry();
        assert!(applies::<f32>(&g) && applies::<f64>(&g));
        assert!(!applies::<burn_std::f16>(&g), "f16 keeps the columns path");
        let fewer = Case {
            channels: [MIN_CHANNELS - 1, MIN_CHANNELS],
            ..case
        };
        assert!(!applies::<f32>(&fewer.geometry()));
        let narrow = Case {
            input: [side, side - 2],
            ..case
        };
        assert!(
            !applies::<f32>(&narrow.geometry()),
            "{} tiles across",
            (side - 2).div_ceil(2)
        );
        assert_eq!(
            TileSide::of(&g),
            TileSide::Two,
            "{} tiles of 4 across",
            side.div_ceil(4)
        );
        let broad = Case {
            input: [side, 4 * MIN_LARGE_TILE_COLUMNS],
            ..case
        };
        assert!(applies::<f32>(&broad.geometry()));
        assert_eq!(TileSide::of(&broad.geometry()), TileSide::Four);
        let strided = Geometry { stride: [2, 1], ..g };
        let dilated = Geometry { dilation: [1, 2], ..g };
        let grouped = Geometry { groups: 2, ..g };
        let wide = Geometry { kernel_w: 5, ..g };
        for other in [strided, dilated, grouped, wide] {
            assert!(!applies::<f32>(&other), "{other:?}");
        }
    }
}
