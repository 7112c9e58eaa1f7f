//! `reclaim fetch`: download a dataset of the MNIST family into the data folder.

use std::path::PathBuf;
use std::time::Duration;

use reclaim_dataset::{
    DatasetError, DownloadLimits, Family, FetchOptions, FetchOrigin, ProgressDisplay,
    default_data_folder, fetch_family,
};

use crate::cli::interrupt;

/// Arguments of `reclaim fetch`.
#[derive(Debug, clap::Args)]
pub struct FetchArguments {
    /// The dataset: mnist, fashion-mnist or kmnist.
    #[arg(long, default_value = "mnist", value_parser = parse_family)]
    pub family: Family,
    /// The data folder (default: $RECLAIM_DATA, else the workspace's data/); the family's files
    /// go into its subfolder (e.g. data/mnist) unless the folder already holds them.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// A local mirror tried first: a folder, a file:// URL or an http(s):// base (default:
    /// $RECLAIM_MIRROR). The standard mirrors follow.
    #[arg(long)]
    pub mirror: Option<String>,
    /// Only the given/environment mirror, not the standard ones (for machines without internet).
    #[arg(long)]
    pub offline: bool,
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
}

fn parse_family(name: &str) -> Result<Family, String> {
    Family::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Family::ALL.iter().map(|family| family.name()).collect();
        format!("unknown family {name:?} (known: {})", known.join(", "))
    })
}

/// Runs `reclaim fetch`. Ctrl-C or SIGTERM stops the download in progress, removes its partial
/// file, and ends with [`interrupt::Interrupted`] (exit status 130).
pub fn run(arguments: FetchArguments) -> anyhow::Result<()> {
    interrupt::install()?;
    let folder = default_data_folder(arguments.data.as_deref(), arguments.family);
    let mut options = FetchOptions::for_family(arguments.family, arguments.mirror.as_deref())?;
    if arguments.offline {
        let standard = arguments.family.mirrors().len();
        let local = options.mirrors.len() - standard;
        options.mirrors.truncate(local);
        if options.mirrors.is_empty() {
            anyhow::bail!("--offline needs a local mirror (--mirror or RECLAIM_MIRROR)");
        }
    }
    if arguments.quiet {
        options.progress = ProgressDisplay::Hidden;
    }
    options.limits = arguments.limits();
    options.cancellation = Some(interrupt::INTERRUPTED.clone());
    println!("{} into {}", arguments.family, folder.display());
    let fetched = match fetch_family(arguments.family, &folder, &options) {
        Ok(fetched) => fetched,
        Err(DatasetError::Interrupted { url }) => {
            return Err(interrupt::Interrupted {
                message: format!(
                    "stopped while fetching {url}; no partial file left in {}; `reclaim fetch` \
                     again fetches what is missing",
                    folder.display()
                ),
            }
            .into());
        }
        Err(error) => return Err(error.into()),
    };
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
