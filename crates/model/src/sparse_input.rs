//! The perceptron's hidden layer computed from the non-zero inputs only, on the host.
//!
//! Most of an MNIST image is background: about 81% of its pixels are exactly 0 when they are
//! scaled to [0, 1]. The hidden layer's two large products, the forward `X·W` and the weight
//! gradient `Xᵀ·dH`, then do five times the work they need: every zero pixel multiplies a whole
//! row of `W` (or of `dH`) by 0. [`SparseRows`] keeps a batch's non-zero values and their
//! positions, and [`SparseRows::times_dense`] multiplies it by a dense matrix touching only
//! them. The same kernel serves both products: the forward multiplies the batch by `W`, the
//! gradient multiplies the batch's transpose ([`SparseRows::transpose`]) by `dH`.
//!
//! Hand-written rather than taken from a sparse-matrix crate: the products here are
//! sparse × dense with a narrow dense side (128 columns), where one output row's sums can stay
//! in registers for the whole row. A first prototype that added each non-zero's row into the
//! output in memory instead, as a general sparse × dense product does, took 208 µs for the
//! forward and 231 µs for the gradient on one thread, against 131 and 141 µs with the sums in
//! registers (a throwaway program built with `-C target-cpu=native`, same AMD EPYC, same
//! batch; sprs and nalgebra-sparse themselves were not measured). `benches/sparse_inputs.rs` times
//! the kernel's pieces; `benches/train_step.rs` the step both ways (`flex` and `flex-dense`,
//! `ndarray` and `ndarray-sparse`).

use rayon::prelude::*;

use crate::ModelError;

/// Output columns accumulated at once, in registers: 64 `f32` are eight 256-bit vectors.
const COLUMNS_PER_PASS: usize = 64;

/// Values tested for zero at once when a dense matrix is read into sparse rows.
const ZERO_TEST_BLOCK: usize = 16;

/// Output rows per rayon task, so that a product of a few rows stays on the calling thread.
/// (On the two cores measured, the rows on rayon made the step's forward product 1.6 times and
/// its weight gradient 1.3 times faster than on one thread: docs/benchmarks.md.)
const ROWS_PER_TASK: usize = 16;

/// A row-major matrix that keeps only its non-zero values (compressed sparse rows).
#[derive(Clone, Debug, PartialEq)]
pub struct SparseRows {
    columns: usize,
    /// Where each row's entries start in `column_indices` and `values`, plus the end.
    row_starts: Vec<usize>,
    column_indices: Vec<u32>,
    values: Vec<f32>,
}

/// The empty matrix: no rows, no columns (`row_starts` holds the end of no rows).
impl Default for SparseRows {
    fn default() -> Self {
        SparseRows {
            columns: 0,
            row_starts: vec![0],
            column_indices: Vec::new(),
            values: Vec::new(),
        }
    }
}

/// The buffers of [`SparseRows::refill_transposed_from_dense`] beside its result, kept from one
/// call to the next so that a step allocates nothing once they have grown to a batch's size.
#[derive(Clone, Debug, Default)]
pub(crate) struct TransposedGather {
    first_blocks: BlockLists,
    /// The second half's rows, appended to the first's.
    second_half: SparseRows,
    second_blocks: BlockLists,
}

/// One block of columns' lists of non-zero values: `[ZERO_TEST_BLOCK, rows]`, a list per
/// column, each as long as the matrix has rows.
#[derive(Clone, Debug, Default)]
struct BlockLists {
    rows: Vec<u32>,
    values: Vec<f32>,
}

/// [`ModelError::SparseShape`] unless `dense` is a whole number of rows of `columns` columns,
/// `columns` not 0, both counts fit in a `u32` with a block to spare, and a block's lists of
/// rows fit in a `usize` (a bound only a 32-bit target can reach).
fn check_dense_shape(dense: &[f32], columns: usize) -> Result<(), ModelError> {
    // Positions are `u32`, and the columns are counted in blocks of `ZERO_TEST_BLOCK`.
    let largest_position = u32::MAX as usize - ZERO_TEST_BLOCK;
    if columns == 0
        || columns > largest_position
        || !dense.len().is_multiple_of(columns)
        || dense.len() / columns > largest_position
        || (dense.len() / columns)
            .checked_mul(ZERO_TEST_BLOCK)
            .is_none()
    {
        return Err(ModelError::SparseShape {
            values: dense.len(),
            columns,
        });
    }
    Ok(())
}

