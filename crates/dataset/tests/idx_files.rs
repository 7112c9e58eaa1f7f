//! IDX files on disk: round trips for every element type and ranks 1 to 4 (raw, mapped and owned,
//! and `.gz`), and one test per class of malformed file, each asserting its error variant and
//! that the error names the file.

use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;
use proptest::prelude::*;
use reclaim_dataset::{
    DatasetError, StorageKind,
    idx::{ElementType, IdxArray, IdxElement, encode_idx, write_idx},
};

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// Opens `path` every way there is: owned, mapped, and from bytes.
fn open_all_ways(path: &Path) -> Vec<IdxArray> {
    let owned = IdxArray::open_owned(path).unwrap();
    // SAFETY: test files are not modified while the arrays live.
    let mapped = unsafe { IdxArray::open_mapped(path) }.unwrap();
    assert_eq!(owned.storage(), StorageKind::Owned);
    assert_eq!(mapped.storage(), StorageKind::Mapped);
    let mut arrays = vec![owned, mapped];
    if !path.to_string_lossy().ends_with(".gz") {
        arrays.push(IdxArray::from_bytes(path, std::fs::read(path).unwrap()).unwrap());
    }
    arrays
}

/// Writes `data` with `shape`, reads it back every way, and compares element by element (bit
/// patterns for floats, so NaNs and signed zeros count).
fn round_trip<T: IdxElement + std::fmt::Debug>(
    folder: &Path,
    shape: &[usize],
    data: &[T],
    same: impl Fn(&T, &T) -> bool,
) {
    let name = format!("{}-rank{}", T::ELEMENT_TYPE, shape.len());
    let path = folder.join(&name);
    write_idx(&path, shape, data).unwrap();
    let encoded = encode_idx(shape, data).unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        encoded,
        "writer and encoder agree"
    );

    let gz_path = folder.join(format!("{name}.gz"));
    std::fs::write(&gz_path, gzip(&encoded)).unwrap();

    for array in open_all_ways(&path)
        .into_iter()
        .chain(open_all_ways(&gz_path))
    {
        assert_eq!(array.element_type(), T::ELEMENT_TYPE);
        assert_eq!(array.shape(), shape);
        assert_eq!(array.len(), shape[0]);
        assert_eq!(array.row_length(), shape[1..].iter().product::<usize>());
        let decoded = array.to_vec::<T>().unwrap();
        assert_eq!(decoded.len(), data.len());
        assert!(
            decoded.iter().zip(data).all(|(a, b)| same(a, b)),
            "{name}: decoded {decoded:?} != {data:?}"
        );
        if !array.is_empty() {
            let last = array.len() - 1;
            let row = array.row_to_vec::<T>(last).unwrap().unwrap();
            let start = last * array.row_length();
            assert!(row.iter().zip(&data[start..]).all(|(a, b)| same(a, b)));
        }
        assert_eq!(array.row_bytes(array.len()), None);
    }
}

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    (1usize..=4).prop_flat_map(|rank| proptest::collection::vec(0usize..5, rank))
}

fn count(shape: &[usize]) -> usize {
    shape.iter().product()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn u8_round_trips(shape in shape_strategy(), seed in any::<u64>()) {
        let folder = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..count(&shape)).map(|i| (seed as usize + i * 37) as u8).collect();
        round_trip(folder.path(), &shape, &data, |a, b| a == b);
    }

    #[test]
    fn i8_round_trips(shape in shape_strategy(), seed in any::<u64>()) {
        let folder = tempfile::tempdir().unwrap();
        let data: Vec<i8> = (0..count(&shape)).map(|i| (seed as usize + i * 101) as i8).collect();
        round_trip(folder.path(), &shape, &data, |a, b| a == b);
    }

    #[test]
    fn i16_round_trips(shape in shape_strategy(), values in proptest::collection::vec(any::<i16>(), 256)) {
        let folder = tempfile::tempdir().unwrap();
        let data: Vec<i16> = values.into_iter().take(count(&shape)).collect();
        round_trip(folder.path(), &shape, &data, |a, b| a == b);
    }

    #[test]
    fn i32_round_trips(shape in shape_strategy(), values in proptest::collection::vec(any::<i32>(), 256)) {
        let folder = tempfile::tempdir().unwrap();
        let data: Vec<i32> = values.into_iter().take(count(&shape)).collect();
        round_trip(folder.path(), &shape, &data, |a, b| a == b);
    }

    #[test]
    fn f32_round_trips(shape in shape_strategy(), bits in proptest::collection::vec(any::<u32>(), 256)) {
        let folder = tempfile::tempdir().unwrap();
        let data: Vec<f32> = bits.into_iter().take(count(&shape)).map(f32::from_bits).collect();
        round_trip(folder.path(), &shape, &data, |a, b| a.to_bits() == b.to_bits());
    }

    #[test]
    fn f64_round_trips(shape in shape_strategy(), bits in proptest::collection::vec(any::<u64>(), 256)) {
        let folder = tempfile::tempdir().unwrap();
        let data: Vec<f64> = bits.into_iter().take(count(&shape)).map(f64::from_bits).collect();
        round_trip(folder.path(), &shape, &data, |a, b| a.to_bits() == b.to_bits());
    }
}

