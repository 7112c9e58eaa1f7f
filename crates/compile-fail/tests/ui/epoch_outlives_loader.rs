// An epoch borrows its loader: it cannot be kept once the loader is gone.
use reclaim_loader::{ImageShape, Loader, LoaderConfig, RawImages};

fn main() {
    let pixels = vec![0u8; 8];
    let labels = vec![0u8; 2];
    let source = RawImages::new(&pixels, &labels, ImageShape::grayscale(2, 2)).unwrap();
    std::thread::scope(|scope| {
        let epoch = {
            let loader = Loader::new(&source, LoaderConfig::default()).unwrap();
            loader.epoch(scope, 0).unwrap()
        };
        println!("{}", epoch.remaining_batches());
    });
}
