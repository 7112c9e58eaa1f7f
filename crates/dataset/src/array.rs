//! [`IdxArray`]: one validated IDX file, memory-mapped or owned.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::element::{ElementType, IdxElement};
use crate::error::{DatasetError, Result};
use crate::file_bytes::{AccessPattern, FileBytes, StorageKind};
use crate::fingerprint::FileFingerprint;
use crate::gz::{decompress_gz_cached_under, decompress_validated, is_gz_path, user_cache_roots};
use crate::header::{IdxHeader, MAXIMUM_HEADER_LENGTH, parse_idx_header};
use crate::open::open_regular;

/// One IDX file: element type, shape and data, validated when opened.
///
/// Opening checks the header and that the file's length is exactly the header plus the product
/// of the dimensions times the element size (see [`parse_idx_header`]), so every accessor below
/// works on data known to be complete. The bytes are either memory-mapped
/// ([`IdxArray::open_mapped`]) or read into memory ([`IdxArray::open_owned`],
/// [`IdxArray::from_bytes`]). A `.gz` path is decompressed once into a cache folder beside it or
/// in the user's cache folder (see [`crate::idx::decompress_gz_cached`]) and the decompressed file is opened,
/// or, when no cache can be written, decompressed into memory.
///
/// Dropping the array releases the memory: the map is unmapped or the buffer freed.
pub struct IdxArray {
    /// The bytes and the path that names them.
    file: FileBytes,
    compressed_source: Option<PathBuf>,
    header: IdxHeader,
}

impl fmt::Debug for IdxArray {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("IdxArray")
            .field("path", &self.path())
            .field("compressed_source", &self.compressed_source)
            .field("element_type", &self.header.element_type())
            .field("shape", &self.header.dimensions())
            .field("storage", &self.storage())
            .finish()
    }
}

/// A `.gz` input resolved: its cache file, or (no cache location writable) the array
/// decompressed into memory.
enum GzInput {
    Cached(PathBuf),
    InMemory(IdxArray),
}

/// Resolves a `.gz` path through the decompression cache, falling back to memory.
fn resolve_gz(gz_path: &Path, user_cache_roots: &[PathBuf]) -> Result<GzInput> {
    match decompress_gz_cached_under(gz_path, user_cache_roots) {
        Ok(cache_path) => Ok(GzInput::Cached(cache_path)),
        Err(DatasetError::CacheUnavailable { .. }) => {
            IdxArray::decompress_in_memory(gz_path).map(GzInput::InMemory)
        }
        Err(error) => Err(error),
    }
}

/// Opens a regular file (see [`open_regular`]) and returns it with its length.
fn open_file(path: &Path) -> Result<(File, u64)> {
    let (file, metadata) = open_regular(path)?;
    Ok((file, metadata.len()))
}

