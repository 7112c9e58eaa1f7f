//! Fresh output buffers that are first written, in parallel, by the threads that fill them.
//!
//! A large `vec![0.0; n]` is `calloc`: for a fresh mapping no page is written, so the first
//! read of each page maps the shared zero page and the first write after it copies that page
//! and flushes the old mapping from every core's TLB (an inter-processor interrupt). A kernel
//! that accumulates into its output (a scatter, a fold) reads before it writes, and pays both
//! faults and the interrupt for every page. Zeroing each part of the buffer on the thread that
//! then accumulates into it takes one write fault per page instead, spread over the threads,
//! and the zeroing itself runs in parallel rather than in `calloc` on the calling thread.

use alloc::vec::Vec;
use core::mem::MaybeUninit;

/// A vector of `len` elements, each part of `part_len` elements (the last one shorter) set to
/// `zero` and then handed to `work(part_index, part)`, on rayon's pool where compiled in and
/// `parallel` is true.
pub(crate) fn zeroed_parts<T: Copy + Send + Sync>(
    len: usize,
    part_len: usize,
    zero: T,
    parallel: bool,
    work: impl Fn(usize, &mut [T]) + Send + Sync,
) -> Vec<T> {
    // The second vector holds `()`, which takes no memory: one vector's parts, through the same
    // code as the pairs.
    zeroed_part_pairs(len, part_len, (zero, ()), parallel, |index, (part, _)| work(index, part)).0
}

/// Two vectors of `len` elements cut into parts of `part_len` alike (the last one shorter), each
/// pair of parts set to `zeros` and then handed to `work(part_index, (first_part, second_part))`,
/// on rayon's pool where compiled in and `parallel` is true: a kernel that writes a value and its
/// index for each output element.
pub(crate) fn zeroed_part_pairs<A: Copy + Send + Sync, B: Copy + Send + Sync>(
    len: usize,
    part_len: usize,
    zeros: (A, B),
    parallel: bool,
    work: impl Fn(usize, (&mut [A], &mut [B])) + Send + Sync,
) -> (Vec<A>, Vec<B>) {
    let (mut first, mut second): (Vec<A>, Vec<B>) = (Vec::with_capacity(len), Vec::with_capacity(len));
    if len == 0 {
        return (first, second);
    }
    let part_len = part_len.clamp(1, len);
    let run = |(index, (first, second)): (usize, (&mut [MaybeUninit<A>], &mut [MaybeUninit<B>]))| {
        first.iter_mut().for_each(|element| {
            element.write(zeros.0);
        });
        second.iter_mut().for_each(|element| {
            element.write(zeros.1);
        });
        // SAFETY: every element of both parts was initialized just above, and `MaybeUninit<X>`
        // has `X`'s layout.
        let parts = unsafe {
            (
                &mut *(first as *mut [MaybeUninit<A>] as *mut [A]),
                &mut *(second as *mut [MaybeUninit<B>] as *mut [B]),
            )
        };
        work(index, parts);
    };
    let first_spare = &mut first.spare_capacity_mut()[..len];
    let second_spare = &mut second.spare_capacity_mut()[..len];
    #[cfg(feature = "rayon")]
    if parallel {
        use rayon::prelude::*;
        first_spare
            .par_chunks_mut(part_len)
            .zip(second_spare.par_chunks_mut(part_len))
            .enumerate()
            .for_each(run);
    } else {
        first_spare.chunks_mut(part_len).zip(second_spare.chunks_mut(part_len)).enumerate().for_each(run);
    }
    #[cfg(not(feature = "rayon"))]
    {
        let _ = parallel;
        first_spare.chunks_mut(part_len).zip(second_spare.chunks_mut(part_len)).enumerate().for_each(run);
    }
    // SAFETY: the parts of both cover `0..len`, and each was initialized by `run` (a panic in
    // `work` unwinds past these lines, leaving the vectors empty).
    unsafe {
        first.set_len(len);
        second.set_len(len);
    }
    (first, second)
}

#[cfg(test)]
mod tests {
    use super::{zeroed_part_pairs, zeroed_parts};

    #[test]
    fn both_vectors_start_at_zero_part_by_part() {
        let (values, indices) = zeroed_part_pairs(7, 3, (0.0f32, 0i64), true, |index, (values, indices)| {
            assert!(values.iter().all(|&value| value == 0.0) && indices.iter().all(|&i| i == 0));
            assert_eq!(values.len(), indices.len());
            values[0] = index as f32 + 1.0;
            indices[values.len() - 1] = index as i64 + 10;
        });
        assert_eq!(values, [1.0, 0.0, 0.0, 2.0, 0.0, 0.0, 3.0]);
        assert_eq!(indices, [0, 0, 10, 0, 0, 11, 12]);
        let (empty_values, empty_indices) = zeroed_part_pairs(0, 3, (0u8, 0u8), true, |_, _| unreachable!());
        assert!(empty_values.is_empty() && empty_indices.is_empty());
    }

    #[test]
    fn every_part_starts_at_zero_and_keeps_what_work_wrote() {
        for parallel in [false, true] {
            let data = zeroed_parts(10, 4, 0u32, parallel, |index, part| {
                assert!(part.iter().all(|&value| value == 0));
                part[0] = index as u32 + 1;
            });
            assert_eq!(data, [1, 0, 0, 0, 2, 0, 0, 0, 3, 0]);
        }
        assert!(zeroed_parts(0, 4, 0u32, true, |_, _| unreachable!()).is_empty());
    }
}
