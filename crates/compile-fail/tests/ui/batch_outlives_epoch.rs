// A batch is a view of its epoch's pooled buffers: it cannot be kept once the epoch is gone.
use reclaim_loader::{ImageShape, Loader, LoaderConfig, RawImages};

fn main() {
    let pixels = vec![0u8; 8];
    let labels = vec![0u8; 2];
    let source = RawImages::new(&pixels, &labels, ImageShape::grayscale(2, 2)).unwrap();
    let loader = Loader::new(&source, LoaderConfig::default()).unwrap();
    std::thread::scope(|scope| {
        let kept;
        {
            let epoch = loader.epoch(scope, 0).unwrap();
            kept = epoch.next_batch().unwrap().unwrap();
        }
        println!("{}", kept.len());
    });
}
