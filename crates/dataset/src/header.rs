//! Parsing and checking the IDX header.

use std::path::Path;

use crate::element::ElementType;
use crate::error::{DatasetError, Result};

/// The longest possible IDX header: 4 magic bytes and 255 dimension sizes of 4 bytes.
pub const MAXIMUM_HEADER_LENGTH: usize = 4 + 4 * 255;

/// A parsed and checked IDX header: element type and dimensions.
///
/// An `IdxHeader` obtained from [`parse_idx_header`] has been checked against the file's length:
/// `data_offset() + data_length()` equals it exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdxHeader {
    element_type: ElementType,
    dimensions: Vec<usize>,
    element_count: u64,
    row_length: u64,
    data_length: u64,
}

/// The product of `sizes`, or `None` on overflow. Exactly 0 when any size is 0, whatever the
/// others (so `[5, 2^32 - 1, 2^32 - 1, 0]` is an empty array, not an overflow).
pub(crate) fn checked_product(sizes: &[u32]) -> Option<u64> {
    if sizes.contains(&0) {
        return Some(0);
    }
    sizes
        .iter()
        .try_fold(1u64, |product, &size| product.checked_mul(u64::from(size)))
}

impl IdxHeader {
    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.element_type
    }

    /// The size of each dimension, outermost first (rank = `dimensions().len()`, 1 to 255).
    pub fn dimensions(&self) -> &[usize] {
        &self.dimensions
    }

    /// The number of dimensions (1 to 255).
    pub fn rank(&self) -> usize {
        self.dimensions.len()
    }

    /// Where the data starts: `4 + 4 * rank` bytes.
    pub fn data_offset(&self) -> usize {
        4 + 4 * self.dimensions.len()
    }

    /// The number of elements: the product of the dimensions.
    pub fn element_count(&self) -> u64 {
        self.element_count
    }

    /// Elements per row: the product of the dimensions after the first (1 for rank 1).
    pub fn row_length(&self) -> u64 {
        self.row_length
    }

    /// The data's length in bytes: element count times element size.
    pub fn data_length(&self) -> u64 {
        self.data_length
    }

    /// The file's length in bytes: header plus data.
    pub fn file_length(&self) -> u64 {
        // Cannot overflow: checked when the header was parsed.
        self.data_offset() as u64 + self.data_length
    }

    /// Parses the header at the start of `bytes` without comparing with the file's length: magic,
    /// element type, rank, dimensions, and the (checked) data size. `bytes` may be just a prefix
    /// of the file; `known_length` is what is known of the file's length for error messages.
    pub(crate) fn parse_structure(bytes: &[u8], path: &Path, known_length: u64) -> Result<Self> {
        let reported_length = known_length.min(bytes.len() as u64);
        let Some(magic) = bytes.get(..4) else {
            return Err(DatasetError::TooShortForHeader {
                path: path.to_path_buf(),
                length: reported_length,
            });
        };
        if magic[0] != 0 || magic[1] != 0 {
            return Err(DatasetError::BadMagic {
                path: path.to_path_buf(),
                found: [magic[0], magic[1]],
            });
        }
        let element_type =
            ElementType::from_code(magic[2]).ok_or_else(|| DatasetError::UnknownElementType {
                path: path.to_path_buf(),
                code: magic[2],
            })?;
        let rank = magic[3];
        if rank == 0 {
            return Err(DatasetError::ZeroRank {
                path: path.to_path_buf(),
            });
        }
        let header_length = 4 + 4 * usize::from(rank);
        let Some(dimension_bytes) = bytes.get(4..header_length) else {
            return Err(DatasetError::DimensionsCutOff {
                path: path.to_path_buf(),
                rank,
                length: reported_length,
            });
        };
        let overflow = || DatasetError::SizeOverflow {
            path: path.to_path_buf(),
        };
        // At most 255 entries: bounded by the format, not by the header's claims.
        let sizes: Vec<u32> = dimension_bytes
            .chunks_exact(4)
            .map(|chunk| u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
            .collect();
        let element_size = element_type.size_in_bytes() as u64;
        let element_count = checked_product(&sizes).ok_or_else(overflow)?;
        let data_length = element_count
            .checked_mul(element_size)
            .ok_or_else(overflow)?;
        let file_length = data_length
            .checked_add(header_length as u64)
            .ok_or_else(overflow)?;
        // One row's size must be computable too, even when there are no rows (`[0, 2^32 - 1,
        // 2^32 - 1, 2^32 - 1]` holds nothing, but its rows would overflow).
        let row_length = checked_product(&sizes[1..]).ok_or_else(overflow)?;
        let row_bytes = row_length.checked_mul(element_size).ok_or_else(overflow)?;
        // The whole file, and a row, must be addressable as one slice on this machine.
        usize::try_from(file_length).map_err(|_| overflow())?;
        usize::try_from(row_bytes).map_err(|_| overflow())?;
        let dimensions = sizes
            .iter()
            .map(|&size| usize::try_from(size).map_err(|_| overflow()))
            .collect::<Result<Vec<usize>>>()?;
        Ok(IdxHeader {
            element_type,
            dimensions,
            element_count,
            row_length,
            data_length,
        })
    }

    /// Compares the announced length with the file's actual length.
    pub(crate) fn check_length(&self, path: &Path, actual_length: u64) -> Result<()> {
        let expected = self.file_length();
        if actual_length < expected {
            Err(DatasetError::Truncated {
                path: path.to_path_buf(),
                expected,
                actual: actual_length,
            })
        } else if actual_length > expected {
            Err(DatasetError::TrailingBytes {
                path: path.to_path_buf(),
                expected,
                actual: actual_length,
            })
        } else {
            Ok(())
        }
    }
}

