//! `reclaim inspect PATH`: what an IDX file (raw or `.gz`) or a dataset folder holds.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::bail;
use reclaim_dataset::{
    DatasetError, ElementType, Family, IdxArray, ImageDataset, Split, locate_split_files,
    verify_dataset_folder,
};

/// Arguments of `reclaim inspect`.
#[derive(Debug, clap::Args)]
pub struct InspectArguments {
    /// An IDX file (raw or .gz) or a dataset folder.
    pub path: std::path::PathBuf,
    /// For a dataset folder: also check the SHA-256 of the decompressed files against the
    /// catalogue of `--family`.
    #[arg(long)]
    pub verify: bool,
    /// The dataset family a folder holds (mnist, fashion-mnist, kmnist), for `--verify`.
    #[arg(long, default_value = "mnist", value_parser = parse_family)]
    pub family: Family,
}

fn parse_family(name: &str) -> Result<Family, String> {
    Family::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Family::ALL.iter().map(|family| family.name()).collect();
        format!("unknown family {name:?} (known: {})", known.join(", "))
    })
}

/// Runs `reclaim inspect`: prints the report on standard output. A malformed input is an error
/// naming the file and the fault (printed on one line by `main`).
pub fn run(arguments: InspectArguments) -> anyhow::Result<()> {
    let report = if arguments.path.is_dir() {
        describe_folder(
            &arguments.path,
            arguments.verify.then_some(arguments.family),
        )?
    } else {
        if arguments.verify {
            bail!(
                "{}: --verify applies to dataset folders",
                arguments.path.display()
            );
        }
        describe_file(&arguments.path)?
    };
    print!("{report}");
    Ok(())
}

fn shape_text(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(usize::to_string).collect();
    parts.join(" x ")
}

/// Minimum, maximum and mean of the values of any element type, as f64.
fn value_summary(array: &IdxArray) -> Result<Option<(f64, f64, f64)>, DatasetError> {
    fn summarize(values: impl Iterator<Item = f64>) -> Option<(f64, f64, f64)> {
        let mut count = 0usize;
        let (mut minimum, mut maximum, mut sum) = (f64::INFINITY, f64::NEG_INFINITY, 0.0);
        for value in values {
            count += 1;
            minimum = minimum.min(value);
            maximum = maximum.max(value);
            sum += value;
        }
        (count > 0).then(|| (minimum, maximum, sum / count as f64))
    }
    Ok(match array.element_type() {
        ElementType::U8 => summarize(array.as_u8()?.iter().map(|&v| f64::from(v))),
        ElementType::I8 => summarize(array.as_i8()?.iter().map(|&v| f64::from(v))),
        ElementType::I16 => summarize(array.to_vec::<i16>()?.into_iter().map(f64::from)),
        ElementType::I32 => summarize(array.to_vec::<i32>()?.into_iter().map(f64::from)),
        ElementType::F32 => summarize(array.to_vec::<f32>()?.into_iter().map(f64::from)),
        ElementType::F64 => summarize(array.to_vec::<f64>()?.into_iter()),
    })
}

fn histogram_text(counts: &[usize]) -> String {
    let parts: Vec<String> = counts
        .iter()
        .enumerate()
        .map(|(value, count)| format!("{value}: {count}"))
        .collect();
    parts.join(", ")
}

/// The report for one IDX file.
pub fn describe_file(path: &Path) -> anyhow::Result<String> {
    let array = IdxArray::open_owned(path)?;
    let header = array.header();
    let mut report = String::new();
    writeln!(report, "file: {}", path.display())?;
    if array.compressed_source().is_some() {
        if array.path() == path {
            writeln!(
                report,
                "decompressed: in memory (no cache folder is writable)"
            )?;
        } else {
            writeln!(report, "decompressed: {}", array.path().display())?;
        }
    }
    writeln!(
        report,
        "element type: {} (0x{:02x}, {} byte{})",
        array.element_type(),
        array.element_type().code(),
        array.element_type().size_in_bytes(),
        if array.element_type().size_in_bytes() == 1 {
            ""
        } else {
            "s"
        }
    )?;
    writeln!(
        report,
        "shape: {} (rank {})",
        shape_text(array.shape()),
        array.shape().len()
    )?;
    writeln!(report, "elements: {}", header.element_count())?;
    writeln!(
        report,
        "bytes: {} of data, {} of header, {} in all",
        header.data_length(),
        header.data_offset(),
        header.file_length()
    )?;
    if let Some((minimum, maximum, mean)) = value_summary(&array)? {
        writeln!(
            report,
            "values: min {minimum}, max {maximum}, mean {mean:.4}"
        )?;
    }
    // A u8 vector of small values is most likely labels: show how often each occurs.
    if array.element_type() == ElementType::U8 && array.shape().len() == 1 {
        let values = array.as_u8()?;
        if let Some(&largest) = values.iter().max()
            && largest < 64
        {
            let mut counts = vec![0usize; usize::from(largest) + 1];
            for &value in values {
                counts[usize::from(value)] += 1;
            }
            writeln!(report, "histogram: {}", histogram_text(&counts))?;
        }
    }
    Ok(report)
}

/// The report for a dataset folder: each split's files, counts and label histogram.
pub fn describe_folder(folder: &Path, verify: Option<Family>) -> anyhow::Result<String> {
    let mut report = String::new();
    writeln!(report, "dataset folder: {}", folder.display())?;
    let mut found_any = false;
    let mut first_missing: Option<PathBuf> = None;
    for split in Split::ALL {
        let (images_path, labels_path) = match locate_split_files(folder, split) {
            Ok(paths) => paths,
            Err(DatasetError::MissingFile { path }) => {
                writeln!(report, "{split}: missing ({})", path.display())?;
                first_missing.get_or_insert(path);
                continue;
            }
            Err(error) => return Err(error.into()),
        };
        found_any = true;
        let dataset = ImageDataset::open_owned(folder, split)?;
        writeln!(
            report,
            "{split}: {} images of {} x {} u8, {} labels in {} classes",
            dataset.len(),
            dataset.image_height(),
            dataset.image_width(),
            dataset.labels().len(),
            dataset.number_of_classes()
        )?;
        writeln!(report, "  images: {}", images_path.display())?;
        writeln!(report, "  labels: {}", labels_path.display())?;
        writeln!(
            report,
            "  label histogram: {}",
            histogram_text(&dataset.label_histogram())
        )?;
    }
    if !found_any {
        let path = first_missing.unwrap_or_else(|| folder.to_path_buf());
        return Err(DatasetError::MissingFile { path }.into());
    }
    if let Some(family) = verify {
        for verification in verify_dataset_folder(folder, family)? {
            writeln!(
                report,
                "sha256 {} {}{}",
                verification.sha256,
                verification.path.display(),
                if verification.checksum_compared {
                    " (matches the catalogue)"
                } else {
                    " (no catalogue checksum: structure and shape checked)"
                }
            )?;
        }
    }
    Ok(report)
}
