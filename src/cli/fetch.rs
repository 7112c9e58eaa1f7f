//! `reclaim fetch`: download a dataset of the catalogue (the MNIST family's IDX files, or a CIFAR
//! archive, unpacked) into the data folder.

use std::path::{Path, PathBuf};
use std::time::Duration;

use reclaim_dataset::{
    DatasetError, DatasetName, Family, ProgressDisplay,
    cifar::CifarVariant,
    default_data_folder, default_dataset_folder,
    fetch::{DownloadLimits, FetchOptions, FetchOrigin, fetch_cifar, fetch_family},
};

use crate::cli::interrupt;

/// Arguments of `reclaim fetch`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
The MNIST family is fetched as its four .gz files, each checked against the catalogue's \
SHA-256 where it has one (MNIST; Fashion-MNIST and KMNIST for IDX structure and counts only). \
CIFAR-10 and CIFAR-100 are fetched as their published .tar.gz archive (cifar-10-binary.tar.gz, \
cifar-100-binary.tar.gz), checked against its published MD5 (or --md5), kept in the dataset's \
folder and unpacked into cifar-10-batches-bin/ or cifar-100-binary/ beside it, every record file \
checked. A local mirror (--mirror, $RECLAIM_MIRROR) serves the same file names. Ctrl-C stops \
the download and leaves no partial file.")]
pub struct FetchArguments {
    /// The dataset: mnist, fashion-mnist, kmnist, cifar10 or cifar100 [default: mnist].
    #[arg(long, value_name = "NAME", conflicts_with = "family")]
    pub dataset: Option<DatasetName>,
    /// The same as --dataset for the MNIST family (mnist, fashion-mnist or kmnist); kept for
    /// compatibility.
    #[arg(long, value_parser = parse_family)]
    pub family: Option<Family>,
    /// The data folder (default: $RECLAIM_DATA, else the workspace's data/); the dataset's files
    /// go into its subfolder (e.g. data/mnist, data/cifar-10) unless the folder already holds
    /// them.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// A local mirror tried first: a folder, a file:// URL or an http(s):// base (default:
    /// $RECLAIM_MIRROR). The standard mirrors follow.
    #[arg(long)]
    pub mirror: Option<String>,
    /// Only the given/environment mirror, not the standard ones (for machines without internet).
    #[arg(long)]
    pub offline: bool,
    /// CIFAR only: the MD5 the archive must have instead of the published one (32 hex digits),
    /// for a mirror serving a repacked archive.
    #[arg(long, value_name = "HEX", value_parser = parse_md5)]
    pub md5: Option<String>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Seconds to wait for a connection to a mirror.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub connect_timeout: u64,
    /// Seconds without a single byte after which a download is abandoned.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub stall_timeout: u64,
    /// The lowest average rate accepted, in bytes per second, checked after --grace-period
    /// seconds (0: no minimum).
    #[arg(long, default_value_t = 10_000)]
    pub minimum_rate: u64,
    /// Seconds a download may run before its average rate is checked.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub grace_period: u64,
}

impl FetchArguments {
    fn limits(&self) -> DownloadLimits {
        DownloadLimits {
            connect_timeout: Duration::from_secs(self.connect_timeout),
            stall_timeout: Duration::from_secs(self.stall_timeout),
            minimum_bytes_per_second: self.minimum_rate,
            grace_period: Duration::from_secs(self.grace_period),
        }
    }

    /// The dataset asked for: `--dataset`, else `--family`, else MNIST.
    fn dataset(&self) -> DatasetName {
        self.dataset
            .or(self.family.map(DatasetName::from))
            .unwrap_or(DatasetName::Mnist)
    }

    /// The mirrors (the local one, then `standard_mirrors` of them unless `--offline`), the
    /// progress display, the limits and the Ctrl-C flag.
    fn options(
        &self,
        dataset: DatasetName,
        standard_mirrors: usize,
    ) -> anyhow::Result<FetchOptions> {
        let mut options = FetchOptions::for_dataset(dataset, self.mirror.as_deref())?;
        if self.offline {
            let local = options.mirrors.len().saturating_sub(standard_mirrors);
            options.mirrors.truncate(local);
            if options.mirrors.is_empty() {
                anyhow::bail!("--offline needs a local mirror (--mirror or RECLAIM_MIRROR)");
            }
        }
        if self.quiet {
            options.progress = ProgressDisplay::Hidden;
        }
        options.limits = self.limits();
        options.cancellation = Some(interrupt::INTERRUPTED.clone());
        Ok(options)
    }
}