/// Whether any value of `block` is not zero. The background of an image is zero in long runs:
/// a block of zeros is passed over with one vectorized test (an OR of the bits without the
/// sign: ±0.0 give 0; no early exit, so that it vectorizes) instead of a test per value.
#[inline(always)]
fn any_non_zero(block: &[f32]) -> bool {
    block
        .iter()
        .fold(0u32, |bits, value| bits | (value.to_bits() << 1))
        != 0
}

impl SparseRows {
    /// The non-zero values of `dense`, a row-major matrix of `columns` columns.
    ///
    /// # Errors
    ///
    /// [`ModelError::SparseShape`] when `columns` is 0 or beyond `u32::MAX`, or when `dense`
    /// is not a whole number of rows.
    pub fn from_dense(dense: &[f32], columns: usize) -> Result<Self, ModelError> {
        check_dense_shape(dense, columns)?;
        let rows = dense.len() / columns;
        let mut row_starts = Vec::with_capacity(rows + 1);
        // A quarter of the values: MNIST's batches are about a fifth non-zero.
        let mut column_indices = Vec::with_capacity(dense.len() / 4);
        let mut values = Vec::with_capacity(dense.len() / 4);
        row_starts.push(0);
        for row in dense.chunks_exact(columns) {
            for (first_column, block) in (0u32..)
                .step_by(ZERO_TEST_BLOCK)
                .zip(row.chunks(ZERO_TEST_BLOCK))
            {
                if any_non_zero(block) {
                    // The block's non-zero values gathered without a branch per value (a
                    // stroke's edge makes `value != 0.0` unpredictable), then appended at once.
                    let mut block_columns = [0u32; ZERO_TEST_BLOCK];
                    let mut block_values = [0f32; ZERO_TEST_BLOCK];
                    let mut kept = 0;
                    for (column, &value) in (first_column..).zip(block) {
                        block_columns[kept] = column;
                        block_values[kept] = value;
                        kept += usize::from(value != 0.0);
                    }
                    column_indices.extend_from_slice(&block_columns[..kept]);
                    values.extend_from_slice(&block_values[..kept]);
                }
            }
            row_starts.push(values.len());
        }
        Ok(SparseRows {
            columns,
            row_starts,
            column_indices,
            values,
        })
    }

    /// Replaces this matrix by the *transpose* of `dense`'s non-zero values, `dense` being a
    /// row-major matrix of `columns` columns: row `c` lists the rows of `dense` whose column `c`
    /// is not zero, in order, with their values. The same matrix as
    /// `SparseRows::from_dense(dense, columns)?.transpose()`, in one pass over `dense` and
    /// with the columns shared out in two halves between rayon's threads (the fused step's
    /// gather, which was serial as a gather then a transpose: docs/benchmarks.md). The
    /// buffers' capacity is kept, `gather`'s too.
    ///
    /// # Errors
    ///
    /// As [`from_dense`](Self::from_dense); the matrix is then left empty.
    pub(crate) fn refill_transposed_from_dense(
        &mut self,
        dense: &[f32],
        columns: usize,
        gather: &mut TransposedGather,
    ) -> Result<(), ModelError> {
        if let Err(error) = check_dense_shape(dense, columns) {
            self.clear_to(0);
            return Err(error);
        }
        // The halves split at a whole block, so that each half's blocks are whole but its last.
        let split = (columns / 2).next_multiple_of(ZERO_TEST_BLOCK).min(columns);
        let TransposedGather {
            first_blocks,
            second_half,
            second_blocks,
        } = gather;
        rayon::join(
            || self.gather_columns(dense, columns, 0..split, first_blocks),
            || second_half.gather_columns(dense, columns, split..columns, second_blocks),
        );
        self.append_rows(second_half);
        Ok(())
    }

