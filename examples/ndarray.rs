//! Trains the MNIST MLP on Burn's NdArray CPU backend with the PyTorch recipe (2 epochs, SGD
//! lr 0.01, batch 64), then prints the accuracy, the time and the release report.
//!
//! ```sh
//! cargo run --release --features ndarray --example ndarray
//! ```

#[global_allocator]
static ALLOCATOR: reclaim::memory::CountingAllocator = reclaim::memory::CountingAllocator;

fn main() -> anyhow::Result<()> {
    use reclaim::dataset::{Family, default_data_folder};
    use reclaim::train::{BackendChoice, DatasetStorage, TrainConfig, train};
    // A file truncated under the map then stops the run with an error instead of a SIGBUS
    // death (a mitigation for a broken promise, not a licence to break it).
    reclaim::dataset::install_sigbus_guard()?;

    let config = TrainConfig {
        // SAFETY: the example maps the dataset folder (no copy, as `reclaim train` does by
        // default); nothing changes those files while it runs.
        storage: unsafe { DatasetStorage::mapped() },
        ..TrainConfig::recipe(
            BackendChoice::Ndarray,
            default_data_folder(None, Family::Mnist),
            "runs/example-ndarray".into(),
        )
    };
    let run = train(&config)?;
    print!("{}", run.summary());
    Ok(())
}
