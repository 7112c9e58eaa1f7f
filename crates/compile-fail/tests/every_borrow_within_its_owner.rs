//! The control case of the compile-fail tests (`tests/ui/`): the same values, each used within
//! its owner's life, compile and run, and the loader's pool has its buffers back at the end.

use reclaim_loader::{ImageShape, Loader, LoaderConfig, RawImages};

#[test]
fn every_borrow_within_its_owner_compiles_and_runs() {
    let pixels = vec![0u8; 8];
    let labels = vec![0u8; 2];
    let source = RawImages::new(&pixels, &labels, ImageShape::grayscale(2, 2)).unwrap();
    let loader = Loader::new(&source, LoaderConfig::default()).unwrap();
    let samples = std::thread::scope(|scope| {
        let epoch = loader.epoch(scope, 0).unwrap();
        let mut samples = 0;
        for batch in &epoch {
            let batch = batch.unwrap();
            // A batch may be read on another thread as long as that thread ends within the
            // epoch's life: a scoped thread.
            samples += std::thread::scope(|inner| inner.spawn(|| batch.len()).join().unwrap());
        }
        samples
    });
    assert_eq!(samples, 2);
    assert_eq!(loader.memory_report().current_bytes, 0);
}
