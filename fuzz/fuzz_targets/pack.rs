//! Arbitrary bytes as a pack, twice: as they are (the header's checks and the checksum), and
//! with the checksum field set to the content's XXH3-128, so that the fuzzer reaches the label
//! checks, the manifest's JSON and its agreement with the header. Whatever is accepted must be
//! readable to the last record and label without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reclaim_dataset::PackSplits;
use reclaim_dataset::pack::{PACK_HEADER_BYTES, parse_pack_header};

fuzz_target!(|data: &[u8]| {
    let _ = parse_pack_header(data, data.len() as u64);
    check(data.to_vec());
    if data.len() >= PACK_HEADER_BYTES {
        let mut fixed = data.to_vec();
        let checksum = xxhash_rust::xxh3::xxh3_128(&fixed[PACK_HEADER_BYTES..]);
        fixed[72..88].copy_from_slice(&checksum.to_le_bytes());
        check(fixed);
    }
});

fn check(bytes: Vec<u8>) {
    let Ok(pack) = PackSplits::from_bytes("fuzz.rpack", bytes) else {
        return;
    };
    let classes = pack.train.number_of_classes();
    for split in [&pack.train, &pack.test] {
        for index in 0..split.len() {
            assert_eq!(split.image(index).len(), split.bytes_per_image());
            assert!((split.label(index) as usize) < classes);
        }
    }
    assert_eq!(pack.manifest().sources.len(), pack.train.len() + pack.test.len());
}