    /// Empties the matrix, giving its rows `columns` columns.
    fn clear_to(&mut self, columns: usize) {
        self.columns = columns;
        self.row_starts.clear();
        self.row_starts.push(0);
        self.column_indices.clear();
        self.values.clear();
    }

    /// Replaces this matrix by the transpose of `dense`'s columns `range` (checked by
    /// [`check_dense_shape`]), keeping their non-zero values: one row per column of `range`.
    /// The columns are read a block of [`ZERO_TEST_BLOCK`] at a time, image by image, each
    /// block's non-zero values sorted into its columns' lists in `blocks` without a branch per
    /// value, then appended.
    fn gather_columns(
        &mut self,
        dense: &[f32],
        columns: usize,
        range: std::ops::Range<usize>,
        blocks: &mut BlockLists,
    ) {
        let rows = dense.len() / columns;
        self.clear_to(rows);
        // A list per column of the widest block (checked: it fits a `usize`), so that a narrow
        // matrix with many rows does not ask for more than its blocks need.
        let lists = ZERO_TEST_BLOCK.min(range.len()) * rows;
        blocks.rows.resize(lists, 0);
        blocks.values.resize(lists, 0.0);
        for block_start in range.clone().step_by(ZERO_TEST_BLOCK) {
            let block_columns = block_start..(block_start + ZERO_TEST_BLOCK).min(range.end);
            let mut counts = [0usize; ZERO_TEST_BLOCK];
            // Checked: `rows` fits in a `u32`.
            for (row, dense_row) in (0u32..).zip(dense.chunks_exact(columns)) {
                let block = &dense_row[block_columns.clone()];
                if !any_non_zero(block) {
                    continue;
                }
                for ((column, &value), count) in block.iter().enumerate().zip(&mut counts) {
                    // `count` is at most the rows before this one: the slot is in the list.
                    let slot = column * rows + *count;
                    blocks.rows[slot] = row;
                    blocks.values[slot] = value;
                    *count += usize::from(value != 0.0);
                }
            }
            for (column, &count) in counts[..block_columns.len()].iter().enumerate() {
                let list = column * rows..column * rows + count;
                self.column_indices
                    .extend_from_slice(&blocks.rows[list.clone()]);
                self.values.extend_from_slice(&blocks.values[list]);
                self.row_starts.push(self.values.len());
            }
        }
    }

    /// Appends `other`'s rows (of as many columns) after this matrix's.
    fn append_rows(&mut self, other: &SparseRows) {
        debug_assert_eq!(self.columns, other.columns, "rows of another width");
        let offset = self.values.len();
        let other_ends = other.row_starts[1..].iter().map(|end| end + offset);
        self.row_starts.extend(other_ends);
        self.column_indices.extend_from_slice(&other.column_indices);
        self.values.extend_from_slice(&other.values);
    }

    /// Rows of the matrix.
    pub fn rows(&self) -> usize {
        self.row_starts.len() - 1
    }

    /// Columns of the matrix.
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// Row `row`'s entries: their columns and their values.
    pub(crate) fn row(&self, row: usize) -> (&[u32], &[f32]) {
        let entries = self.row_starts[row]..self.row_starts[row + 1];
        (&self.column_indices[entries.clone()], &self.values[entries])
    }

    /// Non-zero values kept.
    pub fn non_zero_count(&self) -> usize {
        self.values.len()
    }

    /// The share of the matrix's values that are not zero (0 for an empty matrix).
    pub fn density(&self) -> f64 {
        let size = self.rows() * self.columns;
        if size == 0 {
            0.0
        } else {
            self.non_zero_count() as f64 / size as f64
        }
    }

    /// The transpose, also as sparse rows: row `c` holds column `c`'s non-zero values, in the
    /// order of their rows (a counting sort, linear in the entries).
    pub fn transpose(&self) -> SparseRows {
        let mut row_starts = vec![0usize; self.columns + 1];
        for &column in &self.column_indices {
            row_starts[column as usize + 1] += 1;
        }
        for column in 0..self.columns {
            row_starts[column + 1] += row_starts[column];
        }
        let mut next = row_starts.clone();
        let mut column_indices = vec![0u32; self.non_zero_count()];
        let mut values = vec![0f32; self.non_zero_count()];
        for (row, entries) in (0u32..).zip(self.row_starts.windows(2)) {
            let entries = entries[0]..entries[1];
            let row_columns = &self.column_indices[entries.clone()];
            for (&column, &value) in row_columns.iter().zip(&self.values[entries]) {
                let slot = &mut next[column as usize];
                column_indices[*slot] = row;
                values[*slot] = value;
                *slot += 1;
            }
        }
        SparseRows {
            columns: self.rows(),
            row_starts,
            column_indices,
            values,
        }
    }

