//! Buffer pool and memory accounting.
//!
//! Every byte the loader allocates for batches, epoch orders and queues is wrapped in a
//! [`Tracked`] value that adds its size to the loader's [`MemoryAccounting`] when it is made and
//! takes it off when it is dropped, whoever drops it: the pool, a batch, a worker unwinding, or
//! a tensor that borrowed a buffer. The report can therefore not drift from what is held.

use std::mem;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::convert::PixelFormat;

/// What a loader holds on the heap now, and the most it ever held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MemoryReport {
    /// Bytes held now: `buffer_bytes + order_bytes + queue_bytes`.
    pub current_bytes: usize,
    /// The largest `current_bytes` seen since the loader was made.
    pub peak_bytes: usize,
    /// Batch buffers (pixels, labels, indices): free in a pool, queued, lent to a batch or to a
    /// tensor.
    pub buffer_bytes: usize,
    /// The index order of the epochs in progress.
    pub order_bytes: usize,
    /// The slots of the prefetch queues of the epochs in progress.
    pub queue_bytes: usize,
}

/// What a tracked allocation is, for the report's breakdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Category {
    Buffer,
    Order,
    Queue,
}

/// Live byte counters of one loader, shared by its epochs, workers and lent buffers.
#[derive(Debug, Default)]
pub(crate) struct MemoryAccounting {
    current: AtomicUsize,
    peak: AtomicUsize,
    buffers: AtomicUsize,
    orders: AtomicUsize,
    queues: AtomicUsize,
}

impl MemoryAccounting {
    fn counter(&self, category: Category) -> &AtomicUsize {
        match category {
            Category::Buffer => &self.buffers,
            Category::Order => &self.orders,
            Category::Queue => &self.queues,
        }
    }

    pub(crate) fn add(&self, category: Category, bytes: usize) {
        self.counter(category).fetch_add(bytes, Ordering::Relaxed);
        let now = self.current.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    pub(crate) fn remove(&self, category: Category, bytes: usize) {
        self.counter(category).fetch_sub(bytes, Ordering::Relaxed);
        self.current.fetch_sub(bytes, Ordering::Relaxed);
    }

    pub(crate) fn report(&self) -> MemoryReport {
        MemoryReport {
            current_bytes: self.current.load(Ordering::Relaxed),
            peak_bytes: self.peak.load(Ordering::Relaxed),
            buffer_bytes: self.buffers.load(Ordering::Relaxed),
            order_bytes: self.orders.load(Ordering::Relaxed),
            queue_bytes: self.queues.load(Ordering::Relaxed),
        }
    }
}

/// Something whose heap size can be measured once, when it is tracked.
pub(crate) trait HeapSize: Default {
    fn heap_bytes(&self) -> usize;
}

impl<T> HeapSize for Vec<T> {
    fn heap_bytes(&self) -> usize {
        self.capacity() * size_of::<T>()
    }
}

impl HeapSize for () {
    fn heap_bytes(&self) -> usize {
        0
    }
}

/// A value whose heap bytes count in a loader's report for as long as it lives.
///
/// The value must not grow its allocation while tracked (the loader allocates every buffer at
/// its full size up front).
#[derive(Debug)]
pub(crate) struct Tracked<T: HeapSize> {
    value: T,
    bytes: usize,
    category: Category,
    accounting: Arc<MemoryAccounting>,
}

impl<T: HeapSize> Tracked<T> {
    pub(crate) fn new(value: T, category: Category, accounting: &Arc<MemoryAccounting>) -> Self {
        let bytes = value.heap_bytes();
        Self::with_bytes(value, bytes, category, accounting)
    }

    /// Tracks `bytes` that `value` does not own itself (for example a channel's slots).
    pub(crate) fn with_bytes(
        value: T,
        bytes: usize,
        category: Category,
        accounting: &Arc<MemoryAccounting>,
    ) -> Self {
        accounting.add(category, bytes);
        Self {
            value,
            bytes,
            category,
            accounting: Arc::clone(accounting),
        }
    }

    pub(crate) fn get(&self) -> &T {
        &self.value
    }

    pub(crate) fn get_mut(&mut self) -> &mut T {
        &mut self.value
    }

