//! The `reclaim` command: inspect IDX files, train and evaluate the MNIST MLP, benchmark the
//! loader and the backends, and redraw a run's pictures.

mod cli;

use clap::{Parser, Subcommand};

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
}

fn main() -> std::process::ExitCode {
    let arguments = Arguments::parse();
    let outcome = match arguments.command {
        Command::Inspect(inspect_arguments) => cli::inspect::run(inspect_arguments),
        Command::Fetch(fetch_arguments) => cli::fetch::run(fetch_arguments),
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