impl IdxArray {
    /// Memory-maps and validates an IDX file (raw, or `.gz` through the decompression cache).
    ///
    /// Opening is cheap: the header is read and the length checked, no data page is touched.
    /// Only regular files are opened ([`DatasetError::NotARegularFile`] for a FIFO, socket,
    /// device or folder, without blocking).
    ///
    /// A `.gz` path is mapped from its decompressed cache file (see [`crate::idx::decompress_gz_cached`]:
    /// beside the `.gz`, else in the user's cache folder). When no cache location can be written
    /// (a read-only data folder and no writable `$XDG_CACHE_HOME` or `~/.cache`), the file is
    /// decompressed into memory instead and the array is [`StorageKind::Owned`]: it then costs
    /// its whole decompressed size on the heap, and the decompression on every open.
    ///
    /// # Safety
    ///
    /// This is memmap2's contract for [`memmap2::Mmap::map`]: the file must not be modified or
    /// truncated (by this or any other process) while the array exists. Files written by this
    /// crate ([`crate::idx::write_idx`], the `.gz` cache, fetching) are replaced by renaming, never
    /// modified in place, so they satisfy this.
    ///
    /// What happens when the contract is broken anyway:
    ///
    /// - *Truncated*: reading a page past the file's new end raises `SIGBUS`, whose default
    ///   action kills the process. If the program has installed Reclaim's guard
    ///   ([`crate::install_sigbus_guard`], on Linux; mapping does not install it), the guard
    ///   catches it: the whole map is replaced by zero pages (every later read of this array
    ///   sees zeros, and nothing faults again) and [`IdxArray::verify_mapping_intact`] returns
    ///   [`DatasetError::MappedFileChanged`] from then on, so a caller that checks it
    ///   (reclaim-loader, once per batch) stops with a typed error instead of the process dying;
    ///   what it read between the fault and the check was zeros, to be discarded. A mitigation,
    ///   not a guarantee. Not caught: anything while the guard is not installed (or after
    ///   another `SIGBUS` handler replaced it); a truncation that nothing reads past, or that
    ///   removes no whole page (the bytes past the new end inside its last page read as zeros
    ///   without a fault); a map made while the guard's table of 64 mappings is full (it is
    ///   then unguarded, and `SIGBUS` kills the process as before); every target but Linux.
    /// - *Modified in place* (bytes rewritten, same length): nothing faults; the slices this
    ///   array hands out silently change, and nothing here can notice it. Labels were checked
    ///   against the number of classes only when the file was opened; reclaim-loader, given the
    ///   class count, checks each label again as it batches it, so a changed label is at worst
    ///   another valid label or a typed error, never an out-of-bounds index.
    pub unsafe fn open_mapped(path: impl AsRef<Path>) -> Result<Self> {
        // SAFETY: the caller upholds this function's contract, which is `open_mapped_under`'s.
        unsafe { Self::open_mapped_under(path.as_ref(), &user_cache_roots()) }
    }

    /// [`IdxArray::open_mapped`] with the user's cache folders given (tests give their own).
    ///
    /// # Safety
    ///
    /// As for [`IdxArray::open_mapped`].
    pub(crate) unsafe fn open_mapped_under(
        path: &Path,
        user_cache_roots: &[PathBuf],
    ) -> Result<Self> {
        let (path, compressed_source) = if is_gz_path(path) {
            match resolve_gz(path, user_cache_roots)? {
                GzInput::Cached(cache_path) => (cache_path, Some(path.to_path_buf())),
                GzInput::InMemory(array) => return Ok(array),
            }
        } else {
            (path.to_path_buf(), None)
        };
        // An empty file cannot be mapped on every platform, and cannot be valid anyway.
        let refuse_empty = |path: &Path, length: u64| {
            if length == 0 {
                parse_idx_header(&[], path, 0)?;
            }
            Ok(())
        };
        // SAFETY: forwarded to the caller (memmap2's contract, under `# Safety` above).
        let file = unsafe { FileBytes::open_mapped(&path, refuse_empty) }?;
        let bytes = file.bytes();
        let prefix = &bytes[..bytes.len().min(MAXIMUM_HEADER_LENGTH)];
        let header = parse_idx_header(prefix, &path, bytes.len() as u64)?;
        Ok(IdxArray {
            file,
            compressed_source,
            header,
        })
    }

    /// Reads and validates an IDX file (raw, or `.gz` through the decompression cache) into
    /// memory. Safe: later changes to the file do not affect the array.
    ///
    /// The header is checked against the file's length before the buffer for the data is
    /// allocated. Only regular files are opened (see [`IdxArray::open_mapped`]). A `.gz` is read
    /// from its decompressed cache file (beside it, else in the user's cache folder); when no
    /// cache location can be written it is decompressed straight into memory instead, and
    /// [`IdxArray::path`] is then the `.gz` itself.
    pub fn open_owned(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_owned_under(path.as_ref(), &user_cache_roots())
    }

    /// [`IdxArray::open_owned`] with the user's cache folders given (tests give their own).
    pub(crate) fn open_owned_under(path: &Path, user_cache_roots: &[PathBuf]) -> Result<Self> {
        if !is_gz_path(path) {
            return Self::open_owned_raw(path.to_path_buf(), None);
        }
        match resolve_gz(path, user_cache_roots)? {
            GzInput::Cached(cache_path) => {
                Self::open_owned_raw(cache_path, Some(path.to_path_buf()))
            }
            GzInput::InMemory(array) => Ok(array),
        }
    }

