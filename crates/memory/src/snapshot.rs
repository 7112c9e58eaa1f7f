//! [`MemorySnapshot`]: every measurement of this crate at one moment, the device's pool included.

#[cfg(feature = "device")]
use std::path::{Path, PathBuf};

#[cfg(feature = "device")]
use burn::tensor::Device;
use serde::{Deserialize, Serialize};

#[cfg(feature = "device")]
use crate::{live_heap_bytes, mapped_bytes_of, mapped_bytes_under, resident_bytes};

/// The memory of the process and the device at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemorySnapshot {
    /// Seconds since the measurement started (set by the caller; 0 for a lone snapshot).
    pub seconds: f64,
    /// Resident set size (`VmRSS`).
    pub resident_bytes: Option<u64>,
    /// Peak resident set size so far (`VmHWM`).
    pub peak_resident_bytes: Option<u64>,
    /// Live heap bytes, where a [`CountingAllocator`](crate::CountingAllocator) is installed.
    pub live_heap_bytes: Option<u64>,
    /// Bytes of the dataset's files mapped into the address space.
    pub mapped_dataset_bytes: u64,
    /// Bytes in use in the device's memory pool, where the backend has one.
    pub device_bytes_in_use: Option<u64>,
    /// Bytes the device's memory pool holds reserved, where the backend has one.
    pub device_bytes_reserved: Option<u64>,
}

#[cfg(feature = "device")]
impl MemorySnapshot {
    /// Measures now. Mappings of files under `dataset_folder` (a canonical path) count as
    /// dataset bytes.
    pub fn take_under(device: Option<&Device>, dataset_folder: &Path) -> Self {
        Self::take_with_mapped(device, mapped_bytes_under(dataset_folder))
    }

    /// Measures now. `dataset_files` are the files whose mappings count as dataset bytes.
    pub fn take(device: Option<&Device>, dataset_files: &[PathBuf]) -> Self {
        Self::take_with_mapped(device, mapped_bytes_of(dataset_files))
    }

    fn take_with_mapped(device: Option<&Device>, mapped_dataset_bytes: u64) -> Self {
        let resident = resident_bytes();
        let pool = device.and_then(Device::memory_pool_usage);
        MemorySnapshot {
            seconds: 0.0,
            resident_bytes: resident.map(|(now, _)| now),
            peak_resident_bytes: resident.map(|(_, peak)| peak),
            live_heap_bytes: live_heap_bytes(),
            mapped_dataset_bytes,
            device_bytes_in_use: pool.map(|usage| usage.bytes_in_use),
            device_bytes_reserved: pool.map(|usage| usage.bytes_reserved),
        }
    }
}

#[cfg(all(test, feature = "device"))]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_without_a_device_reads_the_process_and_no_pool() {
        let folder = tempfile::tempdir().unwrap();
        let snapshot = MemorySnapshot::take_under(None, &folder.path().canonicalize().unwrap());
        let resident = snapshot
            .resident_bytes
            .expect("Linux has /proc/self/status");
        assert!(resident > 0);
        assert!(snapshot.peak_resident_bytes.unwrap() >= resident);
        assert_eq!(snapshot.mapped_dataset_bytes, 0);
        assert_eq!(snapshot.device_bytes_in_use, None);
        assert_eq!(snapshot.device_bytes_reserved, None);
        assert_eq!(snapshot.seconds, 0.0);
    }

    #[test]
    fn a_snapshot_round_trips_through_json() {
        let snapshot = MemorySnapshot {
            seconds: 1.5,
            resident_bytes: Some(4096),
            peak_resident_bytes: Some(8192),
            live_heap_bytes: None,
            mapped_dataset_bytes: 12,
            device_bytes_in_use: Some(1),
            device_bytes_reserved: None,
        };
        let json = serde_json::to_string(&snapshot).unwrap();
        assert!(json.contains("\"live_heap_bytes\":null"), "{json}");
        assert_eq!(
            serde_json::from_str::<MemorySnapshot>(&json).unwrap(),
            snapshot
        );
    }
}
