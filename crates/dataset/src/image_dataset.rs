//! [`ImageDataset`]: an images array and a labels array, checked against each other.

use std::path::{Path, PathBuf};

use crate::array::IdxArray;
use crate::element::ElementType;
use crate::error::{DatasetError, Result};
use crate::family::{Family, Split, mnist_file_names};
use crate::file_bytes::AccessPattern;
use crate::open::entry_exists;

/// Images (N x H x W, `u8`) and their labels (N, `u8`), checked against each other on open:
/// both `u8`, images of rank 3 and labels of rank 1, the same N, and every label below the
/// number of classes.
///
/// All accessors are zero copy. The dataset is `Send + Sync`, so worker threads can share
/// `&ImageDataset`. Dropping it unmaps (or frees) both files.
#[derive(Debug)]
pub struct ImageDataset {
    images: IdxArray,
    labels: IdxArray,
    number_of_classes: usize,
    split: Option<Split>,
}

/// The paths tried for one file of a split: raw, `.gz`, and the dotted variant some copies use
/// (`train-images.idx3-ubyte`).
fn locate(folder: &Path, file_name: &str) -> Result<PathBuf> {
    let dotted = file_name.replacen("-idx", ".idx", 1);
    let candidates = [
        folder.join(file_name),
        folder.join(format!("{file_name}.gz")),
        folder.join(&dotted),
        folder.join(format!("{dotted}.gz")),
    ];
    candidates
        .iter()
        .find(|candidate| entry_exists(candidate))
        .cloned()
        .ok_or_else(|| DatasetError::MissingFile {
            path: folder.join(format!("{file_name}[.gz]")),
        })
}

/// The paths of a split's images and labels files in `folder` (raw preferred over `.gz`).
/// [`DatasetError::MissingFile`] if either is absent.
pub fn locate_split_files(folder: &Path, split: Split) -> Result<(PathBuf, PathBuf)> {
    let (images, labels) = mnist_file_names(split);
    Ok((locate(folder, images)?, locate(folder, labels)?))
}

impl ImageDataset {
    /// Memory-maps a split from a dataset folder holding the MNIST file names, raw or `.gz`
    /// (decompressed once into `<folder>/cache/`). Ten classes (the MNIST family).
    ///
    /// # Safety
    ///
    /// As for [`IdxArray::open_mapped`] (memmap2's contract): neither file may be modified or
    /// truncated while the dataset exists. If one is truncated anyway, on Linux with the guard
    /// installed ([`crate::install_sigbus_guard`]) the read past its end reads zeros instead of
    /// killing the process, and [`ImageDataset::verify_mapping_intact`] reports
    /// [`DatasetError::MappedFileChanged`] naming it; bytes changed in place are not caught (see
    /// [`IdxArray::open_mapped`] for both).
    pub unsafe fn open_mapped(folder: impl AsRef<Path>, split: Split) -> Result<Self> {
        let (images_path, labels_path) = locate_split_files(folder.as_ref(), split)?;
        // SAFETY: the caller upholds memmap2's contract for both files (see `# Safety`).
        let images = unsafe { IdxArray::open_mapped(&images_path) }?;
        // SAFETY: as above.
        let labels = unsafe { IdxArray::open_mapped(&labels_path) }?;
        let mut dataset = Self::from_arrays(images, labels, Family::Mnist.number_of_classes())?;
        dataset.split = Some(split);
        Ok(dataset)
    }

    /// Reads a split from a dataset folder into memory (see [`ImageDataset::open_mapped`]).
    pub fn open_owned(folder: impl AsRef<Path>, split: Split) -> Result<Self> {
        let (images_path, labels_path) = locate_split_files(folder.as_ref(), split)?;
        let images = IdxArray::open_owned(&images_path)?;
        let labels = IdxArray::open_owned(&labels_path)?;
        let mut dataset = Self::from_arrays(images, labels, Family::Mnist.number_of_classes())?;
        dataset.split = Some(split);
        Ok(dataset)
    }

    /// Pairs an images array and a labels array, checking them: [`DatasetError::WrongElementType`]
    /// unless both are `u8`, [`DatasetError::UnexpectedRank`] unless images are N x H x W and
    /// labels N, [`DatasetError::CountMismatch`] if the Ns differ, and
    /// [`DatasetError::LabelOutOfRange`] for the first label not below `number_of_classes`.
    pub fn from_arrays(
        images: IdxArray,
        labels: IdxArray,
        number_of_classes: usize,
    ) -> Result<Self> {
        for (array, rank) in [(&images, 3), (&labels, 1)] {
            if array.element_type() != ElementType::U8 {
                return Err(DatasetError::WrongElementType {
                    path: array.path().to_path_buf(),
                    expected: ElementType::U8,
                    found: array.element_type(),
                });
            }
            if array.shape().len() != rank {
                return Err(DatasetError::UnexpectedRank {
                    path: array.path().to_path_buf(),
                    expected: rank,
                    found: array.shape().len(),
                });
            }
        }
        if images.len() != labels.len() {
            return Err(DatasetError::CountMismatch {
                images_path: images.path().to_path_buf(),
                labels_path: labels.path().to_path_buf(),
                images: images.len(),
                labels: labels.len(),
            });
        }
        let label_bytes = labels.data_bytes();
        if let Some(index) = label_bytes
            .iter()
            .position(|&label| usize::from(label) >= number_of_classes)
        {
            return Err(DatasetError::LabelOutOfRange {
                path: labels.path().to_path_buf(),
                index,
                label: label_bytes[index],
                classes: number_of_classes,
            });
        }
        Ok(ImageDataset {
            images,
            labels,
            number_of_classes,
            split: None,
        })
    }

