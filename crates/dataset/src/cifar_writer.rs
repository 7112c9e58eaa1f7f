//! Writing CIFAR record files (binary version), byte for byte as published.

use std::io::{BufWriter, Write};
use std::path::Path;

use crate::atomic::AtomicFile;
use crate::cifar_variant::{CIFAR_IMAGE_BYTES, CifarLabelKind, CifarVariant};
use crate::error::{CifarRecordProblem, DatasetError, Result};

/// One record to write: its labels and its 3072 image bytes (C x H x W: the red plane, the
/// green, the blue, each 32 x 32 row-major).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CifarRecord<'a> {
    /// CIFAR-10's label (0 to 9) or CIFAR-100's fine label (0 to 99).
    pub label: u8,
    /// CIFAR-100's coarse label (0 to 19); `None` for CIFAR-10.
    pub coarse_label: Option<u8>,
    /// The 3072 pixel bytes.
    pub image: &'a [u8],
}

impl<'a> CifarRecord<'a> {
    /// A CIFAR-10 record.
    pub fn cifar10(label: u8, image: &'a [u8]) -> Self {
        CifarRecord {
            label,
            coarse_label: None,
            image,
        }
    }

    /// A CIFAR-100 record.
    pub fn cifar100(coarse_label: u8, fine_label: u8, image: &'a [u8]) -> Self {
        CifarRecord {
            label: fine_label,
            coarse_label: Some(coarse_label),
            image,
        }
    }

    /// The record's bytes for `variant`, or what is wrong with it.
    fn check(&self, variant: CifarVariant) -> std::result::Result<(), CifarRecordProblem> {
        if self.image.len() != CIFAR_IMAGE_BYTES {
            return Err(CifarRecordProblem::ImageLength {
                found: self.image.len(),
            });
        }
        match (variant, self.coarse_label) {
            (CifarVariant::Cifar10, Some(_)) => {
                return Err(CifarRecordProblem::CoarseLabelNotInVariant);
            }
            (CifarVariant::Cifar100, None) => return Err(CifarRecordProblem::CoarseLabelMissing),
            (_, Some(coarse)) => check_label(variant, CifarLabelKind::Coarse, coarse)?,
            (_, None) => {}
        }
        check_label(variant, CifarLabelKind::Fine, self.label)
    }

    fn append_to(&self, bytes: &mut Vec<u8>) {
        if let Some(coarse) = self.coarse_label {
            bytes.push(coarse);
        }
        bytes.push(self.label);
        bytes.extend_from_slice(self.image);
    }
}

fn check_label(
    variant: CifarVariant,
    kind: CifarLabelKind,
    label: u8,
) -> std::result::Result<(), CifarRecordProblem> {
    let classes = variant.classes_of(kind).unwrap_or(0);
    if usize::from(label) >= classes {
        return Err(CifarRecordProblem::LabelOutOfRange {
            kind,
            label,
            classes,
        });
    }
    Ok(())
}

