//! `reclaim inspect PATH`: what an IDX file (raw or `.gz`), a CIFAR record file or a dataset
//! folder (MNIST family or CIFAR) holds.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use reclaim_dataset::{
    CifarDataset, DatasetError, DatasetName, Family, ImageDataset, PackSplits, Split,
    catalogue::verify_dataset_folder,
    cifar::{
        CIFAR_CHANNELS, CIFAR_IMAGE_BYTES, CIFAR_IMAGE_HEIGHT, CIFAR_IMAGE_WIDTH, CifarLabelKind,
        CifarVariant, locate_cifar_files, md5_of_file, verify_cifar_folder,
    },
    idx::{ElementType, IdxArray, locate_split_files},
    pack::{SkippedFile, SplitRule, TestFraction, survey_image_folder},
};

/// Arguments of `reclaim inspect`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
What PATH is read as: --dataset if given (or --family), else told from the file names: \
data_batch_1.bin ... data_batch_5.bin and test_batch.bin are CIFAR-10, train.bin and test.bin \
CIFAR-100 (a folder: those files directly in it or in cifar-10-batches-bin/ or \
cifar-100-binary/); anything else is an IDX file, or a folder of the MNIST family.")]
pub struct InspectArguments {
    /// An IDX file (raw or .gz), a CIFAR record file (data_batch_1.bin, test_batch.bin,
    /// train.bin, test.bin), or a dataset folder (MNIST family or CIFAR).
    pub path: PathBuf,
    /// For a dataset folder: also verify its files. MNIST family: the SHA-256 of each
    /// decompressed file against the catalogue. CIFAR: every record file read through (whole
    /// records, labels in range); no checksums of the record files are published, only the
    /// MD5 of each archive, which is compared when the archive lies in the folder.
    #[arg(long)]
    pub verify: bool,
    /// What PATH holds: mnist, fashion-mnist, kmnist, cifar10 or cifar100 (default: told from
    /// the file names). Forces it: `--dataset cifar10` reads a renamed record file.
    #[arg(long, value_name = "NAME", conflicts_with = "family")]
    pub dataset: Option<DatasetName>,
    /// The MNIST-family dataset a folder holds, for --verify (mnist, fashion-mnist, kmnist;
    /// default mnist): the same as --dataset with those names, kept for compatibility.
    #[arg(long, value_parser = parse_family)]
    pub family: Option<Family>,
}

fn parse_family(name: &str) -> Result<Family, String> {
    Family::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Family::ALL.iter().map(|family| family.name()).collect();
        format!("unknown family {name:?} (known: {})", known.join(", "))
    })
}

/// How the CIFAR variant of a path was decided, for the report.
#[derive(Clone, Copy, Debug)]
enum VariantOrigin {
    /// From the file names.
    Names,
    /// From `--dataset`.
    Given,
}

impl VariantOrigin {
    /// The origin for the report of one file (`one_file`) or of a folder.
    fn describe(self, one_file: bool) -> &'static str {
        match (self, one_file) {
            (VariantOrigin::Names, true) => "told by the file name",
            (VariantOrigin::Names, false) => "told by the file names",
            (VariantOrigin::Given, _) => "as --dataset says",
        }
    }
}

/// What a path is read as.
enum Format {
    /// IDX files of the MNIST family (the family for `--verify`).
    Idx(Family),
    /// CIFAR record files.
    Cifar(CifarVariant, VariantOrigin),
    /// A folder of photos (neither IDX nor CIFAR files in it).
    Photos,
}

