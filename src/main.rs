//! The `reclaim` command: inspect and fetch datasets, train and evaluate the MLP or the CNN,
//! benchmark the loader and the backends, and redraw a run's pictures.

mod cli;

use clap::{Parser, Subcommand};

/// Counts live heap bytes so that `reclaim train` can report what the release gave back.
#[global_allocator]
static ALLOCATOR: reclaim_memory::CountingAllocator = reclaim_memory::CountingAllocator;

/// Train on IDX image datasets with Burn; memory released by construction.
#[derive(Debug, Parser)]
#[command(name = "reclaim", version, about)]
struct Arguments {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print what an IDX file (raw or .gz) or a dataset folder holds.
    Inspect(cli::inspect::InspectArguments),
    /// Download a dataset of the MNIST family (mirrors or a local mirror), verified by SHA-256.
    Fetch(cli::fetch::FetchArguments),
    /// Decode a folder of photos (JPEG, PNG, WebP) once into a pack that training reads in place.
    Pack(cli::pack::PackArguments),
    /// Train the MNIST MLP, evaluate it after each epoch, release its memory and report it.
    Train(cli::train::TrainArguments),
    /// Evaluate saved weights on the test split.
    Eval(cli::train::EvalArguments),
    /// Benchmark the pipeline: `reclaim bench loader`.
    Bench(cli::bench::BenchArguments),
    /// Redraw a run's figures (curves, memory timeline) from its metrics files and summarize it.
    Report(cli::report::ReportArguments),
}

fn main() -> std::process::ExitCode {
    // First thing, before any file is mapped or thread started: the SIGBUS guard that turns a
    // dataset file truncated under its map into a typed error instead of a death (a mitigation;
    // see `reclaim_dataset::install_sigbus_guard`). A failure only warns: without the guard every
    // command still works, and a truncated mapped file kills the process as it would anyway, so
    // refusing to run (even `inspect` or `report`) would cost more than it protects.
    if let Err(error) = reclaim_dataset::install_sigbus_guard() {
        let error = anyhow::Error::new(error);
        eprintln!("warning: {error:#}; a dataset file truncated while mapped will end the process");
    }
    let arguments = Arguments::parse();
    let outcome = match arguments.command {
        Command::Inspect(inspect_arguments) => cli::inspect::run(inspect_arguments),
        Command::Fetch(fetch_arguments) => cli::fetch::run(fetch_arguments),
        Command::Bench(bench_arguments) => cli::bench::run(bench_arguments),
        Command::Pack(pack_arguments) => cli::pack::run(pack_arguments),
        Command::Train(train_arguments) => cli::train::run(train_arguments),
        Command::Eval(eval_arguments) => cli::train::run_eval(eval_arguments),
        Command::Report(report_arguments) => cli::report::run(report_arguments),
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) if error.is::<cli::interrupt::Interrupted>() => {
            eprintln!("{error:#}");
            std::process::ExitCode::from(cli::interrupt::EXIT_STATUS)
        }
        Err(error)
            if matches!(
                error.downcast_ref::<reclaim_train::TrainError>(),
                Some(reclaim_train::TrainError::Diverged { .. })
            ) =>
        {
            eprintln!("error: {error:#}");
            std::process::ExitCode::from(cli::train::DIVERGED_EXIT_STATUS)
        }
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
