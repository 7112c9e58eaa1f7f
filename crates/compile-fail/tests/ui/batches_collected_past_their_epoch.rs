// Batches taken through the epoch's iterator borrow it too: collected, they cannot be kept once
// the epoch is gone.
use reclaim_loader::{Batch, ImageShape, Loader, LoaderConfig, RawImages};

fn main() {
    let pixels = vec![0u8; 8];
    let labels = vec![0u8; 2];
    let source = RawImages::new(&pixels, &labels, ImageShape::grayscale(2, 2)).unwrap();
    let loader = Loader::new(&source, LoaderConfig::default()).unwrap();
    std::thread::scope(|scope| {
        let kept: Vec<Batch<'_>> = {
            let epoch = loader.epoch(scope, 0).unwrap();
            (&epoch).into_iter().map(Result::unwrap).collect()
        };
        println!("{}", kept.len());
    });
}
