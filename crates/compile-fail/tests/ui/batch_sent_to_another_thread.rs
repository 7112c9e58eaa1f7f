// A batch borrows its epoch's pooled buffers: it cannot be sent to a thread that may outlive the
// epoch.
use reclaim_loader::{ImageShape, Loader, LoaderConfig, RawImages};

fn main() {
    let pixels = vec![0u8; 8];
    let labels = vec![0u8; 2];
    let source = RawImages::new(&pixels, &labels, ImageShape::grayscale(2, 2)).unwrap();
    let loader = Loader::new(&source, LoaderConfig::default()).unwrap();
    std::thread::scope(|scope| {
        let epoch = loader.epoch(scope, 0).unwrap();
        let batch = epoch.next_batch().unwrap().unwrap();
        let handle = std::thread::spawn(move || batch.len());
        println!("{}", handle.join().unwrap());
    });
}
