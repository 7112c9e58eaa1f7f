//! `reclaim inspect PATH`.

/// Arguments of `reclaim inspect`.
#[derive(Debug, clap::Args)]
pub struct InspectArguments {
    /// An IDX file (raw or .gz) or a dataset folder.
    pub path: std::path::PathBuf,
}

/// Runs `reclaim inspect`.
pub fn run(arguments: InspectArguments) -> anyhow::Result<()> {
    anyhow::bail!("inspect is not implemented yet: {}", arguments.path.display())
}
