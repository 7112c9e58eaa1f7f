//! The loader's pseudo-random generator: xoshiro256++ seeded through SplitMix64, both from
//! `rand_xoshiro`.
//!
//! The permutation of an epoch depends only on `(seed, epoch)`: a unit test pins the stream
//! against values drawn before the generators came from `rand_xoshiro`, so that an upgrade that
//! changed which batches a resumed run sees would fail it.

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::{SplitMix64, Xoshiro256PlusPlus};

/// Which use a generator is for, so that two samplers given the same seed and epoch do not
/// draw the same stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stream {
    Shuffle = 1,
    Subset = 2,
    WeightedWithReplacement = 3,
    WeightedWithoutReplacement = 4,
    Distributed = 5,
    /// The loader's own per-sample augmentation (crop offsets, flips).
    Augmentation = 6,
    /// A user's [`SampleTransform`](crate::SampleTransform).
    Transform = 7,
}

/// The seed and the epoch mixed into one word (each through SplitMix64, so that nearby seeds
/// and epochs give unrelated words, and rotated so that the two do not play symmetric roles).
fn mixed_seed_and_epoch(seed: u64, epoch: u64) -> u64 {
    let seed_word = SplitMix64::seed_from_u64(seed).next_u64();
    let epoch_word = SplitMix64::seed_from_u64(epoch ^ 0xD1B5_4A32_D192_ED03).next_u64();
    seed_word ^ epoch_word.rotate_left(17)
}

/// xoshiro256++ (Blackman and Vigna), a fast generator with a 256-bit state, with the bounded
/// draws the samplers need.
#[derive(Clone, Debug)]
pub(crate) struct EpochRng {
    generator: Xoshiro256PlusPlus,
}

impl EpochRng {
    /// The generator for `epoch` of a run seeded with `seed`, for the use `stream`.
    pub(crate) fn new(seed: u64, epoch: u64, stream: Stream) -> Self {
        Self::from_mixed_word(mixed_seed_and_epoch(seed, epoch) ^ (stream as u64))
    }

    /// The generator of sample `index` in `epoch` of a run seeded with `seed`, for the use
    /// `stream`: a pure function of the four, whichever thread asks and whenever.
    pub(crate) fn for_sample(seed: u64, epoch: u64, index: u64, stream: Stream) -> Self {
        let index_word = SplitMix64::seed_from_u64(index ^ 0x8CB9_2BA7_2F3D_8DD7).next_u64();
        Self::from_mixed_word(
            mixed_seed_and_epoch(seed, epoch) ^ index_word.rotate_left(41) ^ (stream as u64),
        )
    }

    /// Expands one mixed word into xoshiro's 256-bit state.
    fn from_mixed_word(word: u64) -> Self {
        let mut state_words = SplitMix64::seed_from_u64(word);
        let mut state = [0u8; 32];
        for chunk in state.chunks_exact_mut(8) {
            chunk.copy_from_slice(&state_words.next_u64().to_le_bytes());
        }
        // SplitMix64 output is a bijection of its counter, so four consecutive outputs are never
        // all zero (the one forbidden xoshiro state, which `from_seed` would replace).
        Self {
            generator: Xoshiro256PlusPlus::from_seed(state),
        }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.generator.next_u64()
    }

    /// A uniform integer in `0..bound` (Lemire's nearly divisionless method, unbiased).
    ///
    /// `bound` must be at least 1.
    pub(crate) fn below(&mut self, bound: usize) -> usize {
        debug_assert!(bound > 0);
        let bound = bound as u64;
        let mut product = u128::from(self.next_u64()) * u128::from(bound);
        let mut low = product as u64;
        if low < bound {
            let threshold = bound.wrapping_neg() % bound;
            while low < threshold {
                product = u128::from(self.next_u64()) * u128::from(bound);
                low = product as u64;
            }
        }
        (product >> 64) as usize
    }