/// Runs `reclaim inspect`: prints the report on standard output. A malformed input is an error
/// naming the file and the fault (printed on one line by `main`).
pub fn run(arguments: InspectArguments) -> anyhow::Result<()> {
    let given = arguments
        .dataset
        .or(arguments.family.map(DatasetName::from));
    let path = &arguments.path;
    let report = if given.is_none() && reclaim_dataset::pack::is_pack_file(path) {
        describe_pack(path)?
    } else if path.is_dir() {
        match folder_format(path, given)? {
            Format::Photos => describe_photo_folder(path)?,
            Format::Idx(family) => describe_folder(path, arguments.verify.then_some(family))?,
            Format::Cifar(variant, origin) => {
                describe_cifar_folder(path, variant, origin, arguments.verify)?
            }
        }
    } else {
        if arguments.verify {
            bail!("{}: --verify applies to dataset folders", path.display());
        }
        match file_format(path, given) {
            Format::Cifar(variant, origin) => describe_cifar_file(path, variant, origin)?,
            Format::Idx(_)
                if given.is_none()
                    && path.is_file()
                    && path.extension().is_some_and(|extension| extension == "bin") =>
            {
                describe_file(path).with_context(|| {
                    format!(
                        "{}: read as IDX, as its name is none of CIFAR's record files (give \
                         --dataset cifar10 or cifar100 to read it as one)",
                        path.display()
                    )
                })?
            }
            Format::Idx(_) | Format::Photos => describe_file(path)?,
        }
    };
    print!("{report}");
    Ok(())
}

/// The family `given` names (MNIST when none, or a CIFAR name: the caller handled those).
fn family_of(given: Option<DatasetName>) -> Family {
    given.and_then(DatasetName::family).unwrap_or(Family::Mnist)
}

/// The CIFAR variant and split whose record file is named as `path` is (`data_batch_3.bin`:
/// CIFAR-10, train).
fn cifar_file_by_name(path: &Path) -> Option<(CifarVariant, Split)> {
    let name = path.file_name()?.to_str()?;
    CifarVariant::ALL.into_iter().find_map(|variant| {
        Split::ALL
            .into_iter()
            .find(|&split| variant.file_names(split).contains(&name))
            .map(|split| (variant, split))
    })
}

fn file_format(path: &Path, given: Option<DatasetName>) -> Format {
    match given {
        Some(dataset) => match dataset.cifar_variant() {
            Some(variant) => Format::Cifar(variant, VariantOrigin::Given),
            None => Format::Idx(family_of(given)),
        },
        None => match cifar_file_by_name(path) {
            Some((variant, _)) => Format::Cifar(variant, VariantOrigin::Names),
            None => Format::Idx(Family::Mnist),
        },
    }
}

/// Whether anything is at `path` (a broken link or a FIFO counts: opening it says what is
/// wrong).
fn entry_exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// Whether `folder` holds a record file of `variant`, directly or in the archive's folder.
fn holds_cifar_files(folder: &Path, variant: CifarVariant) -> bool {
    let unpacked = folder.join(variant.archive().folder_in_archive);
    Split::ALL
        .into_iter()
        .flat_map(|split| variant.file_names(split))
        .any(|name| entry_exists(&folder.join(name)) || entry_exists(&unpacked.join(name)))
}

fn folder_format(folder: &Path, given: Option<DatasetName>) -> anyhow::Result<Format> {
    if let Some(dataset) = given {
        return Ok(file_format(folder, Some(dataset)));
    }
    let mut found: Vec<String> = Vec::new();
    let variants: Vec<CifarVariant> = CifarVariant::ALL
        .into_iter()
        .filter(|&variant| holds_cifar_files(folder, variant))
        .collect();
    found.extend(variants.iter().map(ToString::to_string));
    if Split::ALL
        .into_iter()
        .any(|split| locate_split_files(folder, split).is_ok())
    {
        found.push("MNIST-family".to_owned());
    }
    match (variants.as_slice(), found.len()) {
        ([], 0) if !folder.join("train-images-idx3-ubyte").exists() && holds_photos(folder) => {
            Ok(Format::Photos)
        }
        ([], _) => Ok(Format::Idx(Family::Mnist)),
        ([variant], 1) => Ok(Format::Cifar(*variant, VariantOrigin::Names)),
        _ => bail!(
            "{}: holds {} files; choose which with --dataset (mnist, fashion-mnist, kmnist, \
             cifar10, cifar100)",
            folder.display(),
            found.join(" and ")
        ),
    }
}

/// Whether `folder` reads as a folder of photos (class folders of images, directly or under
/// `train/`).
fn holds_photos(folder: &Path) -> bool {
    survey_image_folder(folder, TestFraction::default(), 42).is_ok()
}

