//! Reading a folder of photos as torchvision's `ImageFolder` does: `train/<class>/...` and
//! `test/<class>/...` (or `val/`), or class folders alone, divided by a test fraction. What is
//! found becomes a [`FolderPlan`]: the classes, every candidate file in record order, and
//! every entry left out with its reason.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use walkdir::WalkDir;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::error::{DatasetError, Result};
use crate::open::FileKind;
use crate::pack_format::{ImageFolderProblem, PackSplit, SkipReason, SkippedFile, SplitRule};

/// The share of each class that goes to the test split when a folder has no split folders:
/// a number in `[0, 1)`.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct TestFraction(f64);

impl TestFraction {
    /// `fraction` if it is in `[0, 1)`.
    pub fn new(fraction: f64) -> Option<Self> {
        (0.0..1.0)
            .contains(&fraction)
            .then_some(TestFraction(fraction))
    }

    /// The fraction.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl Default for TestFraction {
    /// A fifth.
    fn default() -> Self {
        TestFraction(0.2)
    }
}

impl std::str::FromStr for TestFraction {
    type Err = DatasetError;

    fn from_str(text: &str) -> Result<Self> {
        text.trim()
            .parse::<f64>()
            .ok()
            .and_then(TestFraction::new)
            .ok_or_else(|| DatasetError::InvalidPackSetting {
                given: text.to_string(),
                expected: "a test fraction from 0 up to (not including) 1, such as 0.2",
            })
    }
}

/// A source file to pack, and where its record goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PlannedFile {
    /// Relative to the folder, `/`-separated.
    pub(crate) relative: String,
    pub(crate) absolute: PathBuf,
    pub(crate) split: PackSplit,
    pub(crate) label: u32,
    pub(crate) bytes: u64,
    pub(crate) modified_nanoseconds: i128,
}

/// A folder read and divided: the classes in label order, the files in record order (the
/// training split's, then the test split's; by label, then path), and what was left out.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FolderPlan {
    /// The folder read.
    pub(crate) folder: PathBuf,
    pub(crate) classes: Vec<String>,
    pub(crate) split_rule: SplitRule,
    pub(crate) files: Vec<PlannedFile>,
    pub(crate) skipped: Vec<SkippedFile>,
}

/// The extensions packed (compared without regard to case).
const IMAGE_EXTENSIONS: [&str; 4] = ["jpg", "jpeg", "png", "webp"];

/// One class folder's files, before labels are known.
struct ClassFiles {
    split: PackSplit,
    class: String,
    folder_relative: String,
    files: Vec<PlannedFile>,
}