/// Parses and checks an IDX header.
///
/// `bytes` is the start of the file: at least its first [`MAXIMUM_HEADER_LENGTH`] bytes, or the
/// whole file if shorter (passing the whole file is fine). `file_length` is the file's full
/// length in bytes. `path` is only used in error messages.
///
/// Checks, in order: at least 4 bytes ([`DatasetError::TooShortForHeader`]), magic `00 00`
/// ([`DatasetError::BadMagic`]), a known element type ([`DatasetError::UnknownElementType`]),
/// rank above 0 ([`DatasetError::ZeroRank`]), all dimension sizes present
/// ([`DatasetError::DimensionsCutOff`]), no overflow computing the size
/// ([`DatasetError::SizeOverflow`]), and finally `file_length` equal to header plus data
/// ([`DatasetError::Truncated`], [`DatasetError::TrailingBytes`]).
///
/// Never panics and allocates at most 255 dimension sizes, whatever the input.
///
/// ```
/// use std::path::Path;
/// use reclaim_dataset::idx::{ElementType, parse_idx_header};
///
/// let bytes = [0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6];
/// let header = parse_idx_header(&bytes, Path::new("tiny"), bytes.len() as u64)?;
/// assert_eq!(header.element_type(), ElementType::U8);
/// assert_eq!(header.dimensions(), &[2, 3]);
/// assert_eq!(header.data_offset(), 12);
/// assert_eq!(header.data_length(), 6);
/// # Ok::<(), reclaim_dataset::DatasetError>(())
/// ```
pub fn parse_idx_header(bytes: &[u8], path: &Path, file_length: u64) -> Result<IdxHeader> {
    let header = IdxHeader::parse_structure(bytes, path, file_length)?;
    header.check_length(path, file_length)?;
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(bytes: &[u8]) -> Result<IdxHeader> {
        parse_idx_header(bytes, Path::new("test.idx"), bytes.len() as u64)
    }

    #[test]
    fn too_short_for_header() {
        for length in 0..4 {
            let bytes = vec![0u8; length];
            assert!(matches!(
                parse(&bytes),
                Err(DatasetError::TooShortForHeader { length: l, .. }) if l == length as u64
            ));
        }
    }

    #[test]
    fn bad_magic() {
        assert!(matches!(
            parse(&[0x1F, 0x8B, 0x08, 0x01, 0, 0, 0, 0]),
            Err(DatasetError::BadMagic {
                found: [0x1F, 0x8B],
                ..
            })
        ));
        assert!(matches!(
            parse(&[0x00, 0x01, 0x08, 0x01, 0, 0, 0, 0]),
            Err(DatasetError::BadMagic {
                found: [0x00, 0x01],
                ..
            })
        ));
    }

    #[test]
    fn unknown_element_type() {
        assert!(matches!(
            parse(&[0, 0, 0x0A, 1, 0, 0, 0, 0]),
            Err(DatasetError::UnknownElementType { code: 0x0A, .. })
        ));
    }

    #[test]
    fn zero_rank() {
        assert!(matches!(
            parse(&[0, 0, 0x08, 0]),
            Err(DatasetError::ZeroRank { .. })
        ));
    }

    #[test]
    fn dimensions_cut_off() {
        assert!(matches!(
            parse(&[0, 0, 0x08, 3, 0, 0, 0, 1, 0, 0]),
            Err(DatasetError::DimensionsCutOff {
                rank: 3,
                length: 10,
                ..
            })
        ));
    }

    #[test]
    fn size_overflow() {
        // 255 dimensions of 2^32 - 1: the product overflows u64.
        let mut bytes = vec![0, 0, 0x0E, 255];
        for _ in 0..255 {
            bytes.extend_from_slice(&u32::MAX.to_be_bytes());
        }
        assert!(matches!(
            parse(&bytes),
            Err(DatasetError::SizeOverflow { .. })
        ));
        // Element count fits in u64 but times 8 bytes does not.
        let mut bytes = vec![0, 0, 0x0E, 2];
        bytes.extend_from_slice(&u32::MAX.to_be_bytes());
        bytes.extend_from_slice(&0x2000_0001u32.to_be_bytes());
        assert!(matches!(
            parse(&bytes),
            Err(DatasetError::SizeOverflow { .. })
        ));
    }

    #[test]
    fn size_overflow_of_a_row_in_an_empty_array() {
        // No rows, but each row would hold (2^32 - 1)^3 elements: found by fuzzing.
        let mut bytes = vec![0, 0, 0x08, 4, 0, 0, 0, 0];
        for _ in 0..3 {
            bytes.extend_from_slice(&u32::MAX.to_be_bytes());
        }
        assert!(matches!(
            parse(&bytes),
            Err(DatasetError::SizeOverflow { .. })
        ));
    }

    #[test]
    fn a_zero_anywhere_makes_an_empty_array_not_an_overflow() {
        let mut bytes = vec![0, 0, 0x0E, 4, 0, 0, 0, 5];
        bytes.extend_from_slice(&u32::MAX.to_be_bytes());
        bytes.extend_from_slice(&u32::MAX.to_be_bytes());
        bytes.extend_from_slice(&0u32.to_be_bytes());
        let header = parse(&bytes).expect("an empty array");
        assert_eq!((header.element_count(), header.row_length()), (0, 0));
    }

    #[test]
    fn truncated_and_trailing() {
        let bytes = [0, 0, 0x0B, 1, 0, 0, 0, 2, 0, 1, 0];
        assert!(matches!(
            parse(&bytes),
            Err(DatasetError::Truncated {
                expected: 12,
                actual: 11,
                ..
            })
        ));
        let bytes = [0, 0, 0x0B, 1, 0, 0, 0, 2, 0, 1, 0, 2, 9];
        assert!(matches!(
            parse(&bytes),
            Err(DatasetError::TrailingBytes {
                expected: 12,
                actual: 13,
                ..
            })
        ));
    }

    #[test]
    fn a_prefix_is_enough_when_the_full_length_is_given() {
        let header = parse_idx_header(&[0, 0, 0x08, 1, 0, 0, 0, 100], Path::new("p"), 108)
            .expect("prefix with the full length parses");
        assert_eq!(header.dimensions(), &[100]);
        assert_eq!(header.file_length(), 108);
    }

    #[test]
    fn zero_sized_dimension_is_an_empty_array() {
        let header = parse(&[0, 0, 0x0D, 2, 0, 0, 0, 0, 0, 0, 0, 5]).expect("empty array");
        assert_eq!(header.element_count(), 0);
        assert_eq!(header.data_length(), 0);
    }

    /// One dimension size: mostly small, sometimes 0 or huge, so that products both fit and
    /// overflow at every rank.
    fn dimension_size() -> impl Strategy<Value = u32> {
        prop_oneof![
            6 => 1u32..4,
            1 => Just(0u32),
            1 => Just(u32::MAX),
            1 => any::<u32>(),
        ]
    }

    /// What the parser must answer for a header, computed independently in 128-bit arithmetic.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Expected {
        ZeroRank,
        UnknownElementType,
        DimensionsCutOff,
        SizeOverflow,
        Length {
            file_length: u64,
            element_count: u64,
        },
    }

    fn expected(code: u8, sizes: &[u32], present: usize) -> Expected {
        let Some(element_type) = ElementType::from_code(code) else {
            return Expected::UnknownElementType;
        };
        if sizes.is_empty() {
            return Expected::ZeroRank;
        }
        if present < sizes.len() {
            return Expected::DimensionsCutOff;
        }
        // Saturating at 2^127 keeps every product exact below the limits that matter.
        let product = |sizes: &[u32]| -> u128 {
            if sizes.contains(&0) {
                return 0;
            }
            sizes.iter().fold(1u128, |product, &size| {
                product.saturating_mul(u128::from(size))
            })
        };
        let element_size = element_type.size_in_bytes() as u128;
        let count = product(sizes);
        let file_length = count
            .saturating_mul(element_size)
            .saturating_add(4 + 4 * sizes.len() as u128);
        let row_bytes = product(&sizes[1..]).saturating_mul(element_size);
        let limit = usize::MAX as u128;
        if count > u64::MAX as u128
            || file_length > limit.min(u64::MAX as u128)
            || row_bytes > limit
        {
            return Expected::SizeOverflow;
        }
        Expected::Length {
            file_length: file_length as u64,
            element_count: count as u64,
        }
    }

    fn outcome(result: Result<IdxHeader>) -> Expected {
        match result {
            Ok(header) => Expected::Length {
                file_length: header.file_length(),
                element_count: header.element_count(),
            },
            Err(DatasetError::ZeroRank { .. }) => Expected::ZeroRank,
            Err(DatasetError::UnknownElementType { .. }) => Expected::UnknownElementType,
            Err(DatasetError::DimensionsCutOff { .. }) => Expected::DimensionsCutOff,
            Err(DatasetError::SizeOverflow { .. }) => Expected::SizeOverflow,
            Err(other) => panic!("unexpected error {other:?}"),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Headers of every rank from 0 to 255 (every dimension present, or cut off at any
        /// point), random element type codes and sizes: the parser gives the typed error the
        /// 128-bit reference computation predicts, or a header whose lengths agree with it;
        /// never a panic.
        #[test]
        fn headers_of_every_rank_get_the_predicted_outcome(
            code in prop_oneof![4 => prop::sample::select(vec![0x08u8, 0x09, 0x0B, 0x0C, 0x0D, 0x0E]), 1 => any::<u8>()],
            sizes in proptest::collection::vec(dimension_size(), 0..=255),
            cut in any::<prop::sample::Index>(),
            cut_off in prop::bool::weighted(0.2),
        ) {
            let mut bytes = vec![0, 0, code, sizes.len() as u8];
            for size in &sizes {
                bytes.extend_from_slice(&size.to_be_bytes());
            }
            let present = if cut_off && !sizes.is_empty() { cut.index(sizes.len()) } else { sizes.len() };
            bytes.truncate(4 + 4 * present);
            let prediction = expected(code, &sizes, present);
            // The claimed length is what the prediction says is right, so an accepted header
            // must agree with it exactly.
            let claimed = match prediction {
                Expected::Length { file_length, .. } => file_length,
                _ => bytes.len() as u64,
            };
            let structure = IdxHeader::parse_structure(&bytes, Path::new("rank"), claimed);
            prop_assert_eq!(outcome(structure), expected(code, &sizes, present));
            let parsed = parse_idx_header(&bytes, Path::new("rank"), claimed);
            prop_assert_eq!(outcome(parsed), prediction);
            // One byte more or less than announced is refused as such.
            if let Expected::Length { file_length, .. } = prediction {
                let longer = parse_idx_header(&bytes, Path::new("rank"), file_length + 1);
                let is_trailing = matches!(longer, Err(DatasetError::TrailingBytes { .. }));
                prop_assert!(is_trailing);
                if file_length > bytes.len() as u64 {
                    let shorter = parse_idx_header(&bytes, Path::new("rank"), file_length - 1);
                    let is_truncated = matches!(shorter, Err(DatasetError::Truncated { .. }));
                    prop_assert!(is_truncated);
                }
            }
        }

        #[test]
        fn never_panics_on_arbitrary_bytes(
            bytes in proptest::collection::vec(any::<u8>(), 0..=MAXIMUM_HEADER_LENGTH + 8),
            claimed_length in any::<u64>(),
        ) {
            let _ = parse_idx_header(&bytes, Path::new("fuzz"), claimed_length);
            let _ = parse(&bytes);
        }

        #[test]
        fn accepted_headers_agree_with_the_length(
            code in prop::sample::select(vec![0x08u8, 0x09, 0x0B, 0x0C, 0x0D, 0x0E]),
            dimensions in proptest::collection::vec(0u32..6, 1..5),
        ) {
            let mut bytes = vec![0, 0, code, dimensions.len() as u8];
            for size in &dimensions {
                bytes.extend_from_slice(&size.to_be_bytes());
            }
            let element_size = ElementType::from_code(code).unwrap().size_in_bytes();
            let count: usize = dimensions.iter().map(|&d| d as usize).product();
            bytes.resize(bytes.len() + count * element_size, 7);
            let header = parse(&bytes).unwrap();
            prop_assert_eq!(header.file_length(), bytes.len() as u64);
            prop_assert_eq!(header.element_count(), count as u64);
        }
    }
}
