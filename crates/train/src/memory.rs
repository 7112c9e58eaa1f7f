//! Memory measurement: the process's resident set, live heap bytes counted by an allocator,
//! the bytes of dataset files mapped into the address space, and the device's memory pool.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use burn::tensor::Device;
use serde::{Deserialize, Serialize};

static LIVE_HEAP_BYTES: AtomicUsize = AtomicUsize::new(0);
static PEAK_HEAP_BYTES: AtomicUsize = AtomicUsize::new(0);
static COUNTING_ALLOCATOR_INSTALLED: AtomicBool = AtomicBool::new(false);

/// A global allocator that counts live heap bytes, wrapping the system allocator.
///
/// Install it in a binary to make [`live_heap_bytes`] report numbers:
///
/// ```
/// #[global_allocator]
/// static ALLOCATOR: reclaim_train::CountingAllocator = reclaim_train::CountingAllocator;
/// ```
///
/// The cost is two relaxed atomic additions per allocation.
pub struct CountingAllocator;

impl CountingAllocator {
    fn record_allocation(size: usize) {
        let live = LIVE_HEAP_BYTES.fetch_add(size, Ordering::Relaxed) + size;
        PEAK_HEAP_BYTES.fetch_max(live, Ordering::Relaxed);
        if !COUNTING_ALLOCATOR_INSTALLED.load(Ordering::Relaxed) {
            COUNTING_ALLOCATOR_INSTALLED.store(true, Ordering::Relaxed);
        }
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract is upheld by `System`; the counters are plain atomics.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            Self::record_allocation(layout.size());
        }
        pointer
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `alloc_zeroed`'s contract.
        let pointer = unsafe { System.alloc_zeroed(layout) };
        if !pointer.is_null() {
            Self::record_allocation(layout.size());
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged; `pointer` was allocated by `System` with `layout`.
        unsafe { System.dealloc(pointer, layout) };
        LIVE_HEAP_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `realloc`'s contract.
        let new_pointer = unsafe { System.realloc(pointer, layout, new_size) };
        if !new_pointer.is_null() {
            LIVE_HEAP_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
            Self::record_allocation(new_size);
        }
        new_pointer
    }
}

/// Live heap bytes, or `None` when no [`CountingAllocator`] is installed in this program.
pub fn live_heap_bytes() -> Option<u64> {
    COUNTING_ALLOCATOR_INSTALLED
        .load(Ordering::Relaxed)
        .then(|| LIVE_HEAP_BYTES.load(Ordering::Relaxed) as u64)
}

/// Waits until the live heap stops changing (the same count twice, 250 µs apart; at most 20
/// tries, 5 ms), so that a measurement taken right after a release step does not catch a
/// backend's pool thread still dropping the state of a task whose result the caller already
/// has. Returns at once without a [`CountingAllocator`].
pub fn wait_for_steady_live_heap() {
    let Some(mut last) = live_heap_bytes() else {
        return;
    };
    for _ in 0..20 {
        std::thread::sleep(std::time::Duration::from_micros(250));
        let now = live_heap_bytes().unwrap_or(last);
        if now == last {
            return;
        }
        last = now;
    }
}

/// The highest live heap bytes seen so far, or `None` without a [`CountingAllocator`].
pub fn peak_heap_bytes() -> Option<u64> {
    COUNTING_ALLOCATOR_INSTALLED
        .load(Ordering::Relaxed)
        .then(|| PEAK_HEAP_BYTES.load(Ordering::Relaxed) as u64)
}

/// Resident and peak resident bytes of this process, from `/proc/self/status`
/// (`VmRSS`, `VmHWM`). `None` where the file does not exist (not Linux).
pub fn resident_bytes() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .map(|kibibytes| kibibytes * 1024)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// Bytes of address space mapped from any of `files`, read from `/proc/self/maps`.
/// Zero when none of them is mapped (or where the file does not exist).
pub fn mapped_bytes_of(files: &[PathBuf]) -> u64 {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return 0;
    };
    let canonical: Vec<PathBuf> = files
        .iter()
        .map(|file| file.canonicalize().unwrap_or_else(|_| file.clone()))
        .collect();
    maps.lines()
        .filter_map(|line| {
            // address perms offset dev inode pathname
            let mut fields = line.splitn(6, ' ');
            let range = fields.next()?;
            let pathname = fields.nth(4)?.trim();
            let path = Path::new(pathname);
            if !canonical.iter().any(|file| file == path) {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            let start = u64::from_str_radix(start, 16).ok()?;
            let end = u64::from_str_radix(end, 16).ok()?;
            Some(end - start)
        })
        .sum()
}