    /// `self · dense`, row-major, where `dense` is a row-major matrix of `self.columns()` rows
    /// and `dense_columns` columns. Rows are shared out among rayon's threads.
    ///
    /// # Errors
    ///
    /// [`ModelError::ProductShape`] when `dense` does not hold `self.columns()` rows of
    /// `dense_columns` values.
    pub fn times_dense(&self, dense: &[f32], dense_columns: usize) -> Result<Vec<f32>, ModelError> {
        let shape_error = || ModelError::ProductShape {
            sparse_columns: self.columns,
            dense_values: dense.len(),
            dense_columns,
        };
        if dense_columns == 0 || self.columns.checked_mul(dense_columns) != Some(dense.len()) {
            return Err(shape_error());
        }
        let size = self
            .rows()
            .checked_mul(dense_columns)
            .ok_or_else(shape_error)?;
        let mut product = vec![0f32; size];
        let rows = product
            .par_chunks_mut(dense_columns)
            .with_min_len(ROWS_PER_TASK);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            rows.enumerate().for_each(|(row, output)| {
                // SAFETY: `row_times_dense_avx2_fma` requires only that the CPU supports AVX2
                // and FMA, which was checked just above, before any row.
                unsafe { self.row_times_dense_avx2_fma(row, dense, dense_columns, output) }
            });
            return Ok(product);
        }
        rows.enumerate().for_each(|(row, output)| {
            self.row_times_dense_with::<false>(row, dense, dense_columns, output);
        });
        Ok(product)
    }

    /// One row of `self · dense` into `output`, fused (see
    /// [`row_times_dense_with`](Self::row_times_dense_with)), compiled for AVX2 and FMA. Kept
    /// beside the portable path rather than behind `-C target-cpu`: Reclaim's binaries are built
    /// for any x86-64, and on the AMD EPYC measured the portable path's product took 105-129 µs
    /// against 88 µs for the forward and 114-115 against 106-108 µs for the weight gradient
    /// (`benches/sparse_inputs.rs`, docs/benchmarks.md).
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn row_times_dense_avx2_fma(
        &self,
        row: usize,
        dense: &[f32],
        dense_columns: usize,
        output: &mut [f32],
    ) {
        self.row_times_dense_with::<true>(row, dense, dense_columns, output);
    }

    /// Row `row` of `self · dense` into `output` (`dense_columns` values): `FUSED` sums with
    /// `f32::mul_add` (one rounding; a single instruction only where FMA is compiled in), else
    /// with a multiply and an add. Inlined into each caller, so that it is compiled with the
    /// caller's target features.
    #[inline(always)]
    fn row_times_dense_with<const FUSED: bool>(
        &self,
        row: usize,
        dense: &[f32],
        dense_columns: usize,
        output: &mut [f32],
    ) {
        let multiply_add = |sum: f32, value: f32, weight: f32| {
            if FUSED {
                value.mul_add(weight, sum)
            } else {
                sum + value * weight
            }
        };
        let entries = self.row_starts[row]..self.row_starts[row + 1];
        let indices = &self.column_indices[entries.clone()];
        let values = &self.values[entries];
        for (pass, output) in output.chunks_mut(COLUMNS_PER_PASS).enumerate() {
            let first_column = pass * COLUMNS_PER_PASS;
            if let Ok(output) = <&mut [f32; COLUMNS_PER_PASS]>::try_from(&mut *output) {
                // A full pass: the accumulators are a fixed-size array, which the compiler
                // keeps in vector registers for the whole row.
                let mut sums = [0f32; COLUMNS_PER_PASS];
                for (&index, &value) in indices.iter().zip(values) {
                    let start = index as usize * dense_columns + first_column;
                    // In range: `index` < the columns `dense` has rows for, and a full pass
                    // ends within a row.
                    let dense_row: &[f32; COLUMNS_PER_PASS] = dense[start..]
                        .first_chunk()
                        .expect("a full pass of columns");
                    for (sum, &weight) in sums.iter_mut().zip(dense_row) {
                        *sum = multiply_add(*sum, value, weight);
                    }
                }
                *output = sums;
            } else {
                output.fill(0.0);
                for (&index, &value) in indices.iter().zip(values) {
                    let start = index as usize * dense_columns + first_column;
                    let dense_row = &dense[start..][..output.len()];
                    for (sum, &weight) in output.iter_mut().zip(dense_row) {
                        *sum = multiply_add(*sum, value, weight);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The textbook product of two row-major matrices.
    fn dense_product(left: &[f32], right: &[f32], inner: usize, right_columns: usize) -> Vec<f32> {
        let rows = left.len() / inner;
        let mut product = vec![0f32; rows * right_columns];
        for row in 0..rows {
            for k in 0..inner {
                for column in 0..right_columns {
                    product[row * right_columns + column] +=
                        left[row * inner + k] * right[k * right_columns + column];
                }
            }
        }
        product
    }

    /// A matrix with about `zero_share` of its values at 0, the rest in (0, 1], from a seed.
    fn mostly_zero(rows: usize, columns: usize, zero_share: f64, seed: u64) -> Vec<f32> {
        let mut state = seed;
        (0..rows * columns)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let draw = (state >> 11) as f64 / (1u64 << 53) as f64;
                if draw < zero_share {
                    0.0
                } else {
                    (draw as f32 - zero_share as f32 + 0.01).min(1.0)
                }
            })
            .collect()
    }

    fn close(actual: &[f32], expected: &[f32]) {
        assert_eq!(actual.len(), expected.len());
        for (index, (a, e)) in actual.iter().zip(expected).enumerate() {
            assert!(
                (a - e).abs() <= 1e-4 * (1.0 + e.abs()),
                "{index}: {a} vs {e}"
            );
        }
    }

    #[test]
    fn the_product_equals_the_dense_product_for_full_and_partial_passes() {
        // 128 columns: two full passes; 70: a full pass and a partial one; 5: partial only.
        for (rows, inner, columns, zero_share) in [
            (64, 784, 128, 0.8),
            (33, 50, 70, 0.8),
            (3, 9, 5, 0.8),
            (40, 17, 64, 0.8),
            // No zero at all: `from_dense` outgrows its first buffers (a quarter of the values).
            (64, 784, 128, 0.0),
        ] {
            let left = mostly_zero(rows, inner, zero_share, 7);
            let right = mostly_zero(inner, columns, 0.0, 11);
            let sparse = SparseRows::from_dense(&left, inner).unwrap();
            if zero_share == 0.0 {
                assert_eq!(sparse.non_zero_count(), rows * inner);
            }
            let product = sparse.times_dense(&right, columns).unwrap();
            close(&product, &dense_product(&left, &right, inner, columns));
        }
    }

    /// The one-pass transposed gather gives the gather's transpose, whatever the shape: columns
    /// in one partial block (the second half empty), whole blocks, a half ending in a partial
    /// block, one column (the first half empty), no row, signed zeros (dropped), no zero at
    /// all; the buffers reused from a larger matrix to a smaller one and back.
    #[test]
    fn the_transposed_gather_equals_the_transpose_of_the_gather() {
        let mut gathered = SparseRows::default();
        let mut gather = TransposedGather::default();
        for (rows, columns, zero_share) in [
            (64, 784, 0.8),
            (1, 1, 0.5),
            (3, 15, 0.8),
            (5, 16, 0.8),
            (7, 17, 0.3),
            (9, 33, 0.8),
            (2, 47, 0.0),
            (64, 784, 0.0),
            (100, 5, 0.8),
            (0, 784, 0.8),
            (64, 784, 0.8),
        ] {
            let mut dense = mostly_zero(rows, columns, zero_share, columns as u64);
            for value in dense.iter_mut().step_by(7) {
                if *value == 0.0 {
                    *value = -0.0;
                }
            }
            gathered
                .refill_transposed_from_dense(&dense, columns, &mut gather)
                .unwrap();
            let expected = SparseRows::from_dense(&dense, columns).unwrap().transpose();
            assert_eq!(gathered, expected, "{rows} x {columns}");
            assert_eq!((gathered.rows(), gathered.columns()), (columns, rows));
        }
    }

    #[test]
    fn a_transposed_gather_of_a_wrong_shape_is_an_error_and_leaves_the_matrix_empty() {
        let mut gathered = SparseRows::from_dense(&[1.0, 0.0, 2.0, 3.0], 2).unwrap();
        let mut gather = TransposedGather::default();
        for (values, columns) in [(5, 2), (4, 0), (3, 4)] {
            let refused =
                gathered.refill_transposed_from_dense(&vec![1.0; values], columns, &mut gather);
            assert!(
                matches!(
                    refused,
                    Err(ModelError::SparseShape { values: v, columns: c }) if v == values && c == columns
                ),
                "{values} values, {columns} columns: {refused:?}"
            );
            assert_eq!((gathered.rows(), gathered.non_zero_count()), (0, 0));
        }
    }

    #[test]
    fn the_transpose_times_a_matrix_equals_the_dense_gradient_product() {
        let (rows, inner, columns) = (64, 784, 128);
        let inputs = mostly_zero(rows, inner, 0.8, 3);
        let gradient = mostly_zero(rows, columns, 0.0, 5);
        let mut transposed = vec![0f32; inputs.len()];
        for row in 0..rows {
            for column in 0..inner {
                transposed[column * rows + row] = inputs[row * inner + column];
            }
        }
        let sparse = SparseRows::from_dense(&inputs, inner).unwrap().transpose();
        assert_eq!((sparse.rows(), sparse.columns()), (inner, rows));
        assert_eq!(sparse, SparseRows::from_dense(&transposed, rows).unwrap());
        let product = sparse.times_dense(&gradient, columns).unwrap();
        close(
            &product,
            &dense_product(&transposed, &gradient, rows, columns),
        );
    }

    #[test]
    fn only_non_zero_values_are_kept_and_the_density_counts_them() {
        let sparse = SparseRows::from_dense(&[0.0, 2.0, 0.0, 0.0, -1.0, 0.5], 3).unwrap();
        assert_eq!((sparse.rows(), sparse.columns()), (2, 3));
        assert_eq!(sparse.non_zero_count(), 3);
        assert!((sparse.density() - 0.5).abs() < 1e-12);
        let all_zero = SparseRows::from_dense(&[0.0; 6], 3).unwrap();
        assert_eq!(all_zero.non_zero_count(), 0);
        assert_eq!(all_zero.times_dense(&[1.0; 6], 2).unwrap(), vec![0.0; 4]);
        assert_eq!(SparseRows::from_dense(&[], 3).unwrap().density(), 0.0);
    }

    #[test]
    fn shapes_that_do_not_fit_are_errors_naming_them() {
        let error = SparseRows::from_dense(&[1.0; 7], 3).unwrap_err();
        assert!(
            matches!(
                error,
                ModelError::SparseShape {
                    values: 7,
                    columns: 3
                }
            ),
            "{error:?}"
        );
        assert!(error.to_string().contains("7 values"), "{error}");
        assert!(SparseRows::from_dense(&[1.0], 0).is_err());
        let sparse = SparseRows::from_dense(&[1.0; 6], 3).unwrap();
        let error = sparse.times_dense(&[1.0; 5], 2).unwrap_err();
        assert!(
            matches!(
                error,
                ModelError::ProductShape {
                    sparse_columns: 3,
                    dense_values: 5,
                    dense_columns: 2
                }
            ),
            "{error:?}"
        );
        assert!(sparse.times_dense(&[], 0).is_err());
        // A count of dense columns whose product with the sparse columns overflows is refused,
        // not a panic.
        assert!(sparse.times_dense(&[1.0; 6], usize::MAX).is_err());
    }
}
