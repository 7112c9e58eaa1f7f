//! The batch's non-zero pixels, gathered by pixel: the fused step's input.
//!
//! Most of an MNIST image is background, pixels that are exactly 0 once scaled to [0, 1]
//! (docs/benchmarks.md, "Where the time went with Burn's step: a profile"). The hidden layer's
//! two large products, the forward `X·W` and the weight gradient `Xᵀ·dH`, would do several
//! times the work they need over the dense pixels: every zero pixel multiplies a whole row of
//! `W` (or of `dH`) by 0. [`SparseRows`] keeps a matrix's
//! non-zero values and their positions by row (compressed sparse rows); the step gathers the
//! batch *by pixel* ([`SparseRows::refill_transposed_from_dense`]): row `k` lists the images
//! whose pixel `k` is not 0, which is the order both of the step's hidden-layer kernels read.
//!
//! Hand-written rather than taken from a sparse-matrix crate: the gather is one pass over the
//! batch, a block of [`ZERO_TEST_BLOCK`] pixels tested for zero at once, into buffers kept
//! from step to step (no allocation per step); a general sparse-matrix type would build the
//! rows by image, then transpose them, allocating both. `benches/train_step.rs` times the
//! step it belongs to.

/// Values tested for zero at once when a dense matrix is read into sparse rows.
const ZERO_TEST_BLOCK: usize = 16;

/// A row-major matrix that keeps only its non-zero values (compressed sparse rows).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SparseRows {
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

/// A matrix the gather cannot take: `values` are not a whole number of rows of `columns`
/// columns, or the counts do not fit the gather's `u32` positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GatherShape {
    pub(crate) values: usize,
    pub(crate) columns: usize,
}

/// [`GatherShape`] unless `dense` is a whole number of rows of `columns` columns,
/// `columns` not 0, both counts fit in a `u32` with a block to spare, and a block's lists of
/// rows fit in a `usize` (a bound only a 32-bit target can reach).
fn check_dense_shape(dense: &[f32], columns: usize) -> Result<(), GatherShape> {
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
        return Err(GatherShape {
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
    /// The non-zero values of `dense`, a row-major matrix of `columns` columns, gathered by row:
    /// the plain form the one-pass gather is tested against.
    #[cfg(test)]
    pub(crate) fn from_dense(dense: &[f32], columns: usize) -> Result<Self, GatherShape> {
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
    ) -> Result<(), GatherShape> {
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
    #[cfg(test)]
    pub(crate) fn rows(&self) -> usize {
        self.row_starts.len() - 1
    }

    /// Columns of the matrix.
    pub(crate) fn columns(&self) -> usize {
        self.columns
    }

    /// Row `row`'s entries: their columns and their values.
    pub(crate) fn row(&self, row: usize) -> (&[u32], &[f32]) {
        let entries = self.row_starts[row]..self.row_starts[row + 1];
        (&self.column_indices[entries.clone()], &self.values[entries])
    }

    /// Non-zero values kept.
    #[cfg(test)]
    pub(crate) fn non_zero_count(&self) -> usize {
        self.values.len()
    }

    /// The transpose, also as sparse rows: row `c` holds column `c`'s non-zero values, in the
    /// order of their rows (a counting sort, linear in the entries).
    #[cfg(test)]
    pub(crate) fn transpose(&self) -> SparseRows {
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
                refused == Err(GatherShape { values, columns }),
                "{values} values, {columns} columns: {refused:?}"
            );
            assert_eq!((gathered.rows(), gathered.non_zero_count()), (0, 0));
        }
    }

    /// The transpose, the reference the one-pass gather is tested against, is the gather of the
    /// dense transpose, on the step's own shape.
    #[test]
    fn the_transpose_is_the_gather_of_the_dense_transpose() {
        let (rows, columns) = (64, 784);
        let dense = mostly_zero(rows, columns, 0.8, 3);
        let mut transposed = vec![0f32; dense.len()];
        for row in 0..rows {
            for column in 0..columns {
                transposed[column * rows + row] = dense[row * columns + column];
            }
        }
        let by_column = SparseRows::from_dense(&dense, columns).unwrap().transpose();
        assert_eq!((by_column.rows(), by_column.columns()), (columns, rows));
        assert_eq!(
            by_column,
            SparseRows::from_dense(&transposed, rows).unwrap()
        );
    }

    #[test]
    fn only_non_zero_values_are_kept_by_row_and_by_column() {
        let sparse = SparseRows::from_dense(&[0.0, 2.0, 0.0, 0.0, -1.0, 0.5], 3).unwrap();
        assert_eq!((sparse.rows(), sparse.columns()), (2, 3));
        assert_eq!(sparse.non_zero_count(), 3);
        assert_eq!(sparse.row(0), (&[1u32][..], &[2.0f32][..]));
        assert_eq!(sparse.row(1), (&[1u32, 2][..], &[-1.0f32, 0.5][..]));
        let by_column = sparse.transpose();
        assert_eq!((by_column.rows(), by_column.columns()), (3, 2));
        assert_eq!(by_column.row(0), (&[][..], &[][..]));
        assert_eq!(by_column.row(1), (&[0u32, 1][..], &[2.0f32, -1.0][..]));
        assert_eq!(by_column.row(2), (&[1u32][..], &[0.5f32][..]));
        let all_zero = SparseRows::from_dense(&[0.0; 6], 3).unwrap();
        assert_eq!(all_zero.non_zero_count(), 0);
        assert_eq!(
            SparseRows::from_dense(&[1.0; 7], 3).unwrap_err(),
            GatherShape {
                values: 7,
                columns: 3
            }
        );
        assert!(SparseRows::from_dense(&[1.0], 0).is_err());
    }
}