/// Bytes of address space mapped from files inside `folder` (canonical path), read from
/// `/proc/self/maps`. Zero when none is mapped (or where the file does not exist).
pub fn mapped_bytes_under(folder: &Path) -> u64 {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return 0;
    };
    maps.lines()
        .filter_map(|line| {
            let mut fields = line.splitn(6, ' ');
            let range = fields.next()?;
            let pathname = fields.nth(4)?.trim();
            if !Path::new(pathname).starts_with(folder) {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            let start = u64::from_str_radix(start, 16).ok()?;
            let end = u64::from_str_radix(end, 16).ok()?;
            Some(end - start)
        })
        .sum()
}

/// The memory of the process and the device at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemorySnapshot {
    /// Seconds since the measurement started (set by the caller; 0 for a lone snapshot).
    pub seconds: f64,
    /// Resident set size (`VmRSS`).
    pub resident_bytes: Option<u64>,
    /// Peak resident set size so far (`VmHWM`).
    pub peak_resident_bytes: Option<u64>,
    /// Live heap bytes, where a [`CountingAllocator`] is installed.
    pub live_heap_bytes: Option<u64>,
    /// Bytes of the dataset's files mapped into the address space.
    pub mapped_dataset_bytes: u64,
    /// Bytes in use in the device's memory pool, where the backend has one.
    pub device_bytes_in_use: Option<u64>,
    /// Bytes the device's memory pool holds reserved, where the backend has one.
    pub device_bytes_reserved: Option<u64>,
}

impl MemorySnapshot {
    /// Measures now. Mappings of files under `dataset_folder` (a canonical path) count as
    /// dataset bytes.
    pub fn take_under(device: Option<&Device>, dataset_folder: &Path) -> Self {
        let resident = resident_bytes();
        let pool = device.and_then(Device::memory_pool_usage);
        MemorySnapshot {
            seconds: 0.0,
            resident_bytes: resident.map(|(now, _)| now),
            peak_resident_bytes: resident.map(|(_, peak)| peak),
            live_heap_bytes: live_heap_bytes(),
            mapped_dataset_bytes: mapped_bytes_under(dataset_folder),
            device_bytes_in_use: pool.map(|usage| usage.bytes_in_use),
            device_bytes_reserved: pool.map(|usage| usage.bytes_reserved),
        }
    }

    /// Measures now. `dataset_files` are the files whose mappings count as dataset bytes.
    pub fn take(device: Option<&Device>, dataset_files: &[PathBuf]) -> Self {
        let resident = resident_bytes();
        let pool = device.and_then(Device::memory_pool_usage);
        MemorySnapshot {
            seconds: 0.0,
            resident_bytes: resident.map(|(now, _)| now),
            peak_resident_bytes: resident.map(|(_, peak)| peak),
            live_heap_bytes: live_heap_bytes(),
            mapped_dataset_bytes: mapped_bytes_of(dataset_files),
            device_bytes_in_use: pool.map(|usage| usage.bytes_in_use),
            device_bytes_reserved: pool.map(|usage| usage.bytes_reserved),
        }
    }
}

/// Formats a byte count for people: `1.5 MiB`, `731.0 MiB`, `12 B`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = "B";
    for next in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    format!("{value:.1} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn resident_bytes_are_positive_and_peak_is_at_least_current() {
        let (now, peak) = resident_bytes().expect("Linux has /proc/self/status");
        assert!(now > 0);
        assert!(peak >= now);
    }

    #[test]
    fn a_mapped_file_is_counted_and_then_gone() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("mapped.bin");
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(&vec![7u8; 3 * 4096]).unwrap();
        drop(file);
        let files = vec![path.clone()];
        assert_eq!(mapped_bytes_of(&files), 0);
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: the file is private to this test's temporary folder and nobody writes it.
        let map = unsafe { memmap2::Mmap::map(&file).unwrap() };
        assert_eq!(map[0], 7);
        assert_eq!(mapped_bytes_of(&files), 3 * 4096);
        let canonical_folder = folder.path().canonicalize().unwrap();
        assert_eq!(mapped_bytes_under(&canonical_folder), 3 * 4096);
        drop(map);
        assert_eq!(mapped_bytes_of(&files), 0);
        assert_eq!(mapped_bytes_under(&canonical_folder), 0);
    }

    #[test]
    fn byte_counts_read_well() {
        assert_eq!(format_bytes(12), "12 B");
        assert_eq!(format_bytes(1536), "1.5 KiB");
        assert_eq!(format_bytes(731 * 1024 * 1024), "731.0 MiB");
    }
}
