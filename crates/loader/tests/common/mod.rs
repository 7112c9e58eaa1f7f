//! Fixtures shared by the integration tests: synthetic images whose pixels identify them.

#![allow(dead_code)] // Each test binary uses a different part.

use std::path::{Path, PathBuf};

use reclaim_loader::{ImageShape, LoaderError};

/// Pixel `pixel` of image `index`: a pattern that differs between images and across pixels.
pub fn pixel_value(index: usize, pixel: usize) -> u8 {
    ((index * 31 + pixel * 7 + index / 256) % 256) as u8
}

/// `count` images of `shape` and their labels (`index % 10`).
pub fn synthetic(count: usize, shape: ImageShape) -> (Vec<u8>, Vec<u8>) {
    let pixels_per_image = shape.pixels().unwrap();
    let mut pixels = Vec::with_capacity(count * pixels_per_image);
    for index in 0..count {
        pixels.extend((0..pixels_per_image).map(|pixel| pixel_value(index, pixel)));
    }
    let labels = (0..count).map(|index| (index % 10) as u8).collect();
    (pixels, labels)
}

/// A small image shape that keeps tests quick.
pub const SMALL: ImageShape = ImageShape::grayscale(3, 4);

/// The vendored MNIST folder of the workspace.
pub fn mnist_folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/mnist")
}

/// Writes `count` synthetic images of `shape` as an MNIST-named IDX pair in `folder`.
pub fn write_idx_pair(folder: &Path, count: usize, shape: ImageShape) {
    let (pixels, labels) = synthetic(count, shape);
    reclaim_dataset::idx::write_idx(
        folder.join("train-images-idx3-ubyte"),
        &[count, shape.height, shape.width],
        &pixels,
    )
    .unwrap();
    reclaim_dataset::idx::write_idx(folder.join("train-labels-idx1-ubyte"), &[count], &labels)
        .unwrap();
}

/// An image source that panics when asked for one index, to exercise worker failures.
#[derive(Debug)]
pub struct PanicsAt {
    pub len: usize,
    pub panic_at: usize,
}

impl reclaim_loader::ImageSource for PanicsAt {
    fn len(&self) -> usize {
        self.len
    }

    fn image_shape(&self) -> ImageShape {
        SMALL
    }

    fn read_sample(&self, index: usize, pixels: &mut [u8]) -> Result<i64, LoaderError> {
        assert!(index != self.panic_at, "sample {index} is cursed");
        pixels.fill(index as u8);
        Ok(index as i64)
    }
}

/// Names of this process's threads that are loader workers.
pub fn live_worker_threads() -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir("/proc/self/task").unwrap() {
        let comm = entry.unwrap().path().join("comm");
        if let Ok(name) = std::fs::read_to_string(comm) {
            let name = name.trim().to_owned();
            if name.starts_with(reclaim_loader::WORKER_THREAD_NAME_PREFIX) {
                names.push(name);
            }
        }
    }
    names
}

/// Waits until `count` loader workers have started and named themselves (a thread sets its
/// own name as it starts), and returns their names, sorted. Gives up after ten seconds.
pub fn started_worker_threads(count: usize) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let mut names = live_worker_threads();
        if names.len() >= count || std::time::Instant::now() > deadline {
            names.sort();
            return names;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Whether every loader worker thread of this process is gone, waiting up to ten seconds: a
/// joined thread can stay listed in `/proc/self/task` for a moment while the kernel tears it
/// down, after `join` has returned. A leaked thread would stay listed for good.
pub fn no_worker_threads_left() -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !live_worker_threads().is_empty() {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    true
}