    /// The split it was opened as; `None` when built with [`ImageDataset::from_arrays`].
    pub fn split(&self) -> Option<Split> {
        self.split
    }

    /// The number of items N.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether N is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Image height H in pixels.
    pub fn image_height(&self) -> usize {
        self.images.shape()[1]
    }

    /// Image width W in pixels.
    pub fn image_width(&self) -> usize {
        self.images.shape()[2]
    }

    /// Pixels per image: H x W.
    pub fn pixels_per_image(&self) -> usize {
        self.images.row_length()
    }

    /// The H x W pixels of image `index`, row-major, zero copy.
    ///
    /// # Panics
    ///
    /// If `index >= self.len()`.
    pub fn image(&self, index: usize) -> &[u8] {
        assert!(
            index < self.len(),
            "image index {index} out of range for {} images",
            self.len()
        );
        // Cannot overflow: index < len, and len x pixels is the validated data length.
        let pixels = self.pixels_per_image();
        &self.pixels()[index * pixels..(index + 1) * pixels]
    }

    /// The label of item `index`.
    ///
    /// # Panics
    ///
    /// If `index >= self.len()`.
    pub fn label(&self, index: usize) -> u8 {
        self.labels()[index]
    }

    /// All N x H x W pixels, contiguous, zero copy.
    pub fn pixels(&self) -> &[u8] {
        self.images.data_bytes()
    }

    /// All N labels, zero copy.
    pub fn labels(&self) -> &[u8] {
        self.labels.data_bytes()
    }

    /// The number of classes labels were checked against.
    pub fn number_of_classes(&self) -> usize {
        self.number_of_classes
    }

    /// How many items carry each label (`number_of_classes` entries).
    pub fn label_histogram(&self) -> Vec<usize> {
        let mut counts = vec![0usize; self.number_of_classes];
        for &label in self.labels() {
            // Labels were checked on open; a mapped file changed since (against the mapping's
            // contract) must not turn into an out-of-bounds panic here: such a label is skipped.
            if let Some(count) = counts.get_mut(usize::from(label)) {
                *count += 1;
            }
        }
        counts
    }

    /// The images array.
    pub fn images(&self) -> &IdxArray {
        &self.images
    }

    /// The labels array.
    pub fn label_array(&self) -> &IdxArray {
        &self.labels
    }

    /// Tells the kernel how both mapped files will be read (see [`IdxArray::advise`]):
    /// [`AccessPattern::Sequential`] before scanning front to back, [`AccessPattern::Random`]
    /// for shuffled epochs over files larger than the page cache, [`AccessPattern::WillNeed`] to
    /// start reading everything in at once. Does nothing for owned datasets.
    pub fn advise(&self, pattern: AccessPattern) -> Result<()> {
        self.images.advise(pattern)?;
        self.labels.advise(pattern)
    }

    /// [`IdxArray::verify_mapping_intact`] for the images, then the labels:
    /// [`DatasetError::MappedFileChanged`] naming the first file whose map faulted after it was
    /// truncated. Two atomic loads; always `Ok` for an owned dataset.
    pub fn verify_mapping_intact(&self) -> Result<()> {
        self.images.verify_mapping_intact()?;
        self.labels.verify_mapping_intact()
    }

    /// Bytes mapped for both files (0 when owned).
    pub fn mapped_bytes(&self) -> usize {
        self.images.mapped_bytes() + self.labels.mapped_bytes()
    }

