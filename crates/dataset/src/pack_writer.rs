//! Packing a folder of photos: [`pack_image_folder`] decodes every image once, in parallel,
//! into a pack, reusing what an earlier pack or an interrupted run already decoded.
//!
//! The work goes into `.<pack name>.partial` beside the destination: a header's worth of zeros,
//! then the records in order, while `.<pack name>.journal` gets one JSON line per source file
//! after its record is written. An interrupted run (Ctrl-C, `kill -9`, a crash) leaves both;
//! the next run keeps the longest prefix of the journal that still matches the folder (same
//! paths, sizes and modification times, every record's checksum intact) and goes on from
//! there. Only when every file is done are the labels, the manifest and the header written,
//! the file flushed to disk and renamed over the destination: a pack under its name is always
//! whole. `.<pack name>.lock` keeps two processes from packing into one destination at once
//! (the second waits, then finds the pack up to date).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::{Xxh3, xxh3_64};

use crate::checksum::xxh3_128_hex;
use crate::error::{DatasetError, Result};
use crate::gz::user_cache_roots;
use crate::image_decode::{DecodeLimits, decode_to_record};
use crate::image_folder::{FolderPlan, PlannedFile, TestFraction, plan_image_folder};
use crate::open::open_regular;
use crate::pack_dataset::PackSplits;
use crate::pack_format::{
    ChannelStatistics, FileStamp, MAXIMUM_PACK_IMAGE_SIDE, PACK_FORMAT_VERSION, PACK_HEADER_BYTES,
    PackHeader, PackImageShape, PackManifest, PackSplit, PackedSource, SkipReason, SkippedFile,
    encode_pack_header,
};
use crate::progress::ProgressDisplay;

/// Grey or colour records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PackChannels {
    /// One channel (luma).
    Grey,
    /// Three channels: red, green, blue.
    #[default]
    Rgb,
}

impl PackChannels {
    /// 1 or 3.
    pub fn count(self) -> u32 {
        match self {
            PackChannels::Grey => 1,
            PackChannels::Rgb => 3,
        }
    }

    /// `Grey` for 1, `Rgb` for 3.
    pub fn from_count(count: u32) -> Option<Self> {
        match count {
            1 => Some(PackChannels::Grey),
            3 => Some(PackChannels::Rgb),
            _ => None,
        }
    }
}

/// The size every image is resized to: height and width, each 1 to
/// [`MAXIMUM_PACK_IMAGE_SIDE`]. Parses `64x64` (height x width) or `64` (square).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ImageSize {
    height: u32,
    width: u32,
}

impl ImageSize {
    /// `height` x `width` if both are in range.
    pub fn new(height: u32, width: u32) -> Option<Self> {
        let valid = |side: u32| (1..=MAXIMUM_PACK_IMAGE_SIDE).contains(&side);
        (valid(height) && valid(width)).then_some(ImageSize { height, width })
    }

    /// Rows.
    pub fn height(self) -> u32 {
        self.height
    }

    /// Columns.
    pub fn width(self) -> u32 {
        self.width
    }
}

impl std::fmt::Display for ImageSize {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}x{}", self.height, self.width)
    }
}

impl std::str::FromStr for ImageSize {
    type Err = DatasetError;

    fn from_str(text: &str) -> Result<Self> {
        let side = |part: &str| part.trim().parse::<u32>().ok();
        let parsed = match text.split_once(['x', 'X']) {
            Some((height, width)) => side(height).zip(side(width)),
            None => side(text).map(|side| (side, side)),
        };
        parsed
            .and_then(|(height, width)| ImageSize::new(height, width))
            .ok_or_else(|| DatasetError::InvalidPackSetting {
                given: text.to_string(),
                expected: "an image size HEIGHTxWIDTH (or one side), each 1 to 4096, such as 64x64",
            })
    }
}

/// What to do with a file that cannot be packed (see [`SkipReason`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BadFilePolicy {
    /// Leave it out and list it in the pack's manifest.
    #[default]
    SkipAndList,
    /// Refuse the whole folder with [`DatasetError::BadSourceFile`] naming it.
    Refuse,
}

/// How a folder is packed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PackOptions {
    /// Every image is resized to this (shorter side, then centre crop).
    pub image_size: ImageSize,
    /// Grey or RGB.
    pub channels: PackChannels,
    /// The test split's share of each class, for a folder without split folders.
    pub test_fraction: TestFraction,
    /// The seed of that division.
    pub seed: u64,
    /// Skip bad files or refuse the folder.
    pub bad_files: BadFilePolicy,
    /// What one file may cost to read and decode.
    pub limits: DecodeLimits,
    /// Whether to draw a progress bar (images, images per second, time left).
    pub progress: ProgressDisplay,
}

