//! The PyTorch recipe's release — `del loader; del dataset; torch.cuda.empty_cache();
//! del model` — done the Rust way, one step at a time, with the memory after each; then the
//! device pool cleaned once more after the model, its last owner, is gone (the order to use on
//! a device with a pool: the recipe's cleanup runs while the model still holds its blocks).
//!
//! ```sh
//! cargo run --release --example release                     # the default CPU backend (Flex)
//! cargo run --release --features wgpu --example release -- wgpu
//! ```
//!
//! In Rust the steps are not hopes: the loader cannot outlive the dataset it borrows, the
//! epoch's worker threads are joined when its scope ends, and dropping the dataset unmaps its
//! files. The table printed at the end shows it with numbers: RSS, live heap bytes (counted by
//! the global allocator below), bytes of dataset files mapped, and the device pool.

use burn::optim::{GradientsParams, SgdConfig};
use reclaim::dataset::{Family, ImageDataset, Split, default_data_folder};
use reclaim::loader::{Loader, LoaderConfig, PixelFormat, TensorBatch};
use reclaim::memory::{CountingAllocator, MemorySnapshot};
use reclaim::model::{Mlp, MlpConfig};
use reclaim::train::{BackendChoice, ReleaseReport, ReleaseStage};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn main() -> anyhow::Result<()> {
    // A file truncated under the map then stops the run with an error instead of a SIGBUS
    // death (a mitigation for a broken promise, not a licence to break it).
    reclaim::dataset::install_sigbus_guard()?;
    let backend: BackendChoice = std::env::args()
        .nth(1)
        .map_or_else(|| Ok(BackendChoice::default_cpu()), |name| name.parse())?;
    let device = backend.device()?;
    let training_device = device.clone().autodiff();
    let data_folder = default_data_folder(None, Family::Mnist).canonicalize()?;
    let measure = || MemorySnapshot::take_under(Some(&device), &data_folder);
    let mut report = ReleaseReport::with_capacity(8);
    report.record(ReleaseStage::BeforeLoading, measure());

    // The model lives longest: it is created first and dropped last.
    let model = MlpConfig::new().init(&training_device);
    let mut optimizer = SgdConfig::new().init();

    // SAFETY: nothing modifies the vendored MNIST files (or their decompressed cache) while
    // this program maps them.
    let dataset = unsafe { ImageDataset::open_mapped(&data_folder, Split::Train)? };
    println!(
        "dataset opened: {} bytes of its files mapped, none copied",
        dataset.mapped_bytes()
    );

    let model = std::thread::scope(|scope| -> anyhow::Result<Mlp> {
        let mut model = model;
        let loader = Loader::new(
            &dataset,
            LoaderConfig {
                num_workers: 2,
                pixel_format: PixelFormat::UnitF32,
                ..LoaderConfig::mnist_training(42)
            },
        )?;
        let epoch = loader.epoch(scope, 0)?;
        for batch in &epoch {
            let TensorBatch { images, labels } = batch?.into_tensors::<2>(&training_device)?;
            let loss = model.loss(model.forward(images), labels);
            let gradients = GradientsParams::from_grads(loss.backward(), &model);
            model = optimizer.step(0.01, model, gradients);
        }
        report.record(ReleaseStage::Trained, measure());
        Ok(model)
        // `del train_loader`: the epoch, its worker threads and the loader end with this scope.
        // Keeping a batch, the epoch or the loader past this line does not compile.
    })?;
    report.record(ReleaseStage::LoaderScopeEnded, measure());

    // `del train_dataset`: the mapping disappears from /proc/self/maps.
    drop(dataset);
    report.record(ReleaseStage::DatasetDropped, measure());

    // `torch.cuda.empty_cache()`: hand the device pool's free pages back.
    drop(optimizer);
    device.memory_cleanup();
    report.record(ReleaseStage::DeviceMemoryCleanedUp, measure());

    // `del model`: the recipe's last step. Its cache cleanup came before, while the model
    // still held its blocks, so they are free now but stay reserved by the pool.
    drop(model);
    report.record(ReleaseStage::ModelDropped, measure());

    // The order to use: clean the pool after its last owner is gone.
    device.memory_cleanup();
    report.record(ReleaseStage::FinalCleanup, measure());

    print!("{}", report.to_markdown());
    if let Some(left_over) = report.heap_bytes_left_over() {
        println!("live heap bytes now minus before loading: {left_over}");
        // This walkthrough measures from a cold start, so what is left is the one-time state
        // that first use creates and keeps for the life of the process: the autodiff graph's
        // bookkeeping, the device's settings, the standard library's per-thread contexts, and
        // on wgpu the runtime and its compiled kernels. `reclaim train` runs its code paths once
        // before its baseline, and its release then comes back to it (docs/benchmarks.md,
        // "`reclaim train`'s release report").
        println!(
            "(one-time state of Burn and std created by the first use, kept by the process; \
             `reclaim train` warms up before its baseline and ends at +0 B)"
        );
    }
    Ok(())
}
