//! `reclaim bench …`: benchmarks, one sub-subcommand each. Backends are named and turned into
//! devices by [`reclaim_train::BackendChoice`], shared with the training commands.

/// Arguments of `reclaim bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArguments {
    /// What to benchmark.
    #[command(subcommand)]
    pub command: BenchCommand,
}

/// The benchmarks of `reclaim bench`.
#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// Whole epochs of the train split through the loader into tensors: samples per second,
    /// time to the first batch, peak loader memory.
    Loader(super::bench_loader::BenchLoaderArguments),
    /// The same short training on each compiled backend, in one process: samples per second,
    /// step time and memory, as a table and a bar chart.
    Train(super::bench_train::BenchTrainArguments),
}

/// Runs `reclaim bench`.
pub fn run(arguments: BenchArguments) -> anyhow::Result<()> {
    match arguments.command {
        BenchCommand::Loader(loader_arguments) => super::bench_loader::run(loader_arguments),
        BenchCommand::Train(train_arguments) => super::bench_train::run(train_arguments),
    }
}