/// Every type at every rank 1 to 4 with a fixed, non-trivial shape (the property tests above
/// draw shapes at random; this makes sure each combination is covered on every run).
#[test]
fn every_type_at_every_rank_1_to_4() {
    let folder = tempfile::tempdir().unwrap();
    for rank in 1..=4usize {
        let shape: Vec<usize> = (0..rank).map(|axis| axis + 2).collect();
        let n = count(&shape);
        let sub = folder.path().join(format!("rank{rank}"));
        std::fs::create_dir(&sub).unwrap();
        let u8s: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
        let i8s: Vec<i8> = (0..n).map(|i| (i as i8).wrapping_mul(-3)).collect();
        let i16s: Vec<i16> = (0..n).map(|i| (i as i16 - 60).wrapping_mul(511)).collect();
        let i32s: Vec<i32> = (0..n)
            .map(|i| (i as i32 - 60).wrapping_mul(40_000_000))
            .collect();
        let f32s: Vec<f32> = (0..n).map(|i| i as f32 * -0.25 + 1e-7).collect();
        let f64s: Vec<f64> = (0..n).map(|i| (i as f64).sqrt() * 1e300).collect();
        round_trip(&sub, &shape, &u8s, |a, b| a == b);
        round_trip(&sub, &shape, &i8s, |a, b| a == b);
        round_trip(&sub, &shape, &i16s, |a, b| a == b);
        round_trip(&sub, &shape, &i32s, |a, b| a == b);
        round_trip(&sub, &shape, &f32s, |a, b| a.to_bits() == b.to_bits());
        round_trip(&sub, &shape, &f64s, |a, b| a.to_bits() == b.to_bits());
    }
}

#[test]
fn images_file_rows_are_zero_copy_views() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("images");
    let pixels: Vec<u8> = (0..5 * 28 * 28).map(|i| (i % 256) as u8).collect();
    write_idx(&path, &[5, 28, 28], &pixels).unwrap();
    for array in open_all_ways(&path) {
        assert_eq!(array.row_length(), 784);
        for index in 0..5 {
            let row = array.row(index).unwrap();
            assert_eq!(row, &pixels[index * 784..(index + 1) * 784]);
            assert_eq!(row.as_ptr(), array.as_u8().unwrap()[index * 784..].as_ptr());
        }
        assert!(array.row(5).is_none());
    }
}

/// Writes `bytes` as a raw file and as a `.gz`, opens each every way, and returns the errors.
fn errors_for(bytes: &[u8]) -> Vec<(PathBuf, DatasetError)> {
    let folder = tempfile::tempdir().unwrap().keep();
    let raw = folder.join("malformed");
    let gz = folder.join("malformed.gz");
    std::fs::write(&raw, bytes).unwrap();
    std::fs::write(&gz, gzip(bytes)).unwrap();
    let mut errors = Vec::new();
    for path in [&raw, &gz] {
        errors.push((path.clone(), IdxArray::open_owned(path).unwrap_err()));
        // SAFETY: test files are not modified while the arrays live.
        errors.push((
            path.clone(),
            unsafe { IdxArray::open_mapped(path) }.unwrap_err(),
        ));
    }
    errors.push((
        raw.clone(),
        IdxArray::from_bytes(&raw, bytes.to_vec()).unwrap_err(),
    ));
    assert!(
        !folder.join("cache").join("malformed").exists(),
        "a malformed .gz leaves no cache file"
    );
    std::fs::remove_dir_all(&folder).unwrap();
    errors
}

/// Checks that every error names its file (in the value and in the message).
fn assert_names_file(path: &Path, error: &DatasetError, reported: &Path) {
    assert_eq!(reported, path, "{error}");
    assert!(
        error.to_string().contains(&path.display().to_string()),
        "{error}"
    );
}

#[test]
fn malformed_too_short_for_header() {
    for (path, error) in errors_for(&[0, 0, 8]) {
        match &error {
            DatasetError::TooShortForHeader {
                path: reported,
                length: 3,
            } => assert_names_file(&path, &error, reported),
            other => panic!("expected TooShortForHeader, got {other:?}"),
        }
    }
}

#[test]
fn malformed_bad_magic() {
    for (path, error) in errors_for(&[0x1F, 0x8B, 8, 1, 0, 0, 0, 0]) {
        match &error {
            DatasetError::BadMagic {
                path: reported,
                found: [0x1F, 0x8B],
            } => assert_names_file(&path, &error, reported),
            other => panic!("expected BadMagic, got {other:?}"),
        }
    }
}