impl PackOptions {
    /// Images of `image_size`, RGB, a test fraction of 0.2 with seed 42, bad files skipped and
    /// listed, the default limits, a progress bar.
    pub fn new(image_size: ImageSize) -> Self {
        PackOptions {
            image_size,
            channels: PackChannels::Rgb,
            test_fraction: TestFraction::default(),
            seed: 42,
            bad_files: BadFilePolicy::SkipAndList,
            limits: DecodeLimits::default(),
            progress: ProgressDisplay::Bar,
        }
    }

    /// The records' shape.
    pub fn image_shape(&self) -> PackImageShape {
        PackImageShape {
            channels: self.channels.count(),
            height: self.image_size.height(),
            width: self.image_size.width(),
        }
    }
}

/// Whether [`pack_image_folder`] wrote a pack or found it up to date.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PackState {
    /// The pack at the destination already matched the folder: nothing was written.
    UpToDate,
    /// A new pack was written.
    Written,
}

/// What [`pack_image_folder`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct PackOutcome {
    /// The pack.
    pub path: PathBuf,
    /// Written or already up to date.
    pub state: PackState,
    /// Records of the training split.
    pub train_records: usize,
    /// Records of the test split.
    pub test_records: usize,
    /// Classes.
    pub classes: usize,
    /// Images decoded by this run.
    pub decoded: usize,
    /// Records copied from the earlier pack at the destination (the file unchanged, or its
    /// content unchanged).
    pub reused: usize,
    /// Source files an interrupted run had already done.
    pub resumed: usize,
    /// What is not in the pack (and class folders kept with a warning).
    pub skipped: Vec<SkippedFile>,
}

/// The most source files decoded together between two journal writes (and two checks of the
/// cancellation flag).
const MAXIMUM_FILES_PER_CHUNK: usize = 64;

/// The bytes of records a chunk may hold before they are written: a chunk's records wait in
/// memory until the whole chunk is decoded.
const CHUNK_RECORD_BYTES: u64 = 64 << 20;

/// Files per chunk for records of `shape`: 64, fewer for large records (at least 2, one per
/// core), so that a chunk holds about [`CHUNK_RECORD_BYTES`] of records at most.
fn files_per_chunk(shape: PackImageShape) -> usize {
    let fitting = CHUNK_RECORD_BYTES / shape.record_bytes().max(1);
    (fitting as usize).clamp(2, MAXIMUM_FILES_PER_CHUNK)
}

/// How long a packing run waiting for another's lock sleeps between two tries (and two checks
/// of the cancellation flag).
const LOCK_RETRY: std::time::Duration = std::time::Duration::from_millis(50);

/// Refuses, before anything is read, a destination that is a folder, has no file name, or is
/// an existing file other than a pack (a pack, even a damaged one, is replaced; anything else
/// might be the user's).
fn check_destination(destination: &Path) -> Result<()> {
    let refuse = |problem: &'static str| {
        Err(DatasetError::InvalidPackDestination {
            path: destination.to_path_buf(),
            problem,
        })
    };
    if destination.file_name().is_none() || destination.as_os_str().is_empty() {
        return refuse("names no file");
    }
    match std::fs::symlink_metadata(destination) {
        Err(_) => Ok(()),
        Ok(metadata) if metadata.is_dir() => refuse("is a folder"),
        Ok(metadata) if !metadata.is_file() => refuse("exists and is not a regular file"),
        Ok(_) if !crate::pack_format::is_pack_file(destination) => refuse(
            "exists and is not a pack (it is never overwritten: remove it or choose another)",
        ),
        Ok(_) => Ok(()),
    }
}

/// Packs `folder` (see [`crate::pack`] for the layouts) into `destination`.
///
/// An existing valid pack at `destination` made with the same shape is reused: if it matches
/// the folder file for file (paths, sizes, modification times, classes, division) nothing is
/// written ([`PackState::UpToDate`]); otherwise its records are copied for the files whose
/// size and modification time, or content, are unchanged, and only the rest is decoded. An
/// interrupted run is resumed (see the module's documentation). `cancellation` is checked
/// between chunks of 64 files: once set, the work so far is kept for the next run and
/// [`DatasetError::PackInterrupted`] is returned.
///
/// # Errors
///
/// [`DatasetError::ImageFolder`] for a folder with no image, [`DatasetError::BadSourceFile`]
/// for the first bad file under [`BadFilePolicy::Refuse`], [`DatasetError::Io`] for the
/// destination's folder, [`DatasetError::PackInterrupted`].
pub fn pack_image_folder(
    folder: &Path,
    destination: &Path,
    options: &PackOptions,
    cancellation: &AtomicBool,
) -> Result<PackOutcome> {
    check_destination(destination)?;
    let plan = plan_image_folder(folder, options.test_fraction, options.seed)?;
    pack_planned(&plan, destination, options, cancellation)
}