/// A pack: its shape, classes with their counts per split, statistics, and skipped files.
fn describe_pack(path: &Path) -> anyhow::Result<String> {
    // SAFETY: the pack is only read while this report is made; packs are only ever replaced by
    // rename, never written in place (mapped rather than read: a pack may be gigabytes).
    let pack = unsafe { PackSplits::open_mapped(path) }?;
    let manifest = pack.manifest();
    let mut report = String::new();
    writeln!(report, "{}", path.display())?;
    writeln!(
        report,
        "pack: {} images of {} (channels x height x width), {} training and {} test, {} classes",
        pack.train.len() + pack.test.len(),
        manifest.image,
        pack.train.len(),
        pack.test.len(),
        manifest.classes.len()
    )?;
    writeln!(report, "split: {}", split_rule_text(&manifest.split_rule))?;
    let (train, test) = (pack.train.label_histogram(), pack.test.label_histogram());
    write_class_table(&mut report, &manifest.classes, &train, &test)?;
    let statistics = &manifest.statistics;
    writeln!(
        report,
        "training statistics: mean {:.4?}, standard deviation {:.4?}",
        statistics.mean, statistics.standard_deviation
    )?;
    write_skipped(&mut report, &manifest.skipped)?;
    Ok(report)
}

/// A folder of photos, surveyed without decoding: classes and counts as a pack of it would
/// hold them (with the default test fraction and seed where it has no split folders).
fn describe_photo_folder(folder: &Path) -> anyhow::Result<String> {
    let survey = survey_image_folder(folder, TestFraction::default(), 42)?;
    let mut report = String::new();
    writeln!(report, "{}", folder.display())?;
    let (train, test): (usize, usize) = (
        survey.train_files.iter().sum(),
        survey.test_files.iter().sum(),
    );
    writeln!(
        report,
        "folder of photos: {} image files, {train} training and {test} test, {} classes (not decoded yet: `reclaim pack` decodes them and lists the files that fail)",
        train + test,
        survey.classes.len()
    )?;
    writeln!(report, "split: {}", split_rule_text(&survey.split_rule))?;
    write_class_table(
        &mut report,
        &survey.classes,
        &survey.train_files,
        &survey.test_files,
    )?;
    write_skipped(&mut report, &survey.skipped)?;
    Ok(report)
}

fn split_rule_text(rule: &SplitRule) -> String {
    match rule {
        SplitRule::Folders { test_folder } => format!("folders (train/ and {test_folder}/)"),
        SplitRule::Fraction {
            test_fraction,
            seed,
        } => format!("{test_fraction} of each class to the test split, seed {seed}"),
    }
}

fn write_class_table(
    report: &mut String,
    classes: &[String],
    train: &[usize],
    test: &[usize],
) -> std::fmt::Result {
    writeln!(
        report,
        "{:>6}  {:>8}  {:>8}  class",
        "label", "training", "test"
    )?;
    for (label, class) in classes.iter().enumerate() {
        writeln!(
            report,
            "{label:>6}  {:>8}  {:>8}  {class}",
            train.get(label).copied().unwrap_or(0),
            test.get(label).copied().unwrap_or(0)
        )?;
    }
    Ok(())
}

