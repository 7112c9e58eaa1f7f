//! Arbitrary bytes as a CIFAR-10 and as a CIFAR-100 record file: refused with a typed error, or
//! readable to the last record, every label below the variant's classes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reclaim_dataset::CifarDataset;
use reclaim_dataset::cifar::{CifarLabelKind, CifarVariant};

fuzz_target!(|data: &[u8]| {
    for variant in [CifarVariant::Cifar10, CifarVariant::Cifar100] {
        let Ok(dataset) = CifarDataset::from_bytes(variant, "fuzz.bin", data.to_vec()) else {
            continue;
        };
        assert_eq!(dataset.len() * variant.record_length(), data.len());
        for index in 0..dataset.len() {
            assert_eq!(dataset.image(index).len(), dataset.bytes_per_image());
            assert!(usize::from(dataset.label(index)) < dataset.number_of_classes());
        }
        if variant == CifarVariant::Cifar100 {
            let coarse = dataset.with_label_kind(CifarLabelKind::Coarse).unwrap();
            for index in 0..coarse.len() {
                assert!(usize::from(coarse.label(index)) < coarse.number_of_classes());
            }
        }
    }
});
