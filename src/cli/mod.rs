//! One module per subcommand of the `reclaim` program.

pub mod fetch;
pub mod inspect;
pub mod train;
pub mod bench;
pub mod bench_loader;
pub mod bench_train;
pub mod report;