/// Reads `folder` and plans its pack (see the module's documentation). Entries whose name
/// starts with `.` are ignored, as hidden.
pub(crate) fn plan_image_folder(
    folder: &Path,
    test_fraction: TestFraction,
    seed: u64,
) -> Result<FolderPlan> {
    let metadata = std::fs::metadata(folder).map_err(|error| DatasetError::io(folder, error))?;
    if !metadata.is_dir() {
        return Err(DatasetError::ImageFolder {
            folder: folder.to_path_buf(),
            problem: ImageFolderProblem::NotAFolder,
        });
    }
    let mut skipped = Vec::new();
    let test_folder = ["test", "val"]
        .into_iter()
        .find(|name| folder.join(name).is_dir());
    let (roots, split_rule) = match (folder.join("train").is_dir(), test_folder) {
        (true, Some(test)) => (
            vec![("train", PackSplit::Train), (test, PackSplit::Test)],
            SplitRule::Folders {
                test_folder: test.to_string(),
            },
        ),
        (true, None) => (
            vec![("train", PackSplit::Train)],
            fraction_rule(test_fraction, seed),
        ),
        (false, _) => (
            vec![("", PackSplit::Train)],
            fraction_rule(test_fraction, seed),
        ),
    };
    if test_folder == Some("test") && folder.join("val").is_dir() {
        skipped.push(skip("val", SkipReason::UnusedSplitFolder));
    }
    let mut class_folders = Vec::new();
    for (root, split) in roots {
        class_folders.extend(list_class_folders(folder, root, split, &mut skipped)?);
    }
    let classes: Vec<String> = class_folders
        .iter()
        .filter(|class| !class.files.is_empty())
        .map(|class| class.class.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if classes.is_empty() {
        return Err(DatasetError::ImageFolder {
            folder: folder.to_path_buf(),
            problem: ImageFolderProblem::NoImages,
        });
    }
    if classes.len() > crate::pack_format::MAXIMUM_PACK_CLASSES as usize {
        return Err(DatasetError::ImageFolder {
            folder: folder.to_path_buf(),
            problem: ImageFolderProblem::TooManyClasses,
        });
    }
    let files = label_and_divide(class_folders, &classes, &split_rule, &mut skipped);
    skipped.sort_by(|first, second| first.path.cmp(&second.path));
    Ok(FolderPlan {
        folder: folder.to_path_buf(),
        classes,
        split_rule,
        files,
        skipped,
    })
}

fn fraction_rule(test_fraction: TestFraction, seed: u64) -> SplitRule {
    SplitRule::Fraction {
        test_fraction: test_fraction.get(),
        seed,
    }
}

/// The class folders under `folder/root` (sorted by name), each with its image files.
fn list_class_folders(
    folder: &Path,
    root: &str,
    split: PackSplit,
    skipped: &mut Vec<SkippedFile>,
) -> Result<Vec<ClassFiles>> {
    let root_path = folder.join(root);
    let entries =
        std::fs::read_dir(&root_path).map_err(|error| DatasetError::io(&root_path, error))?;
    let mut names = BTreeMap::new();
    for entry in entries {
        let entry = entry.map_err(|error| DatasetError::io(&root_path, error))?;
        names.insert(entry.file_name(), entry.path());
    }
    let mut classes = Vec::new();
    for (name, path) in names {
        let relative = join_relative(root, &name.to_string_lossy());
        if is_ignored(&name) {
            continue;
        }
        if !path.is_dir() {
            skipped.push(skip(&relative, SkipReason::OutsideClassFolder));
            continue;
        }
        let Some(class) = name.to_str() else {
            skipped.push(skip(&relative, SkipReason::NameNotUtf8));
            continue;
        };
        let files = list_images(folder, &path, split, skipped);
        classes.push(ClassFiles {
            split,
            class: class.to_string(),
            folder_relative: relative,
            files,
        });
    }
    Ok(classes)
}

/// Every image file under `class_folder`, at any depth, symbolic links followed (a loop is
/// listed, not followed forever), in name order.
fn list_images(
    folder: &Path,
    class_folder: &Path,
    split: PackSplit,
    skipped: &mut Vec<SkippedFile>,
) -> Vec<PlannedFile> {
    let walk = WalkDir::new(class_folder)
        .follow_links(true)
        .min_depth(1)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|entry| !is_ignored(entry.file_name()));
    let mut files = Vec::new();
    for entry in walk {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                let path = error.path().unwrap_or(class_folder);
                skipped.push(skip(
                    &relative_lossy(folder, path),
                    SkipReason::Unlistable {
                        error: error.to_string(),
                    },
                ));
                continue;
            }
        };
        if entry.file_type().is_dir() {
            continue;
        }
        match planned_file(folder, entry.path(), entry.file_type(), split) {
            Ok(file) => files.push(file),
            Err(reason) => skipped.push(skip(&relative_lossy(folder, entry.path()), reason)),
        }
    }
    files
}

/// Whether a name is passed over without a word: hidden (`.` first: a pack's work files are),
/// or a pack (`.rpack`: a pack written inside the folder it packs would otherwise list itself).
fn is_ignored(name: &std::ffi::OsStr) -> bool {
    let bytes = name.as_encoded_bytes();
    bytes.starts_with(b".") || bytes.ends_with(b".rpack")
}

/// The file at `path`, if its name, type and extension make it a candidate.
fn planned_file(
    folder: &Path,
    path: &Path,
    file_type: std::fs::FileType,
    split: PackSplit,
) -> std::result::Result<PlannedFile, SkipReason> {
    let relative = path
        .strip_prefix(folder)
        .ok()
        .and_then(Path::to_str)
        .ok_or(SkipReason::NameNotUtf8)?
        .replace(std::path::MAIN_SEPARATOR, "/");
    if !file_type.is_file() {
        return Err(SkipReason::NotARegularFile {
            file_type: FileKind::of(file_type).to_string(),
        });
    }
    let extension = path
        .extension()
        .and_then(|extension| extension.to_str())
        .map(str::to_ascii_lowercase);
    if !extension.is_some_and(|extension| IMAGE_EXTENSIONS.contains(&extension.as_str())) {
        return Err(SkipReason::NotAnImageExtension);
    }
    let metadata = std::fs::metadata(path).map_err(|error| SkipReason::Unreadable {
        error: error.to_string(),
    })?;
    Ok(PlannedFile {
        relative,
        absolute: path.to_path_buf(),
        split,
        label: 0,
        bytes: metadata.len(),
        modified_nanoseconds: modified_nanoseconds(&metadata),
    })
}