fn parse_family(name: &str) -> Result<Family, String> {
    Family::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Family::ALL.iter().map(|family| family.name()).collect();
        format!("unknown family {name:?} (known: {})", known.join(", "))
    })
}

fn parse_md5(text: &str) -> Result<String, String> {
    if text.len() == 32 && text.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        Ok(text.to_ascii_lowercase())
    } else {
        Err(format!("{text:?} is not an MD5 (32 hex digits)"))
    }
}

/// The error of a fetch stopped by Ctrl-C or SIGTERM (exit status 130); others as they are.
fn interrupted_or(error: DatasetError, folder: &Path) -> anyhow::Error {
    match error {
        DatasetError::Interrupted { url } => interrupt::Interrupted {
            message: format!(
                "stopped while fetching {url}; no partial file left in {}; `reclaim fetch` \
                 again fetches what is missing",
                folder.display()
            ),
        }
        .into(),
        error => error.into(),
    }
}

/// Runs `reclaim fetch`. Ctrl-C or SIGTERM stops the download in progress, removes its partial
/// file, and ends with [`interrupt::Interrupted`] (exit status 130).
pub fn run(arguments: FetchArguments) -> anyhow::Result<()> {
    interrupt::install()?;
    let dataset = arguments.dataset();
    match (dataset.family(), dataset.cifar_variant()) {
        (Some(family), _) => {
            if arguments.md5.is_some() {
                anyhow::bail!(
                    "--md5 applies to the CIFAR archives; {dataset} is checked by SHA-256"
                );
            }
            run_family(&arguments, family)
        }
        (None, Some(variant)) => run_cifar(&arguments, variant),
        (None, None) => anyhow::bail!("{dataset}: `reclaim fetch` does not know how to fetch it"),
    }
}

/// The MNIST family: four `.gz` files, SHA-256-checked where the catalogue has their sums.
fn run_family(arguments: &FetchArguments, family: Family) -> anyhow::Result<()> {
    let folder = default_data_folder(arguments.data.as_deref(), family);
    let options = arguments.options(family.into(), family.mirrors().len())?;
    println!("{family} into {}", folder.display());
    let fetched =
        fetch_family(family, &folder, &options).map_err(|error| interrupted_or(error, &folder))?;
    for fetched in fetched {
        let origin = match &fetched.origin {
            FetchOrigin::AlreadyPresent => "already present".to_owned(),
            FetchOrigin::Mirror(mirror) => format!("from {mirror}"),
        };
        let check = if fetched.checksum_compared {
            "sha256 verified"
        } else {
            "no catalogue sha256: structure and shape verified"
        };
        println!(
            "{} ({origin}; {check}: {})",
            fetched.path.display(),
            fetched.sha256
        );
    }
    Ok(())
}

/// CIFAR: the archive, MD5-checked (the published MD5 or `--md5`), kept and unpacked.
fn run_cifar(arguments: &FetchArguments, variant: CifarVariant) -> anyhow::Result<()> {
    let dataset = DatasetName::from(variant);
    let folder = default_dataset_folder(arguments.data.as_deref(), dataset);
    let mut archive = variant.archive();
    let published = archive.md5.clone();
    if let Some(md5) = &arguments.md5 {
        archive.md5.clone_from(md5);
    }
    let options = arguments.options(dataset, archive.mirrors.len())?;
    println!("{dataset} into {}", folder.display());
    let fetched = fetch_cifar(&archive, &folder, &options).map_err(|error| {
        let md5_mismatch = matches!(&error, DatasetError::AllMirrorsFailed { attempts, .. }
            if attempts.iter().any(|attempt| matches!(attempt.error, DatasetError::Md5Mismatch { .. })));
        let error = interrupted_or(error, &folder);
        if md5_mismatch && arguments.md5.is_none() {
            error.context(format!(
                "fetching {dataset} (for a mirror serving a repacked archive, give its MD5 with \
                 --md5)"
            ))
        } else {
            error
        }
    })?;
    let origin = match &fetched.origin {
        FetchOrigin::AlreadyPresent => "already present".to_owned(),
        FetchOrigin::Mirror(mirror) => format!("from {mirror}"),
    };
    let archive_text = match &fetched.archive_path {
        Some(path) if archive.md5 == published => format!(
            "unpacked from {}, md5 {} verified (the published one)",
            path.display(),
            archive.md5
        ),
        Some(path) => format!(
            "unpacked from {}, md5 {} verified (given by --md5; the published one is {published})",
            path.display(),
            archive.md5
        ),
        None => "no archive needed".to_owned(),
    };
    println!(
        "{} ({origin}; {archive_text}; every record file checked: whole records, labels in range)",
        fetched.files_folder.display()
    );
    Ok(())
}
