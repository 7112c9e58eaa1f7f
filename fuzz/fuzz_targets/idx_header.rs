//! Fuzz target for the IDX header parser and the in-memory array built on it.
//!
//! `cargo +nightly fuzz run idx_header` from `fuzz/`. Checks that no input panics, hangs or
//! allocates from the header's claims, and that whatever is accepted is consistent: the announced
//! length equals the real one, every accessor stays in bounds, and decoding then re-encoding gives
//! back the same bytes.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use reclaim_dataset::idx::{ElementType, IdxArray, IdxElement, encode_idx, parse_idx_header};

fn round_trip<T: IdxElement>(array: &IdxArray, original: &[u8]) {
    let values = array.to_vec::<T>().expect("the element type matches");
    assert_eq!(values.len(), array.element_count());
    let encoded = encode_idx(array.shape(), &values).expect("an accepted shape re-encodes");
    assert_eq!(
        encoded, original,
        "decode then encode gives back the same bytes"
    );
}

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz-input");

    // The input as a whole file.
    if let Ok(header) = parse_idx_header(data, path, data.len() as u64) {
        assert_eq!(header.file_length(), data.len() as u64);
        assert!((1..=255).contains(&header.rank()));
        assert_eq!(header.data_offset(), 4 + 4 * header.rank());
    }

    // The first 8 bytes as a claimed file length, the rest as the file's first bytes (as when
    // only a prefix of a large file has been read).
    if let Some((claimed, prefix)) = data.split_first_chunk::<8>() {
        let claimed = u64::from_le_bytes(*claimed);
        if let Ok(header) = parse_idx_header(prefix, path, claimed) {
            assert_eq!(header.file_length(), claimed);
        }
    }

    // The input as an owned array: every accessor, and a round trip through the writer.
    if let Ok(array) = IdxArray::from_bytes(path, data.to_vec()) {
        let header = array.header();
        assert_eq!(array.data_bytes().len() as u64, header.data_length());
        assert_eq!(array.len(), array.shape()[0]);
        let row_bytes = array.row_length() * array.element_type().size_in_bytes();
        if !array.is_empty() {
            assert_eq!(array.row_bytes(0).map(<[u8]>::len), Some(row_bytes));
            assert_eq!(
                array.row_bytes(array.len() - 1).map(<[u8]>::len),
                Some(row_bytes)
            );
        }
        assert!(array.row_bytes(array.len()).is_none());
        assert_eq!(
            array.as_u8().is_ok(),
            array.element_type() == ElementType::U8
        );
        assert_eq!(
            array.as_i8().is_ok(),
            array.element_type() == ElementType::I8
        );
        match array.element_type() {
            ElementType::U8 => round_trip::<u8>(&array, data),
            ElementType::I8 => round_trip::<i8>(&array, data),
            ElementType::I16 => round_trip::<i16>(&array, data),
            ElementType::I32 => round_trip::<i32>(&array, data),
            ElementType::F32 => round_trip::<f32>(&array, data),
            ElementType::F64 => round_trip::<f64>(&array, data),
        }
    }
});
