//! Trains the MNIST MLP on Burn's wgpu backend (a GPU through Vulkan, Metal or DX12; on a
//! machine without one, Mesa's software Vulkan driver) with the PyTorch recipe, then prints the
//! accuracy, the time and the release report with the device pool's bytes at each step.
//!
//! ```sh
//! cargo run --release --features wgpu --example wgpu
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
            BackendChoice::Wgpu,
            default_data_folder(None, Family::Mnist),
            "runs/example-wgpu".into(),
        )
    };
    let run = train(&config)?;
    print!("{}", run.summary());
    Ok(())
}
