//! Element-by-element loops over contiguous slices, split across rayon's pool when the slice is
//! large.
//!
//! Flex's unary, binary and scalar operations (ReLU and its gradient, the optimizer's updates,
//! `exp`, comparisons) ran their contiguous paths on the calling thread whatever the size, so in
//! a training step the other cores sat idle through every one of them. Each element's result
//! depends on that element alone, so splitting the slice into parts gives the same values, bit
//! for bit, in any order. Below [`PARALLEL_THRESHOLD`](super::PARALLEL_THRESHOLD) elements, the
//! crate's threshold for its other parallel loops (not measured again for these), the loop stays
//! on the calling thread.
//!
//! The allocating forms write each part of the fresh output on the thread that computes it,
//! so its pages are first touched there (ops/fresh.rs says why that matters).

use alloc::vec::Vec;
use core::mem::MaybeUninit;

/// Elements per rayon task: 128 KiB of `f32`, so that a slice at the threshold makes 8 tasks
/// for the pool's threads to share. Not tuned: the CNN step's measured gain came with this value,
/// and no other was tried.
#[cfg(feature = "rayon")]
const ELEMENTS_PER_TASK: usize = 32 * 1024;

/// Whether a loop over `len` elements is split across rayon's pool.
#[cfg(feature = "rayon")]
#[inline]
fn runs_in_parallel(len: usize) -> bool {
    len >= super::PARALLEL_THRESHOLD && rayon::current_num_threads() > 1
}

/// `data[i] = op(data[i])` for every element.
pub(crate) fn map_in_place<E, Op>(data: &mut [E], op: Op)
where
    E: Copy + Send + Sync,
    Op: Fn(E) -> E + Sync,
{
    let run = |part: &mut [E]| part.iter_mut().for_each(|value| *value = op(*value));
    #[cfg(feature = "rayon")]
    if runs_in_parallel(data.len()) {
        use rayon::prelude::*;
        data.par_chunks_mut(ELEMENTS_PER_TASK).for_each(run);
        return;
    }
    run(data);
}

/// `data[i] = op(data[i], other[i])` for every element of the shorter of the two.
pub(crate) fn zip_in_place<E, R, Op>(data: &mut [E], other: &[R], op: Op)
where
    E: Copy + Send + Sync,
    R: Copy + Send + Sync,
    Op: Fn(E, R) -> E + Sync,
{
    let len = data.len().min(other.len());
    let (data, other) = (&mut data[..len], &other[..len]);
    let run = |(part, other_part): (&mut [E], &[R])| {
        part.iter_mut()
            .zip(other_part)
            .for_each(|(value, &other_value)| *value = op(*value, other_value));
    };
    #[cfg(feature = "rayon")]
    if runs_in_parallel(len) {
        use rayon::prelude::*;
        data.par_chunks_mut(ELEMENTS_PER_TASK)
            .zip(other.par_chunks(ELEMENTS_PER_TASK))
            .for_each(run);
        return;
    }
    run((data, other));
}

/// A new vector of `op(source[i])`.
pub(crate) fn map_collect<E, R, Op>(source: &[E], op: Op) -> Vec<R>
where
    E: Copy + Send + Sync,
    R: Send + Sync,
    Op: Fn(E) -> R + Sync,
{
    let run = |(output, input): (&mut [MaybeUninit<R>], &[E])| {
        output.iter_mut().zip(input).for_each(|(slot, &value)| {
            slot.write(op(value));
        });
    };
    // SAFETY: the closure zips the `source.len()` slots with `source`'s elements, in parts of
    // equal length on both sides, and `run` writes one value per pair: every slot is written.
    unsafe {
        filled(source.len(), |output| {
            #[cfg(feature = "rayon")]
            if runs_in_parallel(source.len()) {
                use rayon::prelude::*;
                output
                    .par_chunks_mut(ELEMENTS_PER_TASK)
                    .zip(source.par_chunks(ELEMENTS_PER_TASK))
                    .for_each(run);
                return;
            }
            run((output, source));
        })
    }
}