    /// A uniform `f64` in `[0, 1)` with 53 random bits.
    pub(crate) fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Shuffles `values` in place (Fisher-Yates).
    pub(crate) fn shuffle<T>(&mut self, values: &mut [T]) {
        for last in (1..values.len()).rev() {
            let other = self.below(last + 1);
            values.swap(last, other);
        }
    }
}

/// The random stream of one sample in one epoch, handed to a
/// [`SampleTransform`](crate::SampleTransform).
///
/// A pure function of the run's seed, the epoch and the sample's index (xoshiro256++ seeded
/// from a mix of the three): a transform that draws only from it makes the same batches with any
/// number of workers and after a resume. It lives on the stack; making one allocates nothing.
///
/// ```
/// use reclaim_loader::SampleRng;
///
/// let mut first = SampleRng::for_sample(42, 3, 17);
/// let mut again = SampleRng::for_sample(42, 3, 17);
/// assert_eq!(first.next_u64(), again.next_u64());
/// assert!(first.below(10) < 10);
/// assert!((0.0..1.0).contains(&first.unit_f32()));
/// ```
#[derive(Clone, Debug)]
pub struct SampleRng {
    generator: EpochRng,
}

impl SampleRng {
    /// The stream a [`SampleTransform`](crate::SampleTransform) gets for sample `index` of
    /// `epoch` in a run seeded with `seed` (independent of the loader's own augmentation
    /// stream).
    pub fn for_sample(seed: u64, epoch: u64, index: usize) -> Self {
        Self::with_stream(seed, epoch, index, Stream::Transform)
    }

    pub(crate) fn with_stream(seed: u64, epoch: u64, index: usize, stream: Stream) -> Self {
        Self {
            generator: EpochRng::for_sample(seed, epoch, index as u64, stream),
        }
    }