    /// Decompresses a `.gz` IDX file into memory, validating it on the way. The buffer grows with
    /// the data actually decompressed, never beyond the header's announced size.
    fn decompress_in_memory(gz_path: &Path) -> Result<Self> {
        let (file, _) = open_file(gz_path)?;
        let mut bytes = Vec::new();
        let header = decompress_validated(file, &mut bytes, gz_path, gz_path)?;
        bytes.shrink_to_fit();
        Ok(IdxArray {
            file: FileBytes::from_bytes(gz_path.to_path_buf(), bytes),
            compressed_source: Some(gz_path.to_path_buf()),
            header,
        })
    }

    fn open_owned_raw(path: PathBuf, compressed_source: Option<PathBuf>) -> Result<Self> {
        let (file, length) = open_file(&path)?;
        let mut prefix = Vec::with_capacity(MAXIMUM_HEADER_LENGTH);
        (&file)
            .take(MAXIMUM_HEADER_LENGTH as u64)
            .read_to_end(&mut prefix)
            .map_err(|error| DatasetError::io(&path, error))?;
        let header = parse_idx_header(&prefix, &path, length)?;
        // The length is now known to equal header + data and to fit in usize.
        let expected =
            usize::try_from(header.file_length()).map_err(|_| DatasetError::SizeOverflow {
                path: path.to_path_buf(),
            })?;
        // A file that grew between taking its length and reading the prefix has trailing bytes.
        let Some(remaining) = expected.checked_sub(prefix.len()) else {
            return Err(DatasetError::TrailingBytes {
                path,
                expected: header.file_length(),
                actual: prefix.len() as u64,
            });
        };
        let mut bytes = Vec::with_capacity(expected);
        bytes.extend_from_slice(&prefix);
        // Read one byte more than expected to notice a file that grew since its length was taken.
        (&file)
            .take(remaining as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|error| DatasetError::io(&path, error))?;
        header.check_length(&path, bytes.len() as u64)?;
        Ok(IdxArray {
            file: FileBytes::from_bytes(path, bytes),
            compressed_source,
            header,
        })
    }

    /// Validates an IDX file already in memory (header and data). `path_for_errors` names it in
    /// errors and is what [`IdxArray::path`] returns.
    pub fn from_bytes(path_for_errors: impl Into<PathBuf>, bytes: Vec<u8>) -> Result<Self> {
        let path = path_for_errors.into();
        let header = parse_idx_header(&bytes, &path, bytes.len() as u64)?;
        Ok(IdxArray {
            file: FileBytes::from_bytes(path, bytes),
            compressed_source: None,
            header,
        })
    }

    /// The file the bytes come from (for a `.gz` input: the decompressed cache file, or the `.gz`
    /// itself when it was decompressed in memory).
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// For an array opened from a `.gz` file: that file. `None` otherwise.
    pub fn compressed_source(&self) -> Option<&Path> {
        self.compressed_source.as_deref()
    }