    /// Stops tracking and hands the value over (its bytes leave the report).
    pub(crate) fn into_untracked(mut self) -> T {
        mem::take(&mut self.value)
    }
}

impl<T: HeapSize> Drop for Tracked<T> {
    fn drop(&mut self) {
        self.accounting.remove(self.category, self.bytes);
        self.bytes = 0;
    }
}

/// The converted pixels of one batch.
#[derive(Debug)]
pub(crate) enum Pixels {
    F32(Vec<f32>),
    U8(Vec<u8>),
}

impl Default for Pixels {
    fn default() -> Self {
        Pixels::U8(Vec::new())
    }
}

impl HeapSize for Pixels {
    fn heap_bytes(&self) -> usize {
        match self {
            Pixels::F32(values) => values.heap_bytes(),
            Pixels::U8(values) => values.heap_bytes(),
        }
    }
}

/// The labels and sample indices of one batch.
#[derive(Debug, Default)]
pub(crate) struct SampleBuffers {
    pub(crate) labels: Vec<i64>,
    pub(crate) indices: Vec<usize>,
}

impl HeapSize for SampleBuffers {
    fn heap_bytes(&self) -> usize {
        self.labels.heap_bytes() + self.indices.heap_bytes()
    }
}

#[derive(Debug, Default)]
struct FreeLists {
    pixels: Vec<Tracked<Pixels>>,
    samples: Vec<Tracked<SampleBuffers>>,
    /// Once closed (the epoch is over) returned buffers are freed instead of kept.
    closed: bool,
}

/// The reusable buffers of one epoch, shared by its workers, its batches and the tensors its
/// buffers are lent to.
#[derive(Debug)]
pub(crate) struct BufferPool {
    accounting: Arc<MemoryAccounting>,
    format: PixelFormat,
    batch_size: usize,
    pixels_per_batch: usize,
    free: Mutex<FreeLists>,
}

impl BufferPool {
    /// A pool of buffers for batches of up to `batch_size` images of `pixels_per_image`.
    ///
    /// `batch_size * pixels_per_image` must not overflow (the loader checks it).
    pub(crate) fn new(
        accounting: Arc<MemoryAccounting>,
        format: PixelFormat,
        batch_size: usize,
        pixels_per_image: usize,
    ) -> Self {
        Self {
            accounting,
            format,
            batch_size,
            pixels_per_batch: batch_size * pixels_per_image,
            free: Mutex::new(FreeLists::default()),
        }
    }

    /// The free lists hold no invariant a panic could break half-way, so a poisoned lock is
    /// still usable.
    fn lock(&self) -> MutexGuard<'_, FreeLists> {
        self.free.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A pixel buffer of full-batch capacity, reused if one is free.
    pub(crate) fn take_pixels(&self) -> Tracked<Pixels> {
        if let Some(buffer) = self.lock().pixels.pop() {
            return buffer;
        }
        // Capacity only: batches are appended, never zero-filled first.
        let pixels = match self.format {
            PixelFormat::UnitF32
            | PixelFormat::NormalizedF32(_)
            | PixelFormat::ChannelNormalizedF32(_) => {
                Pixels::F32(Vec::with_capacity(self.pixels_per_batch))
            }
            PixelFormat::RawU8 => Pixels::U8(Vec::with_capacity(self.pixels_per_batch)),
        };
        Tracked::new(pixels, Category::Buffer, &self.accounting)
    }

    /// Label and index buffers of full-batch capacity, reused if some are free.
    pub(crate) fn take_samples(&self) -> Tracked<SampleBuffers> {
        if let Some(buffers) = self.lock().samples.pop() {
            return buffers;
        }
        let buffers = SampleBuffers {
            labels: Vec::with_capacity(self.batch_size),
            indices: Vec::with_capacity(self.batch_size),
        };
        Tracked::new(buffers, Category::Buffer, &self.accounting)
    }

    pub(crate) fn give_back_pixels(&self, pixels: Tracked<Pixels>) {
        let mut free = self.lock();
        if !free.closed {
            free.pixels.push(pixels);
        }
        // When closed, `pixels` is dropped here, after the lock guard's scope ends below.
        drop(free);
    }

    pub(crate) fn give_back_samples(&self, samples: Tracked<SampleBuffers>) {
        let mut free = self.lock();
        if !free.closed {
            free.samples.push(samples);
        }
        drop(free);
    }

    /// Frees every free buffer and makes later returns free theirs too.
    pub(crate) fn close(&self) {
        let (pixels, samples) = {
            let mut free = self.lock();
            free.closed = true;
            (mem::take(&mut free.pixels), mem::take(&mut free.samples))
        };
        drop(pixels);
        drop(samples);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracked_values_count_while_they_live() {
        let accounting = Arc::new(MemoryAccounting::default());
        let first = Tracked::new(vec![0u32; 100], Category::Buffer, &accounting);
        let second = Tracked::with_bytes((), 64, Category::Queue, &accounting);
        let report = accounting.report();
        assert_eq!(report.current_bytes, 464);
        assert_eq!(report.buffer_bytes, 400);
        assert_eq!(report.queue_bytes, 64);
        drop(first);
        let report = accounting.report();
        assert_eq!(report.current_bytes, 64);
        assert_eq!(report.peak_bytes, 464);
        second.into_untracked();
        assert_eq!(accounting.report().current_bytes, 0);
    }

    #[test]
    fn the_pool_reuses_buffers_and_frees_them_when_closed() {
        let accounting = Arc::new(MemoryAccounting::default());
        let pool = BufferPool::new(Arc::clone(&accounting), PixelFormat::UnitF32, 4, 10);
        let pixels = pool.take_pixels();
        let address = match pixels.get() {
            Pixels::F32(values) => values.as_ptr() as usize,
            Pixels::U8(_) => panic!("float format gives float buffers"),
        };
        assert_eq!(accounting.report().buffer_bytes, 4 * 10 * 4);
        pool.give_back_pixels(pixels);
        let again = pool.take_pixels();
        let address_again = match again.get() {
            Pixels::F32(values) => values.as_ptr() as usize,
            Pixels::U8(_) => unreachable!(),
        };
        assert_eq!(address, address_again);
        let samples = pool.take_samples();
        assert!(accounting.report().buffer_bytes > 160);
        pool.give_back_samples(samples);
        pool.close();
        // The free sample buffers went; the pixel buffer still lent out counts until returned.
        assert_eq!(accounting.report().buffer_bytes, 160);
        pool.give_back_pixels(again);
        assert_eq!(accounting.report().current_bytes, 0);
    }
}
