//! `reclaim pack FOLDER`: a folder of photos decoded once into a pack; and the same packing for
//! `reclaim train --data FOLDER --image-size HxW`, into the pack cache.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use reclaim_dataset::ProgressDisplay;
use reclaim_dataset::pack::{
    BadFilePolicy, ImageSize, PackChannels, PackOptions, PackOutcome, PackState, TestFraction,
    pack_image_folder, pack_image_folder_cached,
};

use super::interrupt::{self, Interrupted};

/// How photos are packed: shared by `reclaim pack` and `reclaim train`.
#[derive(Debug, Clone, clap::Args)]
pub struct PhotoArguments {
    /// The size every image is resized to, HEIGHTxWIDTH (or one number for a square): the
    /// shorter side scaled to it, then the centre cropped, as torchvision's Resize +
    /// CenterCrop.
    #[arg(long, value_name = "HxW")]
    pub image_size: Option<ImageSize>,
    /// Channels: 3 (RGB) or 1 (grey).
    #[arg(long, default_value = "3", value_parser = parse_channels)]
    pub channels: PackChannels,
    /// For a folder of class folders without train/ and test/: the share of each class put in
    /// the test split (which files, decided by a hash of the seed and each path).
    #[arg(long, default_value_t = TestFraction::default().get(), value_parser = parse_test_fraction)]
    pub test_fraction: f64,
    /// Refuse the folder at its first bad file (unreadable, undecodable, empty, too large,
    /// a class folder empty or of one image), naming it, instead of skipping and listing it.
    #[arg(long)]
    pub strict: bool,
}

fn parse_channels(text: &str) -> Result<PackChannels, String> {
    text.parse::<u32>()
        .ok()
        .and_then(PackChannels::from_count)
        .ok_or_else(|| format!("{text:?}: 1 (grey) or 3 (RGB)"))
}

fn parse_test_fraction(text: &str) -> Result<f64, String> {
    text.parse::<TestFraction>()
        .map(TestFraction::get)
        .map_err(|error| error.to_string())
}

impl PhotoArguments {
    /// No photos: what `reclaim eval` uses (a pack is given as a file, never packed there).
    pub fn none() -> Self {
        PhotoArguments {
            image_size: None,
            channels: PackChannels::Rgb,
            test_fraction: TestFraction::default().get(),
            strict: false,
        }
    }

    /// The packing options, with the size given (`image_size` is required by the caller).
    pub fn options(
        &self,
        image_size: ImageSize,
        seed: u64,
        progress: ProgressDisplay,
    ) -> anyhow::Result<PackOptions> {
        Ok(PackOptions {
            channels: self.channels,
            test_fraction: TestFraction::new(self.test_fraction)
                .context("--test-fraction: from 0 up to 1")?,
            seed,
            bad_files: if self.strict {
                BadFilePolicy::Refuse
            } else {
                BadFilePolicy::SkipAndList
            },
            progress,
            ..PackOptions::new(image_size)
        })
    }
}

/// Arguments of `reclaim pack`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
FOLDER is laid out as torchvision's ImageFolder: train/<class>/... and test/<class>/... (or \
val/), or class folders alone, divided by --test-fraction. Files named .jpg, .jpeg, .png or \
.webp are decoded (any depth inside a class folder, symbolic links followed); names starting \
with a dot are ignored. Without --out, the pack goes where `reclaim train --data FOLDER` looks \
for it: beside FOLDER (FOLDER.HxW-rgb.rpack) if that folder can be written, else the user's \
cache folder. Packing again decodes only the files that changed; Ctrl-C keeps the work done \
and the next run resumes it.")]
pub struct PackArguments {
    /// The folder of photos.
    pub folder: PathBuf,
    /// How the photos are packed.
    #[command(flatten)]
    pub photos: PhotoArguments,
    /// The pack file to write (default: the cache, see below).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The seed of the division into splits.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// Runs `reclaim pack`: packs the folder, then prints what was done and what was skipped.
pub fn run(arguments: PackArguments) -> anyhow::Result<()> {
    let image_size = arguments
        .photos
        .image_size
        .context("--image-size HxW is required (the size the images are resized to)")?;
    let progress = if arguments.quiet {
        ProgressDisplay::Hidden
    } else {
        ProgressDisplay::Bar
    };
    let options = arguments
        .photos
        .options(image_size, arguments.seed, progress)?;
    let outcome = pack_with_interrupt(&arguments.folder, arguments.out.as_deref(), &options)?;
    print!("{}", describe_outcome(&outcome.0, outcome.1));
    Ok(())
}

/// Packs `folder` into the cache for training, reporting on standard error; returns the pack.
pub fn pack_for_training(folder: &Path, options: &PackOptions) -> anyhow::Result<PathBuf> {
    let (outcome, seconds) = pack_with_interrupt(folder, None, options)?;
    eprint!("{}", describe_outcome(&outcome, seconds));
    Ok(outcome.path)
}

/// Packs into `out`, or into the cache; Ctrl-C or SIGTERM stops it after the current chunk of
/// files (exit status 130), the work so far kept for the next run.
fn pack_with_interrupt(
    folder: &Path,
    out: Option<&Path>,
    options: &PackOptions,
) -> anyhow::Result<(PackOutcome, f64)> {
    interrupt::install()?;
    let started = Instant::now();
    let flag = &**interrupt::INTERRUPTED;
    let outcome = match out {
        Some(out) => pack_image_folder(folder, out, options, flag),
        None => pack_image_folder_cached(folder, options, flag),
    };
    match outcome {
        Ok(outcome) => Ok((outcome, started.elapsed().as_secs_f64())),
        Err(error @ reclaim_dataset::DatasetError::PackInterrupted { .. }) => Err(Interrupted {
            message: error.to_string(),
        }
        .into()),
        Err(error) => Err(anyhow::Error::new(error)
            .context(format!("packing the photos of {}", folder.display()))),
    }
}

/// What a packing run did, then every skipped file and why, one per line.
pub fn describe_outcome(outcome: &PackOutcome, seconds: f64) -> String {
    let mut text = match outcome.state {
        PackState::UpToDate => format!("pack: {} (up to date)\n", outcome.path.display()),
        PackState::Written => format!(
            "pack: {} written in {seconds:.1} s: {} decoded ({:.0} images/s), {} reused from \
             the previous pack, {} resumed\n",
            outcome.path.display(),
            outcome.decoded,
            outcome.decoded as f64 / seconds.max(1e-9),
            outcome.reused,
            outcome.resumed
        ),
    };
    text.push_str(&format!(
        "{} training and {} test images in {} classes\n",
        outcome.train_records, outcome.test_records, outcome.classes
    ));
    if !outcome.skipped.is_empty() {
        text.push_str(&format!("skipped ({}):\n", outcome.skipped.len()));
        for skipped in &outcome.skipped {
            text.push_str(&format!("  {skipped}\n"));
        }
    }
    text
}