fn check_records(
    path: Option<&Path>,
    variant: CifarVariant,
    records: &[CifarRecord<'_>],
) -> Result<()> {
    records.iter().enumerate().try_for_each(|(index, record)| {
        record
            .check(variant)
            .map_err(|problem| DatasetError::InvalidCifarRecord {
                path: path.map(Path::to_path_buf),
                variant,
                index,
                problem,
            })
    })
}

/// Encodes records as the bytes of a CIFAR file of `variant`: for each, the label byte(s)
/// (CIFAR-100: coarse, then fine) then the 3072 image bytes. A record whose image is not 3072
/// bytes, whose label is out of range, or whose coarse label is missing (CIFAR-100) or present
/// (CIFAR-10) is [`DatasetError::InvalidCifarRecord`].
///
/// ```
/// use reclaim_dataset::cifar::{CifarRecord, CifarVariant, encode_cifar};
///
/// let image = [5u8; 3072];
/// let bytes = encode_cifar(CifarVariant::Cifar100, &[CifarRecord::cifar100(3, 42, &image)])?;
/// assert_eq!(bytes.len(), 3074);
/// assert_eq!(&bytes[..3], &[3, 42, 5]);
/// # Ok::<(), reclaim_dataset::DatasetError>(())
/// ```
pub fn encode_cifar(variant: CifarVariant, records: &[CifarRecord<'_>]) -> Result<Vec<u8>> {
    check_records(None, variant, records)?;
    let mut bytes = Vec::with_capacity(records.len() * variant.record_length());
    for record in records {
        record.append_to(&mut bytes);
    }
    Ok(bytes)
}

/// Writes records as a CIFAR file of `variant` (see [`encode_cifar`]), atomically: into a
/// temporary file in the same folder, renamed to `path` once complete (the folder is created if
/// missing). On any error nothing is left behind and an existing file at `path` is untouched.
/// No records make an empty file, which the readers refuse (as they would an empty download).
pub fn write_cifar_batch(
    path: impl AsRef<Path>,
    variant: CifarVariant,
    records: &[CifarRecord<'_>],
) -> Result<()> {
    let path = path.as_ref();
    check_records(Some(path), variant, records)?;
    let mut destination = AtomicFile::create(path)?;
    let temporary_path = destination.temporary_path().to_path_buf();
    {
        let write_error = |error| DatasetError::io(&temporary_path, error);
        let mut writer = BufWriter::with_capacity(1 << 20, destination.file());
        let mut record_bytes = Vec::with_capacity(variant.record_length());
        for record in records {
            record_bytes.clear();
            record.append_to(&mut record_bytes);
            writer.write_all(&record_bytes).map_err(write_error)?;
        }
        writer.flush().map_err(write_error)?;
    }
    destination.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(result: Result<Vec<u8>>) -> (usize, CifarRecordProblem) {
        match result {
            Err(DatasetError::InvalidCifarRecord { index, problem, .. }) => (index, problem),
            other => panic!("expected InvalidCifarRecord, got {other:?}"),
        }
    }

    #[test]
    fn invalid_records_are_refused() {
        let image = [0u8; CIFAR_IMAGE_BYTES];
        let good = CifarRecord::cifar10(1, &image);
        assert_eq!(
            problem(encode_cifar(
                CifarVariant::Cifar10,
                &[good, CifarRecord::cifar10(1, &image[1..])]
            )),
            (1, CifarRecordProblem::ImageLength { found: 3071 })
        );
        assert_eq!(
            problem(encode_cifar(
                CifarVariant::Cifar10,
                &[CifarRecord::cifar10(10, &image)]
            )),
            (
                0,
                CifarRecordProblem::LabelOutOfRange {
                    kind: CifarLabelKind::Fine,
                    label: 10,
                    classes: 10
                }
            )
        );
        assert_eq!(
            problem(encode_cifar(
                CifarVariant::Cifar100,
                &[CifarRecord::cifar100(20, 1, &image)]
            )),
            (
                0,
                CifarRecordProblem::LabelOutOfRange {
                    kind: CifarLabelKind::Coarse,
                    label: 20,
                    classes: 20
                }
            )
        );
        assert_eq!(
            problem(encode_cifar(CifarVariant::Cifar100, &[good])),
            (0, CifarRecordProblem::CoarseLabelMissing)
        );
        assert_eq!(
            problem(encode_cifar(
                CifarVariant::Cifar10,
                &[CifarRecord::cifar100(1, 1, &image)]
            )),
            (0, CifarRecordProblem::CoarseLabelNotInVariant)
        );
    }

    #[test]
    fn the_file_matches_the_encoding_and_a_failed_write_keeps_the_old_file() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("sub").join("test.bin");
        let image: Vec<u8> = (0..CIFAR_IMAGE_BYTES).map(|index| index as u8).collect();
        let records = [
            CifarRecord::cifar100(0, 99, &image),
            CifarRecord::cifar100(19, 0, &image),
        ];
        write_cifar_batch(&path, CifarVariant::Cifar100, &records).unwrap();
        let written = std::fs::read(&path).unwrap();
        assert_eq!(
            written,
            encode_cifar(CifarVariant::Cifar100, &records).unwrap()
        );
        assert_eq!(&written[3074..3077], &[19, 0, 0]);
        let error = write_cifar_batch(
            &path,
            CifarVariant::Cifar100,
            &[CifarRecord::cifar10(1, &image)],
        )
        .unwrap_err();
        assert!(error.to_string().contains("test.bin"), "{error}");
        assert_eq!(std::fs::read(&path).unwrap(), written);
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
    }
}
