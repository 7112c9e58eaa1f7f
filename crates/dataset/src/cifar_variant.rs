//! The CIFAR-10 and CIFAR-100 binary formats' catalogue: variants, record layout, file names,
//! classes, and the archives they are published in.

use std::fmt;

use crate::family::Split;

/// Colour channels of a CIFAR image (red, green, blue).
pub const CIFAR_CHANNELS: usize = 3;
/// Height of a CIFAR image in pixels.
pub const CIFAR_IMAGE_HEIGHT: usize = 32;
/// Width of a CIFAR image in pixels.
pub const CIFAR_IMAGE_WIDTH: usize = 32;
/// Bytes of one CIFAR image: 3 x 32 x 32, channel-major (the 1024 red bytes, row-major, then
/// the green, then the blue).
pub const CIFAR_IMAGE_BYTES: usize = CIFAR_CHANNELS * CIFAR_IMAGE_HEIGHT * CIFAR_IMAGE_WIDTH;

/// One of the two CIFAR datasets (Krizhevsky, 2009), in their "binary version".
///
/// A file is a sequence of records: for CIFAR-10, 1 label byte (0 to 9) then
/// [`CIFAR_IMAGE_BYTES`] pixel bytes; for CIFAR-100, 1 coarse label byte (0 to 19), 1 fine label
/// byte (0 to 99), then the pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum CifarVariant {
    /// 60,000 images in 10 classes; training split in five files of 10,000.
    Cifar10,
    /// 60,000 images in 100 fine classes grouped into 20 coarse ones.
    Cifar100,
}

/// Which label of a CIFAR record a dataset reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum CifarLabelKind {
    /// CIFAR-10's label, or CIFAR-100's fine label (100 classes). The default.
    #[default]
    Fine,
    /// CIFAR-100's coarse label (20 superclasses); CIFAR-10 has none.
    Coarse,
}

impl fmt::Display for CifarLabelKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            CifarLabelKind::Fine => "fine",
            CifarLabelKind::Coarse => "coarse",
        })
    }
}

/// The published `.tar.gz` archive of one CIFAR variant's binary version: where it is, its MD5,
/// and the folder its files are in. [`crate::cifar::extract_cifar_archive`] unpacks it, and with the
/// cargo feature `fetch`, `fetch_cifar` downloads it.
///
/// `md5` is a `String` so that a test (or a private mirror of a repacked archive) can give its
/// own: `CifarVariant::Cifar10.archive()` with `md5` replaced.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CifarArchive {
    /// The variant it holds.
    pub variant: CifarVariant,
    /// The archive's file name, e.g. `cifar-10-binary.tar.gz`.
    pub file_name: &'static str,
    /// The MD5 of the whole archive, lowercase hex, as published.
    pub md5: String,
    /// The folder inside the archive holding the files, e.g. `cifar-10-batches-bin`.
    pub folder_in_archive: &'static str,
    /// Base URLs (ending in `/`) the archive is downloaded from, in order.
    pub mirrors: &'static [&'static str],
}

const CIFAR_MIRRORS: &[&str] = &["https://www.cs.toronto.edu/~kriz/"];

const CIFAR_10_TRAIN_FILES: &[&str] = &[
    "data_batch_1.bin",
    "data_batch_2.bin",
    "data_batch_3.bin",
    "data_batch_4.bin",
    "data_batch_5.bin",
];
const CIFAR_10_TEST_FILES: &[&str] = &["test_batch.bin"];
const CIFAR_100_TRAIN_FILES: &[&str] = &["train.bin"];
const CIFAR_100_TEST_FILES: &[&str] = &["test.bin"];

const CIFAR_10_CLASSES: &[&str] = &[
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
];

const CIFAR_100_FINE_CLASSES: &[&str] = &[
    "apple",
    "aquarium_fish",
    "baby",
    "bear",
    "beaver",
    "bed",
    "bee",
    "beetle",
    "bicycle",
    "bottle",
    "bowl",
    "boy",
    "bridge",
    "bus",
    "butterfly",
    "camel",
    "can",
    "castle",
    "caterpillar",
    "cattle",
    "chair",
    "chimpanzee",
    "clock",
    "cloud",
    "cockroach",
    "couch",
    "crab",
    "crocodile",
    "cup",
    "dinosaur",
    "dolphin",
    "elephant",
    "flatfish",
    "forest",
    "fox",
    "girl",
    "hamster",
    "house",
    "kangaroo",
    "keyboard",
    "lamp",
    "lawn_mower",
    "leopard",
    "lion",
    "lizard",
    "lobster",
    "man",
    "maple_tree",
    "motorcycle",
    "mountain",
    "mouse",
    "mushroom",
    "oak_tree",
    "orange",
    "orchid",
    "otter",
    "palm_tree",
    "pear",
    "pickup_truck",
    "pine_tree",
    "plain",
    "plate",
    "poppy",
    "porcupine",
    "possum",
    "rabbit",
    "raccoon",
    "ray",
    "road",
    "rocket",
    "rose",
    "sea",
    "seal",
    "shark",
    "shrew",
    "skunk",
    "skyscraper",
    "snail",
    "snake",
    "spider",
    "squirrel",
    "streetcar",
    "sunflower",
    "sweet_pepper",
    "table",
    "tank",
    "telephone",
    "television",
    "tiger",
    "tractor",
    "train",
    "trout",
    "tulip",
    "turtle",
    "wardrobe",
    "whale",
    "willow_tree",
    "wolf",
    "woman",
    "worm",
];