/// [`pack_image_folder`] once the folder is read (`plan`) and the destination checked.
fn pack_planned(
    plan: &FolderPlan,
    destination: &Path,
    options: &PackOptions,
    cancellation: &AtomicBool,
) -> Result<PackOutcome> {
    let folder = plan.folder.as_path();
    if options.bad_files == BadFilePolicy::Refuse {
        refuse_any(folder, &plan.skipped)?;
    }
    let work = WorkFiles::beside(destination);
    let _lock = work.lock(destination, plan.files.len(), cancellation)?;
    let shape = options.image_shape();
    let previous = open_previous_pack(destination, shape);
    if let Some(previous) = &previous
        && is_up_to_date(previous.manifest(), plan)
    {
        if options.bad_files == BadFilePolicy::Refuse {
            refuse_any(folder, &previous.manifest().skipped)?;
        }
        return Ok(outcome_of(
            destination,
            previous.manifest(),
            PackState::UpToDate,
        ));
    }
    let reuse = ReuseIndex::new(previous.as_ref());
    let mut partial = PartialPack::resume_or_create(&work, shape, &plan.files)?;
    let resumed = partial.entries.len();
    if options.bad_files == BadFilePolicy::Refuse {
        refuse_any(folder, &partial.skipped_entries())?;
    }
    let bar = options.progress.progress_bar(
        Some(plan.files.len() as u64),
        "packing [{bar:30}] {pos}/{len} images, {per_sec}, {eta} left",
    );
    bar.set_position(resumed as u64);
    let (mut decoded, mut reused) = (0, 0);
    for chunk in plan.files[resumed..].chunks(files_per_chunk(shape)) {
        if cancellation.load(Ordering::Relaxed) {
            return Err(DatasetError::PackInterrupted {
                destination: destination.to_path_buf(),
                done: partial.entries.len(),
                total: plan.files.len(),
            });
        }
        let outcomes: Vec<FileOutcome> = chunk
            .par_iter()
            .map(|file| process_file(file, &reuse, shape, options.limits))
            .collect();
        for (file, outcome) in chunk.iter().zip(outcomes) {
            match &outcome {
                FileOutcome::Skipped(reason) if options.bad_files == BadFilePolicy::Refuse => {
                    partial.flush()?;
                    return Err(DatasetError::BadSourceFile {
                        path: file.absolute.clone(),
                        reason: reason.clone(),
                    });
                }
                FileOutcome::Record { reused: true, .. } => reused += 1,
                FileOutcome::Record { reused: false, .. } => decoded += 1,
                FileOutcome::Skipped(_) => {}
            }
            partial.append(file, outcome)?;
        }
        partial.flush()?;
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    drop(reuse);
    drop(previous);
    let manifest = partial.finish(plan, destination)?;
    let mut outcome = outcome_of(destination, &manifest, PackState::Written);
    (outcome.decoded, outcome.reused, outcome.resumed) = (decoded, reused, resumed);
    Ok(outcome)
}

/// Where [`pack_image_folder_cached`] keeps the pack of `folder` made with `options`, in the
/// order tried: beside the folder (`<folder>.<H>x<W>-<rgb|grey>.rpack`), then
/// `$XDG_CACHE_HOME/reclaim/packs/<key>/` and `$HOME/.cache/reclaim/packs/<key>/`, where
/// `<key>` is a hash of the folder's canonical path.
pub fn pack_locations(folder: &Path, options: &PackOptions) -> Vec<PathBuf> {
    let canonical = std::fs::canonicalize(folder)
        .or_else(|_| std::path::absolute(folder))
        .unwrap_or_else(|_| folder.to_path_buf());
    let name = canonical.file_name().map_or_else(
        || "images".into(),
        |name| name.to_string_lossy().into_owned(),
    );
    let channels = match options.channels {
        PackChannels::Grey => "grey",
        PackChannels::Rgb => "rgb",
    };
    let file_name = format!("{name}.{}-{channels}.rpack", options.image_size);
    let key = format!("{:016x}", xxh3_64(canonical.as_os_str().as_encoded_bytes()));
    let mut locations = Vec::new();
    if let Some(parent) = canonical.parent() {
        locations.push(parent.join(&file_name));
    }
    for root in user_cache_roots() {
        locations.push(
            root.join("reclaim")
                .join("packs")
                .join(&key)
                .join(&file_name),
        );
    }
    locations
}

/// [`pack_image_folder`] into the first of [`pack_locations`] whose folder can be written.
///
/// # Errors
///
/// As [`pack_image_folder`]; [`DatasetError::CacheUnavailable`] when no location can be
/// written.
pub fn pack_image_folder_cached(
    folder: &Path,
    options: &PackOptions,
    cancellation: &AtomicBool,
) -> Result<PackOutcome> {
    let locations = pack_locations(folder, options);
    let plan = plan_image_folder(folder, options.test_fraction, options.seed)?;
    if let Some(outcome) = up_to_date_anywhere(&plan, &locations, options)? {
        return Ok(outcome);
    }
    let mut last_failure = None;
    for location in &locations {
        match WorkFiles::beside(location).check_writable() {
            Ok(()) => {
                check_destination(location)?;
                return pack_planned(&plan, location, options, cancellation);
            }
            Err(error) => last_failure = Some(error),
        }
    }
    Err(DatasetError::CacheUnavailable {
        path: folder.to_path_buf(),
        tried: locations,
        source: Box::new(last_failure.unwrap_or_else(|| {
            DatasetError::io(folder, std::io::Error::other("no cache folder is known"))
        })),
    })
}

/// The first of `locations` holding a pack of `folder` that is up to date, read without a lock
/// (so that a pack beside a read-only folder is used where it is); packing again (under the
/// lock) decides for any other case.
fn up_to_date_anywhere(
    plan: &FolderPlan,
    locations: &[PathBuf],
    options: &PackOptions,
) -> Result<Option<PackOutcome>> {
    for location in locations.iter().filter(|path| path.is_file()) {
        if let Some(previous) = open_previous_pack(location, options.image_shape())
            && is_up_to_date(previous.manifest(), plan)
        {
            if options.bad_files == BadFilePolicy::Refuse {
                refuse_any(&plan.folder, &previous.manifest().skipped)?;
            }
            return Ok(Some(outcome_of(
                location,
                previous.manifest(),
                PackState::UpToDate,
            )));
        }
    }
    Ok(None)
}

/// Under [`BadFilePolicy::Refuse`], the first entry of `skipped` as an error.
fn refuse_any(folder: &Path, skipped: &[SkippedFile]) -> Result<()> {
    match skipped.first() {
        Some(first) => Err(DatasetError::BadSourceFile {
            path: folder.join(&first.path),
            reason: first.reason.clone(),
        }),
        None => Ok(()),
    }
}

fn outcome_of(destination: &Path, manifest: &PackManifest, state: PackState) -> PackOutcome {
    let train_records = manifest
        .sources
        .iter()
        .filter(|source| source.split == PackSplit::Train)
        .count();
    PackOutcome {
        path: destination.to_path_buf(),
        state,
        train_records,
        test_records: manifest.sources.len() - train_records,
        classes: manifest.classes.len(),
        decoded: 0,
        reused: 0,
        resumed: 0,
        skipped: manifest.skipped.clone(),
    }
}

/// The pack at `destination` if it is valid and of `shape` (anything else there is replaced).
fn open_previous_pack(destination: &Path, shape: PackImageShape) -> Option<PackSplits> {
    // SAFETY: packs are only ever replaced by rename, never written in place, and this process
    // holds the destination's lock, so no other packing run renames over it meanwhile; the map
    // is dropped before this run renames its own pack into place.
    let previous = unsafe { PackSplits::open_mapped(destination) }.ok()?;
    (previous.manifest().image == shape).then_some(previous)
}

/// Whether `manifest` describes exactly the files of `plan`.
fn is_up_to_date(manifest: &PackManifest, plan: &FolderPlan) -> bool {
    if manifest.classes != plan.classes || manifest.split_rule != plan.split_rule {
        return false;
    }
    let unstamped = |skipped: &&SkippedFile| skipped.stamp.is_none();
    let listed: Vec<&SkippedFile> = manifest.skipped.iter().filter(unstamped).collect();
    if listed != plan.skipped.iter().collect::<Vec<_>>() {
        return false;
    }
    let mut known: HashMap<&str, (Option<PackSplit>, u32, FileStamp)> = HashMap::new();
    for source in &manifest.sources {
        let stamp = FileStamp {
            bytes: source.bytes,
            modified_nanoseconds: source.modified_nanoseconds,
        };
        known.insert(&source.path, (Some(source.split), source.label, stamp));
    }
    for skipped in &manifest.skipped {
        if let Some(stamp) = skipped.stamp {
            known.insert(&skipped.path, (None, 0, stamp));
        }
    }
    known.len() == plan.files.len()
        && plan.files.iter().all(|file| {
            known
                .get(file.relative.as_str())
                .is_some_and(|(split, label, stamp)| {
                    *stamp == stamp_of(file)
                        && split.is_none_or(|split| split == file.split && *label == file.label)
                })
        })
}

fn stamp_of(file: &PlannedFile) -> FileStamp {
    FileStamp {
        bytes: file.bytes,
        modified_nanoseconds: file.modified_nanoseconds,
    }
}

/// The records of an earlier pack, found by path (with the same size and modification time)
/// or by content hash.
struct ReuseIndex<'a> {
    pack: Option<&'a PackSplits>,
    by_path: HashMap<&'a str, usize>,
    by_hash: HashMap<&'a str, usize>,
}