fn write_skipped(report: &mut String, skipped: &[SkippedFile]) -> std::fmt::Result {
    if skipped.is_empty() {
        return writeln!(report, "skipped: none");
    }
    writeln!(report, "skipped ({}):", skipped.len())?;
    for file in skipped {
        writeln!(report, "  {file}")?;
    }
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

/// "0 airplane: 5000, 1 automobile: 5000, ...": each class's label, name and count.
fn named_histogram_text(counts: &[usize], names: &[&str]) -> String {
    let parts: Vec<String> = counts
        .iter()
        .enumerate()
        .map(|(label, count)| match names.get(label) {
            Some(name) => format!("{label} {name}: {count}"),
            None => format!("{label}: {count}"),
        })
        .collect();
    parts.join(", ")
}

/// The label histograms of CIFAR records: CIFAR-10's labels or CIFAR-100's fine ones, and
/// CIFAR-100's coarse ones.
struct LabelCounts {
    variant: CifarVariant,
    fine: Vec<usize>,
    coarse: Option<Vec<usize>>,
}

impl LabelCounts {
    fn new(variant: CifarVariant) -> Self {
        LabelCounts {
            variant,
            fine: vec![0; variant.number_of_classes()],
            coarse: variant
                .classes_of(CifarLabelKind::Coarse)
                .map(|classes| vec![0; classes]),
        }
    }

    /// Counts the labels of every record of `dataset` (validated on open: all in range).
    fn add(&mut self, dataset: &CifarDataset) {
        for index in 0..dataset.len() {
            if let Some(count) = self.fine.get_mut(usize::from(dataset.fine_label(index))) {
                *count += 1;
            }
            if let (Some(coarse), Some(label)) = (&mut self.coarse, dataset.coarse_label(index))
                && let Some(count) = coarse.get_mut(usize::from(label))
            {
                *count += 1;
            }
        }
    }

    /// "10 classes" or "100 fine and 20 coarse classes".
    fn classes_text(&self) -> String {
        match &self.coarse {
            Some(coarse) => format!(
                "{} fine and {} coarse classes",
                self.fine.len(),
                coarse.len()
            ),
            None => format!("{} classes", self.fine.len()),
        }
    }

    /// One line per histogram, each starting with `indent`.
    fn write_histograms(&self, report: &mut String, indent: &str) -> std::fmt::Result {
        let fine_names = self.variant.class_names();
        match &self.coarse {
            None => writeln!(
                report,
                "{indent}label histogram: {}",
                named_histogram_text(&self.fine, fine_names)
            ),
            Some(coarse) => {
                writeln!(
                    report,
                    "{indent}fine label histogram: {}",
                    named_histogram_text(&self.fine, fine_names)
                )?;
                let coarse_names = self
                    .variant
                    .class_names_of(CifarLabelKind::Coarse)
                    .unwrap_or_default();
                writeln!(
                    report,
                    "{indent}coarse label histogram: {}",
                    named_histogram_text(coarse, coarse_names)
                )
            }
        }
    }
}

/// "1 record", "2 records".
fn count_text(count: usize, noun: &str) -> String {
    format!("{count} {noun}{}", if count == 1 { "" } else { "s" })
}

/// "1 label byte" or "2 label bytes (coarse, then fine)".
fn label_bytes_text(variant: CifarVariant) -> &'static str {
    match variant {
        CifarVariant::Cifar10 => "1 label byte",
        CifarVariant::Cifar100 => "2 label bytes (coarse, then fine)",
    }
}

/// The image shape line shared by the file and folder reports.
fn cifar_shape_text() -> String {
    format!(
        "{CIFAR_CHANNELS} x {CIFAR_IMAGE_HEIGHT} x {CIFAR_IMAGE_WIDTH} u8 (channels x height x \
         width; channel-major: the red plane, then the green, then the blue)"
    )
}

/// The report for one CIFAR record file of `variant`: every record is read and checked (whole
/// records, labels in range) before anything is reported.
fn describe_cifar_file(
    path: &Path,
    variant: CifarVariant,
    origin: VariantOrigin,
) -> anyhow::Result<String> {
    let dataset = CifarDataset::open_owned_files(variant, &[path])?;
    let mut counts = LabelCounts::new(variant);
    counts.add(&dataset);
    let mut report = String::new();
    writeln!(report, "file: {}", path.display())?;
    let split = cifar_file_by_name(path)
        .filter(|&(named, _)| named == variant)
        .map(|(_, split)| format!(", {split} split"))
        .unwrap_or_default();
    writeln!(
        report,
        "dataset: {variant} binary ({}){split}",
        origin.describe(true)
    )?;
    writeln!(
        report,
        "records: {} of {} bytes ({}, then {CIFAR_IMAGE_BYTES} pixel bytes), {} bytes in all",
        dataset.len(),
        variant.record_length(),
        label_bytes_text(variant),
        dataset.len() * variant.record_length()
    )?;
    writeln!(report, "image shape: {}", cifar_shape_text())?;
    writeln!(report, "labels: {}", counts.classes_text())?;
    counts.write_histograms(&mut report, "")?;
    Ok(report)
}