    /// 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.generator.next_u64()
    }

    /// A uniform integer in `0..bound` (unbiased); 0 when `bound` is 0.
    pub fn below(&mut self, bound: usize) -> usize {
        if bound == 0 {
            0
        } else {
            self.generator.below(bound)
        }
    }

    /// A uniform `f32` in `[0, 1)` with 24 random bits.
    pub fn unit_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / (1u32 << 24) as f32)
    }

    /// `true` with probability one half (the top bit of a draw).
    pub fn coin(&mut self) -> bool {
        self.next_u64() >> 63 == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_and_epoch_give_the_same_stream() {
        let mut first = EpochRng::new(42, 3, Stream::Shuffle);
        let mut second = EpochRng::new(42, 3, Stream::Shuffle);
        for _ in 0..100 {
            assert_eq!(first.next_u64(), second.next_u64());
        }
    }

    #[test]
    fn epochs_seeds_and_streams_give_different_streams() {
        let draw = |seed, epoch, stream| {
            let mut rng = EpochRng::new(seed, epoch, stream);
            (0..4).map(|_| rng.next_u64()).collect::<Vec<_>>()
        };
        let base = draw(42, 3, Stream::Shuffle);
        assert_ne!(base, draw(42, 4, Stream::Shuffle));
        assert_ne!(base, draw(43, 3, Stream::Shuffle));
        assert_ne!(base, draw(42, 3, Stream::Subset));
        // Seed and epoch do not play symmetric roles.
        assert_ne!(draw(1, 2, Stream::Shuffle), draw(2, 1, Stream::Shuffle));
    }

    #[test]
    fn below_stays_in_range_and_reaches_every_value() {
        let mut rng = EpochRng::new(7, 0, Stream::Shuffle);
        let mut seen = [0usize; 7];
        for _ in 0..7000 {
            let value = rng.below(7);
            seen[value] += 1;
        }
        // Each bucket expects 1000; a fair generator stays well within 800..1200.
        assert!(
            seen.iter().all(|&count| (800..1200).contains(&count)),
            "{seen:?}"
        );
        assert_eq!(rng.below(1), 0);
    }

    #[test]
    fn unit_f64_is_in_the_half_open_unit_interval() {
        let mut rng = EpochRng::new(9, 9, Stream::WeightedWithReplacement);
        let mut sum = 0.0;
        for _ in 0..10_000 {
            let value = rng.unit_f64();
            assert!((0.0..1.0).contains(&value));
            sum += value;
        }
        let mean = sum / 10_000.0;
        assert!((0.48..0.52).contains(&mean), "{mean}");
    }

    #[test]
    fn shuffle_is_a_permutation_and_moves_things() {
        let mut rng = EpochRng::new(1, 1, Stream::Shuffle);
        let mut values: Vec<usize> = (0..1000).collect();
        rng.shuffle(&mut values);
        assert_ne!(values, (0..1000).collect::<Vec<_>>());
        values.sort_unstable();
        assert_eq!(values, (0..1000).collect::<Vec<_>>());
    }

    /// Values drawn by the hand-written xoshiro256++ and SplitMix64 this file held before it
    /// used `rand_xoshiro`: a resumed run (and every recorded run) sees the same batches only
    /// if these never change.
    #[test]
    fn streams_are_those_of_the_original_generator() {
        let mut rng = EpochRng::new(42, 3, Stream::Shuffle);
        let words: Vec<u64> = (0..4).map(|_| rng.next_u64()).collect();
        assert_eq!(
            words,
            [
                2_555_264_139_270_342_586,
                2_104_572_911_839_114_385,
                14_679_998_654_153_878_584,
                17_381_605_412_282_607_148
            ]
        );
        let mut rng = EpochRng::new(7, 0, Stream::Subset);
        let drawn: Vec<usize> = (0..8).map(|_| rng.below(10)).collect();
        assert_eq!(drawn, [8, 0, 2, 1, 2, 9, 7, 2]);
        let mut rng = EpochRng::new(1, 2, Stream::Shuffle);
        let mut values: Vec<usize> = (0..10).collect();
        rng.shuffle(&mut values);
        assert_eq!(values, [0, 8, 3, 5, 6, 4, 2, 7, 1, 9]);
        let mut rng = EpochRng::new(9, 9, Stream::WeightedWithReplacement);
        assert_eq!(rng.unit_f64(), 0.8474310180606185);
        assert_eq!(rng.unit_f64(), 0.05323683511382815);
    }

    #[test]
    fn sample_streams_depend_on_seed_epoch_index_and_use_only() {
        let draw = |seed, epoch, index, stream| {
            let mut rng = SampleRng::with_stream(seed, epoch, index, stream);
            (0..4).map(|_| rng.next_u64()).collect::<Vec<_>>()
        };
        let base = draw(42, 3, 17, Stream::Augmentation);
        assert_eq!(base, draw(42, 3, 17, Stream::Augmentation));
        assert_ne!(base, draw(43, 3, 17, Stream::Augmentation));
        assert_ne!(base, draw(42, 4, 17, Stream::Augmentation));
        assert_ne!(base, draw(42, 3, 18, Stream::Augmentation));
        assert_ne!(base, draw(42, 3, 17, Stream::Transform));
        assert_ne!(
            draw(1, 2, 0, Stream::Augmentation),
            draw(2, 1, 0, Stream::Augmentation)
        );
        assert_ne!(
            draw(0, 1, 2, Stream::Augmentation),
            draw(0, 2, 1, Stream::Augmentation)
        );
        let mut public = SampleRng::for_sample(42, 3, 17);
        assert_eq!(public.next_u64(), draw(42, 3, 17, Stream::Transform)[0]);
        assert_eq!(public.below(0), 0);
    }

    #[test]
    fn sample_draws_stay_in_range() {
        let mut rng = SampleRng::for_sample(5, 6, 7);
        let mut heads = 0;
        for _ in 0..4000 {
            assert!(rng.below(9) < 9);
            let unit = rng.unit_f32();
            assert!((0.0..1.0).contains(&unit));
            heads += usize::from(rng.coin());
        }
        assert!((1800..2200).contains(&heads), "{heads}");
    }
}
