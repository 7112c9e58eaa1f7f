//! One module per subcommand of the `reclaim` program.

pub mod fetch;
pub mod inspect;