impl<'a> ReuseIndex<'a> {
    fn new(pack: Option<&'a PackSplits>) -> Self {
        let mut index = ReuseIndex {
            pack,
            by_path: HashMap::new(),
            by_hash: HashMap::new(),
        };
        if let Some(pack) = pack {
            for (record, source) in pack.manifest().sources.iter().enumerate() {
                index.by_path.insert(&source.path, record);
                index.by_hash.insert(&source.xxh3_128, record);
            }
        }
        index
    }

    /// The record and content hash of `file` if its path, size and modification time match.
    fn by_stamp(&self, file: &PlannedFile) -> Option<(Vec<u8>, String)> {
        let pack = self.pack?;
        let &record = self.by_path.get(file.relative.as_str())?;
        let source = &pack.manifest().sources[record];
        (source.bytes == file.bytes && source.modified_nanoseconds == file.modified_nanoseconds)
            .then(|| (self.record(record), source.xxh3_128.clone()))
    }

    /// The record of a source whose content hashed to `xxh3_128`.
    fn by_content(&self, xxh3_128: &str) -> Option<Vec<u8>> {
        self.by_hash
            .get(xxh3_128)
            .map(|&record| self.record(record))
    }

    fn record(&self, record: usize) -> Vec<u8> {
        let pack = self.pack.expect("indices exist only with a pack");
        if record < pack.train.len() {
            pack.train.image(record).to_vec()
        } else {
            pack.test.image(record - pack.train.len()).to_vec()
        }
    }
}

