//! Trains the MNIST MLP on Burn's NdArray CPU backend with the seed recipe (2 epochs, SGD
//! lr 0.01, batch 64), then prints the accuracy, the time and the release report.
//!
//! ```sh
//! cargo run --release --example ndarray
//! ```

#[global_allocator]
static ALLOCATOR: reclaim::memory::CountingAllocator = reclaim::memory::CountingAllocator;

fn main() -> anyhow::Result<()> {
    use reclaim::dataset::{Family, default_data_folder};
    use reclaim::train::{BackendChoice, TrainConfig, train};

    let config = TrainConfig::recipe(
        BackendChoice::Ndarray,
        default_data_folder(None, Family::Mnist),
        "runs/example-ndarray".into(),
    );
    let run = train(&config)?;
    print!("{}", reclaim::report::run_summary(&run));
    Ok(())
}