/// The report for a CIFAR folder: each split's files (each read and checked on its own, so at
/// most one file is held in memory), counts and label histograms; with `verify`, every record
/// file read through again by [`verify_cifar_folder`] and the archive's MD5 if it is there.
fn describe_cifar_folder(
    folder: &Path,
    variant: CifarVariant,
    origin: VariantOrigin,
    verify: bool,
) -> anyhow::Result<String> {
    let mut report = String::new();
    writeln!(report, "dataset folder: {}", folder.display())?;
    writeln!(
        report,
        "dataset: {variant} binary ({})",
        origin.describe(false)
    )?;
    writeln!(
        report,
        "records: {} bytes each ({}, then {CIFAR_IMAGE_BYTES} pixel bytes); images {}",
        variant.record_length(),
        label_bytes_text(variant),
        cifar_shape_text()
    )?;
    let mut found_any = false;
    let mut first_missing: Option<PathBuf> = None;
    for split in Split::ALL {
        let paths = match locate_cifar_files(folder, variant, split) {
            Ok(paths) => paths,
            Err(DatasetError::MissingFile { path }) => {
                writeln!(report, "{split}: missing ({})", path.display())?;
                first_missing.get_or_insert(path);
                continue;
            }
            Err(error) => return Err(error.into()),
        };
        found_any = true;
        let mut counts = LabelCounts::new(variant);
        let mut file_lines = String::new();
        let mut images = 0;
        for path in &paths {
            let dataset = CifarDataset::open_owned_files(variant, &[path])?;
            writeln!(
                file_lines,
                "  file: {} ({})",
                path.display(),
                count_text(dataset.len(), "record")
            )?;
            images += dataset.len();
            counts.add(&dataset);
        }
        writeln!(
            report,
            "{split}: {} of {CIFAR_CHANNELS} x {CIFAR_IMAGE_HEIGHT} x {CIFAR_IMAGE_WIDTH} u8 \
             in {}, from {}",
            count_text(images, "image"),
            counts.classes_text(),
            count_text(paths.len(), "file")
        )?;
        report.push_str(&file_lines);
        counts.write_histograms(&mut report, "  ")?;
    }
    if !found_any {
        let path = first_missing.unwrap_or_else(|| folder.to_path_buf());
        return Err(DatasetError::MissingFile { path }.into());
    }
    if verify {
        write_cifar_verification(&mut report, folder, variant)?;
    }
    Ok(report)
}

/// `--verify` of a CIFAR folder: every record file of both splits read through, then what can
/// be said of checksums.
fn write_cifar_verification(
    report: &mut String,
    folder: &Path,
    variant: CifarVariant,
) -> anyhow::Result<()> {
    let verified = verify_cifar_folder(folder, variant)?;
    for (path, records) in &verified {
        writeln!(
            report,
            "verified: {} ({}, whole, every label in range)",
            path.display(),
            count_text(*records, "record")
        )?;
    }
    let archive = variant.archive();
    writeln!(
        report,
        "checksums: none published for CIFAR's record files, only the MD5 of the archive \
         ({} {}), which `reclaim fetch` checks; the record files were checked for structure \
         and labels only",
        archive.file_name, archive.md5
    )?;
    // `reclaim fetch` keeps the archive beside the folder it unpacks (`<folder>/<archive>`,
    // the files in `<folder>/cifar-10-batches-bin`).
    let mut candidates = vec![folder.join(archive.file_name)];
    if folder
        .file_name()
        .is_some_and(|name| name == archive.folder_in_archive)
        && let Some(parent) = folder.parent()
    {
        candidates.push(parent.join(archive.file_name));
    }
    match candidates.into_iter().find(|path| path.is_file()) {
        Some(path) => {
            let md5 = md5_of_file(&path)?;
            let verdict = if md5.eq_ignore_ascii_case(&archive.md5) {
                "matches the published MD5".to_owned()
            } else {
                format!(
                    "differs from the published {} (a repacked archive? the record files were \
                     checked on their own above)",
                    archive.md5
                )
            };
            writeln!(report, "archive: {} md5 {md5} {verdict}", path.display())?;
        }
        None => writeln!(
            report,
            "archive: no {} in the folder, so no MD5 to compare",
            archive.file_name
        )?,
    }
    Ok(())
}
