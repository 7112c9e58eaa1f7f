//! Dropping a mapped dataset unmaps its files: they vanish from /proc/self/maps.
//!
//! The dataset is written to a private temporary folder so that no other test in this process can
//! have the same files mapped.
#![cfg(target_os = "linux")]

use std::path::Path;

use reclaim_dataset::{ImageDataset, Split, idx::write_idx};

fn mapped_paths() -> String {
    std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps is readable on Linux")
}

fn is_mapped(path: &Path) -> bool {
    let path = path.to_string_lossy();
    mapped_paths()
        .lines()
        .any(|line| line.ends_with(path.as_ref()))
}

#[test]
fn dropping_a_mapped_dataset_unmaps_its_files() {
    let folder = tempfile::tempdir().unwrap();
    let folder = folder.path().canonicalize().unwrap();
    let images = folder.join("train-images-idx3-ubyte");
    let labels = folder.join("train-labels-idx1-ubyte");
    let pixels: Vec<u8> = (0..100 * 28 * 28).map(|i| (i % 255) as u8).collect();
    write_idx(&images, &[100, 28, 28], &pixels).unwrap();
    write_idx(
        &labels,
        &[100],
        &(0..100).map(|i| (i % 10) as u8).collect::<Vec<u8>>(),
    )
    .unwrap();

    // SAFETY: the files are not modified while the dataset lives.
    let dataset = unsafe { ImageDataset::open_mapped(&folder, Split::Train) }.unwrap();
    assert_eq!(dataset.image(99), &pixels[99 * 784..]);
    assert!(
        is_mapped(&images),
        "the images file is mapped while the dataset lives"
    );
    assert!(
        is_mapped(&labels),
        "the labels file is mapped while the dataset lives"
    );
    drop(dataset);
    assert!(
        !is_mapped(&images),
        "the images file is unmapped after drop"
    );
    assert!(
        !is_mapped(&labels),
        "the labels file is unmapped after drop"
    );

    // Owned datasets never map their files.
    let owned = ImageDataset::open_owned(&folder, Split::Train).unwrap();
    assert!(!is_mapped(&images));
    assert_eq!(owned.len(), 100);
}