/// Nanoseconds since the Unix epoch (negative before it; 0 where the platform has no time).
pub(crate) fn modified_nanoseconds(metadata: &std::fs::Metadata) -> i128 {
    match metadata.modified() {
        Ok(time) => match time.duration_since(UNIX_EPOCH) {
            Ok(after) => after.as_nanos() as i128,
            Err(before) => -(before.duration().as_nanos() as i128),
        },
        Err(_) => 0,
    }
}

/// Gives each file its label, moves each class's test share to the test split where the rule
/// is a fraction, lists empty and single-image class folders, and orders the records.
fn label_and_divide(
    class_folders: Vec<ClassFiles>,
    classes: &[String],
    split_rule: &SplitRule,
    skipped: &mut Vec<SkippedFile>,
) -> Vec<PlannedFile> {
    let mut files = Vec::new();
    for mut class_folder in class_folders {
        let Ok(label) = classes.binary_search(&class_folder.class) else {
            skipped.push(skip(&class_folder.folder_relative, SkipReason::EmptyClass));
            continue;
        };
        if class_folder.files.is_empty() {
            skipped.push(skip(&class_folder.folder_relative, SkipReason::EmptyClass));
            continue;
        }
        if class_folder.files.len() == 1 && class_folder.split == PackSplit::Train {
            skipped.push(skip(
                &class_folder.folder_relative,
                SkipReason::SingleImageClass,
            ));
        }
        for file in &mut class_folder.files {
            file.label = label as u32;
        }
        if let SplitRule::Fraction {
            test_fraction,
            seed,
        } = *split_rule
        {
            divide_by_fraction(&mut class_folder.files, test_fraction, seed);
        }
        files.extend(class_folder.files);
    }
    files.sort_by(|first, second| {
        (first.split == PackSplit::Test, first.label, &first.relative).cmp(&(
            second.split == PackSplit::Test,
            second.label,
            &second.relative,
        ))
    });
    files
}

/// Moves `round(fraction x count)` of one class's files (those whose hash of seed and path is
/// smallest; none of a single file, never all of them) to the test split.
fn divide_by_fraction(files: &mut [PlannedFile], fraction: f64, seed: u64) {
    let count = files.len();
    let test_count = ((fraction * count as f64).round() as usize).min(count.saturating_sub(1));
    let mut order: Vec<(u64, usize)> = files
        .iter()
        .enumerate()
        .map(|(index, file)| (xxh3_64_with_seed(file.relative.as_bytes(), seed), index))
        .collect();
    order.sort_unstable();
    for &(_, index) in &order[..test_count] {
        files[index].split = PackSplit::Test;
    }
}

fn skip(path: &str, reason: SkipReason) -> SkippedFile {
    SkippedFile {
        path: path.to_string(),
        reason,
        stamp: None,
    }
}

fn join_relative(root: &str, name: &str) -> String {
    if root.is_empty() {
        name.to_string()
    } else {
        format!("{root}/{name}")
    }
}

fn relative_lossy(folder: &Path, path: &Path) -> String {
    path.strip_prefix(folder)
        .unwrap_or(path)
        .to_string_lossy()
        .replace(std::path::MAIN_SEPARATOR, "/")
}

/// What a folder of photos holds, before anything is decoded (see [`survey_image_folder`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ImageFolderSurvey {
    /// Class names in label order.
    pub classes: Vec<String>,
    /// How the folder divides into splits.
    pub split_rule: SplitRule,
    /// Candidate files per class in the training split (label order).
    pub train_files: Vec<usize>,
    /// Candidate files per class in the test split (label order).
    pub test_files: Vec<usize>,
    /// What is left out already by name, type or layout (files that fail to decode are only
    /// known once packed).
    pub skipped: Vec<SkippedFile>,
}

/// Reads `folder` as packing would (layout, classes, division by `test_fraction` and `seed`),
/// without opening a single image: what `reclaim inspect FOLDER` shows.
///
/// # Errors
///
/// [`DatasetError::ImageFolder`] for a folder with no image, [`DatasetError::Io`] for one that
/// cannot be listed.
pub fn survey_image_folder(
    folder: &Path,
    test_fraction: TestFraction,
    seed: u64,
) -> Result<ImageFolderSurvey> {
    let plan = plan_image_folder(folder, test_fraction, seed)?;
    let mut train_files = vec![0; plan.classes.len()];
    let mut test_files = vec![0; plan.classes.len()];
    for file in &plan.files {
        match file.split {
            PackSplit::Train => train_files[file.label as usize] += 1,
            PackSplit::Test => test_files[file.label as usize] += 1,
        }
    }
    Ok(ImageFolderSurvey {
        classes: plan.classes,
        split_rule: plan.split_rule,
        train_files,
        test_files,
        skipped: plan.skipped,
    })
}