    /// The parsed header.
    pub fn header(&self) -> &IdxHeader {
        &self.header
    }

    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.header.element_type()
    }

    /// The size of each dimension, outermost first.
    pub fn shape(&self) -> &[usize] {
        self.header.dimensions()
    }

    /// The number of rows: the first dimension.
    pub fn len(&self) -> usize {
        self.shape()[0]
    }

    /// Whether the first dimension is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Elements per row: the product of the dimensions after the first (1 for rank 1).
    pub fn row_length(&self) -> usize {
        // Fits: a row's byte size was checked to fit in usize when the header was parsed.
        self.header.row_length() as usize
    }

    /// The number of elements: the product of all dimensions.
    pub fn element_count(&self) -> usize {
        // Fits: the data length (a multiple of it) was checked to fit in usize.
        self.header.element_count() as usize
    }

    /// The raw big-endian data after the header, zero copy.
    pub fn data_bytes(&self) -> &[u8] {
        &self.file.bytes()[self.header.data_offset()..]
    }

    fn require(&self, expected: ElementType) -> Result<()> {
        if self.element_type() == expected {
            Ok(())
        } else {
            Err(DatasetError::WrongElementType {
                path: self.path().to_path_buf(),
                expected,
                found: self.element_type(),
            })
        }
    }

    /// The data of a `u8` array, zero copy; [`DatasetError::WrongElementType`] otherwise.
    pub fn as_u8(&self) -> Result<&[u8]> {
        self.require(ElementType::U8)?;
        Ok(self.data_bytes())
    }

    /// The data of an `i8` array, zero copy; [`DatasetError::WrongElementType`] otherwise.
    pub fn as_i8(&self) -> Result<&[i8]> {
        self.require(ElementType::I8)?;
        // u8 and i8 have the same size and alignment: this cast never fails.
        Ok(bytemuck::cast_slice(self.data_bytes()))
    }

    /// Row `index` of a `u8` array (e.g. one 28 x 28 image of an N x 28 x 28 file), zero copy.
    /// `None` if `index` is out of range or the array is not `u8`.
    pub fn row(&self, index: usize) -> Option<&[u8]> {
        if self.element_type() != ElementType::U8 {
            return None;
        }
        self.row_bytes(index)
    }

    /// The raw big-endian bytes of row `index` for any element type, zero copy. `None` if out of
    /// range.
    pub fn row_bytes(&self, index: usize) -> Option<&[u8]> {
        if index >= self.len() {
            return None;
        }
        let row_bytes = self.row_length() * self.element_type().size_in_bytes();
        let start = index * row_bytes;
        self.data_bytes().get(start..start + row_bytes)
    }

    /// Decodes the whole array into a vector (row-major); [`DatasetError::WrongElementType`] if
    /// `T` is not the file's element type.
    pub fn to_vec<T: IdxElement>(&self) -> Result<Vec<T>> {
        self.require(T::ELEMENT_TYPE)?;
        let mut values = Vec::with_capacity(self.element_count());
        T::decode_big_endian(self.data_bytes(), &mut values);
        Ok(values)
    }

    /// Decodes row `index` into a vector; `Ok(None)` if out of range.
    pub fn row_to_vec<T: IdxElement>(&self, index: usize) -> Result<Option<Vec<T>>> {
        self.require(T::ELEMENT_TYPE)?;
        Ok(self.row_bytes(index).map(|bytes| {
            let mut values = Vec::with_capacity(self.row_length());
            T::decode_big_endian(bytes, &mut values);
            values
        }))
    }

    /// Whether the bytes are mapped or owned.
    pub fn storage(&self) -> StorageKind {
        self.file.kind()
    }

    /// The length of the memory map (the whole file), 0 when owned.
    pub fn mapped_bytes(&self) -> usize {
        self.file.mapped_bytes()
    }

    /// The bytes this array owns on the heap (its buffer's capacity), 0 when mapped.
    pub fn heap_bytes(&self) -> usize {
        self.file.heap_bytes()
    }

    /// Whether the mapped file is still what was mapped, as far as the truncation guard can
    /// tell: [`DatasetError::MappedFileChanged`] (naming the file) once a read past the end of a
    /// truncated file has faulted (the array's bytes have been zeros since; see
    /// [`IdxArray::open_mapped`] for what is and is not caught). Always `Ok` for owned arrays,
    /// for mappings the guard could not take (table full, or not Linux), and while the program
    /// has not installed the guard ([`crate::install_sigbus_guard`]: without it, that read
    /// kills the process instead).
    ///
    /// One atomic load: cheap enough to call once per batch.
    pub fn verify_mapping_intact(&self) -> Result<()> {
        self.file.verify_mapping_intact()
    }

    /// Whether the truncation guard holds this array's map (see [`FileBytes`]).
    #[cfg(all(test, target_os = "linux"))]
    pub(crate) fn is_mapping_guarded(&self) -> bool {
        self.file.is_mapping_guarded()
    }

    /// The size and XXH3-128 of the whole file as held (header and data, decompressed), hashed
    /// in place from the map or the buffer: the array's identity for resuming a run.
    pub fn fingerprint(&self) -> FileFingerprint {
        self.file.fingerprint()
    }

    /// Tells the kernel how the mapped bytes will be read (`madvise`). Does nothing for owned
    /// arrays or on platforms without `madvise`. The advice is only a hint; the data is the same.
    pub fn advise(&self, pattern: AccessPattern) -> Result<()> {
        self.file.advise(pattern)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::{encode_idx, write_idx};

    #[test]
    fn owned_and_mapped_agree_and_rows_are_zero_copy() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("images");
        let data: Vec<u8> = (0..3 * 2 * 2).map(|value| value as u8).collect();
        write_idx(&path, &[3, 2, 2], &data).unwrap();

        let owned = IdxArray::open_owned(&path).unwrap();
        // SAFETY: the temporary file is not modified while the array lives.
        let mapped = unsafe { IdxArray::open_mapped(&path) }.unwrap();
        for array in [&owned, &mapped] {
            assert_eq!(array.shape(), &[3, 2, 2]);
            assert_eq!(array.len(), 3);
            assert_eq!(array.row_length(), 4);
            assert_eq!(array.as_u8().unwrap(), data.as_slice());
            assert_eq!(array.row(1).unwrap(), &[4, 5, 6, 7]);
            assert_eq!(array.row(3), None);
            let row = array.row(2).unwrap();
            let data_range = array.data_bytes().as_ptr_range();
            assert!(
                data_range.contains(&row.as_ptr()),
                "row points into the array's bytes"
            );
        }
        assert_eq!(owned.storage(), StorageKind::Owned);
        assert_eq!(owned.mapped_bytes(), 0);
        assert!(owned.heap_bytes() >= 16 + 12);
        assert_eq!(mapped.storage(), StorageKind::Mapped);
        assert_eq!(mapped.mapped_bytes(), 16 + 12);
        assert_eq!(mapped.heap_bytes(), 0);
        for pattern in [
            AccessPattern::Normal,
            AccessPattern::Sequential,
            AccessPattern::Random,
            AccessPattern::WillNeed,
        ] {
            mapped.advise(pattern).unwrap();
            owned.advise(pattern).unwrap();
        }
    }

    #[test]
    fn typed_access_checks_the_element_type() {
        let bytes = encode_idx::<i16>(&[2], &[-1, 300]).unwrap();
        let array = IdxArray::from_bytes("memory", bytes).unwrap();
        assert_eq!(array.to_vec::<i16>().unwrap(), [-1, 300]);
        assert_eq!(array.row(0), None, "row() is for u8 arrays");
        assert_eq!(array.row_bytes(1).unwrap(), &[0x01, 0x2C]);
        assert_eq!(array.row_to_vec::<i16>(1).unwrap(), Some(vec![300]));
        assert!(matches!(
            array.as_u8(),
            Err(DatasetError::WrongElementType {
                expected: ElementType::U8,
                found: ElementType::I16,
                ..
            })
        ));
        assert!(matches!(
            array.to_vec::<f32>(),
            Err(DatasetError::WrongElementType { .. })
        ));

        let bytes = encode_idx::<i8>(&[3], &[-128, 0, 127]).unwrap();
        let array = IdxArray::from_bytes("memory", bytes).unwrap();
        assert_eq!(array.as_i8().unwrap(), &[-128, 0, 127]);
        assert!(array.as_u8().is_err());
    }

    #[test]
    fn missing_file_is_named() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("absent");
        match IdxArray::open_owned(&path) {
            Err(DatasetError::MissingFile { path: reported }) => assert_eq!(reported, path),
            other => panic!("expected MissingFile, got {other:?}"),
        }
    }

    #[test]
    fn empty_file_is_too_short_when_mapped() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("empty");
        std::fs::write(&path, b"").unwrap();
        // SAFETY: the temporary file is not modified while the array lives.
        let result = unsafe { IdxArray::open_mapped(&path) };
        assert!(matches!(
            result,
            Err(DatasetError::TooShortForHeader { length: 0, .. })
        ));
    }

    #[test]
    fn gz_with_an_unwritable_cache_is_decompressed_in_memory_when_owned() {
        use std::io::Write;
        let folder = tempfile::tempdir().unwrap();
        let gz_path = folder.path().join("labels.gz");
        let raw = encode_idx::<u8>(&[4], &[3, 1, 4, 1]).unwrap();
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(&raw).unwrap();
        std::fs::write(&gz_path, encoder.finish().unwrap()).unwrap();
        // A plain file where the cache folder should be: the cache cannot be created (tests run
        // as root, so a read-only folder would not stop them).
        std::fs::write(folder.path().join("cache"), b"in the way").unwrap();

        // No user cache folder either: both ways of opening decompress into memory.
        let array = IdxArray::open_owned_under(&gz_path, &[]).unwrap();
        assert_eq!(array.as_u8().unwrap(), &[3, 1, 4, 1]);
        assert_eq!(array.path(), gz_path);
        assert_eq!(array.compressed_source(), Some(gz_path.as_path()));
        assert_eq!(array.heap_bytes(), raw.len());
        // SAFETY: the file is not modified while the array lives.
        let array = unsafe { IdxArray::open_mapped_under(&gz_path, &[]) }.unwrap();
        assert_eq!(array.storage(), StorageKind::Owned);
        assert_eq!(array.as_u8().unwrap(), &[3, 1, 4, 1]);

        // With a user cache folder, the cache goes there and is mapped.
        let user_cache = tempfile::tempdir().unwrap();
        let roots = [user_cache.path().to_path_buf()];
        // SAFETY: the file is not modified while the array lives.
        let array = unsafe { IdxArray::open_mapped_under(&gz_path, &roots) }.unwrap();
        assert_eq!(array.storage(), StorageKind::Mapped);
        assert_eq!(array.as_u8().unwrap(), &[3, 1, 4, 1]);
        assert!(
            array.path().starts_with(user_cache.path().join("reclaim")),
            "{}",
            array.path().display()
        );
        assert_eq!(array.path().file_name().unwrap(), "labels");
        assert_eq!(array.compressed_source(), Some(gz_path.as_path()));

        // Another data folder with a file of the same name gets its own entry.
        let other = tempfile::tempdir().unwrap();
        let other_gz = other.path().join("labels.gz");
        std::fs::copy(&gz_path, &other_gz).unwrap();
        std::fs::write(other.path().join("cache"), b"in the way").unwrap();
        let other_array = IdxArray::open_owned_under(&other_gz, &roots).unwrap();
        assert_ne!(
            other_array.path().parent(),
            array.path().parent(),
            "two data folders never share a cache entry"
        );
    }

    #[test]
    fn a_gz_caches_fingerprint_is_the_xxh3_its_source_record_holds() {
        use std::io::Write;
        let folder = tempfile::tempdir().unwrap();
        let gz_path = folder.path().join("labels.gz");
        let raw = encode_idx::<u8>(&[5], &[2, 7, 1, 8, 2]).unwrap();
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(&raw).unwrap();
        std::fs::write(&gz_path, encoder.finish().unwrap()).unwrap();

        // SAFETY: the cache file is this test's own and nothing modifies it while mapped.
        let mapped = unsafe { IdxArray::open_mapped_under(&gz_path, &[]) }.unwrap();
        assert_eq!(mapped.storage(), StorageKind::Mapped);
        let fingerprint = mapped.fingerprint();
        assert_eq!(fingerprint.bytes, raw.len() as u64);
        let mut record_path = mapped.path().as_os_str().to_owned();
        record_path.push(".source");
        let record = std::fs::read_to_string(record_path).unwrap();
        assert!(
            record.contains(&format!("\nxxh3_128 {}\n", fingerprint.xxh3_128)),
            "{record}"
        );
        let owned = IdxArray::from_bytes("memory", raw).unwrap();
        assert_eq!(
            owned.fingerprint(),
            fingerprint,
            "mapped and owned hash alike"
        );
    }

    #[test]
    fn arrays_are_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<IdxArray>();
    }

    /// The truncation guard, for real: files truncated under their maps in this process.
    #[cfg(target_os = "linux")]
    mod truncation_guard {
        use super::*;
        use crate::mapping_guard::GUARDED_RANGE_SLOTS;
        use memmap2::Mmap;

        /// The length of a rank-1 IDX header.
        const RANK_ONE_HEADER_LENGTH: u64 = 8;
        const FILL_BYTE: u8 = 7;

        fn page_size() -> usize {
            // SAFETY: sysconf only reads a system constant.
            usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap()
        }

        /// Writes a rank-1 `u8` IDX file whose data spans `pages` pages, every byte
        /// `FILL_BYTE`, so that truncating it leaves whole mapped pages past its end.
        fn write_multi_page_file(path: &Path, pages: usize) {
            let data = vec![FILL_BYTE; pages * page_size()];
            write_idx(path, &[data.len()], &data).unwrap();
        }

        /// The sum of every byte, each read for real (volatile), however the optimizer sees it.
        fn sum_of_every_byte(bytes: &[u8]) -> u64 {
            bytes
                .iter()
                // SAFETY: `byte` is a reference to an initialized byte of a live slice.
                .map(|byte| u64::from(unsafe { std::ptr::read_volatile(byte) }))
                .sum()
        }

        fn truncate(path: &Path, length: u64) {
            std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .unwrap()
                .set_len(length)
                .unwrap();
        }

        /// Installs the process's guard (the tests of this binary share it; whichever comes
        /// first installs it). Mapping alone installs nothing.
        fn install_guard() {
            let installation = crate::install_sigbus_guard().expect("the guard installs");
            assert!(
                matches!(
                    installation,
                    crate::SigbusGuardInstallation::Installed
                        | crate::SigbusGuardInstallation::AlreadyInstalled
                ),
                "{installation:?}"
            );
            assert!(crate::is_sigbus_guard_installed());
        }

        fn expect_mapped_file_changed(array: &IdxArray, path: &Path) {
            let error = array
                .verify_mapping_intact()
                .expect_err("the truncation was noticed");
            let message = error.to_string();
            assert!(
                message.starts_with(&path.display().to_string()),
                "{message}"
            );
            assert!(
                message.contains("truncated or replaced while mapped"),
                "{message}"
            );
            match error {
                DatasetError::MappedFileChanged { path: reported } => assert_eq!(reported, path),
                other => panic!("expected MappedFileChanged, got {other:?}"),
            }
        }

        #[test]
        fn a_file_truncated_under_its_map_reads_zeros_and_reports_mapped_file_changed() {
            install_guard();
            let folder = tempfile::tempdir().unwrap();
            let path = folder.path().join("data");
            write_multi_page_file(&path, 4);
            // SAFETY: deliberately broken: the file is truncated below while mapped, which is
            // what the guard under test turns from a SIGBUS death into an error.
            let array = unsafe { IdxArray::open_mapped(&path) }.unwrap();
            assert!(array.is_mapping_guarded());
            let data_length = array.data_bytes().len() as u64;
            assert_eq!(
                sum_of_every_byte(array.data_bytes()),
                data_length * u64::from(FILL_BYTE),
                "every page read in before the truncation"
            );
            array.verify_mapping_intact().unwrap();

            truncate(&path, RANK_ONE_HEADER_LENGTH);
            assert_eq!(
                sum_of_every_byte(array.data_bytes()),
                0,
                "past the new end the map reads zeros (and the process lives)"
            );
            expect_mapped_file_changed(&array, &path);
            assert_eq!(
                sum_of_every_byte(array.data_bytes()),
                0,
                "and never faults again"
            );
            expect_mapped_file_changed(&array, &path);
        }

        #[test]
        fn the_fault_is_recorded_against_the_truncated_files_map_only() {
            install_guard();
            let folder = tempfile::tempdir().unwrap();
            let truncated_path = folder.path().join("truncated");
            let untouched_path = folder.path().join("untouched");
            write_multi_page_file(&truncated_path, 3);
            write_multi_page_file(&untouched_path, 3);
            // SAFETY: deliberately broken for `truncated` (see above); `untouched` is not
            // modified while mapped.
            let (truncated, untouched) = unsafe {
                (
                    IdxArray::open_mapped(&truncated_path).unwrap(),
                    IdxArray::open_mapped(&untouched_path).unwrap(),
                )
            };

            truncate(&truncated_path, 0);
            assert_eq!(sum_of_every_byte(truncated.data_bytes()), 0);
            let untouched_length = untouched.data_bytes().len() as u64;
            assert_eq!(
                sum_of_every_byte(untouched.data_bytes()),
                untouched_length * u64::from(FILL_BYTE)
            );
            expect_mapped_file_changed(&truncated, &truncated_path);
            untouched.verify_mapping_intact().unwrap();
            assert_eq!(
                truncated.shape(),
                untouched.shape(),
                "the parsed header is kept"
            );
        }

        #[test]
        fn intact_mappings_and_owned_arrays_verify() {
            let folder = tempfile::tempdir().unwrap();
            let path = folder.path().join("data");
            write_multi_page_file(&path, 2);
            // SAFETY: the file is not modified while mapped.
            let mapped = unsafe { IdxArray::open_mapped(&path) }.unwrap();
            assert!(sum_of_every_byte(mapped.data_bytes()) > 0);
            mapped.verify_mapping_intact().unwrap();
            let owned = IdxArray::open_owned(&path).unwrap();
            assert!(!owned.is_mapping_guarded());
            owned.verify_mapping_intact().unwrap();
        }

        #[test]
        fn a_sigbus_outside_every_guarded_map_still_kills_the_process() {
            install_guard();
            let folder = tempfile::tempdir().unwrap();
            let guarded_path = folder.path().join("guarded");
            let foreign_path = folder.path().join("foreign");
            write_multi_page_file(&guarded_path, 1);
            write_multi_page_file(&foreign_path, 3);
            // SAFETY: the file is not modified while mapped.
            let guarded = unsafe { IdxArray::open_mapped(&guarded_path) }.unwrap();
            assert!(guarded.is_mapping_guarded(), "the handler is installed");
            let foreign_file = File::open(&foreign_path).unwrap();
            // SAFETY: deliberately broken: the file is truncated while mapped, and only the
            // forked child below reads the map (and is expected to die of it).
            let foreign = unsafe { Mmap::map(&foreign_file) }.unwrap();
            truncate(&foreign_path, 0);

            // SAFETY: the child only calls async-signal-safe code (setrlimit, volatile reads of
            // a map, _exit): nothing that could wait on a lock another thread held at the fork.
            let child = unsafe { libc::fork() };
            assert!(child >= 0, "fork failed");
            if child == 0 {
                let no_core_dump = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                // SAFETY: `no_core_dump` is a valid rlimit; only this child process is limited.
                unsafe { libc::setrlimit(libc::RLIMIT_CORE, &no_core_dump) };
                let survived_with = sum_of_every_byte(&foreign);
                // SAFETY: _exit ends the child at once, running nothing of the parent's state.
                unsafe { libc::_exit(if survived_with == 0 { 100 } else { 101 }) };
            }
            let mut status = 0;
            // SAFETY: waits for this test's own child; `status` is a valid out pointer.
            let waited = unsafe { libc::waitpid(child, &mut status, 0) };
            assert_eq!(waited, child);
            assert!(
                libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGBUS,
                "the unguarded read must die of SIGBUS as before; wait status {status:#x}"
            );
            guarded.verify_mapping_intact().unwrap();
        }

        #[test]
        fn dropping_a_mapping_frees_its_guard_slot() {
            install_guard();
            let folder = tempfile::tempdir().unwrap();
            let path = folder.path().join("data");
            write_multi_page_file(&path, 1);
            // Twice the table and one more, one at a time: each takes a slot the one before
            // it freed (other tests may hold a few at the same time, never most).
            for opened in 0..2 * GUARDED_RANGE_SLOTS + 1 {
                // SAFETY: the file is not modified while mapped.
                let array = unsafe { IdxArray::open_mapped(&path) }.unwrap();
                assert!(array.is_mapping_guarded(), "mapping {opened} is guarded");
                drop(array);
            }
        }
    }
}
