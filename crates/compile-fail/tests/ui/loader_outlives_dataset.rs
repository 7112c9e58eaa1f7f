// A loader borrows its dataset: it cannot be kept once the dataset (and its mapping) is gone.
use reclaim_dataset::{ImageDataset, Split};
use reclaim_loader::{Loader, LoaderConfig};

fn main() {
    let loader = {
        let dataset = ImageDataset::open_owned("data/mnist", Split::Train).unwrap();
        Loader::new(&dataset, LoaderConfig::default()).unwrap()
    };
    println!("{}", loader.batches_per_epoch());
}