#[test]
fn malformed_unknown_element_type() {
    for (path, error) in errors_for(&[0, 0, 0x07, 1, 0, 0, 0, 0]) {
        match &error {
            DatasetError::UnknownElementType {
                path: reported,
                code: 0x07,
            } => assert_names_file(&path, &error, reported),
            other => panic!("expected UnknownElementType, got {other:?}"),
        }
    }
}

#[test]
fn malformed_zero_rank() {
    for (path, error) in errors_for(&[0, 0, 0x08, 0, 1, 2, 3]) {
        match &error {
            DatasetError::ZeroRank { path: reported } => assert_names_file(&path, &error, reported),
            other => panic!("expected ZeroRank, got {other:?}"),
        }
    }
}

#[test]
fn malformed_dimensions_cut_off() {
    for (path, error) in errors_for(&[0, 0, 0x08, 3, 0, 0, 0, 60, 0, 0, 0]) {
        match &error {
            DatasetError::DimensionsCutOff {
                path: reported,
                rank: 3,
                length: 11,
            } => assert_names_file(&path, &error, reported),
            other => panic!("expected DimensionsCutOff, got {other:?}"),
        }
    }
}

#[test]
fn malformed_size_overflow() {
    // f64, 3 dimensions of 2^32 - 1: (2^32 - 1)^3 overflows u64.
    let mut bytes = vec![0, 0, 0x0E, 3];
    for _ in 0..3 {
        bytes.extend_from_slice(&u32::MAX.to_be_bytes());
    }
    bytes.extend_from_slice(&[1, 2, 3, 4]);
    for (path, error) in errors_for(&bytes) {
        match &error {
            DatasetError::SizeOverflow { path: reported } => {
                assert_names_file(&path, &error, reported)
            }
            other => panic!("expected SizeOverflow, got {other:?}"),
        }
    }
}

#[test]
fn malformed_short_data_with_a_huge_claim_allocates_nothing_from_the_header() {
    // Claims 2^31 x 2^31 bytes (2^62, fits u64). Must be Truncated, at once, without trying to
    // allocate or read that much.
    let mut bytes = vec![0, 0, 0x08, 2];
    bytes.extend_from_slice(&0x8000_0000u32.to_be_bytes());
    bytes.extend_from_slice(&0x8000_0000u32.to_be_bytes());
    bytes.extend_from_slice(&[0; 16]);
    for (path, error) in errors_for(&bytes) {
        match &error {
            DatasetError::Truncated {
                path: reported,
                expected,
                actual: 28,
            } => {
                assert_eq!(*expected, 12 + (1u64 << 62));
                assert_names_file(&path, &error, reported)
            }
            other => panic!("expected Truncated, got {other:?}"),
        }
    }
}

#[test]
fn malformed_short_data() {
    let mut bytes = encode_idx::<i16>(&[2, 3], &[1, 2, 3, 4, 5, 6]).unwrap();
    bytes.pop();
    for (path, error) in errors_for(&bytes) {
        match &error {
            DatasetError::Truncated {
                path: reported,
                expected: 24,
                actual: 23,
            } => assert_names_file(&path, &error, reported),
            other => panic!("expected Truncated, got {other:?}"),
        }
    }
}

#[test]
fn malformed_trailing_bytes() {
    let mut bytes = encode_idx::<f32>(&[2], &[1.0, 2.0]).unwrap();
    bytes.extend_from_slice(&[0xAB; 3]);
    for (path, error) in errors_for(&bytes) {
        match &error {
            DatasetError::TrailingBytes {
                path: reported,
                expected: 16,
                actual: 19,
            } => assert_names_file(&path, &error, reported),
            other => panic!("expected TrailingBytes, got {other:?}"),
        }
    }
}

#[test]
fn wrong_element_type_for_typed_access() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("floats");
    write_idx(&path, &[2], &[1.5f64, 2.5]).unwrap();
    let array = IdxArray::open_owned(&path).unwrap();
    match array.as_u8() {
        Err(DatasetError::WrongElementType {
            path: reported,
            expected,
            found,
        }) => {
            assert_eq!(reported, path);
            assert_eq!((expected, found), (ElementType::U8, ElementType::F64));
        }
        other => panic!("expected WrongElementType, got {other:?}"),
    }
    assert!(matches!(
        array.as_i8(),
        Err(DatasetError::WrongElementType { .. })
    ));
    assert!(matches!(
        array.to_vec::<i32>(),
        Err(DatasetError::WrongElementType { .. })
    ));
    assert_eq!(array.to_vec::<f64>().unwrap(), [1.5, 2.5]);
}
