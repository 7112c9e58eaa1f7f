// An image is a view of its dataset's bytes (a mapped file's pages, or its buffer): it cannot be
// kept once the dataset (and its mapping) is gone.
use reclaim_dataset::{ImageDataset, Split};

fn main() {
    let image: &[u8] = {
        let dataset = ImageDataset::open_owned("data/mnist", Split::Test).unwrap();
        dataset.image(0)
    };
    println!("{}", image.len());
}