/// What became of one source file.
enum FileOutcome {
    Record {
        record: Vec<u8>,
        xxh3_128: String,
        reused: bool,
    },
    Skipped(SkipReason),
}

fn process_file(
    file: &PlannedFile,
    reuse: &ReuseIndex<'_>,
    shape: PackImageShape,
    limits: DecodeLimits,
) -> FileOutcome {
    if let Some((record, xxh3_128)) = reuse.by_stamp(file) {
        return FileOutcome::Record {
            record,
            xxh3_128,
            reused: true,
        };
    }
    let bytes = match read_source(&file.absolute, limits.maximum_file_bytes) {
        Ok(bytes) => bytes,
        Err(reason) => return FileOutcome::Skipped(reason),
    };
    let xxh3_128 = xxh3_128_hex(&bytes);
    if let Some(record) = reuse.by_content(&xxh3_128) {
        return FileOutcome::Record {
            record,
            xxh3_128,
            reused: true,
        };
    }
    match decode_to_record(&bytes, shape, limits) {
        Ok(record) => FileOutcome::Record {
            record,
            xxh3_128,
            reused: false,
        },
        Err(reason) => FileOutcome::Skipped(reason),
    }
}

/// A source file's bytes: a regular file (opened without blocking on a FIFO), not empty, at
/// most `maximum_bytes`.
fn read_source(path: &Path, maximum_bytes: u64) -> std::result::Result<Vec<u8>, SkipReason> {
    let (file, metadata) = open_regular(path).map_err(|error| match error {
        DatasetError::NotARegularFile { kind, .. } => SkipReason::NotARegularFile {
            file_type: kind.to_string(),
        },
        DatasetError::Io { source, .. } => SkipReason::Unreadable {
            error: source.to_string(),
        },
        other => SkipReason::Unreadable {
            error: other.to_string(),
        },
    })?;
    let unreadable = |error: std::io::Error| SkipReason::Unreadable {
        error: error.to_string(),
    };
    match metadata.len() {
        0 => return Err(SkipReason::Empty),
        bytes if bytes > maximum_bytes => {
            return Err(SkipReason::FileTooLarge {
                bytes,
                limit: maximum_bytes,
            });
        }
        _ => {}
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.take(maximum_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    match bytes.len() as u64 {
        0 => Err(SkipReason::Empty),
        length if length > maximum_bytes => Err(SkipReason::FileTooLarge {
            bytes: length,
            limit: maximum_bytes,
        }),
        _ => Ok(bytes),
    }
}

/// The files a packing run keeps beside its destination.
struct WorkFiles {
    records: PathBuf,
    journal: PathBuf,
    lock: PathBuf,
}

impl WorkFiles {
    fn beside(destination: &Path) -> Self {
        let folder = match destination.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = destination.file_name().unwrap_or_default();
        let hidden = |suffix: &str| {
            let mut hidden = std::ffi::OsString::from(".");
            hidden.push(name);
            hidden.push(suffix);
            folder.join(hidden)
        };
        WorkFiles {
            records: hidden(".partial"),
            journal: hidden(".journal"),
            lock: hidden(".lock"),
        }
    }

    fn folder(&self) -> &Path {
        self.lock.parent().unwrap_or(Path::new("."))
    }

    /// Creates the folder and a temporary file in it (removed at once): whether packing can
    /// write there now (a lock file left by an earlier run says nothing about that).
    fn check_writable(&self) -> Result<()> {
        std::fs::create_dir_all(self.folder())
            .map_err(|error| DatasetError::io(self.folder(), error))?;
        tempfile::tempfile_in(self.folder())
            .map(drop)
            .map_err(|error| DatasetError::io(self.folder(), error))
    }

    /// Takes the exclusive lock on the destination, waiting while another process holds it;
    /// released when the file is dropped. A cancellation while waiting is
    /// [`DatasetError::PackInterrupted`].
    fn lock(&self, destination: &Path, total: usize, cancellation: &AtomicBool) -> Result<File> {
        self.check_writable()?;
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.lock)
            .map_err(|error| DatasetError::io(&self.lock, error))?;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(file),
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(error)) => {
                    return Err(DatasetError::io(&self.lock, error));
                }
            }
            if cancellation.load(Ordering::Relaxed) {
                return Err(DatasetError::PackInterrupted {
                    destination: destination.to_path_buf(),
                    done: 0,
                    total,
                });
            }
            std::thread::sleep(LOCK_RETRY);
        }
    }
}