const CIFAR_100_COARSE_CLASSES: &[&str] = &[
    "aquatic_mammals",
    "fish",
    "flowers",
    "food_containers",
    "fruit_and_vegetables",
    "household_electrical_devices",
    "household_furniture",
    "insects",
    "large_carnivores",
    "large_man-made_outdoor_things",
    "large_natural_outdoor_scenes",
    "large_omnivores_and_herbivores",
    "medium_mammals",
    "non-insect_invertebrates",
    "people",
    "reptiles",
    "small_mammals",
    "trees",
    "vehicles_1",
    "vehicles_2",
];

impl CifarVariant {
    /// Both variants.
    pub const ALL: [CifarVariant; 2] = [CifarVariant::Cifar10, CifarVariant::Cifar100];

    /// `cifar-10` or `cifar-100`: also the folder it lives in under the data folder.
    pub fn name(self) -> &'static str {
        match self {
            CifarVariant::Cifar10 => "cifar-10",
            CifarVariant::Cifar100 => "cifar-100",
        }
    }

    /// Label bytes at the start of each record: 1 for CIFAR-10, 2 for CIFAR-100 (coarse, fine).
    pub fn label_bytes(self) -> usize {
        match self {
            CifarVariant::Cifar10 => 1,
            CifarVariant::Cifar100 => 2,
        }
    }

    /// Bytes per record: the label bytes then [`CIFAR_IMAGE_BYTES`] (3073 or 3074).
    pub fn record_length(self) -> usize {
        self.label_bytes() + CIFAR_IMAGE_BYTES
    }

    /// Where in a record the label of `kind` is; `None` for a coarse label of CIFAR-10.
    pub fn label_offset(self, kind: CifarLabelKind) -> Option<usize> {
        match (self, kind) {
            (CifarVariant::Cifar10, CifarLabelKind::Fine) => Some(0),
            (CifarVariant::Cifar10, CifarLabelKind::Coarse) => None,
            (CifarVariant::Cifar100, CifarLabelKind::Coarse) => Some(0),
            (CifarVariant::Cifar100, CifarLabelKind::Fine) => Some(1),
        }
    }

    /// The number of classes of `kind`: 10 for CIFAR-10, 100 fine or 20 coarse for CIFAR-100;
    /// `None` for a coarse label of CIFAR-10.
    pub fn classes_of(self, kind: CifarLabelKind) -> Option<usize> {
        self.class_names_of(kind).map(|names| names.len())
    }

    /// The number of (fine) classes: 10 or 100.
    pub fn number_of_classes(self) -> usize {
        self.class_names().len()
    }

    /// The (fine) class names in label order, as in the archives' `batches.meta.txt` and
    /// `fine_label_names.txt`.
    pub fn class_names(self) -> &'static [&'static str] {
        match self {
            CifarVariant::Cifar10 => CIFAR_10_CLASSES,
            CifarVariant::Cifar100 => CIFAR_100_FINE_CLASSES,
        }
    }

    /// The class names of `kind` in label order; `None` for a coarse label of CIFAR-10.
    pub fn class_names_of(self, kind: CifarLabelKind) -> Option<&'static [&'static str]> {
        match (self, kind) {
            (_, CifarLabelKind::Fine) => Some(self.class_names()),
            (CifarVariant::Cifar100, CifarLabelKind::Coarse) => Some(CIFAR_100_COARSE_CLASSES),
            (CifarVariant::Cifar10, CifarLabelKind::Coarse) => None,
        }
    }

    /// The files of a split, in reading order (CIFAR-10's training split is five files).
    pub fn file_names(self, split: Split) -> &'static [&'static str] {
        match (self, split) {
            (CifarVariant::Cifar10, Split::Train) => CIFAR_10_TRAIN_FILES,
            (CifarVariant::Cifar10, Split::Test) => CIFAR_10_TEST_FILES,
            (CifarVariant::Cifar100, Split::Train) => CIFAR_100_TRAIN_FILES,
            (CifarVariant::Cifar100, Split::Test) => CIFAR_100_TEST_FILES,
        }
    }

    /// The number of records of a split in the published archive: 50,000 training, 10,000
    /// test, for both variants. (Files opened are not required to hold that many.)
    pub fn published_count(self, split: Split) -> usize {
        match split {
            Split::Train => 50_000,
            Split::Test => 10_000,
        }
    }

    /// The published archive, with its MD5.
    pub fn archive(self) -> CifarArchive {
        let (file_name, md5, folder_in_archive) = match self {
            CifarVariant::Cifar10 => (
                "cifar-10-binary.tar.gz",
                "c32a1d4ab5d03f1284b67883e8d87530",
                "cifar-10-batches-bin",
            ),
            CifarVariant::Cifar100 => (
                "cifar-100-binary.tar.gz",
                "03b5dce01913d631647c71ecec9e9cb8",
                "cifar-100-binary",
            ),
        };
        CifarArchive {
            variant: self,
            file_name,
            md5: md5.to_owned(),
            folder_in_archive,
            mirrors: CIFAR_MIRRORS,
        }
    }

    /// The files besides the record files that the archive holds and extraction keeps (the
    /// class names, the readme).
    pub(crate) fn extra_file_names(self) -> &'static [&'static str] {
        match self {
            CifarVariant::Cifar10 => &["batches.meta.txt", "readme.html"],
            CifarVariant::Cifar100 => &["coarse_label_names.txt", "fine_label_names.txt"],
        }
    }

    /// The terms the data is distributed under.
    pub fn license(self) -> &'static str {
        "no license stated; cite Krizhevsky, Learning Multiple Layers of Features from Tiny Images (2009)"
    }

    /// The variant named `name`: `cifar-10`, `cifar10`, `CIFAR_100`, ... (case-insensitive,
    /// with or without the dash or an underscore).
    pub fn from_name(name: &str) -> Option<Self> {
        let normalized: String = name
            .to_ascii_lowercase()
            .chars()
            .filter(|character| !matches!(character, '-' | '_'))
            .collect();
        CifarVariant::ALL
            .into_iter()
            .find(|variant| variant.name().replace('-', "") == normalized)
    }
}

