//! `reclaim fetch`: download a dataset of the MNIST family into the data folder.

use std::path::PathBuf;

use reclaim_dataset::{
    Family, FetchOptions, FetchOrigin, ProgressDisplay, default_data_folder, fetch_family,
};

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
}

fn parse_family(name: &str) -> Result<Family, String> {
    Family::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Family::ALL.iter().map(|family| family.name()).collect();
        format!("unknown family {name:?} (known: {})", known.join(", "))
    })
}

/// Runs `reclaim fetch`.
pub fn run(arguments: FetchArguments) -> anyhow::Result<()> {
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
    println!("{} into {}", arguments.family, folder.display());
    for fetched in fetch_family(arguments.family, &folder, &options)? {
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