/// The journal's first line: what the records were made for.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct JournalHeading {
    format_version: u32,
    image: PackImageShape,
}

/// One journal line: one source file done.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct JournalEntry {
    path: String,
    stamp: FileStamp,
    outcome: JournalOutcome,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum JournalOutcome {
    Record {
        xxh3_128: String,
        record_xxh3_64: u64,
    },
    Skipped {
        reason: SkipReason,
    },
}

/// The pack being written: the records file, the journal, and what is done so far.
struct PartialPack {
    shape: PackImageShape,
    records_path: PathBuf,
    journal_path: PathBuf,
    records: BufWriter<File>,
    journal: BufWriter<File>,
    entries: Vec<JournalEntry>,
    /// How many of `entries` the journal holds.
    journal_entries_flushed: usize,
}

impl PartialPack {
    /// Opens the work files, keeping what an interrupted run did for `files` (the longest
    /// valid prefix), or starts them afresh.
    fn resume_or_create(
        work: &WorkFiles,
        shape: PackImageShape,
        files: &[PlannedFile],
    ) -> Result<Self> {
        let entries = resumable_entries(work, shape, files).unwrap_or_default();
        let record_count = entries
            .iter()
            .filter(|entry| matches!(entry.outcome, JournalOutcome::Record { .. }))
            .count() as u64;
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |error| DatasetError::io(path, error)
        };
        let mut records = OpenOptions::new()
            .create(true)
            .truncate(entries.is_empty())
            .read(true)
            .write(true)
            .open(&work.records)
            .map_err(io(&work.records))?;
        let records_end = PACK_HEADER_BYTES as u64 + record_count * shape.record_bytes();
        records.set_len(records_end).map_err(io(&work.records))?;
        records.seek(SeekFrom::End(0)).map_err(io(&work.records))?;
        let mut journal = BufWriter::new(File::create(&work.journal).map_err(io(&work.journal))?);
        let heading = JournalHeading {
            format_version: PACK_FORMAT_VERSION,
            image: shape,
        };
        for line in std::iter::once(json_line(&heading)).chain(entries.iter().map(json_line)) {
            journal.write_all(&line).map_err(io(&work.journal))?;
        }
        journal.flush().map_err(io(&work.journal))?;
        Ok(PartialPack {
            shape,
            records_path: work.records.clone(),
            journal_path: work.journal.clone(),
            records: BufWriter::with_capacity(1 << 20, records),
            journal,
            journal_entries_flushed: entries.len(),
            entries,
        })
    }

    /// The files an interrupted run skipped (kept by the resume), as listed entries.
    fn skipped_entries(&self) -> Vec<SkippedFile> {
        self.entries
            .iter()
            .filter_map(|entry| match &entry.outcome {
                JournalOutcome::Skipped { reason } => Some(SkippedFile {
                    path: entry.path.clone(),
                    reason: reason.clone(),
                    stamp: Some(entry.stamp),
                }),
                JournalOutcome::Record { .. } => None,
            })
            .collect()
    }

    /// Adds one file's outcome: its record to the records file (the journal line waits for
    /// [`PartialPack::flush`]).
    fn append(&mut self, file: &PlannedFile, outcome: FileOutcome) -> Result<()> {
        let outcome = match outcome {
            FileOutcome::Record {
                record, xxh3_128, ..
            } => {
                self.records
                    .write_all(&record)
                    .map_err(|error| DatasetError::io(&self.records_path, error))?;
                JournalOutcome::Record {
                    xxh3_128,
                    record_xxh3_64: xxh3_64(&record),
                }
            }
            FileOutcome::Skipped(reason) => JournalOutcome::Skipped { reason },
        };
        self.entries.push(JournalEntry {
            path: file.relative.clone(),
            stamp: stamp_of(file),
            outcome,
        });
        Ok(())
    }

    /// Writes out the records appended so far, then their journal lines: the journal never
    /// names a record that is not in the file.
    fn flush(&mut self) -> Result<()> {
        self.records
            .flush()
            .map_err(|error| DatasetError::io(&self.records_path, error))?;
        for entry in &self.entries[self.journal_entries_flushed..] {
            self.journal
                .write_all(&json_line(entry))
                .map_err(|error| DatasetError::io(&self.journal_path, error))?;
        }
        self.journal_entries_flushed = self.entries.len();
        self.journal
            .flush()
            .map_err(|error| DatasetError::io(&self.journal_path, error))
    }

    /// Completes the pack once every file of `plan` is done: reads the records back for the
    /// training split's statistics and the checksum, appends the labels and the manifest,
    /// writes the header, flushes to disk and renames the file to `destination`; then removes
    /// the journal. Returns the manifest written.
    fn finish(mut self, plan: &FolderPlan, destination: &Path) -> Result<PackManifest> {
        self.flush()?;
        let records_path = self.records_path.clone();
        let io = |error| DatasetError::io(&records_path, error);
        let (sources, labels, mut skipped) = self.entries_by_kind(plan);
        let mut file = self
            .records
            .into_inner()
            .map_err(|error| io(error.into_error()))?;
        skipped.extend(plan.skipped.iter().cloned());
        skipped.sort_by(|first, second| first.path.cmp(&second.path));
        let train_records = sources
            .iter()
            .filter(|source| source.split == PackSplit::Train)
            .count() as u64;
        if train_records == 0 {
            return Err(DatasetError::ImageFolder {
                folder: plan.folder.clone(),
                problem: crate::pack_format::ImageFolderProblem::NoDecodableImage,
            });
        }
        let mut hasher = Xxh3::new();
        let statistics = read_back_records(
            &mut file,
            self.shape,
            sources.len(),
            train_records,
            &mut hasher,
        )
        .map_err(io)?;
        let manifest = PackManifest {
            image: self.shape,
            classes: plan.classes.clone(),
            split_rule: plan.split_rule.clone(),
            statistics,
            sources,
            skipped,
        };
        let label_bytes: Vec<u8> = labels
            .iter()
            .flat_map(|label| label.to_le_bytes())
            .collect();
        let manifest_bytes = serde_json::to_vec(&manifest)
            .map_err(|error| io(std::io::Error::new(std::io::ErrorKind::InvalidData, error)))?;
        let records = manifest.sources.len() as u64;
        let labels_offset = PACK_HEADER_BYTES as u64 + records * self.shape.record_bytes();
        hasher.update(&label_bytes);
        hasher.update(&manifest_bytes);
        let header = PackHeader {
            image: self.shape,
            train_records,
            test_records: records - train_records,
            classes: plan.classes.len() as u32,
            labels_offset,
            manifest_offset: labels_offset + 4 * records,
            manifest_bytes: manifest_bytes.len() as u64,
            content_xxh3_128: hasher.digest128(),
        };
        file.seek(SeekFrom::Start(labels_offset)).map_err(io)?;
        file.write_all(&label_bytes).map_err(io)?;
        file.write_all(&manifest_bytes).map_err(io)?;
        file.set_len(header.manifest_offset + header.manifest_bytes)
            .map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(&encode_pack_header(&header)).map_err(io)?;
        file.sync_all().map_err(io)?;
        drop(file);
        std::fs::rename(&self.records_path, destination)
            .map_err(|error| DatasetError::io(destination, error))?;
        sync_folder(destination);
        drop(self.journal);
        let _ = std::fs::remove_file(&self.journal_path);
        Ok(manifest)
    }

    /// The packed sources and their labels, and the files refused while decoding, in record
    /// order (the entries follow `plan.files` one for one).
    fn entries_by_kind(
        &self,
        plan: &FolderPlan,
    ) -> (Vec<PackedSource>, Vec<u32>, Vec<SkippedFile>) {
        let mut sources = Vec::new();
        let mut labels = Vec::new();
        let mut skipped = Vec::new();
        for (entry, file) in self.entries.iter().zip(&plan.files) {
            match &entry.outcome {
                JournalOutcome::Record { xxh3_128, .. } => {
                    labels.push(file.label);
                    sources.push(PackedSource {
                        path: file.relative.clone(),
                        split: file.split,
                        label: file.label,
                        bytes: file.bytes,
                        modified_nanoseconds: file.modified_nanoseconds,
                        xxh3_128: xxh3_128.clone(),
                    });
                }
                JournalOutcome::Skipped { reason } => skipped.push(SkippedFile {
                    path: file.relative.clone(),
                    reason: reason.clone(),
                    stamp: Some(entry.stamp),
                }),
            }
        }
        (sources, labels, skipped)
    }
}