impl fmt::Display for CifarVariant {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            CifarVariant::Cifar10 => "CIFAR-10",
            CifarVariant::Cifar100 => "CIFAR-100",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_layout_and_classes() {
        assert_eq!(CIFAR_IMAGE_BYTES, 3072);
        assert_eq!(CifarVariant::Cifar10.record_length(), 3073);
        assert_eq!(CifarVariant::Cifar100.record_length(), 3074);
        assert_eq!(CifarVariant::Cifar10.number_of_classes(), 10);
        assert_eq!(CifarVariant::Cifar100.number_of_classes(), 100);
        assert_eq!(
            CifarVariant::Cifar100.classes_of(CifarLabelKind::Coarse),
            Some(20)
        );
        assert_eq!(
            CifarVariant::Cifar10.classes_of(CifarLabelKind::Coarse),
            None
        );
        assert_eq!(
            CifarVariant::Cifar100.label_offset(CifarLabelKind::Fine),
            Some(1)
        );
        let mut fine = CIFAR_100_FINE_CLASSES.to_vec();
        fine.sort_unstable();
        fine.dedup();
        assert_eq!(fine.len(), 100, "the fine names are distinct and sorted");
        assert_eq!(fine, CIFAR_100_FINE_CLASSES);
    }

    #[test]
    fn names_parse() {
        for variant in CifarVariant::ALL {
            assert_eq!(CifarVariant::from_name(variant.name()), Some(variant));
        }
        assert_eq!(
            CifarVariant::from_name("CIFAR_100"),
            Some(CifarVariant::Cifar100)
        );
        assert_eq!(
            CifarVariant::from_name("cifar10"),
            Some(CifarVariant::Cifar10)
        );
        assert_eq!(CifarVariant::from_name("cifar-1000"), None);
    }

    #[test]
    fn archives_are_catalogued() {
        for variant in CifarVariant::ALL {
            let archive = variant.archive();
            assert_eq!(archive.md5.len(), 32);
            assert!(archive.md5.bytes().all(|byte| byte.is_ascii_hexdigit()));
            assert!(archive.file_name.ends_with("-binary.tar.gz"));
            assert!(archive.mirrors.iter().all(|mirror| mirror.ends_with('/')));
            let total: usize = Split::ALL
                .into_iter()
                .map(|split| variant.published_count(split))
                .sum();
            assert_eq!(total, 60_000);
        }
        assert_eq!(CifarVariant::Cifar10.file_names(Split::Train).len(), 5);
    }
}
