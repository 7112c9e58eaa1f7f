//! Writing IDX files of every element type and rank.

use std::io::{BufWriter, Write};
use std::path::Path;

use crate::atomic::AtomicFile;
use crate::element::IdxElement;
use crate::error::{DatasetError, Result, ShapeProblem};
use crate::header::checked_product;

/// Elements encoded per chunk when streaming to a file.
const ELEMENTS_PER_CHUNK: usize = 64 * 1024;

/// Checks a shape against the data and returns the header bytes.
fn header_bytes<T: IdxElement>(
    path: Option<&Path>,
    shape: &[usize],
    data: &[T],
) -> Result<Vec<u8>> {
    let invalid = |problem| DatasetError::InvalidShape {
        path: path.map(Path::to_path_buf),
        shape: shape.to_vec(),
        element_count: data.len(),
        problem,
    };
    let rank = match shape.len() {
        0 => return Err(invalid(ShapeProblem::RankZero)),
        rank => u8::try_from(rank).map_err(|_| invalid(ShapeProblem::RankAbove255))?,
    };
    let mut header = Vec::with_capacity(4 + 4 * shape.len());
    header.extend_from_slice(&[0, 0, T::ELEMENT_TYPE.code(), rank]);
    let mut sizes = Vec::with_capacity(shape.len());
    for (index, &size) in shape.iter().enumerate() {
        let size_u32 =
            u32::try_from(size).map_err(|_| invalid(ShapeProblem::DimensionAboveU32 { index }))?;
        header.extend_from_slice(&size_u32.to_be_bytes());
        sizes.push(size_u32);
    }
    // The same checks as the reader's (see `IdxHeader::parse_structure`), so that whatever is
    // written can be read: the element count, the data and file sizes, and one row's size.
    let element_size = T::ELEMENT_TYPE.size_in_bytes() as u64;
    let fits = || -> Option<usize> {
        let element_count = checked_product(&sizes)?;
        let file_length = element_count
            .checked_mul(element_size)?
            .checked_add(header.len() as u64)?;
        let row_bytes = checked_product(&sizes[1..])?.checked_mul(element_size)?;
        usize::try_from(file_length).ok()?;
        usize::try_from(row_bytes).ok()?;
        usize::try_from(element_count).ok()
    };
    let element_count = fits().ok_or_else(|| invalid(ShapeProblem::ElementCountOverflow))?;
    if element_count != data.len() {
        return Err(invalid(ShapeProblem::ElementCountMismatch {
            expected: element_count,
        }));
    }
    Ok(header)
}

/// Encodes an array as the bytes of an IDX file (header, then big-endian row-major data).
///
/// `shape` needs 1 to 255 dimensions, each at most `u32::MAX`, whose product is `data.len()`;
/// otherwise [`DatasetError::InvalidShape`].
///
/// ```
/// let bytes = reclaim_dataset::idx::encode_idx::<i16>(&[2], &[1, -1])?;
/// assert_eq!(bytes, [0, 0, 0x0B, 1, 0, 0, 0, 2, 0, 1, 0xFF, 0xFF]);
/// # Ok::<(), reclaim_dataset::DatasetError>(())
/// ```
pub fn encode_idx<T: IdxElement>(shape: &[usize], data: &[T]) -> Result<Vec<u8>> {
    let header = header_bytes(None, shape, data)?;
    // Exact capacity: the length was checked not to overflow.
    let mut bytes = Vec::with_capacity(header.len() + std::mem::size_of_val(data));
    bytes.extend_from_slice(&header);
    T::encode_big_endian(data, &mut bytes);
    Ok(bytes)
}

/// Writes an array as an IDX file, atomically: into a temporary file in the same folder, renamed
/// to `path` once complete (the folder is created if missing). On any error nothing is left
/// behind and an existing file at `path` is untouched.
pub fn write_idx<T: IdxElement>(path: impl AsRef<Path>, shape: &[usize], data: &[T]) -> Result<()> {
    let path = path.as_ref();
    let header = header_bytes(Some(path), shape, data)?;
    let mut destination = AtomicFile::create(path)?;
    let temporary_path = destination.temporary_path().to_path_buf();
    {
        let mut writer = BufWriter::new(destination.file());
        let write_error = |error| DatasetError::io(&temporary_path, error);
        writer.write_all(&header).map_err(write_error)?;
        let mut chunk_bytes = Vec::new();
        for chunk in data.chunks(ELEMENTS_PER_CHUNK) {
            chunk_bytes.clear();
            T::encode_big_endian(chunk, &mut chunk_bytes);
            writer.write_all(&chunk_bytes).map_err(write_error)?;
        }
        writer.flush().map_err(write_error)?;
    }
    destination.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_problems_are_reported() {
        let problem = |result: Result<Vec<u8>>| match result {
            Err(DatasetError::InvalidShape { problem, .. }) => problem,
            other => panic!("expected InvalidShape, got {other:?}"),
        };
        assert_eq!(problem(encode_idx::<u8>(&[], &[])), ShapeProblem::RankZero);
        assert_eq!(
            problem(encode_idx::<u8>(&[1; 256], &[0])),
            ShapeProblem::RankAbove255
        );
        assert_eq!(
            problem(encode_idx::<u8>(&[2, 2], &[1, 2, 3])),
            ShapeProblem::ElementCountMismatch { expected: 4 }
        );
        assert_eq!(
            problem(encode_idx::<u8>(&[1, 1usize << 33], &[])),
            ShapeProblem::DimensionAboveU32 { index: 1 }
        );
        assert_eq!(
            problem(encode_idx::<f64>(&[u32::MAX as usize; 3], &[])),
            ShapeProblem::ElementCountOverflow
        );
    }

    #[test]
    fn writer_accepts_exactly_what_the_reader_accepts_for_empty_arrays() {
        // Found by fuzzing: a zero at the end makes the array empty even if the other sizes'
        // product would overflow; the writer must agree with the reader.
        let shape = [97_841, 3_829_172_224, 1_973_207_040, 0];
        let bytes = encode_idx::<f64>(&shape, &[]).unwrap();
        let array = crate::idx::IdxArray::from_bytes("empty", bytes).unwrap();
        assert_eq!(array.shape(), &shape);
        assert_eq!(array.row_length(), 0);
        // No rows, but rows too large to address: both sides refuse.
        let shape = [0, u32::MAX as usize, u32::MAX as usize, u32::MAX as usize];
        let problem = match encode_idx::<u8>(&shape, &[]) {
            Err(DatasetError::InvalidShape { problem, .. }) => problem,
            other => panic!("expected InvalidShape, got {other:?}"),
        };
        assert_eq!(problem, ShapeProblem::ElementCountOverflow);
    }

    #[test]
    fn rank_255_is_accepted() {
        let bytes = encode_idx::<u8>(&[1; 255], &[42]).unwrap();
        assert_eq!(bytes.len(), 4 + 4 * 255 + 1);
        assert_eq!(bytes[3], 255);
    }

    #[test]
    fn failed_write_leaves_existing_file_untouched() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("kept");
        write_idx::<u8>(&path, &[2], &[1, 2]).unwrap();
        let before = std::fs::read(&path).unwrap();
        assert!(write_idx::<u8>(&path, &[3], &[1, 2]).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), before);
        assert_eq!(std::fs::read_dir(folder.path()).unwrap().count(), 1);
    }
}