/// Reads the `records` records back from the file (after the header), feeding every byte to
/// `hasher`, and returns the per-channel statistics of the first `train_records`.
fn read_back_records(
    file: &mut File,
    shape: PackImageShape,
    records: usize,
    train_records: u64,
    hasher: &mut Xxh3,
) -> std::io::Result<ChannelStatistics> {
    file.seek(SeekFrom::Start(PACK_HEADER_BYTES as u64))?;
    let mut reader = BufReader::with_capacity(1 << 20, &mut *file);
    let channels = shape.channels as usize;
    let plane = (shape.height * shape.width) as usize;
    let mut record = vec![0u8; plane * channels];
    let mut sums = vec![0u64; channels];
    let mut squares = vec![0u64; channels];
    for index in 0..records {
        reader.read_exact(&mut record)?;
        hasher.update(&record);
        if (index as u64) < train_records {
            for (channel, values) in record.chunks_exact(plane).enumerate() {
                sums[channel] += values.iter().map(|&value| u64::from(value)).sum::<u64>();
                squares[channel] += values
                    .iter()
                    .map(|&value| u64::from(value) * u64::from(value))
                    .sum::<u64>();
            }
        }
    }
    let count = (train_records as f64 * plane as f64).max(1.0);
    let mean: Vec<f64> = sums.iter().map(|&sum| sum as f64 / count).collect();
    let standard_deviation = squares
        .iter()
        .zip(&mean)
        .map(|(&square, mean)| (square as f64 / count - mean * mean).max(0.0).sqrt() / 255.0)
        .collect();
    Ok(ChannelStatistics {
        mean: mean.iter().map(|mean| mean / 255.0).collect(),
        standard_deviation,
    })
}

