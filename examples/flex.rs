//! Trains the MNIST MLP on Burn's Flex CPU backend (pure Rust, the successor to NdArray)
//! with the seed recipe, then prints the accuracy, the time and the release report.
//!
//! ```sh
//! cargo run --release --features flex --example flex
//! ```

#[global_allocator]
static ALLOCATOR: reclaim::memory::CountingAllocator = reclaim::memory::CountingAllocator;

fn main() -> anyhow::Result<()> {
    use reclaim::dataset::{Family, default_data_folder};
    use reclaim::train::{BackendChoice, TrainConfig, train};

    let config = TrainConfig::recipe(
        BackendChoice::Flex,
        default_data_folder(None, Family::Mnist),
        "runs/example-flex".into(),
    );
    let run = train(&config)?;
    print!("{}", reclaim::report::run_summary(&run));
    Ok(())
}