/// A new vector of `op(lhs[i], rhs[i])`, as long as the shorter of the two.
pub(crate) fn zip_collect<A, B, R, Op>(lhs: &[A], rhs: &[B], op: Op) -> Vec<R>
where
    A: Copy + Send + Sync,
    B: Copy + Send + Sync,
    R: Send + Sync,
    Op: Fn(A, B) -> R + Sync,
{
    let len = lhs.len().min(rhs.len());
    let (lhs, rhs) = (&lhs[..len], &rhs[..len]);
    let run = |output: &mut [MaybeUninit<R>], lhs: &[A], rhs: &[B]| {
        for ((slot, &a), &b) in output.iter_mut().zip(lhs).zip(rhs) {
            slot.write(op(a, b));
        }
    };
    // SAFETY: `lhs` and `rhs` were cut to `len`; the closure zips the `len` slots with both, in
    // parts of equal length on every side, and `run` writes one value per triple.
    unsafe {
        filled(len, |output| {
            #[cfg(feature = "rayon")]
            if runs_in_parallel(len) {
                use rayon::prelude::*;
                output
                    .par_chunks_mut(ELEMENTS_PER_TASK)
                    .zip(
                        lhs.par_chunks(ELEMENTS_PER_TASK)
                            .zip(rhs.par_chunks(ELEMENTS_PER_TASK)),
                    )
                    .for_each(|(output, (lhs, rhs))| run(output, lhs, rhs));
                return;
            }
            run(output, lhs, rhs);
        })
    }
}

/// A vector of `len` elements, every one of them written by `fill`.
///
/// # Safety
///
/// `fill` must initialize every slot of the slice it is given (`len` of them) before it returns.
/// A panic inside it is sound: it unwinds past the length's update, leaving the vector empty.
unsafe fn filled<R>(len: usize, fill: impl FnOnce(&mut [MaybeUninit<R>])) -> Vec<R> {
    let mut output = Vec::with_capacity(len);
    fill(&mut output.spare_capacity_mut()[..len]);
    // SAFETY: the caller guarantees that `fill` initialized all `len` slots.
    unsafe { output.set_len(len) };
    output
}

#[cfg(test)]
mod tests {
    use super::{map_collect, map_in_place, zip_collect, zip_in_place};
    use alloc::vec::Vec;

    /// Empty, short, and past the parallel threshold (256 Ki elements) with a last part shorter
    /// than the others.
    const LENGTHS: [usize; 4] = [0, 7, 1000, 3 * 256 * 1024 + 12_345];

    fn ramp(len: usize) -> Vec<f32> {
        (0..len).map(|index| (index % 977) as f32 - 400.5).collect()
    }

    #[test]
    fn in_place_loops_equal_the_serial_loop_at_every_element() {
        for len in LENGTHS {
            let source = ramp(len);
            let mut mapped = source.clone();
            map_in_place(&mut mapped, |value| value.max(0.0) * 3.0);
            let expected: Vec<f32> = source.iter().map(|&value| value.max(0.0) * 3.0).collect();
            assert_eq!(mapped, expected, "length {len}");

            let other: Vec<i32> = (0..len as i32).rev().collect();
            let mut zipped = source.clone();
            zip_in_place(&mut zipped, &other, |value, other| value * 2.0 + other as f32);
            let expected: Vec<f32> = source
                .iter()
                .zip(&other)
                .map(|(&value, &other)| value * 2.0 + other as f32)
                .collect();
            assert_eq!(zipped, expected, "length {len}");
        }
    }

    #[test]
    fn collecting_loops_equal_the_serial_loop_at_every_element() {
        for len in LENGTHS {
            let source = ramp(len);
            let mapped: Vec<i64> = map_collect(&source, |value| value as i64 * 5);
            let expected: Vec<i64> = source.iter().map(|&value| value as i64 * 5).collect();
            assert_eq!(mapped, expected, "length {len}");

            let other = ramp(len + 3);
            let zipped: Vec<bool> = zip_collect(&source, &other[3..], |a, b| a > b);
            let expected: Vec<bool> = source.iter().zip(&other[3..]).map(|(&a, &b)| a > b).collect();
            assert_eq!(zipped, expected, "length {len}");
        }
    }

    #[test]
    fn zipped_loops_stop_at_the_shorter_operand() {
        let mut data = [1.0f32; 5];
        zip_in_place(&mut data, &[2.0f32; 3], |a, b| a + b);
        assert_eq!(data, [3.0, 3.0, 3.0, 1.0, 1.0]);
        assert_eq!(zip_collect(&[1u8, 2, 3], &[10u8, 20], |a, b| a + b), [11, 22]);
    }
}
