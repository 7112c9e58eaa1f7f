//! One module per subcommand of the `reclaim` program.

pub mod bench;
pub mod bench_loader;
pub mod bench_train;
pub mod fetch;
pub mod inspect;
pub mod interrupt;
pub mod pack;
pub mod report;
pub mod train;