    /// Bytes owned on the heap for both files (0 when mapped).
    pub fn heap_bytes(&self) -> usize {
        self.images.heap_bytes() + self.labels.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::encode_idx;

    fn array<T: crate::idx::IdxElement>(name: &str, shape: &[usize], data: &[T]) -> IdxArray {
        IdxArray::from_bytes(name, encode_idx(shape, data).unwrap()).unwrap()
    }

    #[test]
    fn pairs_images_and_labels() {
        let pixels: Vec<u8> = (0..3 * 2 * 4).map(|value| value as u8).collect();
        let dataset = ImageDataset::from_arrays(
            array("images", &[3, 2, 4], &pixels),
            array::<u8>("labels", &[3], &[2, 0, 2]),
            3,
        )
        .unwrap();
        assert_eq!(dataset.len(), 3);
        assert_eq!(dataset.split(), None);
        assert_eq!((dataset.image_height(), dataset.image_width()), (2, 4));
        assert_eq!(dataset.pixels_per_image(), 8);
        assert_eq!(dataset.image(1), &pixels[8..16]);
        assert_eq!(dataset.label(2), 2);
        assert_eq!(dataset.label_histogram(), [1, 0, 2]);
        assert_eq!(dataset.heap_bytes(), (16 + 24) + (8 + 3));
        assert_eq!(dataset.mapped_bytes(), 0);
    }

    #[test]
    #[should_panic(expected = "image index 3 out of range for 3 images")]
    fn image_index_out_of_range_panics_as_documented() {
        let dataset = ImageDataset::from_arrays(
            array::<u8>("images", &[3, 1, 1], &[0, 0, 0]),
            array::<u8>("labels", &[3], &[0, 0, 0]),
            10,
        )
        .unwrap();
        let _ = dataset.image(3);
    }

    #[test]
    fn count_mismatch() {
        let result = ImageDataset::from_arrays(
            array::<u8>("images", &[2, 1, 1], &[0, 0]),
            array::<u8>("labels", &[3], &[0, 0, 0]),
            10,
        );
        assert!(matches!(
            result,
            Err(DatasetError::CountMismatch {
                images: 2,
                labels: 3,
                ..
            })
        ));
    }

    #[test]
    fn label_out_of_range() {
        let result = ImageDataset::from_arrays(
            array::<u8>("images", &[3, 1, 1], &[0, 0, 0]),
            array::<u8>("labels", &[3], &[1, 10, 11]),
            10,
        );
        assert!(matches!(
            result,
            Err(DatasetError::LabelOutOfRange {
                index: 1,
                label: 10,
                classes: 10,
                ..
            })
        ));
    }

    #[test]
    fn wrong_types_and_ranks() {
        let result = ImageDataset::from_arrays(
            array::<f32>("images", &[1, 1, 1], &[0.0]),
            array::<u8>("labels", &[1], &[0]),
            10,
        );
        assert!(matches!(
            result,
            Err(DatasetError::WrongElementType {
                found: ElementType::F32,
                ..
            })
        ));
        let result = ImageDataset::from_arrays(
            array::<u8>("images", &[1, 1], &[0]),
            array::<u8>("labels", &[1], &[0]),
            10,
        );
        assert!(matches!(
            result,
            Err(DatasetError::UnexpectedRank {
                expected: 3,
                found: 2,
                ..
            })
        ));
        let result = ImageDataset::from_arrays(
            array::<u8>("images", &[1, 1, 1], &[0]),
            array::<u8>("labels", &[1, 1], &[0]),
            10,
        );
        assert!(matches!(
            result,
            Err(DatasetError::UnexpectedRank {
                expected: 1,
                found: 2,
                ..
            })
        ));
    }

    #[test]
    fn missing_split_files_are_named() {
        let folder = tempfile::tempdir().unwrap();
        match ImageDataset::open_owned(folder.path(), Split::Test) {
            Err(DatasetError::MissingFile { path }) => {
                assert!(path.starts_with(folder.path()));
                assert!(path.to_string_lossy().contains("t10k-images-idx3-ubyte"));
            }
            other => panic!("expected MissingFile, got {other:?}"),
        }
    }

    /// A truncated images file, for real: the dataset names it, its labels still verify.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_truncated_images_file_is_reported_by_the_dataset() {
        // The program installs the guard (mapping does not); without it the read kills.
        crate::install_sigbus_guard().unwrap();
        let folder = tempfile::tempdir().unwrap();
        let images_path = folder.path().join("t10k-images-idx3-ubyte");
        // 64 images of 28 x 28: several pages past the header.
        let count = 64;
        crate::idx::write_idx(&images_path, &[count, 28, 28], &vec![9u8; count * 28 * 28]).unwrap();
        crate::idx::write_idx(
            folder.path().join("t10k-labels-idx1-ubyte"),
            &[count],
            &vec![3u8; count],
        )
        .unwrap();
        // SAFETY: deliberately broken: the images file is truncated below while mapped, which
        // the truncation guard turns from a SIGBUS death into an error.
        let dataset = unsafe { ImageDataset::open_mapped(folder.path(), Split::Test) }.unwrap();
        dataset.verify_mapping_intact().unwrap();

        std::fs::OpenOptions::new()
            .write(true)
            .open(&images_path)
            .unwrap()
            .set_len(16)
            .unwrap();
        let pixel_sum: u64 = (0..dataset.len())
            .map(|index| {
                let image = std::hint::black_box(dataset.image(index));
                image.iter().map(|&pixel| u64::from(pixel)).sum::<u64>()
            })
            .sum();
        assert_eq!(pixel_sum, 0, "the truncated file's map reads zeros");
        assert_eq!(dataset.labels(), vec![3u8; count].as_slice());
        match dataset.verify_mapping_intact() {
            Err(DatasetError::MappedFileChanged { path }) => assert_eq!(path, images_path),
            other => panic!("expected MappedFileChanged, got {other:?}"),
        }
        dataset.label_array().verify_mapping_intact().unwrap();
    }

    #[test]
    fn datasets_are_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<ImageDataset>();
    }
}
