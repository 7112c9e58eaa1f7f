//! Writing IDX files of every element type and rank.

use std::io::{BufWriter, Write};
use std::path::Path;

use crate::atomic::AtomicFile;
use crate::element::IdxElement;
use crate::error::{DatasetError, Result, ShapeProblem};

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
    let mut element_count: usize = 1;
    for (index, &size) in shape.iter().enumerate() {
        let size_u32 =
            u32::try_from(size).map_err(|_| invalid(ShapeProblem::DimensionAboveU32 { index }))?;
        header.extend_from_slice(&size_u32.to_be_bytes());
        element_count = element_count
            .checked_mul(size)
            .ok_or_else(|| invalid(ShapeProblem::ElementCountOverflow))?;
    }
    element_count
        .checked_mul(T::ELEMENT_TYPE.size_in_bytes())
        .and_then(|bytes| bytes.checked_add(header.len()))
        .ok_or_else(|| invalid(ShapeProblem::ElementCountOverflow))?;
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
/// let bytes = reclaim_dataset::encode_idx::<i16>(&[2], &[1, -1])?;
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