/// Flushes the folder holding `path` so that a rename into it survives a crash (best effort:
/// not every platform can open a folder).
fn sync_folder(path: &Path) {
    if let Some(folder) = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        && let Ok(handle) = File::open(folder)
    {
        let _ = handle.sync_all();
    }
}

fn json_line(value: &impl Serialize) -> Vec<u8> {
    let mut line = serde_json::to_vec(value).expect("journal values serialize");
    line.push(b'\n');
    line
}

/// The entries of an interrupted run's journal that still hold: the heading matches `shape`,
/// each entry names the same file as `files` at its position with the same size and
/// modification time, and each record's checksum matches the records file.
fn resumable_entries(
    work: &WorkFiles,
    shape: PackImageShape,
    files: &[PlannedFile],
) -> Option<Vec<JournalEntry>> {
    let journal = BufReader::new(File::open(&work.journal).ok()?);
    let mut lines = journal.lines();
    let heading: JournalHeading = serde_json::from_str(&lines.next()?.ok()?).ok()?;
    if heading.format_version != PACK_FORMAT_VERSION || heading.image != shape {
        return None;
    }
    let mut records = BufReader::new(File::open(&work.records).ok()?);
    records
        .seek(SeekFrom::Start(PACK_HEADER_BYTES as u64))
        .ok()?;
    let mut record = vec![0u8; shape.record_bytes() as usize];
    let mut entries = Vec::new();
    for (line, file) in lines.zip(files) {
        let Some(entry) = line
            .ok()
            .and_then(|line| serde_json::from_str::<JournalEntry>(&line).ok())
        else {
            break;
        };
        if entry.path != file.relative || entry.stamp != stamp_of(file) {
            break;
        }
        if let JournalOutcome::Record { record_xxh3_64, .. } = entry.outcome
            && (records.read_exact(&mut record).is_err() || xxh3_64(&record) != record_xxh3_64)
        {
            break;
        }
        entries.push(entry);
    }
    Some(entries)
}
