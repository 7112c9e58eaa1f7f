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
    let mut data: Vec<T> = Vec::with_capacity(len);
    if len == 0 {
        return data;
    }
    let part_len = part_len.clamp(1, len);
    let run = |(index, part): (usize, &mut [MaybeUninit<T>])| {
        part.iter_mut().for_each(|element| {
            element.write(zero);
        });
        // SAFETY: every element of `part` was initialized just above, and `MaybeUninit<T>`
        // has `T`'s layout.
        let part = unsafe { &mut *(part as *mut [MaybeUninit<T>] as *mut [T]) };
        work(index, part);
    };
    let spare = &mut data.spare_capacity_mut()[..len];
    #[cfg(feature = "rayon")]
    if parallel {
        use rayon::prelude::*;
        spare.par_chunks_mut(part_len).enumerate().for_each(run);
    } else {
        spare.chunks_mut(part_len).enumerate().for_each(run);
    }
    #[cfg(not(feature = "rayon"))]
    {
        let _ = parallel;
        spare.chunks_mut(part_len).enumerate().for_each(run);
    }
    // SAFETY: the parts cover `0..len`, and each was initialized by `run` (a panic in `work`
    // unwinds past this line, leaving the vector empty).
    unsafe { data.set_len(len) };
    data
}

#[cfg(test)]
mod tests {
    use super::zeroed_parts;

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
