//! Fixtures for the unit tests: small dataset folders written with reclaim-dataset's writer.

use std::path::Path;

/// Writes the four MNIST file names into `folder`: `train_len` training and `test_len` test
/// images of `shape` (height, width), pixels and labels (0 to 9) varying with the index.
pub(crate) fn write_tiny_dataset(
    folder: &Path,
    shape: [usize; 2],
    train_len: usize,
    test_len: usize,
) {
    for (prefix, count) in [("train", train_len), ("t10k", test_len)] {
        let pixels: Vec<u8> = (0..count * shape[0] * shape[1])
            .map(|index| (index * 7 % 256) as u8)
            .collect();
        let labels: Vec<u8> = (0..count).map(|index| (index % 10) as u8).collect();
        reclaim_dataset::idx::write_idx(
            folder.join(format!("{prefix}-images-idx3-ubyte")),
            &[count, shape[0], shape[1]],
            &pixels,
        )
        .unwrap();
        reclaim_dataset::idx::write_idx(
            folder.join(format!("{prefix}-labels-idx1-ubyte")),
            &[count],
            &labels,
        )
        .unwrap();
    }
}
